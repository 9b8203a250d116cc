package shellgate

import (
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// callCtx is one simple command about to be gated.
type callCtx struct {
	args     []arg
	redirs   []*syntax.Redirect // redirections of the statement (here-documents feed stdin)
	piped    bool               // stdin is the output of another command
	pipedOut bool               // stdout goes into another command
	dynTail  bool               // run-time arguments will be appended (xargs)
	stmt     *syntax.Stmt       // the statement, for what it reads on stdin (nil when synthesised)
	assigns  []*syntax.Assign   // VAR=value words before the command
}

func (cl callCtx) with(args []arg) callCtx {
	cl.args = args
	return cl
}

// progName reduces a command word to the name the tables use: the
// lower-cased basename, so /usr/bin/curl and ./Curl both become "curl".
func progName(v string) string {
	v = strings.TrimRight(v, "/")
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		v = v[i+1:]
	}
	return strings.ToLower(v)
}

// gateCall decides on one simple command. It returns the reason to block,
// or "" to allow.
func (c *checker) gateCall(cl callCtx) string {
	if c.budget.steps--; c.budget.steps < 0 {
		return "command too complex to analyse"
	}
	if len(cl.args) == 0 {
		return ""
	}
	name := cl.args[0]
	if !name.lit || name.glob {
		// $x, $(…), ${x}, c?rl, {cu,}rl: the program is chosen at run time.
		return "non-literal command name"
	}
	if n, ok := assignPrefix(name); ok && len(cl.args) > 1 {
		// sudo VAR=value cmd: wrappers pass leading assignments on.
		if r := c.checkVar(n, assignValue(name, n)); r != "" {
			return r
		}
		return c.gateCall(cl.with(cl.args[1:]))
	}
	prog := progName(name.val)
	if prog == "" {
		return ""
	}
	if r, ok := c.aliasCall(cl); ok {
		return r
	}
	for _, body := range c.env.funcBody[name.val] {
		if r := c.inlineCall(name.val, body, cl.args[1:]); r != "" {
			return r
		}
	}
	if loaderRe().MatchString(prog) {
		return c.unwrapLoader(cl)
	}
	if nameBuiltins()[prog] {
		for _, a := range cl.args[1:] {
			if subscriptSubst(a.val) {
				return "command substitution in an array subscript"
			}
		}
		if r := c.nameArgs(prog, cl.args); r != "" {
			return r
		}
	}
	if spec, ok := wrappers()[prog]; ok {
		return c.unwrap(prog, spec, cl)
	}
	if r := c.program(prog, cl); r != "" {
		return r
	}
	if r := c.cwdWrite(prog, cl.args); r != "" {
		return r
	}
	return c.contentCopy(prog, cl)
}

// program applies the rules for prog itself.
func (c *checker) program(prog string, cl callCtx) string {
	if networkPrograms()[prog] && !c.networkBounded() {
		return "network-capable program " + q(prog)
	}
	if prog == "printenv" {
		return "environment dump (printenv)"
	}
	if kind, ok := destructivePrograms()[prog]; ok {
		return fmt.Sprintf("%s (%s)", kind, q(prog))
	}
	if strings.HasPrefix(prog, "mkfs") {
		return "filesystem format (" + q(prog) + ")"
	}
	if shells()[prog] {
		return c.shell(prog, cl)
	}
	if m := interpreterRe().FindStringSubmatch(prog); m != nil {
		return c.interpreter(m[1], prog, cl)
	}
	if spec, ok := otherInterp()[prog]; ok {
		return c.otherInterpreter(prog, spec, cl)
	}
	return c.special(prog, cl)
}

// nameBuiltins take variable names, whose subscripts bash evaluates.
var nameBuiltins = sync.OnceValue(func() map[string]bool {
	return set("read", "printf", "unset", "test", "[", "declare", "typeset", "local",
		"export", "readonly", "mapfile", "readarray", "wait", "getopts", "let")
})

// nameArgs checks the variable names a builtin takes: their subscripts
// are evaluated, and a name with the integer attribute evaluates the value
// read into it.
func (c *checker) nameArgs(prog string, args []arg) string {
	var names []arg
	switch prog {
	case "unset", "export", "readonly", "local", "declare", "typeset":
		for _, a := range args[1:] {
			if !a.isFlag() {
				names = append(names, a)
			}
		}
	case "read":
		for _, n := range optOperands(args[1:], "adinNptu") {
			names = append(names, litArg(n))
		}
		for i, a := range args[1:] {
			if !a.isFlag() && !a.lit && (i == 0 || !args[i].isFlag()) {
				names = append(names, a)
			}
		}
		if v := shortOptValue(args[1:], "adinNptu", 'a'); v != "" {
			names = append(names, litArg(v))
		}
	case "printf":
		if len(args) > 1 && args[1].lit && args[1].val == "-v" && len(args) > 2 {
			names = append(names, args[2])
		} else if len(args) > 1 && args[1].lit && strings.HasPrefix(args[1].val, "-v") {
			names = append(names, litArg(args[1].val[2:]))
		}
	case "test", "[":
		for i, a := range args[1:] {
			if a.lit && (a.val == "-v" || a.val == "-R") && i+2 < len(args) {
				names = append(names, args[i+2])
			}
		}
	case "wait", "getopts", "mapfile", "readarray":
		if len(args) > 2 {
			names = append(names, args[len(args)-1])
		}
	}
	for _, n := range names {
		if r := c.subscriptName(n); r != "" {
			return r
		}
	}
	if prog == "read" || prog == "mapfile" || prog == "readarray" {
		for _, n := range names {
			base, _, _ := strings.Cut(n.val, "[")
			if vi := c.env.vars[base]; vi != nil && vi.integer {
				return "read into an integer variable evaluates the input as arithmetic"
			}
		}
	}
	return ""
}

