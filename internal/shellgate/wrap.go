package shellgate

import (
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
			// --she is --shell: every option the prefix could stand for
			// counts as seen.
			takesArg, isFlag := false, false
			for _, l := range spec.longArg {
				if _, _, ok := longOpt(v, strings.TrimPrefix(l, "--")); ok {
					o.seen[l], takesArg = true, true
				}
			}
			for _, l := range spec.longFlag {
				if _, _, ok := longOpt(v, strings.TrimPrefix(l, "--")); ok {
					o.seen[l], isFlag = true, true
				}
			}
			switch {
			case hasValue, isFlag && !takesArg:
			case takesArg && !isFlag:
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
		for _, a := range args[1:] {
			if a.lit && a.val == "--install" {
				return "busybox --install links its applets under their own names"
			}
		}
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
		if cl.stmt != nil && endlessOutput(c.env.stdinFrom[cl.stmt]) && unlimitedProcs(args) {
			return "fork bomb (xargs -P 0 on endless input)"
		}
	case "strace", "ltrace":
		if r := c.traceRule(prog, cl); r != "" {
			return r
		}
	case "valgrind":
		for i, a := range args {
			if val, has, ok := longOpt(a.val, "db-command"); a.lit && ok {
				v, _, _ := optValue(args, i, val, has)
				return c.codeArg("valgrind --db-command", v)
			}
		}
	case "parallel":
		return c.unwrapParallel(cl)
	case "watchexec":
		return c.unwrapWatchexec(cl)
	case "fd", "fdfind":
		return c.unwrapFd(cl)
	}
	if spec.scanAll {
		return c.scanAll(cl, 1)
	}
	o := skipOptions(args, 1, spec)
	if prog == "xargs" {
		if r := xargsReplace(args, o); r != "" {
			return r
		}
	}
	if o.start >= len(args) && cl.dynTail && prog != "xargs" {
		// xargs sudo: the program comes from xargs' input.
		return "run-time command via xargs (" + q(prog) + " without a command)"
	}
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
	case prog == "exec" && o.seen["a"]:
		if name := shortOptValue(args[1:o.start], "a", 'a'); name != "" {
			if r := c.argv0(name, cl.with(args[o.start:])); r != "" {
				return r
			}
		} else {
			return "non-literal exec -a name"
		}
	}
	if o.amb > maxAmbiguous {
		return c.scanAll(cl, o.start)
	}
	return c.gateFrom(cl, o.start, o.amb, spec.dynTail)
}

// unlimitedProcs reports xargs -P 0, which starts as many processes as it can.
func unlimitedProcs(args []arg) bool {
	for i, a := range args[1:] {
		v := a.val
		switch {
		case v == "-P" && i+2 < len(args):
			if args[i+2].val == "0" {
				return true
			}
		case v == "-P0" || strings.HasPrefix(v, "--max-procs=0") || strings.HasPrefix(v, "--max-p=0"):
			return true
		}
		if val, has, ok := longOpt(v, "max-procs"); ok && (has && val == "0" || !has && i+2 < len(args) && args[i+2].val == "0") {
			return true
		}
	}
	return false
}

// xargsReplace blocks xargs -I R R …: the command itself comes from the
// input.
func xargsReplace(args []arg, o wrapOpts) string {
	repl := ""
	for i := 1; i < o.start && i < len(args); i++ {
		v := args[i].val
		switch {
		case v == "-I" && i+1 < len(args):
			repl = args[i+1].val
		case strings.HasPrefix(v, "-I") && len(v) > 2:
			repl = v[2:]
		case v == "-i" || strings.HasPrefix(v, "-i") && !strings.HasPrefix(v, "--"):
			repl = "{}"
			if len(v) > 2 {
				repl = v[2:]
			}
		}
		if val, has, ok := longOpt(v, "replace"); ok {
			repl = "{}"
			if has {
				repl = val
			}
		}
	}
	if repl == "" || o.start >= len(args) {
		return ""
	}
	if strings.Contains(args[o.start].val, repl) {
		return "xargs runs a command taken from its input (" + clip(repl, 10) + " as the program)"
	}
	if codeHas(args[o.start:], repl) {
		return "xargs puts its input into code (" + clip(repl, 10) + ")"
	}
	return ""
}

// codeHas reports a shell command line (sh -c CODE …, eval …) whose code
// contains marker: a file name or input line put there becomes code.
func codeHas(cmd []arg, marker string) bool {
	if len(cmd) == 0 {
		return false
	}
	prog := progName(cmd[0].val)
	if prog == "eval" {
		for _, a := range cmd[1:] {
			if strings.Contains(a.val, marker) {
				return true
			}
		}
		return false
	}
	if !shells()[prog] {
		return false
	}
	for i, a := range cmd[1:] {
		if a.isFlag() && !strings.HasPrefix(a.val, "--") && strings.Contains(a.val, "c") {
			return i+2 < len(cmd) && strings.Contains(cmd[i+2].val, marker)
		}
		if !a.isFlag() {
			break
		}
	}
	return false
}

