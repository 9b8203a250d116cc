package shellgate

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Many tools carry code in an option: tar --to-command, sort
// --compress-program, make --eval, git clone --upload-pack. getopt_long,
// git's parse-options and npm's nopt all accept any unambiguous prefix of
// a long option (--to-c, --compress-p, --ev, --upload-p), so an option is
// recognised here by every prefix that could stand for it. A prefix that is
// ambiguous for the tool counts as the dangerous option too: if the tool
// refuses it nothing runs, and if this table misses an option of some
// version of the tool, the prefix may well be unique there.

// longOpt reports whether word v could be the long option full (given
// without dashes): --full, --full=value, or any prefix of it. exact lists
// other options of the tool that are themselves prefixes of full, so that
// their exact spelling is not taken for full.
func longOpt(v, full string, exact ...string) (val string, hasVal, ok bool) {
	if !strings.HasPrefix(v, "--") || len(v) < 3 {
		return "", false, false
	}
	name, val, hasVal := strings.Cut(v[2:], "=")
	if name == full {
		return val, hasVal, true
	}
	if !strings.HasPrefix(full, name) {
		return "", false, false
	}
	for _, e := range exact {
		if name == e {
			return "", false, false
		}
	}
	return val, hasVal, true
}

// longOptIn is longOpt for several names of one option.
func longOptIn(v string, fulls ...string) (val string, hasVal, ok bool) {
	for _, f := range fulls {
		if val, hasVal, ok = longOpt(v, f); ok {
			return val, hasVal, ok
		}
	}
	return "", false, false
}

// optValue returns the value of the option at args[i]: attached with '='
// or after a short letter, or the next word. next reports that the value
// was the next word.
func optValue(args []arg, i int, attached string, hasAttached bool) (val arg, next, ok bool) {
	if hasAttached {
		return litArg(attached), false, true
	}
	if i+1 < len(args) {
		return args[i+1], true, true
	}
	return arg{}, false, false
}

// takeValue is optValue that steps *i over a value given as the next word.
func takeValue(args []arg, i *int, attached string, hasAttached bool) (arg, bool) {
	val, next, ok := optValue(args, *i, attached, hasAttached)
	if next {
		*i++
	}
	return val, ok
}

// takeLong is takeValue for the word at args[*i] read as one of the long
// options names (or as a short option whose value is the next word).
func takeLong(args []arg, i *int, names ...string) (arg, bool) {
	val, has, _ := longOptIn(args[*i].val, names...)
	return takeValue(args, i, val, has)
}

// shortCluster walks a cluster such as -xzvf: it returns the letter found
// among want and its attached value, stopping at the first letter in
// withValue (whose value is the rest of the word).
func shortCluster(v, want, withValue string) (letter byte, rest string, found bool) {
	if len(v) < 2 || v[0] != '-' || v[1] == '-' {
		return 0, "", false
	}
	for j := 1; j < len(v); j++ {
		ch := v[j]
		if strings.IndexByte(want, ch) >= 0 {
			return ch, v[j+1:], true
		}
		if strings.IndexByte(withValue, ch) >= 0 {
			return 0, "", false
		}
	}
	return 0, "", false
}

// programValue gates the value of an option that names a program to run
// with the tool's own arguments (git --upload-pack, rg --pre, go -exec).
func (c *checker) programValue(what string, v arg) string {
	if !v.lit {
		return "non-literal command for " + what
	}
	return c.nested(v.val)
}

// optCarriers are environment variables that hold a tool's options, and
// the command line they are judged as (with a harmless operand where the
// tool would otherwise read a program from stdin).
var optCarriers = sync.OnceValue(func() map[string][2]string {
	return map[string][2]string{
		"TAR_OPTIONS": {"tar", ""}, "MAKEFLAGS": {"make", ""}, "MFLAGS": {"make", ""},
		"GNUMAKEFLAGS": {"make", ""}, "NODE_OPTIONS": {"node", "app.js"}, "PERL5OPT": {"perl", "app.pl"},
		"RUBYOPT": {"ruby", "app.rb"}, "GOFLAGS": {"go build", ""}, "MANOPT": {"man", "ls"},
		"ZIPOPT": {"zip", ""}, "LESS": {"less", "f"}, "SYSTEMD_LESS": {"less", "f"}, "BUN_OPTIONS": {"bun", "app.ts"},
	}
})

