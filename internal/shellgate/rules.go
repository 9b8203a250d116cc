package shellgate

import (
	"fmt"
	"strings"
	"sync"
)

// A programRule judges one call of a program the gate knows by name; ""
// lets the subcommand tables have their say.
type programRule func(c *checker, prog string, cl callCtx) string

// programRules map a program name to its rule; names that share a rule
// are listed together, so a program is added or dropped in one line. The
// table is built on first use, like the package's other tables, so that a
// garra command that never runs bash does not pay for it at start; it is
// filled by a function rather than a variable's initializer because the
// rules reach gateCall, which reads it.
var (
	programRules     map[string]programRule
	programRulesOnce sync.Once
)

func buildProgramRules() {
	m := map[string]programRule{}
	add := func(r programRule, names ...string) {
		for _, n := range names {
			m[n] = r
		}
	}
	add(evalRule, "eval")
	add(func(_ *checker, prog string, cl callCtx) string { return sourceRule(prog, cl) }, "source", ".")
	add(func(c *checker, _ string, cl callCtx) string { return c.trap(cl.args) }, "trap")
	add(func(c *checker, _ string, cl callCtx) string { return c.alias(cl.args) }, "alias")
	add(setRule, "set")
	add(declBuiltinRule, "export", "declare", "typeset", "readonly", "local")
	add(args(compgenRule), "compgen")
	add(shortFlag('f', "loading a builtin from a shared object (enable -f)"), "enable")
	add(shortFlag('p', "hash -p remaps a command name"), "hash")
	add(shortCode("mapfile -C", "-C"), "mapfile", "readarray")
	add((*checker).rmRule, "rm", "unlink")
	add(func(c *checker, _ string, cl callCtx) string { return c.find(cl) }, "find")
	add(args(ddRule), "dd")
	add(progArgs((*checker).permRule), "chmod", "chown", "chgrp")
	add(progArgs((*checker).writeOperands), "tee", "truncate", "touch", "mkdir", "rmdir", "mkfifo", "mknod")
	add(progArgs((*checker).copyRule), "cp", "ln", "install", "mv")
	add(func(c *checker, _ string, cl callCtx) string { return c.sedRule(cl.args) }, "sed", "gsed")
	add(func(c *checker, _ string, cl callCtx) string { return c.awkRule(cl.args) }, "awk", "gawk", "mawk", "nawk")
	add(args(psRule), "ps")
	add(args(killRule), "kill")
	add(func(c *checker, _ string, cl callCtx) string { return c.tarRule(cl.args) }, "tar", "bsdtar", "gtar")
	add(firstOf(codeOption("zip --unzip-command", "unzip-command", ""), shortCode("zip -TT", "-TT")), "zip")
	add(func(c *checker, _ string, cl callCtx) string { return c.makeRule(cl) }, "make", "gmake")
	add(firstOf(codeOption("man --pager", "pager", ""), shortCode("man -P", "-P"), manHTML), "man")
	add(longOptRule("mutating journalctl option", "vacuum-size", "vacuum-time", "vacuum-files", "rotate",
		"flush", "relinquish-var", "setup-keys", "sync"), "journalctl")
	add(getentRule, "getent")
	add(codeOption("split --filter", "filter", ""), "split")
	add(firstOf(codeOption("sort --compress-program", "compress-program", ""), sortOutput), "sort")
	add(func(_ *checker, prog string, cl callCtx) string { return lessRule(prog, cl.args) }, "less", "more", "most")
	add(func(c *checker, _ string, cl callCtx) string { return c.rgRule(cl.args) }, "rg", "ripgrep")
	add(func(c *checker, _ string, cl callCtx) string { return c.goRule(cl.args) }, "go")
	add(args(cargoRule), "cargo")
	add(func(_ *checker, prog string, cl callCtx) string { return aptRule(prog, cl.args) }, "apt", "apt-get", "aptitude")
	add(longOptRule("dpkg option runs a command", "pre-invoke", "post-invoke", "status-logger"), "dpkg")
	add(rpmRule, "rpm", "rpmspec", "rpmbuild")
	add(codeOption("nodemon --exec", "exec", "-x"), "nodemon")
	add(func(_ *checker, prog string, cl callCtx) string { return editorRule(prog, cl) },
		"vim", "vi", "nvim", "view", "gvim", "rvim", "vimdiff", "ex", "nex")
	add(emacsRule, "emacs", "emacsclient")
	add(func(_ *checker, _ string, cl callCtx) string { return edRule(cl) }, "ed", "red")
	add(func(_ *checker, _ string, cl callCtx) string { return sqliteRule(cl) }, "sqlite3", "sqlite")
	add(func(c *checker, _ string, cl callCtx) string { return c.git(cl) }, "git")
	add(args(serviceRule), "service")
	add(func(_ *checker, prog string, cl callCtx) string { return sysRule(prog, cl.args) },
		"ip", "ifconfig", "route", "sysctl", "hostname")
	add(bunRule, "bun")
	add((*checker).npmRule, "npm", "pnpm", "yarn")
	// podman-compose takes docker-compose's read-only subcommands.
	add(func(c *checker, _ string, cl callCtx) string { return c.subcommands("docker-compose", cl) }, "podman-compose")
	// Judged by program() and the subcommand tables; listed so that a copy
	// of them keeps its rules (progKind).
	add(func(*checker, string, callCtx) string { return "" }, "printenv", "docker-compose")
	programRules = m
}

// special applies the rule table, then the subcommand tables.
func (c *checker) special(prog string, cl callCtx) string {
	programRulesOnce.Do(buildProgramRules)
	if rule := programRules[prog]; rule != nil {
		if r := rule(c, prog, cl); r != "" {
			return r
		}
	}
	return c.subcommands(prog, cl)
}

