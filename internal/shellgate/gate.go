package shellgate

import (
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Decision is the gate's verdict on one command line.
type Decision struct {
	Allowed bool
	// Reason says why the command was blocked, briefly and without echoing
	// the input at length, e.g. `network-capable program "curl"`. It is safe
	// to show to the model. Empty when Allowed.
	Reason string
}

const (
	// maxInput bounds the work done per call; the tool's own message limit
	// is 64 KiB, so anything longer is not a command a model should send.
	maxInput = 128 << 10
	// maxDepth bounds bash -c 'bash -c "…"' nesting.
	maxDepth = 8
	// maxSteps bounds the number of simple commands examined, including the
	// candidates tried while unwrapping wrappers with ambiguous options.
	maxSteps = 20000
	// maxParsed bounds the bytes parsed in total, nested code included, so
	// that wrapper chains around a large bash -c string stay cheap.
	maxParsed = 4 * maxInput
	// maxNameLen is how much of a user-supplied name a reason may quote.
	maxNameLen = 40
)

// Policy is what the gate may leave to a boundary outside it.
type Policy struct {
	// NetworkBounded says a pod's NetworkPolicy or the kernel decides what
	// the command reaches: network-capable programs and git push pass, and
	// every other rule stands.
	NetworkBounded bool
}

// Check parses command as bash and decides whether it may run under p
// (the zero Policy: every rule on). It has no side effects and is safe for
// concurrent use.
func Check(command string, p Policy) (d Decision) {
	defer func() {
		// The gate is fail-closed even against its own bugs.
		if recover() != nil {
			d = Decision{Reason: "internal error while analysing the command"}
		}
	}()
	return decide(command, p)
}

// decide is Check without the panic guard, so that fuzzing sees panics.
func decide(command string, p Policy) Decision {
	if len(command) > maxInput {
		return Decision{Reason: "command too long to analyse"}
	}
	e := newEnv()
	e.policy = p
	for pass := 0; pass < maxPasses; pass++ {
		e.stale = false
		clear(e.memo)
		clear(e.arithMemo)
		c := &checker{budget: &budget{steps: maxSteps, bytes: maxParsed}, env: e, cwd: []string{"."}}
		if r := c.script(command); r != "" {
			return Decision{Reason: r}
		}
		if !e.stale {
			return Decision{Allowed: true}
		}
	}
	return Decision{Reason: "command too complex to analyse"}
}

// maxPasses bounds how often a script is judged again because nested code
// assigned a variable that an earlier part had already read.
const maxPasses = 3

// checker walks one parsed script. Nested scripts (bash -c '…', eval, here-
// documents fed to a shell) get a child checker sharing the budget.
type checker struct {
	depth   int
	budget  *budget
	sawProc bool // some earlier word mentioned "proc" (cd /proc/self; cat environ)
	reason  string
	// arithDone holds arithmetic nodes already scanned as part of an
	// enclosing one, so nesting costs linear rather than quadratic time.
	arithDone map[syntax.Node]bool

	env        *env     // what the script assigns (values.go); nil for context-free resolution
	valueDepth int      // nesting of values being computed
	funcStack  []string // functions whose body is being walked
	pos        *varInfo // positional parameters of nested code (bash -c CODE ARGS…)
	stdin      *value   // what nested code reads on standard input

	// The working directories the script may be in at the point walked,
	// relative to where it started ("." until a cd), and the frames that
	// restore or merge them when a subshell, branch or loop ends.
	cwd      []string
	oldCwd   []string
	dirStack [][]string
	frames   []frame
	// progFiles are files the script made copies of gated programs under
	// their own name; copying them again is copying the program.
	progFiles map[string]string
	// Function calls judged with the caller's arguments (names.go).
	inlining int   // depth of function bodies and aliases being followed
	posArgs  []arg // the caller's arguments, for "$@" and $1…
	inPos    bool  // posArgs holds them
	inlined  bool  // the last call was followed into a function body
}

// budget is the work one Check may still do; running out blocks.
type budget struct {
	steps int // simple commands
	bytes int // source bytes parsed
}

func (c *checker) script(src string) string {
	if c.depth > maxDepth {
		return "inline code nested too deeply"
	}
	if c.budget.bytes -= len(src); c.budget.bytes < 0 {
		return "command too complex to analyse"
	}
	f, err := parseBash(src)
	if err != nil {
		if c.depth > 0 {
			return "unparsable inline shell code"
		}
		return "unparsable command: " + clip(err.Error(), 80)
	}
	return c.file(f)
}

// parsers are reused across checks: making one costs a read buffer, and
// each parse starts afresh. One that panicked is not put back.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

func parseBash(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	return f, err
}

// nested gates a string that a shell will run as code, in a new process
// that starts in the current directory.
func (c *checker) nested(src string) string {
	return c.child().script(src)
}

// nestedHere gates code run by this very shell (eval): its directory
// changes persist.
func (c *checker) nestedHere(src string) string {
	child := c.child()
	r := child.script(src)
	c.cwd, c.oldCwd = child.cwd, child.oldCwd
	return r
}

func (c *checker) child() *checker {
	return &checker{depth: c.depth + 1, budget: c.budget, sawProc: c.sawProc, env: c.env,
		cwd: c.cwd, oldCwd: c.oldCwd, progFiles: c.progFiles, funcStack: c.funcStack, pos: c.pos,
		inlining: c.inlining}
}

func (c *checker) file(f *syntax.File) string {
	if c.env == nil {
		c.env = newEnv()
	}
	if len(c.cwd) == 0 {
		c.cwd = []string{"."}
	}
	if r := c.collect(f); r != "" {
		return r
	}
	// Verdicts reached while assignments were still being collected may
	// rest on part of them.
	clear(c.env.arithMemo)
	c.arithDone = nil
	if c.frames == nil {
		c.frames = make([]frame, 0, 32)
	}
	syntax.Walk(f, c.visit)
	return c.reason
}

// visit is called for every node of the tree, in source order, including
// the insides of subshells, blocks, functions, loops, command and process
// substitutions, here-documents and arithmetic.
func (c *checker) visit(n syntax.Node) bool {
	if n == nil {
		c.leave()
		return true
	}
	if c.reason != "" {
		return false
	}
	c.enter(n)
	var r string
	switch n := n.(type) {
	case *syntax.Stmt:
		if call, ok := n.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			args := c.resolveAll(call.Args)
			if c.inPos {
				args = c.expandPositional(call.Args)
			}
			c.inlined = false
			r = c.gateCall(callCtx{args: args, redirs: n.Redirs, piped: c.env.stdinFrom[n] != nil,
				pipedOut: c.env.pipeTo[n] != nil, stmt: n, assigns: call.Assigns})
			if r == "" {
				c.afterCall(n)
			}
		}
	case *syntax.FuncDecl:
		if n.Name != nil && c.env.funcArgs[n.Name.Value] != nil && !c.inPos {
			// Called where the gate sees it: the body is judged at each
			// call, with the caller's arguments (names.go).
			c.leave()
			return false
		}
	case *syntax.Word:
		r = c.word(n)
	case *syntax.Redirect:
		r = c.redirect(n)
	case *syntax.ParamExp:
		switch {
		case n.Excl && n.Index != nil && isAllIndex(n.Index):
			// ${!a[@]} lists the keys of an array.
		case n.Excl || n.Names != 0:
			r = "variable indirection ${!…} can dump the environment"
		case n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil &&
			strings.Contains(resolve(n.Exp.Word).pat, "P"):
			// ${x@P} expands x as a prompt, running any $(…) it holds.
			r = "prompt expansion ${x@P} runs command substitutions"
		default:
			r = c.paramArith(n, 0)
		}
	case *syntax.Assign:
		r = c.assign(n)
	case *syntax.ArrayElem:
		if n.Index != nil {
			r = c.arithRun(n.Index)
		}
	case *syntax.DeclClause:
		r = c.decl(n)
	case *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.LetClause, *syntax.CStyleLoop, *syntax.TestClause:
		if !c.arithDone[n] {
			r = c.arithmSubst(n)
		}
		// Judged when it ends, so that a command inside is named first.
		c.frames[len(c.frames)-1].post = n
	}
	if r != "" {
		c.reason = r
		c.leave()
		return false
	}
	return true
}

