package shellgate

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// collect records, before a file is judged, every assignment it makes,
// the callers' arguments of its functions, what feeds each pipe, and which
// loops and functions change directory; it returns why the file is a fork
// bomb, if it is one. The tree is walked once: what only depends on its
// shape is noted on the way, and the assignments, which read the callers'
// arguments, are replayed in source order once every call is known (so
// that $1 in a function body assigned before the call, local n=$1, already
// sees them).
func (c *checker) collect(f *syntax.File) string {
	w := &collector{c: c, stack: make([]syntax.Node, 0, 16)}
	syntax.Walk(f, w.visit)
	if r := w.verdict(); r != "" {
		return r
	}
	e := c.env
	for _, p := range w.later {
		if d, ok := p.n.(*syntax.FuncDecl); ok && d.Name != nil {
			name := d.Name.Value
			put(&e.funcs, name, true)
			if !slices.Contains(e.funcBody[name], d.Body) {
				put(&e.funcBody, name, append(e.funcBody[name], d.Body))
			}
			if e.hasCd[d] {
				put(&e.cdFuncs, name, true)
			}
		}
	}
	for _, p := range w.later {
		if call, ok := p.n.(*syntax.CallExpr); ok {
			c.recordCall(call)
		}
	}
	for _, p := range w.later {
		c.funcStack = p.funcs
		c.collectNode(p)
	}
	c.funcStack = nil
	return ""
}

// collector is the state of the collection walk.
type collector struct {
	forkScan
	c     *checker
	stack []syntax.Node // the nodes around the one visited
	funcs []string      // the functions around it, innermost last; never written in place
	later []pending
}

func (w *collector) visit(n syntax.Node) bool {
	if n == nil {
		if _, ok := w.stack[len(w.stack)-1].(*syntax.FuncDecl); ok {
			w.funcs = w.funcs[:len(w.funcs)-1]
		}
		w.stack = w.stack[:len(w.stack)-1]
		return true
	}
	w.stack = append(w.stack, n)
	w.node(n, w.funcs)
	p := pending{n: n, funcs: w.funcs}
	switch n := n.(type) {
	case *syntax.FuncDecl:
		name := ""
		if n.Name != nil {
			name = n.Name.Value
		}
		// A copy, so that the stacks kept by pending nodes stay as they were.
		w.funcs = append(w.funcs[:len(w.funcs):len(w.funcs)], name)
	case *syntax.CallExpr:
		switch name, _ := builtinName(n); name {
		case "cd", "pushd", "popd", "chdir":
			w.c.markCd(w.stack)
		case "read", "mapfile", "readarray":
			p.stack = slices.Clone(w.stack) // where its input comes from
		}
	case *syntax.BinaryCmd, *syntax.DeclClause, *syntax.Assign, *syntax.ForClause,
		*syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.CoprocClause:
	default:
		return true
	}
	w.later = append(w.later, p)
	return true
}

// pending is a node whose assignments wait for the end of the walk.
type pending struct {
	n     syntax.Node
	funcs []string      // the functions around it
	stack []syntax.Node // the nodes around a read, for where its input comes from
}

// put sets m[k], making the map on first use: most scripts leave most of
// them empty.
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = map[K]V{}
	}
	(*m)[k] = v
}

// collectNode records what one node assigns.
func (c *checker) collectNode(p pending) {
	e := c.env
	switch n := p.n.(type) {
	case *syntax.BinaryCmd:
		if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
			put(&e.stdinFrom, leftmost(n.Y), n.X)
			put(&e.pipeTo, rightmost(n.X), leftmost(n.Y))
		}
	case *syntax.DeclClause:
		c.declFlags(n)
	case *syntax.Assign:
		c.collectAssign(n)
	case *syntax.ForClause:
		if wi, ok := n.Loop.(*syntax.WordIter); ok && wi.Name != nil {
			var v value
			if !wi.InPos.IsValid() {
				v = c.positional()
			} else {
				vs := make([]value, 0, len(wi.Items))
				for _, w := range wi.Items {
					vs = append(vs, argValue(c.resolve(w)))
				}
				v = union(vs)
			}
			e.assignVar(wi.Name.Value, v)
			if n.Select {
				e.assignVar("REPLY", runValue)
			}
		}
	case *syntax.BinaryArithm:
		if isAssignOp(n.Op) {
			if name := arithName(n.X); name != "" {
				e.assignVar(name, numValue)
			}
		}
	case *syntax.UnaryArithm:
		if n.Op == syntax.Inc || n.Op == syntax.Dec {
			if name := arithName(n.X); name != "" {
				e.assignVar(name, numValue)
			}
		}
	case *syntax.CallExpr:
		c.collectCall(n, p.stack)
	case *syntax.CoprocClause:
		name := "COPROC"
		if n.Name != nil {
			if a := resolve(n.Name); a.lit {
				name = a.val
			}
		}
		e.assignVar(name, numValue)
		e.assignVar(name+"_PID", numValue)
	}
}

