package shellgate

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxAmbiguous caps how many positions are tried when unknown options make
// the wrapped command's position uncertain; beyond it every suffix is gated.
const maxAmbiguous = 3

// wrapOpts is the result of skipping a wrapper's own options.
type wrapOpts struct {
	start int             // index of the wrapped command (len(args) if none)
	amb   int             // unknown options that may have consumed a word
	seen  map[string]bool // options seen, as written ("-s", "--login") or single letters ("s")
}

// skipOptions walks a wrapper's options per spec, starting at args[i].
func skipOptions(args []arg, i int, spec wrapSpec) wrapOpts {
	o := wrapOpts{seen: map[string]bool{}}
	operands := spec.operands
	for i < len(args) {
		a := args[i]
		if !a.lit {
			if operands > 0 {
				operands--
				i++
				continue
			}
			break // a non-literal command name: gateCall will block it
		}
		v := a.val
		if v == "--" {
			i++
			for operands > 0 && i < len(args) {
				operands--
				i++
			}
			break
		}
		if len(v) < 2 || v[0] != '-' {
			if operands > 0 {
				operands--
				i++
				continue
			}
			break
		}
		o.seen[v] = true
		i++
		if strings.HasPrefix(v, "--") {
			name, _, hasValue := strings.Cut(v, "=")
			o.seen[name] = true
			switch {
			case hasValue, slices.Contains(spec.longFlag, name):
			case slices.Contains(spec.longArg, name):
				i++
			default:
				o.amb++
			}
			continue
		}
		if isDigits(v[1:]) { // nice -10
			continue
		}
		for j := 1; j < len(v); j++ {
			ch := v[j]
			o.seen[string(ch)] = true
			if strings.IndexByte(spec.shortArg, ch) >= 0 {
				if j == len(v)-1 {
					i++ // value is the next word
				}
				break
			}
			if strings.IndexByte(spec.shortFlag, ch) < 0 {
				o.amb++
			}
		}
	}
	o.start = i
	return o
}

// unwrap gates the command run by a wrapper such as sudo, env or timeout.
func (c *checker) unwrap(prog string, spec wrapSpec, cl callCtx) string {
	args := cl.args
	switch prog {
	case "env":
		return c.unwrapEnv(cl)
	case "su", "runuser", "sg":
		return c.unwrapSu(prog, cl)
	case "watch":
		return c.unwrapWatch(cl)
	case "flock":
		return c.unwrapFlock(cl)
	case "script":
		return c.unwrapScript(cl)
	case "busybox", "toybox":
		i := 1
		for i < len(args) && args[i].isFlag() {
			i++
		}
		return c.gateFrom(cl, i, 0, false)
	case "nix-shell":
		for i, a := range args {
			if a.lit && (a.val == "--run" || a.val == "--command") {
				if i+1 >= len(args) || !args[i+1].lit {
					return "non-literal nix-shell command"
				}
				return c.nested(args[i+1].val)
			}
		}
		return "interactive shell (nix-shell)"
	case "npx":
		for i, a := range args {
			if a.lit && (a.val == "-c" || strings.HasPrefix(a.val, "--call")) {
				return c.codeValue("npx -c", args, i, "-c")
			}
		}
	case "xargs":
		cl.tailRun = c.xargsInput(cl).run()
	case "strace", "ltrace":
		for _, a := range args[1:] {
			if a.lit && (a.val == "-p" || strings.HasPrefix(a.val, "--attach") || (strings.HasPrefix(a.val, "-p") && isDigits(a.val[2:]))) {
				return "attaching to a running process (" + prog + " -p)"
			}
		}
	}
	if spec.scanAll {
		return c.scanAll(cl, 1)
	}
	o := skipOptions(args, 1, spec)
	if o.start >= len(args) {
		switch {
		case prog == "sudo" && (o.seen["s"] || o.seen["i"] || o.seen["--shell"] || o.seen["--login"]):
			return "interactive root shell (sudo -s/-i)"
		case prog == "doas" && o.seen["s"]:
			return "interactive root shell (doas -s)"
		}
		return spec.noCmd
	}
	switch {
	case prog == "sudo" && (o.seen["e"] || o.seen["--edit"]):
		return "editing files as root (sudo -e)"
	case prog == "command" && (o.seen["v"] || o.seen["V"]):
		return "" // command -v only looks the name up
	}
	if o.amb > maxAmbiguous {
		return c.scanAll(cl, o.start)
	}
	return c.gateFrom(cl, o.start, o.amb, spec.dynTail)
}