// traceRule: strace and ltrace can attach to other processes, write their
// log into a command (-o '|cmd') and set the traced program's environment.
func (c *checker) traceRule(prog string, cl callCtx) string {
	args := cl.args
	for i, a := range args[1:] {
		i++
		if !a.lit {
			continue
		}
		v := a.val
		if _, _, ok := longOpt(v, "attach"); ok || v == "-p" || strings.HasPrefix(v, "-p") && isDigits(v[2:]) {
			return "attaching to a running process (" + prog + " -p)"
		}
		var out arg
		found := false
		if val, has, ok := longOpt(v, "output"); ok {
			out, _, found = optValue(args, i, val, has)
		} else if v == "-o" || strings.HasPrefix(v, "-o") {
			out, _, found = optValue(args, i, v[2:], len(v) > 2)
		}
		if found {
			if !out.lit {
				return "non-literal " + prog + " -o"
			}
			if strings.HasPrefix(out.val, "|") || strings.HasPrefix(out.val, "!") {
				return c.nested(out.val[1:])
			}
			if r := c.write(out, prog+" -o"); r != "" {
				return r
			}
		}
		var env arg
		found = false
		if val, has, ok := longOpt(v, "env"); ok {
			env, _, found = optValue(args, i, val, has)
		} else if v == "-E" || strings.HasPrefix(v, "-E") {
			env, _, found = optValue(args, i, v[2:], len(v) > 2)
		}
		if found {
			name, _, _ := strings.Cut(env.val, "=")
			if r := c.checkVar(name, assignValue(env, name)); r != "" {
				return r
			}
		}
	}
	return ""
}

// unwrapParallel: GNU parallel runs its command once per input; with no
// command, each input (after :::) is itself a command line.
func (c *checker) unwrapParallel(cl callCtx) string {
	args := cl.args
	for i, a := range args[1:] {
		if a.lit && (a.val == ":::" || a.val == "::::" || a.val == ":::+") {
			if i == 0 {
				return c.evalEach("parallel", args[i+2:])
			}
			break
		}
	}
	return c.scanAll(cl, 1)
}

// evalEach gates each word as a command line of its own.
func (c *checker) evalEach(what string, words []arg) string {
	for _, w := range words {
		if w.lit && strings.HasPrefix(w.val, ":::") {
			continue
		}
		if r := c.codeArg(what, w); r != "" {
			return r
		}
	}
	return ""
}

// unwrapWatchexec: watchexec runs its command through a shell.
func (c *checker) unwrapWatchexec(cl callCtx) string {
	args := cl.args
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a.lit && a.val == "--" {
			return c.gateCall(cl.with(args[i+1:]))
		}
		if a.isFlag() {
			continue
		}
		return c.evalArgs("watchexec", args[i:])
	}
	return ""
}

// unwrapFd: fd -x/--exec and -X/--exec-batch run a command on the files found.
func (c *checker) unwrapFd(cl callCtx) string {
	args := cl.args
	for i, a := range args {
		if !a.lit {
			continue
		}
		_, _, ok := longOptIn(a.val, "exec", "exec-batch")
		if ok || a.val == "-x" || a.val == "-X" {
			end := i + 1
			for end < len(args) && !(args[end].lit && args[end].val == ";") {
				end++
			}
			cmd := args[i+1 : end]
			if len(cmd) > 0 && strings.Contains(cmd[0].val, "{") {
				return "fd --exec runs the files it finds"
			}
			return c.gateCall(cl.with(cmd))
		}
	}
	return ""
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
	var dir *arg
	argv0 := ""
loop:
	for i < len(args) {
		a := args[i]
		if name, ok := envAssign(a); ok {
			if r := c.checkVar(name, assignValue(a, name)); r != "" {
				return r
			}
			i++
			continue
		}
		if !a.lit {
			break
		}
		v := a.val
		hasVal := strings.Contains(v, "=")
		switch {
		case v == "--":
			i++
			break loop
		case v == "-S" || strings.HasPrefix(v, "-S") && len(v) > 2 || isLongOf(v, "split-string"):
			return c.envSplit(cl, i)
		case v == "-C" || strings.HasPrefix(v, "-C") && len(v) > 2 || isLongOf(v, "chdir"):
			val, has, _ := longOpt(v, "chdir")
			if strings.HasPrefix(v, "-C") {
				val, has = v[2:], len(v) > 2
			}
			if d, ok := takeValue(args, &i, val, has); ok {
				dir = &d
			}
			i++
		case v == "-a" || isLongOf(v, "argv0"):
			n, _ := takeLong(args, &i, "argv0")
			if !n.lit {
				return "non-literal env --argv0"
			}
			argv0 = n.val
			i++
		case (v == "-u" || isLongOf(v, "unset")) && !hasVal:
			i += 2
		case v == "-" || strings.HasPrefix(v, "-"):
			i++
		default:
			break loop
		}
	}
	if i >= len(args) {
		return "environment dump (env)"
	}
	sub := cl.with(args[i:])
	if argv0 != "" {
		if r := c.argv0(argv0, sub); r != "" {
			return r
		}
	}
	if dir != nil {
		saved := c.cwd
		c.chdir([]arg{*dir}, false)
		defer func() { c.cwd = saved }()
	}
	return c.gateCall(sub)
}