// carrierVar judges an assignment to an option-carrying variable as the
// tool's own command line.
func (c *checker) carrierVar(name string, val arg) (string, bool) {
	prog, ok := optCarriers()[name]
	key, npm := strings.CutPrefix(strings.ToLower(name), "npm_config_")
	switch {
	case npm:
		prog = [2]string{"npm", "test"}
	case !ok:
		return "", false
	}
	text, known := varText(val)
	if !known {
		return fmt.Sprintf("non-literal options in %s", clip(name, maxNameLen)), true
	}
	val = litArg(text)
	if npm {
		val = litArg("--" + strings.ReplaceAll(key, "_", "-") + "=" + val.val)
	}
	// Tools split these on blanks; some also honour quotes. Both readings
	// are judged.
	var splits [][]arg
	if npm {
		splits = append(splits, []arg{val})
	} else {
		var fields []arg
		for _, f := range strings.Fields(val.val) {
			fields = append(fields, litArg(f))
		}
		splits = append(splits, fields)
		if strings.ContainsAny(val.val, "'\"\\") {
			if words, err := splitWords(val.val); err == nil {
				splits = append(splits, words)
			}
		}
	}
	for _, opts := range splits {
		var words []arg
		for _, w := range strings.Fields(prog[0]) {
			words = append(words, litArg(w))
		}
		words = append(words, opts...)
		if prog[1] != "" {
			words = append(words, litArg(prog[1]))
		}
		if r := c.gateCall(callCtx{args: words}); r != "" {
			return r, true
		}
	}
	return "", true
}

// splitWords splits a string into words the way the shell would.
func splitWords(s string) ([]arg, error) {
	f, err := parseBash(s)
	if err != nil {
		return nil, err
	}
	var out []arg
	for _, st := range f.Stmts {
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(st.Redirs) > 0 || len(call.Assigns) > 0 {
			return nil, fmt.Errorf("not a list of words")
		}
		out = append(out, resolveAllPlain(call.Args)...)
	}
	return out, nil
}

func resolveAllPlain(ws []*syntax.Word) []arg {
	out := make([]arg, len(ws))
	for i, w := range ws {
		out[i] = resolve(w)
	}
	return out
}

// makeRule: make --eval and -E run inline recipes; a program file on
// stdin is inline code; a variable given on the command line (or in the
// environment make imports) can hold make functions ($(shell …)) or the
// command a recipe runs (CC='curl x').
func (c *checker) makeRule(cl callCtx) string {
	args := cl.args
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			continue
		}
		v := a.val
		if _, _, ok := longOpt(v, "eval", "e"); ok || v == "-E" || strings.HasPrefix(v, "-E") && !strings.HasPrefix(v, "--") {
			return "make --eval runs inline recipes"
		}
		if _, _, ok := longOpt(v, "environment-overrides"); !ok && strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") {
			if l, _, found := shortCluster(v, "E", "fCIWolj"); found && l == 'E' {
				return "make --eval runs inline recipes"
			}
		}
		if r := programFile("make", args, i, "-f", "--file", "--makefile"); r != "" {
			return r
		}
		if _, _, ok := longOptIn(v, "file", "makefile"); ok && !strings.Contains(v, "=") && i+1 < len(args) {
			if r := programFile("make", []arg{litArg("-f"), args[i+1]}, 0, "-f"); r != "" {
				return r
			}
		}
		if name, op, val, ok := makeAssign(v); ok {
			if r := c.makeVar(name, op, val); r != "" {
				return r
			}
		}
	}
	for _, as := range cl.assigns {
		if as.Name == nil || as.Value == nil {
			continue
		}
		if v := c.resolve(as.Value); v.lit {
			if r := c.makeVar(as.Name.Value, "=", v.val); r != "" {
				return r
			}
		}
	}
	return ""
}

var makeAssignRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([^\s:#=+?!$()-][^\s:#=+?!$()]*)\s*(::=|:::=|:=|\+=|\?=|!=|=)(.*)$`)
})

// makeAssign splits a make command-line variable definition.
func makeAssign(v string) (name, op, val string, ok bool) {
	m := makeAssignRe().FindStringSubmatch(v)
	if m == nil {
		return "", "", "", false
	}
	return m[1], m[2], m[3], true
}

// makeVar judges one make variable definition.
func (c *checker) makeVar(name, op, val string) string {
	if op == "!=" {
		return "make variable assigned from a shell command (" + clip(name, maxNameLen) + " !=)"
	}
	if strings.Contains(val, "$(") || strings.Contains(val, "${") || strings.Contains(val, "`") {
		return "make variable " + q(name) + " holds a make function or expansion"
	}
	if val == "" {
		return ""
	}
	// The value may become (part of) a recipe: it is gated as a command line.
	return c.nested(val)
}

// sqliteDanger are the dot-commands of the sqlite3 shell that run programs
// or load code; the shell accepts unique prefixes of them.
var sqliteDanger = sync.OnceValue(func() []string {
	return []string{"shell", "system", "load", "excel", "www"}
})