// isAllIndex reports the subscript [@] or [*].
func isAllIndex(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	return ok && (l.Value == "@" || l.Value == "*")
}

// rightmost finds the statement whose output a pipe carries.
func rightmost(s *syntax.Stmt) *syntax.Stmt { return pipeEnd(s, false) }

// leftmost finds the statement that actually receives a pipe's input.
func leftmost(s *syntax.Stmt) *syntax.Stmt { return pipeEnd(s, true) }

func pipeEnd(s *syntax.Stmt, left bool) *syntax.Stmt {
	for {
		b, ok := s.Cmd.(*syntax.BinaryCmd)
		if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) {
			return s
		}
		if s = b.Y; left {
			s = b.X
		}
	}
}

// arithNode checks the expressions of one arithmetic construct.
func (c *checker) arithNode(n syntax.Node) string {
	var xs []syntax.ArithmExpr
	switch n := n.(type) {
	case *syntax.ArithmCmd:
		xs = append(xs, n.X)
	case *syntax.ArithmExp:
		xs = append(xs, n.X)
	case *syntax.LetClause:
		xs = append(xs, n.Exprs...)
	case *syntax.CStyleLoop:
		xs = append(xs, n.Init, n.Cond, n.Post)
	case *syntax.TestClause:
		return c.testArith(n.X)
	}
	for _, x := range xs {
		if r := c.arithRun(x); r != "" {
			return r
		}
	}
	return ""
}