// programFile blocks a program file option (awk -f, sed -f, make -f) whose
// value is really stdin or a process substitution: that is inline code.
func programFile(prog string, args []arg, i int, short string, long ...string) string {
	a := args[i]
	if !a.lit {
		return ""
	}
	var val arg
	switch {
	case a.val == short:
		if i+1 >= len(args) {
			return ""
		}
		val = args[i+1]
	case strings.HasPrefix(a.val, short) && !strings.HasPrefix(a.val, "--") && len(a.val) > len(short):
		val = litArg(a.val[len(short):])
	default:
		for _, l := range long {
			if v, has, ok := longOpt(a.val, strings.TrimPrefix(l, "--")); ok {
				val, _, _ = optValue(args, i, v, has)
				break
			}
		}
	}
	if val.procSubst || val.lit && stdinPath(val.val) {
		return "inline code for " + prog + " via a program file on stdin"
	}
	return ""
}

// evalArgs gates the words bash will join and run as code in a new shell.
func (c *checker) evalArgs(what string, words []arg) string {
	return c.joinCode(what, words, c.nested)
}

// joinCode gates the words joined as code, run by run.
func (c *checker) joinCode(what string, words []arg, run func(string) string) string {
	parts := make([]string, 0, len(words))
	for _, a := range words {
		if !a.lit {
			return "non-literal code passed to " + what
		}
		parts = append(parts, a.val)
	}
	if len(parts) == 0 {
		return ""
	}
	return run(strings.Join(parts, " "))
}

// codeValue gates the value of option flag at args[i] (attached or next).
func (c *checker) codeValue(what string, args []arg, i int, flag string) string {
	v := args[i].val
	var code arg
	switch {
	case strings.Contains(v, "="):
		code = litArg(v[strings.IndexByte(v, '=')+1:])
	case len(v) > len(flag) && strings.HasPrefix(v, flag):
		code = litArg(v[len(flag):])
	case i+1 < len(args):
		code = args[i+1]
	default:
		return ""
	}
	if !code.lit {
		return "non-literal command for " + what
	}
	return c.nested(code.val)
}

func sourceRule(prog string, cl callCtx) string {
	ops := cl.args[1:]
	for len(ops) > 0 && ops[0].isFlag() {
		if ops[0].val == "--" {
			ops = ops[1:]
			break
		}
		ops = ops[1:]
	}
	if len(ops) == 0 {
		return ""
	}
	s := ops[0]
	switch {
	case s.procSubst:
		return "process substitution sourced as a script (" + prog + " <(…))"
	case s.lit && stdinPath(s.val):
		if cl.piped {
			return "pipe into shell (" + prog + " " + clip(s.val, 20) + ")"
		}
		return "script read from stdin (" + prog + " " + clip(s.val, 20) + ")"
	}
	return ""
}

// stdinPath reports whether a script operand really names standard input
// or another already-open descriptor.
func stdinPath(p string) bool {
	switch {
	case p == "-", p == "/dev/stdin":
		return true
	case strings.HasPrefix(p, "/dev/fd/"), strings.HasPrefix(p, "/proc/") && strings.Contains(p, "/fd/"):
		return true
	}
	return false
}

func (c *checker) trap(args []arg) string {
	ops := args[1:]
	if len(ops) > 0 && ops[0].lit && (ops[0].val == "-p" || ops[0].val == "-l" || ops[0].val == "-P") {
		return ""
	}
	if len(ops) > 0 && ops[0].lit && ops[0].val == "--" {
		ops = ops[1:]
	}
	if len(ops) < 2 {
		return ""
	}
	if !ops[0].lit {
		return "non-literal trap handler"
	}
	return c.nested(ops[0].val)
}

func (c *checker) alias(args []arg) string {
	for _, a := range args[1:] {
		if !a.lit {
			return "non-literal alias"
		}
		if name, v, ok := strings.Cut(a.val, "="); ok {
			if r := c.nested(v); r != "" {
				return r
			}
			// Later calls of the alias are judged as what it expands to.
			words, err := splitWords(v)
			if err != nil || len(words) == 0 {
				return "alias that is not a simple command"
			}
			put(&c.env.aliases, name, words)
		}
	}
	return ""
}

func compgenRule(args []arg) string {
	for i, a := range args[1:] {
		if !a.lit || !strings.HasPrefix(a.val, "-") {
			continue
		}
		if strings.ContainsAny(a.val[1:], "ev") && !strings.HasPrefix(a.val, "--") {
			return "environment dump (compgen " + clip(a.val, 10) + ")"
		}
		if a.val == "-A" && i+2 < len(args) {
			switch args[i+2].val {
			case "variable", "export", "env":
				return "environment dump (compgen -A " + args[i+2].val + ")"
			}
		}
	}
	return ""
}

// hasShortFlag reports whether a literal short-option cluster contains f.
func hasShortFlag(args []arg, f byte) bool {
	for _, a := range args {
		if a.isFlag() && !strings.HasPrefix(a.val, "--") && strings.IndexByte(a.val[1:], f) >= 0 {
			return true
		}
	}
	return false
}