// xargsInput is what xargs reads its arguments from: a file (-a), or
// standard input.
func (c *checker) xargsInput(cl callCtx) value {
	for _, a := range cl.args[1:] {
		if !a.isFlag() {
			break
		}
		if a.val == "-a" || strings.HasPrefix(a.val, "--arg") || strings.HasPrefix(a.val, "-a") && !strings.HasPrefix(a.val, "--") {
			return runValue
		}
	}
	return c.stdinValue(cl.stmt)
}

// gateFrom gates args[start:] as a command; with amb > 0 the next amb
// non-option positions are gated as well, in case unknown options consumed
// the words before them.
func (c *checker) gateFrom(cl callCtx, start, amb int, dynTail bool) string {
	args := cl.args
	for i, tried := start, 0; i < len(args) && tried <= amb; i++ {
		if i > start && args[i].isFlag() {
			continue
		}
		tried++
		sub := cl.with(args[i:])
		sub.dynTail = cl.dynTail || dynTail
		sub.tailRun = cl.tailRun && sub.dynTail
		if r := c.gateCall(sub); r != "" {
			return r
		}
	}
	return ""
}

// scanAll gates every suffix that starts at a non-option word. It is the
// fail-closed answer for wrappers whose options we do not model.
func (c *checker) scanAll(cl callCtx, from int) string {
	for i := from; i < len(cl.args); i++ {
		if cl.args[i].isFlag() {
			continue
		}
		if r := c.gateCall(cl.with(cl.args[i:])); r != "" {
			return r
		}
	}
	return ""
}

// unwrapEnv handles env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]… [COMMAND…].
// With no command env prints the environment.
func (c *checker) unwrapEnv(cl callCtx) string {
	args := cl.args
	i := 1
	for i < len(args) {
		a := args[i]
		if name, ok := assignPrefix(a); ok {
			val := arg{lit: a.lit, val: strings.TrimPrefix(a.val, name+"=")}
			if r := c.checkVar(name, val); r != "" {
				return r
			}
			i++
			continue
		}
		if !a.lit {
			break
		}
		v := a.val
		switch {
		case v == "--":
			i++
		case v == "-S" || v == "--split-string" || strings.HasPrefix(v, "--split-string=") || (strings.HasPrefix(v, "-S") && len(v) > 2):
			return c.envSplit(cl, i)
		case v == "-u" || v == "--unset" || v == "-C" || v == "--chdir":
			i += 2
			continue
		case v == "-" || strings.HasPrefix(v, "-"):
			i++
			continue
		}
		break
	}
	if i >= len(args) {
		return "environment dump (env)"
	}
	return c.gateCall(cl.with(args[i:]))
}

// envSplit handles env -S 'cmd args' (the shebang helper): the string is
// split into words and run.
func (c *checker) envSplit(cl callCtx, i int) string {
	args := cl.args
	v := args[i].val
	var s arg
	next := i + 1
	switch {
	case strings.HasPrefix(v, "--split-string="):
		s = arg{lit: true, val: strings.TrimPrefix(v, "--split-string=")}
	case strings.HasPrefix(v, "-S") && len(v) > 2:
		s = arg{lit: true, val: v[2:]}
	case next < len(args):
		s = args[next]
		next++
	default:
		return ""
	}
	if !s.lit {
		return "non-literal env -S string"
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(s.val), "")
	if err != nil || len(f.Stmts) != 1 {
		return "unparsable env -S string"
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(f.Stmts[0].Redirs) > 0 {
		return "unparsable env -S string"
	}
	words := append(c.resolveAll(call.Args), args[next:]...)
	if len(words) == 0 {
		return "environment dump (env)"
	}
	if r := c.nested(s.val); r != "" {
		return r
	}
	return c.unwrapEnv(cl.with(append([]arg{{lit: true, val: "env"}}, words...)))
}

// assignPrefix reports whether a word starts with NAME=, the way env and
// bash recognise an assignment, even when the value is an expansion.
func assignPrefix(a arg) (string, bool) {
	p := a.pat
	eq := strings.IndexByte(p, '=')
	if eq <= 0 {
		return "", false
	}
	for i := 0; i < eq; i++ {
		ch := p[i]
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9') {
			return "", false
		}
	}
	return p[:eq], true
}