// word applies the rules that hold for a word wherever it appears.
func (c *checker) word(w *syntax.Word) string {
	a := c.resolve(w)
	if strings.Contains(a.pat, "proc") {
		c.sawProc = true
	}
	if environPath(a.pat, c.sawProc) {
		return "read of /proc/*/environ"
	}
	for _, p := range c.inCwd(a.pat) {
		if r := sensitiveRead(p); r != "" {
			return r
		}
	}
	if devNet(a.pat, false) && !c.networkBounded() {
		return "network access via /dev/tcp or /dev/udp"
	}
	return ""
}

// environPath reports whether a word could name /proc/<pid>/environ (or a
// task's environ), however it is spelled: /proc/self/environ, /proc/$PPID/environ,
// /proc/*/environ, "/proc/$$/env"* …
func environPath(pat string, sawProc bool) bool {
	if i := strings.LastIndex(pat, "/proc/"); i >= 0 {
		rest := pat[i+len("/proc/"):]
		for _, s := range []string{"1/environ", "self/environ", "1/task/1/environ"} {
			if match(rest, s) {
				return true
			}
		}
	}
	base := pat
	if i := strings.LastIndexByte(pat, '/'); i >= 0 {
		base = pat[i+1:]
	}
	if !hasLiteral(base, "") || !match(base, "environ") {
		return false
	}
	return sawProc || strings.Contains(pat, "proc") || strings.HasPrefix(pat, string(anyStr))
}

// devNet reports whether a word could be one of bash's virtual network
// files. In a redirection any wildcard after /dev/ counts.
func devNet(pat string, redirect bool) bool {
	if strings.Contains(pat, "/dev/tcp/") || strings.Contains(pat, "/dev/udp/") {
		return true
	}
	if !redirect {
		return false
	}
	if i := strings.Index(pat, "/dev/"); i >= 0 && isWild(pat[i:]) {
		return true
	}
	return isWild(pat) && (strings.Contains(pat, "tcp/") || strings.Contains(pat, "udp/"))
}

func (c *checker) redirect(r *syntax.Redirect) string {
	if r.Word == nil || r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc {
		return ""
	}
	a := c.resolve(r.Word)
	if devNet(a.pat, true) && !c.networkBounded() {
		return "network access via /dev/tcp or /dev/udp"
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		return c.write(a, "redirection")
	case syntax.DplOut:
		if a.lit && (isDigits(a.val) || a.val == "-") || a.numeric {
			return ""
		}
		return c.write(a, "redirection")
	}
	return ""
}

// assign checks variable assignments, wherever they appear.
func (c *checker) assign(as *syntax.Assign) string {
	if as.Name == nil {
		return ""
	}
	var val arg
	if as.Value != nil {
		val = c.resolve(as.Value)
	} else {
		val = arg{lit: true}
	}
	if as.Index != nil && !c.isAssoc(as.Name) {
		if r := c.arithRun(as.Index); r != "" {
			return r
		}
	}
	if vi := c.env.vars[as.Name.Value]; vi != nil && vi.integer && as.Value != nil {
		// declare -i x: every assignment is evaluated as arithmetic.
		if r := c.arithValue(argValue(val), 0); r != "" {
			return r
		}
	}
	return c.checkVar(as.Name.Value, val)
}