// sqliteRule blocks the sqlite3 dot-commands and SQL functions that run
// programs, load code or write files anywhere.
func sqliteRule(cl callCtx) string {
	for i, a := range cl.args[1:] {
		if !a.lit {
			if i > 0 {
				return "non-literal sqlite3 command"
			}
			continue
		}
		if sqliteRisky(a.val) {
			return "sqlite3 command can run programs"
		}
	}
	for _, r := range cl.redirs {
		if r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc {
			if body, ok := hereText(r); !ok || sqliteRisky(body) {
				return "sqlite3 command can run programs"
			}
			return ""
		}
	}
	if cl.piped {
		return "pipe into sqlite3, which can run programs"
	}
	return ""
}

func sqliteRisky(s string) bool {
	l := strings.ToLower(s)
	if strings.Contains(l, "load_extension") || strings.Contains(l, "edit(") || strings.Contains(l, "writefile(") {
		return true
	}
	for _, line := range strings.FieldsFunc(l, func(r rune) bool { return r == '\n' || r == ';' }) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, ".") {
			continue
		}
		fields := strings.Fields(line[1:])
		if len(fields) == 0 {
			continue
		}
		cmd := fields[0]
		for _, d := range sqliteDanger() {
			if len(cmd) >= 2 && strings.HasPrefix(d, cmd) {
				return true
			}
		}
		for _, f := range fields[1:] {
			f = strings.Trim(f, `'"`)
			if strings.HasPrefix(f, "|") || (cmd == "once" || cmd == "output" || cmd == "o") && (f == "-x" || f == "-e" || f == "--excel") {
				return true
			}
		}
		if strings.Contains(line, "|") {
			return true
		}
	}
	return false
}

// lessRule: less runs +commands at start-up, and ! is its shell escape.
func lessRule(prog string, args []arg) string {
	for _, a := range args[1:] {
		if !a.lit {
			continue
		}
		v := a.val
		if strings.HasPrefix(v, "+") && strings.ContainsAny(v, "!|") {
			return prog + " +command runs a shell command"
		}
		if _, _, ok := longOpt(v, "lesskey-src"); ok {
			return prog + " --lesskey-src can bind keys to shell commands"
		}
	}
	return ""
}

// rgRule: ripgrep --pre runs a program on every file searched.
func (c *checker) rgRule(args []arg) string {
	for i, a := range args {
		if !a.lit {
			continue
		}
		if val, has, ok := longOpt(a.val, "pre", "pretty"); ok && a.val != "--pre-glob" && !strings.HasPrefix(a.val, "--pre-glob=") {
			if v, _, found := optValue(args, i, val, has); found {
				return c.programValue("rg --pre", v)
			}
		}
	}
	return ""
}

// goRule: go test -exec, go run -exec, -toolexec and vet -vettool run a
// program of the caller's choosing; go env -w makes such flags stick.
func (c *checker) goRule(args []arg) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit || !strings.HasPrefix(a.val, "-") {
			continue
		}
		v := strings.TrimPrefix(a.val, "-") // go flags take one or two dashes
		name, val, has := strings.Cut(strings.TrimPrefix(v, "-"), "=")
		switch name {
		case "exec", "toolexec", "vettool":
			if pv, _, found := optValue(args, i, val, has); found {
				return c.programValue("go -"+name, pv)
			}
			return ""
		}
	}
	if len(args) > 2 && args[1].lit && args[1].val == "env" {
		for i, a := range args[2:] {
			if !a.lit || a.val != "-w" {
				continue
			}
			for _, kv := range args[i+3:] {
				if !kv.lit {
					return "non-literal go env -w setting"
				}
				k, val, _ := strings.Cut(kv.val, "=")
				if k == "GOFLAGS" {
					if r, _ := c.carrierVar("GOFLAGS", litArg(val)); r != "" {
						return r
					}
				}
				if codeVars()[k] == varCommand {
					if r := c.nested(val); r != "" {
						return r
					}
				}
			}
		}
	}
	return ""
}

// cargoRule: --config can set a runner or a compiler wrapper.
func cargoRule(args []arg) string {
	for i, a := range args {
		if !a.lit {
			continue
		}
		val, has, ok := longOpt(a.val, "config", "color")
		if !ok {
			continue
		}
		v, _, found := optValue(args, i, val, has)
		if !found {
			continue
		}
		if !v.lit {
			return "non-literal cargo --config"
		}
		l := strings.ToLower(v.val)
		if !strings.Contains(l, "=") || strings.Contains(l, "runner") || strings.Contains(l, "wrapper") ||
			strings.Contains(l, "rustc") || strings.Contains(l, "linker") || strings.Contains(l, "rustdoc") {
			return "cargo --config can set the program cargo runs"
		}
	}
	return ""
}