// unwrapSu handles su/runuser (-c CMD, or runuser -u USER CMD…) and
// sg GROUP [-c] CMD. Without a command they start an interactive shell.
func (c *checker) unwrapSu(prog string, cl callCtx) string {
	args := cl.args
	var operands []arg
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			operands = append(operands, a)
			continue
		}
		v := a.val
		switch {
		case v == "-c" || v == "--command" || v == "--session-command":
			if i+1 >= len(args) {
				return ""
			}
			return c.codeArg(prog+" -c", args[i+1])
		case strings.HasPrefix(v, "--command=") || strings.HasPrefix(v, "--session-command="):
			_, code, _ := strings.Cut(v, "=")
			return c.nested(code)
		case prog == "runuser" && (v == "-u" || v == "--user"):
			j := i + 2
			if j < len(args) && args[j].lit && args[j].val == "--" {
				j++
			}
			if j >= len(args) {
				return "interactive shell via runuser"
			}
			return c.gateCall(cl.with(args[j:]))
		case v == "-s" || v == "--shell" || v == "-g" || v == "--group" || v == "-G" || v == "--supp-group" || v == "-w" || v == "--whitelist-environment":
			i++
		case v == "-" || v == "--":
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--"):
			if k := strings.IndexByte(v, 'c'); k > 0 {
				if k < len(v)-1 {
					return c.nested(v[k+1:])
				}
				if i+1 < len(args) {
					return c.codeArg(prog+" -c", args[i+1])
				}
				return ""
			}
		case strings.HasPrefix(v, "-"):
		default:
			operands = append(operands, a)
		}
	}
	if prog == "sg" && len(operands) > 1 {
		return c.evalArgs("sg", operands[1:])
	}
	return "interactive shell via " + prog
}

// codeArg gates a word that will be run as shell code.
func (c *checker) codeArg(what string, a arg) string {
	if !a.lit {
		return "non-literal code passed to " + what
	}
	return c.nested(a.val)
}

// unwrapWatch: watch joins its arguments and runs them with sh -c, unless
// -x/--exec is given.
func (c *checker) unwrapWatch(cl callCtx) string {
	args := cl.args
	exec := false
	i := 1
	for i < len(args) && args[i].isFlag() {
		v := args[i].val
		if v == "--" {
			i++
			break
		}
		if v == "-x" || v == "--exec" {
			exec = true
		}
		if v == "-n" || v == "--interval" || v == "-q" || v == "--equexit" {
			i++
		}
		i++
	}
	if i >= len(args) {
		return ""
	}
	if exec {
		return c.gateCall(cl.with(args[i:]))
	}
	return c.evalArgs("watch", args[i:])
}

// unwrapFlock: flock [opts] FILE CMD… | flock [opts] FILE -c CMD | flock [opts] FD.
func (c *checker) unwrapFlock(cl callCtx) string {
	args := cl.args
	i := 1
	for i < len(args) && args[i].isFlag() {
		v := args[i].val
		if v == "-c" || v == "--command" {
			if i+1 < len(args) {
				return c.codeArg("flock -c", args[i+1])
			}
			return ""
		}
		if v == "-w" || v == "--wait" || v == "--timeout" || v == "-E" || v == "--conflict-exit-code" {
			i++
		}
		i++
	}
	i++ // the lock file or descriptor
	if i >= len(args) {
		return ""
	}
	if args[i].lit && (args[i].val == "-c" || args[i].val == "--command") {
		if i+1 < len(args) {
			return c.codeArg("flock -c", args[i+1])
		}
		return ""
	}
	return c.gateCall(cl.with(args[i:]))
}

// unwrapScript: script -c CMD runs CMD through a shell; without -c it
// starts an interactive shell.
func (c *checker) unwrapScript(cl callCtx) string {
	args := cl.args
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.isFlag() {
			continue
		}
		v := a.val
		if strings.HasPrefix(v, "--command=") {
			return c.nested(strings.TrimPrefix(v, "--command="))
		}
		if v == "--command" || (!strings.HasPrefix(v, "--") && strings.HasSuffix(v, "c")) {
			if i+1 < len(args) {
				return c.codeArg("script -c", args[i+1])
			}
			return ""
		}
	}
	return "interactive shell via script"
}