// args adapts a rule that needs only the words.
func args(f func([]arg) string) programRule {
	return func(_ *checker, _ string, cl callCtx) string { return f(cl.args) }
}

// progArgs adapts a checker rule that takes the name and the words.
func progArgs(f func(*checker, string, []arg) string) programRule {
	return func(c *checker, prog string, cl callCtx) string { return f(c, prog, cl.args) }
}

// shortFlag blocks a call whose short options include f.
func shortFlag(f byte, reason string) programRule {
	return func(_ *checker, _ string, cl callCtx) string {
		if hasShortFlag(cl.args[1:], f) {
			return reason
		}
		return ""
	}
}

// codeOption gates the value of an option that a program runs as a shell
// command: --long in any abbreviation, or the exact short spelling.
func codeOption(what, long, short string) programRule {
	return func(c *checker, _ string, cl callCtx) string {
		for i, a := range cl.args {
			if !a.lit {
				continue
			}
			if val, has, ok := longOpt(a.val, long); ok || short != "" && a.val == short {
				v, _, _ := optValue(cl.args, i, val, has)
				return c.codeArg(what, v)
			}
		}
		return ""
	}
}

// shortCode gates the value of a short option that a program runs as
// code, attached or in the next word.
func shortCode(what, flag string) programRule {
	return func(c *checker, _ string, cl callCtx) string {
		for i, a := range cl.args {
			if a.lit && strings.HasPrefix(a.val, flag) {
				return c.codeValue(what, cl.args, i, flag)
			}
		}
		return ""
	}
}

// firstOf applies rules in turn until one blocks.
func firstOf(rules ...programRule) programRule {
	return func(c *checker, prog string, cl callCtx) string {
		for _, r := range rules {
			if v := r(c, prog, cl); v != "" {
				return v
			}
		}
		return ""
	}
}

// longOptRule blocks the long options named, in any abbreviation longer
// than one letter (--s, --f stand for too many others to be read as these).
func longOptRule(what string, names ...string) programRule {
	return func(_ *checker, _ string, cl callCtx) string {
		for _, a := range cl.args[1:] {
			if _, _, ok := longOptIn(a.val, names...); ok && a.lit && len(a.val) > 3 {
				return what + " (" + q(a.val) + ")"
			}
		}
		return ""
	}
}

// evalRule: eval runs in this shell, so a cd in it moves the caller.
func evalRule(c *checker, _ string, cl callCtx) string {
	return c.joinCode("eval", cl.args[1:], c.nestedHere)
}

func setRule(_ *checker, _ string, cl callCtx) string {
	if len(cl.args) == 1 {
		return "environment dump (set)"
	}
	return ""
}

// declBuiltinRule is declRule for the declaration builtins called as
// commands (through a wrapper or under another spelling).
func declBuiltinRule(c *checker, prog string, cl callCtx) string {
	var opts []string
	names := false
	for _, a := range cl.args[1:] {
		switch {
		case !a.lit:
			return fmt.Sprintf("non-literal %s argument", prog)
		case strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+"):
			opts = append(opts, a.val)
		default:
			names = true
			if n, v, ok := strings.Cut(a.val, "="); ok {
				if r := c.checkVar(n, litArg(v)); r != "" {
					return r
				}
			}
		}
	}
	return declRule(prog, opts, names)
}

func getentRule(_ *checker, _ string, cl callCtx) string {
	if len(cl.args) > 1 && (cl.args[1].lit && strings.HasPrefix(cl.args[1].val, "ahosts") || cl.args[1].val == "hosts") {
		return "DNS lookup (getent hosts)"
	}
	return ""
}

// manHTML: man --html starts a web browser.
func manHTML(_ *checker, _ string, cl callCtx) string {
	for _, a := range cl.args {
		if _, _, ok := longOpt(a.val, "html", "h"); a.lit && (ok || strings.HasPrefix(a.val, "-H")) {
			return "man --html runs a web browser"
		}
	}
	return ""
}

// sortOutput judges sort -o as the write it is.
func sortOutput(c *checker, _ string, cl callCtx) string {
	for i, a := range cl.args {
		if val, has, ok := longOpt(a.val, "output"); a.lit && (ok || a.val == "-o") {
			if v, _, found := optValue(cl.args, i, val, has); found {
				if r := c.write(v, "sort -o"); r != "" {
					return r
				}
			}
		}
	}
	return ""
}

func rpmRule(_ *checker, _ string, cl callCtx) string {
	for _, a := range cl.args[1:] {
		if _, _, ok := longOpt(a.val, "eval"); a.lit && (ok || strings.HasPrefix(a.val, "-E")) {
			return "rpm --eval runs macros, which can run shell commands"
		}
	}
	return ""
}

func emacsRule(_ *checker, _ string, cl callCtx) string {
	for _, a := range cl.args[1:] {
		if !a.lit {
			continue
		}
		v := a.val
		if strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && len(v) > 2 {
			v = "-" + v // -eval is --eval
		}
		if _, _, ok := longOptIn(v, "eval", "execute", "funcall"); ok || a.val == "-f" {
			return "inline Emacs Lisp (" + q(a.val) + ")"
		}
	}
	return ""
}

func bunRule(_ *checker, _ string, cl callCtx) string {
	for _, a := range cl.args[1:] {
		if _, _, ok := longOptIn(a.val, "eval", "print"); a.lit && (ok || a.val == "-e" || a.val == "-p") {
			return "inline JavaScript code (bun " + q(a.val) + ")"
		}
	}
	return ""
}