// aptRule: -o can install hooks apt runs (Pre-Invoke, Post-Invoke) or
// replace the programs it calls; -c loads a configuration that can.
func aptRule(prog string, args []arg) string {
	for i, a := range args {
		if !a.lit {
			continue
		}
		v := a.val
		var opt string
		switch {
		case v == "-o" || v == "--option":
			if i+1 < len(args) {
				opt = args[i+1].val
			}
		case strings.HasPrefix(v, "-o"):
			opt = v[2:]
		case strings.HasPrefix(v, "--option="):
			opt = strings.TrimPrefix(v, "--option=")
		case v == "-c" || strings.HasPrefix(v, "--config-file") || strings.HasPrefix(v, "-c") && !strings.HasPrefix(v, "--"):
			return prog + " -c loads a configuration that can run commands"
		}
		l := strings.ToLower(opt)
		if strings.Contains(l, "invoke") || strings.Contains(l, "pre-install-pkgs") || strings.Contains(l, "dir::bin") ||
			strings.Contains(l, "::bin::") || strings.Contains(l, "cmd") {
			return prog + " -o option runs a command"
		}
	}
	return ""
}

// nodeModule checks the module given to node -r/--require/--import/
// --loader: a package or file name loads code from disk like a script, but a
// data: or http: URL carries the code itself.
func nodeModule(prog string, v arg) string {
	if !v.lit {
		return "non-literal module for " + q(prog)
	}
	if strings.Contains(v.val, ":") && !strings.HasPrefix(v.val, "node:") && !strings.HasPrefix(v.val, "file:") {
		return "inline node code (" + clip(prog, maxNameLen) + " module URL)"
	}
	return ""
}

var perlModuleRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^-?[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z0-9_]+)*('[A-Za-z0-9_]+)*(=[A-Za-z0-9_,.:/@+-]*)?$`)
})

// perlModule checks the value of perl -M, -m and -d: anything but a module
// name (and simple import list) is inlined into a use statement.
func perlModule(prog string, mod string) string {
	if mod == "" || perlModuleRe().MatchString(mod) {
		return ""
	}
	return "inline perl code (" + clip(prog, maxNameLen) + " -M with code)"
}

// npmRule: npm's own options that run programs (--script-shell, --node-options,
// --editor, …, and exec -c), configuration files that can set them, and the
// subcommands that hand the rest of the line to a shell.
func (c *checker) npmRule(prog string, cl callCtx) string {
	args := cl.args
	sub, subAt := "", -1
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			continue
		}
		v := a.val
		if v == "--" {
			break
		}
		if !strings.HasPrefix(v, "-") {
			if sub == "" {
				sub, subAt = v, i
			}
			continue
		}
		if val, has, ok := longOpt(v, "node-options"); ok {
			opts, _, _ := optValue(args, i, val, has)
			if r, _ := c.carrierVar("NODE_OPTIONS", opts); r != "" {
				return r
			}
			continue
		}
		if val, has, ok := longOptIn(v, "script-shell", "shell"); ok {
			sh, _, _ := optValue(args, i, val, has)
			if !sh.lit || !shells()[progName(sh.val)] {
				return prog + " --script-shell runs scripts with another program"
			}
			continue
		}
		if _, _, ok := longOptIn(v, "userconfig", "globalconfig"); ok {
			return prog + " --userconfig loads settings that can run programs"
		}
		if val, has, ok := longOptIn(v, "browser", "editor", "viewer", "git"); ok {
			cmd, _, _ := optValue(args, i, val, has)
			if r := c.codeArg(prog+" "+clip(v, 16), cmd); r != "" {
				return r
			}
			continue
		}
		if val, has, ok := longOpt(v, "call"); ok || v == "-c" && (sub == "exec" || sub == "x") {
			code, _, _ := optValue(args, i, val, has)
			return c.codeArg(prog+" exec -c", code)
		}
	}
	switch {
	case sub == "explore" && subAt >= 0:
		for j := subAt + 1; j < len(args); j++ {
			if args[j].lit && args[j].val == "--" {
				return c.gateCall(cl.with(args[j+1:]))
			}
		}
		if subAt+2 < len(args) {
			return c.evalArgs(prog+" explore", args[subAt+2:])
		}
		return "interactive shell (" + prog + " explore)"
	case prog == "yarn" && sub == "node" && subAt >= 0:
		return c.gateCall(cl.with(append([]arg{litArg("node")}, args[subAt+1:]...)))
	}
	return ""
}