// declFlags marks the names declare/local/… gives integer or associative
// attributes.
func (c *checker) declFlags(d *syntax.DeclClause) {
	var flags []string
	for _, as := range d.Args {
		if as.Naked && as.Name == nil && as.Value != nil {
			if a := resolve(as.Value); a.lit && (strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+")) {
				flags = append(flags, a.val)
			}
		}
	}
	for _, as := range d.Args {
		if as.Name == nil {
			continue
		}
		vi := c.env.info(as.Name.Value)
		for _, f := range flags {
			if f[0] == '-' && strings.Contains(f, "i") {
				vi.integer = true
			}
			if f[0] == '-' && strings.Contains(f, "A") {
				vi.assoc = true
			}
		}
	}
}

func (c *checker) collectAssign(as *syntax.Assign) {
	if as.Name == nil {
		return
	}
	name := as.Name.Value
	vi := c.env.info(name)
	if as.Index != nil && !vi.assoc && c.arithRun(as.Index) != "" {
		vi.keysRun = true
	}
	if as.Index != nil && vi.assoc {
		if w, ok := as.Index.(*syntax.Word); ok && c.resolve(w).run() {
			vi.keysRun = true
		}
	}
	switch {
	case as.Array != nil:
		for _, el := range as.Array.Elems {
			if el.Index != nil {
				if w, ok := el.Index.(*syntax.Word); ok && c.resolve(w).run() {
					vi.keysRun = true
				}
			}
			if el.Value != nil {
				c.env.assignVar(name, argValue(c.resolve(el.Value)))
			}
		}
	case as.Value != nil:
		v := argValue(c.resolve(as.Value))
		if vi.integer {
			v = numValue
		}
		if as.Append {
			v = concat(anyValue, v)
		}
		c.env.assignVar(name, v)
	default:
		// declare x / local x: declared empty.
		c.env.assignVar(name, litValue(""))
	}
}

// builtinName is the literal name a simple command runs, through builtin
// and command, with the words from it on; no words when it is not literal.
func builtinName(call *syntax.CallExpr) (string, []*syntax.Word) {
	name, words := "", call.Args
	for len(words) > 0 {
		a := resolve(words[0])
		if !a.lit {
			return "", nil
		}
		name = a.val
		if (name == "builtin" || name == "command") && len(words) > 1 {
			words = words[1:]
			continue
		}
		break
	}
	return name, words
}

// collectCall handles the builtins that assign (read, mapfile, getopts,
// printf -v, set --), sourcing and directory changes; the walk has marked
// the loops and functions around a cd.
func (c *checker) collectCall(call *syntax.CallExpr, stack []syntax.Node) {
	if len(call.Args) == 0 {
		return
	}
	e := c.env
	name, words := builtinName(call)
	if words == nil {
		return
	}
	args := c.resolveAll(words[1:])
	switch name {
	case "read", "mapfile", "readarray":
		withValue, def := "dnOsuCc", "MAPFILE"
		if name == "read" {
			withValue, def = "adinNptu", "REPLY"
		}
		names := optOperands(args, withValue)
		if name == "read" && hasShortOpt(args, withValue, 'a') {
			names = nil
			if v := shortOptValue(args, withValue, 'a'); v != "" {
				names = []string{v}
			}
		}
		if len(names) == 0 {
			names = []string{def}
		}
		in := c.stdinAt(stack)
		for _, n := range names {
			e.assignVar(n, in)
		}
	case "getopts":
		if len(args) >= 2 && args[1].lit {
			e.assignVar(args[1].val, runValue)
		}
		e.assignVar("OPTARG", runValue)
	case "printf":
		if len(args) >= 2 && args[0].lit && strings.HasPrefix(args[0].val, "-v") {
			target, rest := strings.TrimPrefix(args[0].val, "-v"), args[1:]
			if target == "" {
				target, rest = args[1].val, args[2:]
			}
			if i := strings.IndexByte(target, '['); i > 0 {
				target = target[:i]
			}
			e.assignVar(target, printfValue(rest))
		}
	case "declare", "typeset", "local", "export", "readonly":
		for _, a := range args {
			if n, v, ok := strings.Cut(a.val, "="); ok && a.lit {
				e.assignVar(n, litValue(v))
			} else if !a.lit {
				e.sourced = true
				e.touch("sourced")
			}
		}
	case "set":
		for _, a := range args {
			if !a.isFlag() || a.val == "--" {
				e.setPos = true
				e.touch("setpos")
				break
			}
		}
	case "source", ".":
		e.sourced = true
		e.touch("sourced")
	case "wait":
		for i, a := range args {
			if a.lit && a.val == "-p" && i+1 < len(args) {
				e.assignVar(args[i+1].val, numValue)
			}
		}
	case "shopt":
		for _, a := range args {
			if a.lit && a.val == "cdable_vars" {
				c.markCdWild()
			}
		}
	case "cd", "pushd", "popd", "chdir":
		if name == "popd" || !cdPlain(args) {
			c.markCdWild()
		}
	}
}

