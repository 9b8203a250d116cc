package shellgate

import (
	"iter"
	"maps"
	"path"
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// The gate classifies programs by name, so a program copied, linked or
// renamed to another name (cp /bin/bash x; ./x -c …), started under
// another argv[0] (exec -a, env --argv0, ld.so --argv0), reached through
// the dynamic loader, an alias or a function that passes "$@" on, would
// escape its rules. The root fix is to refuse the renaming and to look
// through the indirections:
//
//   - copying, linking or moving a program the gate has rules for, or
//     writing its content into a file (cat /bin/bash > x, base64 /bin/sh),
//     is allowed only under a name the gate classifies the same way
//     (python3 → python, bash → sh, into a directory);
//   - a file the script made such a copy of counts as that program;
//   - exec -a NAME and env --argv0 NAME are judged under both names;
//   - the dynamic loader is a wrapper, and its --preload and --audit load code;
//   - aliases are expanded and function calls are judged with the caller's
//     arguments in place of "$@" and $1…

// specialPrograms are the programs special() has rules for.
func specialPrograms() map[string]programRule {
	programRulesOnce.Do(buildProgramRules)
	return programRules
}

// progKind is how the gate classifies a program name, "" when it has no
// rule for it. Two names of one kind are interchangeable.
func progKind(name string) string {
	switch {
	case name == "":
		return ""
	case shells()[name]:
		return "shell"
	case interpreterRe().MatchString(name):
		return "interp:" + interpreterRe().FindStringSubmatch(name)[1]
	case networkPrograms()[name]:
		return "net:" + name
	case strings.HasPrefix(name, "mkfs"):
		return "mkfs"
	case loaderRe().MatchString(name):
		return "loader"
	}
	if _, ok := otherInterp()[name]; ok {
		return "interp:" + name
	}
	if _, ok := destructivePrograms()[name]; ok {
		return "deny:" + name
	}
	if _, ok := wrappers()[name]; ok {
		return "wrap:" + name
	}
	_, ro := readOnly()[name]
	_, mu := mutating()[name]
	_, sw := subcommandWrappers()[name]
	if ro || mu || sw || specialPrograms()[name] != nil {
		return "tool:" + name
	}
	return ""
}

// programPath reports the kind of program a path word names: an installed
// program (a path whose last component the gate classifies), or a file the
// script made a copy of one.
func (c *checker) programPath(a arg) string {
	for _, p := range c.inCwd(a.pat) {
		if k := c.progFiles[path.Clean(p)]; k != "" {
			return k
		}
		if !strings.Contains(p, "/") {
			continue
		}
		base := p[strings.LastIndexByte(p, '/')+1:]
		if base == "" {
			continue
		}
		if isWild(base) {
			// /bin/ba?h, /usr/bin/{bash,x}: any program the pattern matches.
			if hasLiteral(base, "") || strings.IndexByte(base, anyStr) >= 0 {
				if name := gatedMatch(base); name != "" {
					return "glob:" + name
				}
			}
			continue
		}
		if k := progKind(strings.ToLower(base)); k != "" {
			return k
		}
	}
	return ""
}

// gatedMatch returns a program name with rules that pattern p matches.
func gatedMatch(p string) string {
	for _, names := range []iter.Seq[string]{maps.Keys(shells()), maps.Keys(networkPrograms()),
		maps.Keys(specialPrograms()), maps.Keys(interpreterNames()), maps.Keys(wrappers()),
		maps.Keys(otherInterp()), maps.Keys(destructivePrograms())} {
		for n := range names {
			if match(p, n) {
				return n
			}
		}
	}
	return ""
}

// interpreterNames are common spellings interpreterRe accepts.
var interpreterNames = sync.OnceValue(func() map[string]bool {
	return set("python", "python2", "python3", "pypy", "pypy3", "perl", "perl5", "ruby",
		"node", "nodejs", "php", "lua", "luajit")
})

// copyName checks cp/ln/install/mv of sources to dest (nil: into the
// directory named by -t), and records copies made under their own name.
func (c *checker) copyName(prog string, srcs []arg, dest *arg, intoDir bool) string {
	for _, s := range srcs {
		kind := c.programPath(s)
		if kind == "" {
			continue
		}
		name := display(s.pat[strings.LastIndexByte(s.pat, '/')+1:])
		target := ""
		switch {
		case intoDir || len(srcs) > 1 || dest.lit && strings.HasSuffix(dest.val, "/"):
			target = path.Join(dest.val, name)
		case !dest.lit:
			return "copy of program " + q(name) + " to a run-time name (" + prog + ")"
		default:
			base := path.Base(dest.val)
			if dest.val == "." || dest.val == ".." {
				target = path.Join(dest.val, name)
			} else if progKind(strings.ToLower(base)) != kind {
				return "copy of program " + q(name) + " under another name " + q(base) + " (" + prog + ")"
			} else {
				target = dest.val
			}
		}
		if c.progFiles == nil {
			c.progFiles = map[string]string{}
		}
		for _, p := range c.inCwd(litArg(target).pat) {
			c.progFiles[path.Clean(p)] = kind
		}
	}
	return ""
}

// metadataPrograms read a program file without reproducing its content.
var metadataPrograms = sync.OnceValue(func() map[string]bool {
	return set("ls", "stat", "file", "ldd", "readlink", "realpath", "which", "type",
		"command", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "md5sum", "b2sum",
		"cksum", "sum", "du", "wc", "nm", "objdump", "readelf", "size", "test", "[", "echo", "printf",
		"dirname", "basename", "cmp", "diff", "grep", "egrep", "fgrep", "rg", "strings", "whereis",
		"cp", "ln", "install", "mv", "rm", "chmod", "chown", "chgrp", "touch", "ldconfig", "hash")
})

// contentCopy blocks a program that reads a gated program's file and sends
// what it reads to a file or a pipe: the copy can be run under any name.
func (c *checker) contentCopy(prog string, cl callCtx) string {
	if metadataPrograms()[prog] || !c.outputKept(prog, cl) {
		return ""
	}
	for _, a := range cl.args[1:] {
		if a.isFlag() {
			continue
		}
		if strings.HasPrefix(a.val, "if=") {
			a = litArg(a.val[3:])
		}
		if k := c.programPath(a); k != "" {
			return "copy of program " + q(display(path.Base(a.pat))) + " through " + q(prog)
		}
	}
	for _, r := range cl.redirs {
		if (r.N == nil || r.N.Value == "0") && r.Op == syntax.RdrIn {
			a := c.resolve(r.Word)
			if k := c.programPath(a); k != "" {
				return "copy of program " + q(display(path.Base(a.pat))) + " through " + q(prog)
			}
		}
	}
	return ""
}

// outputKept reports a command whose output goes to a file, or to a pipe
// into anything but a program that only measures it (wc, sha256sum, …).
func (c *checker) outputKept(prog string, cl callCtx) bool {
	if prog == "tee" || prog == "sponge" {
		for _, a := range cl.args[1:] {
			if !a.isFlag() {
				return true
			}
		}
	}
	if cl.pipedOut {
		reader, _ := callName(c.env.pipeTo[cl.stmt])
		return cl.stmt == nil || !metadataPrograms()[reader]
	}
	for _, r := range cl.redirs {
		if (r.N == nil || r.N.Value == "1") && isOutRedirect(r.Op) {
			a := c.resolve(r.Word)
			if !(a.lit && writableDev()[a.val]) {
				return true
			}
		}
	}
	return false
}

// loaderRe matches the dynamic loader, which runs any program given to it.
var loaderRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^ld(-linux[-a-z0-9_.]*|-musl-[a-z0-9_]+|64)?\.so(\.[0-9]+)*$`)
})

// unwrapLoader: ld.so [options] PROGRAM ARGS… runs PROGRAM; --preload and
// --audit load libraries into it, --argv0 renames it.
func (c *checker) unwrapLoader(cl callCtx) string {
	args := cl.args
	argv0 := ""
	i := 1
	for ; i < len(args) && args[i].isFlag(); i++ {
		v := args[i].val
		switch {
		case isLongOf(v, "preload") || isLongOf(v, "audit"):
			return "the dynamic loader loads a library into the program (" + clip(v, 12) + ")"
		case isLongOf(v, "argv0"):
			n, _ := takeLong(args, &i, "argv0")
			if !n.lit {
				return "non-literal ld.so --argv0"
			}
			argv0 = n.val
		case !strings.Contains(v, "=") && (isLongOf(v, "library-path") || isLongOf(v, "inhibit-rpath") ||
			isLongOf(v, "glibc-hwcaps-prepend") || isLongOf(v, "glibc-hwcaps-mask")):
			i++
		}
	}
	if i >= len(args) {
		return ""
	}
	sub := cl.with(args[i:])
	if argv0 != "" {
		if r := c.argv0(argv0, sub); r != "" {
			return r
		}
	}
	return c.gateCall(sub)
}

// argv0 gates a command started under another name (exec -a NAME, env
// --argv0 NAME): multi-call programs such as busybox pick what they do
// from that name, and bash invoked as sh or rbash changes behaviour, so the
// command is judged under both names.
func (c *checker) argv0(name string, cl callCtx) string {
	if len(cl.args) == 0 {
		return ""
	}
	as := append([]arg{litArg(name)}, cl.args[1:]...)
	return c.gateCall(cl.with(as))
}

// maxInline bounds how deeply function calls are followed into bodies.
const maxInline = 4

// inlineCall judges a call of a function the script defines with the
// caller's arguments in place of "$@" and $1…: f(){ bash "$@"; }; f -c CODE
// is bash -c CODE.
func (c *checker) inlineCall(name string, body *syntax.Stmt, args []arg) string {
	if c.inlining >= maxInline {
		// The body is judged only at its calls: it must not go unjudged.
		return "function calls nested too deeply to analyse"
	}
	child := &checker{depth: c.depth, budget: c.budget, sawProc: c.sawProc, env: c.env,
		cwd: c.cwd, oldCwd: c.oldCwd, progFiles: c.progFiles, inlining: c.inlining + 1,
		funcStack: []string{name}, posArgs: args, inPos: true}
	syntax.Walk(body, child.visit)
	if child.reason == "" {
		// The function ran in this shell: its cd is the caller's.
		c.cwd, c.oldCwd = child.cwd, child.oldCwd
		c.inlined = true
	}
	return child.reason
}

// expandPositional replaces the words "$@", "$*" and $1… of a function
// body by the caller's arguments.
func (c *checker) expandPositional(words []*syntax.Word) []arg {
	out := make([]arg, 0, len(words))
	for _, w := range words {
		switch n := positionalWord(w); {
		case n == "@" || n == "*":
			out = append(out, c.posArgs...)
		case n != "":
			i := int(n[0] - '0')
			if i >= 1 && i <= len(c.posArgs) {
				out = append(out, c.posArgs[i-1])
			}
		default:
			out = append(out, c.resolve(w))
		}
	}
	return out
}

// positionalWord returns "@", "*" or the digit of a word that is exactly
// "$@", $@, "$1", ${1} …, or "".
func positionalWord(w *syntax.Word) string {
	if len(w.Parts) != 1 {
		return ""
	}
	p := w.Parts[0]
	if dq, ok := p.(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
		p = dq.Parts[0]
	}
	pe, ok := p.(*syntax.ParamExp)
	if !ok || pe.Param == nil || pe.Slice != nil || pe.Repl != nil || pe.Exp != nil || pe.Index != nil || pe.Length || pe.Excl {
		return ""
	}
	v := pe.Param.Value
	if v == "@" || v == "*" || len(v) == 1 && v[0] >= '1' && v[0] <= '9' {
		return v
	}
	return ""
}

// aliasCall expands an alias defined earlier in the script.
func (c *checker) aliasCall(cl callCtx) (string, bool) {
	name := cl.args[0]
	if !name.lit || c.env.aliases == nil {
		return "", false
	}
	words, ok := c.env.aliases[name.val]
	if !ok || c.inlining >= maxInline {
		return "", false
	}
	c.inlining++
	defer func() { c.inlining-- }()
	return c.gateCall(cl.with(append(append([]arg(nil), words...), cl.args[1:]...))), true
}