// assignValue is the value part of a NAME=VALUE word.
func assignValue(a arg, name string) arg {
	v := a
	v.val = strings.TrimPrefix(a.val, name+"=")
	v.pat = strings.TrimPrefix(a.pat, name+"=")
	return v
}

// varText is the text an assignment stores as far as the script shows:
// all of it, or its literal parts when the rest comes from the tool's
// environment ($NODE_OPTIONS --max-old-space-size=4096). Run-time text
// has none.
func varText(v arg) (string, bool) {
	switch {
	case v.lit || v.known:
		return v.val, true
	case v.pat != "" && !v.run():
		return v.val, true
	}
	return "", false
}

// isLongOf reports a word that could be the long option full.
func isLongOf(v, full string) bool {
	_, _, ok := longOpt(v, full)
	return ok
}

// envAssign: for env, every word with an = before the command is an
// assignment, whatever its name (BASH_FUNC_ls%%=() { …; } included).
func envAssign(a arg) (string, bool) {
	if name, ok := assignPrefix(a); ok {
		return name, true
	}
	if !a.lit || strings.HasPrefix(a.val, "-") {
		return "", false
	}
	if name, _, ok := strings.Cut(a.val, "="); ok && name != "" {
		return name, true
	}
	return "", false
}

// envSplit handles env -S 'cmd args' (the shebang helper): the string is
// split into words and run.
func (c *checker) envSplit(cl callCtx, i int) string {
	args := cl.args
	v := args[i].val
	var s arg
	next := i + 1
	val, hasVal, long := longOpt(v, "split-string")
	switch {
	case long && hasVal:
		s = arg{lit: true, val: val}
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
	f, err := parseBash(s.val)
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
		cval, chas, isCmd := longOptIn(v, "command", "session-command")
		switch {
		case v == "-c" || isCmd:
			code, _, ok := optValue(args, i, cval, chas)
			if !ok {
				return ""
			}
			return c.codeArg(prog+" -c", code)
		case prog == "runuser" && (v == "-u" || isLongOf(v, "user")):
			j := i + 2
			if j < len(args) && args[j].lit && args[j].val == "--" {
				j++
			}
			if j >= len(args) {
				return "interactive shell via runuser"
			}
			return c.gateCall(cl.with(args[j:]))
		case v == "-s" || v == "-g" || v == "-G" || v == "-w":
			i++
		case !strings.Contains(v, "=") && (isLongOf(v, "shell") || isLongOf(v, "group") || isLongOf(v, "supp-group") || isLongOf(v, "whitelist-environment")):
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
		if v == "-x" || isLongOf(v, "exec") {
			exec = true
		}
		if !strings.Contains(v, "=") && (v == "-n" || v == "-q" || isLongOf(v, "interval") || isLongOf(v, "equexit")) {
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
		if val, has, ok := longOpt(v, "command"); v == "-c" || ok {
			if code, _, found := optValue(args, i, val, has); found {
				return c.codeArg("flock -c", code)
			}
			return ""
		}
		if !strings.Contains(v, "=") && (v == "-w" || v == "-E" || isLongOf(v, "wait") || isLongOf(v, "timeout") || isLongOf(v, "conflict-exit-code")) {
			i++
		}
		i++
	}
	i++ // the lock file or descriptor
	if i >= len(args) {
		return ""
	}
	if val, has, ok := longOpt(args[i].val, "command"); args[i].lit && (args[i].val == "-c" || ok) {
		if code, _, found := optValue(args, i, val, has); found {
			return c.codeArg("flock -c", code)
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
		if val, has, ok := longOpt(v, "command"); ok {
			if code, _, found := optValue(args, i, val, has); found {
				return c.codeArg("script -c", code)
			}
			return ""
		}
		if !strings.HasPrefix(v, "--") && strings.HasSuffix(v, "c") {
			if i+1 < len(args) {
				return c.codeArg("script -c", args[i+1])
			}
			return ""
		}
	}
	return "interactive shell via script"
}