// recordCall adds a call's arguments to what its function's positional
// parameters may hold.
func (c *checker) recordCall(call *syntax.CallExpr) {
	if len(call.Args) == 0 {
		return
	}
	a := resolve(call.Args[0])
	e := c.env
	if !a.lit || !e.funcs[a.val] {
		return
	}
	vi := e.funcArgs[a.val]
	if vi == nil {
		vi = &varInfo{}
		put(&e.funcArgs, a.val, vi)
	}
	changed := false
	for _, w := range call.Args[1:] {
		arg := c.resolve(w)
		v := argValue(arg)
		if arg.split && !arg.numeric && !arg.lit && !arg.known || usesPositional(w) {
			// "$@" may become several arguments, and the caller's own
			// parameters are not known here.
			v = runValue
		}
		changed = vi.add(v) || changed
	}
	if len(call.Args) == 1 {
		changed = vi.add(litValue("")) || changed
	}
	if changed {
		e.touch("f:" + a.val)
	}
}

// usesPositional reports a word that expands $@, $* or $1….
func usesPositional(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if pe, ok := n.(*syntax.ParamExp); ok && pe.Param != nil {
			v := pe.Param.Value
			if v == "@" || v == "*" || isDigits(v) && v != "0" {
				found = true
			}
		}
		return !found
	})
	return found
}

func (c *checker) markCdWild() {
	c.env.cdWild = true
	c.env.touch("cdwild")
}

// cdPlain reports a cd into a literal subdirectory of where it is.
func cdPlain(args []arg) bool {
	for _, a := range args {
		if a.isFlag() {
			continue
		}
		return a.lit && plainRelative(a.val)
	}
	return false
}

// markCd notes that the loops and functions around a cd change directory,
// up to the nearest subshell.
func (c *checker) markCd(stack []syntax.Node) {
	for i := len(stack) - 1; i >= 0; i-- {
		switch n := stack[i].(type) {
		case *syntax.Subshell, *syntax.CmdSubst, *syntax.ProcSubst:
			return
		case *syntax.Stmt:
			if n.Background || n.Coprocess {
				return
			}
		case *syntax.WhileClause, *syntax.ForClause, *syntax.FuncDecl:
			if c.env.hasCd[n] {
				return
			}
			put(&c.env.hasCd, n, true)
		}
	}
}

// stdinAt is what a read at the top of stack reads: the input redirection
// of the nearest statement that has one, or what is piped into it.
func (c *checker) stdinAt(stack []syntax.Node) value {
	for i := len(stack) - 1; i >= 0; i-- {
		s, ok := stack[i].(*syntax.Stmt)
		if !ok {
			continue
		}
		if _, ok := c.env.stdinFrom[s]; ok || stdinRedirect(s.Redirs) != nil {
			return c.stdinValue(s)
		}
	}
	if c.stdin != nil {
		return *c.stdin
	}
	return runValue
}

// optOperands returns the literal non-option words, skipping the values of
// the short options in withValue.
func optOperands(args []arg, withValue string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.isFlag() {
			if a.val == "--" {
				for _, b := range args[i+1:] {
					out = append(out, b.val)
				}
				break
			}
			for j := 1; j < len(a.val); j++ {
				if strings.IndexByte(withValue, a.val[j]) >= 0 {
					if j == len(a.val)-1 {
						i++
					}
					break
				}
			}
			continue
		}
		if a.lit {
			out = append(out, a.val)
		}
	}
	return out
}

func hasShortOpt(args []arg, withValue string, f byte) bool {
	return shortOptValue(args, withValue, f) != "" || hasShortFlag(args, f)
}

// shortOptValue returns the value given to short option f.
func shortOptValue(args []arg, withValue string, f byte) string {
	for i, a := range args {
		if !a.isFlag() || strings.HasPrefix(a.val, "--") {
			continue
		}
		for j := 1; j < len(a.val); j++ {
			ch := a.val[j]
			if strings.IndexByte(withValue, ch) < 0 {
				continue
			}
			v := a.val[j+1:]
			if v == "" && i+1 < len(args) {
				v = args[i+1].val
			}
			if ch == f {
				return v
			}
			break
		}
	}
	return ""
}

func isAssignOp(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
		return true
	}
	return false
}

// arithName is the variable an arithmetic assignment writes.
func arithName(x syntax.ArithmExpr) string {
	w, ok := x.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		return ""
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		return p.Value
	case *syntax.ParamExp:
		if p.Param != nil {
			return p.Param.Value
		}
	}
	return ""
}