// checkVar applies the rules for assigning val to a variable named name.
func (c *checker) checkVar(name string, val arg) string {
	kind := codeVars()[name]
	switch {
	case strings.HasPrefix(name, "BASH_FUNC_"):
		return "function exported through the environment (" + clip(name, maxNameLen) + ")"
	case strings.HasSuffix(name, "_RUNNER") || strings.HasSuffix(name, "_WRAPPER"):
		kind = varCommand // CARGO_TARGET_…_RUNNER, RUSTC_WRAPPER
	case name == "GIT_DIR" || name == "GIT_COMMON_DIR":
		// A git directory elsewhere brings its own config, hooks and aliases.
		if !val.lit || !strings.HasSuffix(strings.TrimRight(val.val, "/"), ".git") {
			return "git directory outside .git (" + name + "); its config can run programs"
		}
	}
	if r, ok := c.carrierVar(name, val); ok {
		return r
	}
	switch kind {
	case varBlock:
		return fmt.Sprintf("assignment to %s can run code", clip(name, maxNameLen))
	case varCommand:
		text, ok := varText(val)
		if !ok {
			return fmt.Sprintf("non-literal command in %s", clip(name, maxNameLen))
		}
		if r := c.nested(text); r != "" {
			return r
		}
	case varPrompt:
		if !val.lit || strings.ContainsAny(val.val, "`") || strings.Contains(val.val, "$(") {
			return fmt.Sprintf("command substitution in %s", clip(name, maxNameLen))
		}
	}
	// A stored "$(…)" runs later through eval, arithmetic or a prompt.
	if val.lit && (strings.Contains(val.val, "$(") || strings.Contains(val.val, "`")) {
		return "command substitution stored in a variable"
	}
	return ""
}

// decl handles declare/typeset/export/readonly/local/nameref.
func (c *checker) decl(d *syntax.DeclClause) string {
	var opts, names []string
	for _, as := range d.Args {
		switch {
		case as.Name != nil:
			names = append(names, as.Name.Value)
		case as.Value != nil:
			a := c.resolve(as.Value)
			if !a.lit {
				return fmt.Sprintf("non-literal %s argument", d.Variant.Value)
			}
			if subscriptSubst(a.val) {
				return "command substitution in an array subscript"
			}
			if strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
				opts = append(opts, a.val)
			} else {
				names = append(names, a.val)
			}
		}
	}
	return declRule(d.Variant.Value, opts, len(names) > 0)
}

// declRule blocks the declaration builtins when they would print variables
// (and with them the environment) or create a nameref.
func declRule(variant string, opts []string, hasNames bool) string {
	if variant == "nameref" {
		return "variable indirection via nameref"
	}
	onlyFuncs := true
	for _, o := range opts {
		if strings.HasPrefix(o, "-") && strings.Contains(o, "n") && variant != "export" {
			return "variable indirection via declare -n"
		}
		if strings.Trim(o, "-+fF") != "" {
			onlyFuncs = false
		}
	}
	if hasNames || (len(opts) > 0 && onlyFuncs) {
		return ""
	}
	if variant == "local" && len(opts) == 0 {
		return ""
	}
	what := variant
	if len(opts) > 0 {
		what += " " + opts[0]
	}
	return fmt.Sprintf("environment dump (%s)", clip(what, maxNameLen))
}

// subscriptSubst reports a variable name whose array subscript holds a
// command substitution: bash evaluates it wherever it takes a name
// (read, printf -v, unset, [[ -v ]], let, arithmetic), running the command.
func subscriptSubst(s string) bool {
	return strings.Contains(s, "[") && (strings.Contains(s, "$(") || strings.Contains(s, "`"))
}

// arithmSubst blocks quoted "$(…)" inside arithmetic and [[ ]]: bash
// evaluates array subscripts there, so let 'a[$(cmd)]' runs cmd.
func (c *checker) arithmSubst(n syntax.Node) string {
	r := ""
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m.(type) {
		case *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.LetClause, *syntax.CStyleLoop, *syntax.TestClause:
			if c.arithDone == nil {
				c.arithDone = map[syntax.Node]bool{}
			}
			c.arithDone[m] = true
		}
		if w, ok := m.(*syntax.Word); ok {
			a := resolve(w)
			if strings.Contains(a.val, "$(") || strings.Contains(a.val, "`") {
				r = "command substitution inside arithmetic or [[ ]]"
			}
		}
		return r == ""
	})
	return r
}

// clip shortens user-controlled text quoted in a reason.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// q quotes a name for a reason.
func q(s string) string { return fmt.Sprintf("%q", clip(s, maxNameLen)) }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// networkBounded: a checker outside a decision (no env) has every rule on.
func (c *checker) networkBounded() bool { return c.env != nil && c.env.policy.NetworkBounded }
