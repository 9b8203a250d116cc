package shellgate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A fork bomb needs processes that start processes without end. Its
// shapes are: a function that calls itself, directly or through others
// (:(){ :|:& };:), including through eval and sh -c strings in its body;
// and a loop that never ends, or runs a huge number of times, and starts
// a background job on each turn without waiting (while true; do x & done).

// forkScan gathers, node by node during the collection walk, what the
// fork-bomb rules need: for each function, the commands its body calls,
// looking into the literal code it hands to eval and to shells (an
// exported function is visible to bash -c), and the first loop that
// spawns background jobs without end.
type forkScan struct {
	calls map[string][]string
	loop  string
}

// node notes n, met inside the functions funcs (innermost last).
func (b *forkScan) node(n syntax.Node, funcs []string) {
	switch n := n.(type) {
	case *syntax.FuncDecl:
		if n.Name != nil {
			b.decl(n.Name.Value)
		}
	case *syntax.CallExpr:
		fn := ""
		for i := len(funcs) - 1; i >= 0 && fn == ""; i-- {
			fn = funcs[i] // the innermost function with a name
		}
		b.call(fn, n, 0)
	}
	if b.loop == "" {
		b.loop = spawnLoop(n)
	}
}

func (b *forkScan) decl(name string) {
	if _, ok := b.calls[name]; !ok {
		put(&b.calls, name, nil)
	}
}

// call records that function fn runs the command of m.
func (b *forkScan) call(fn string, m *syntax.CallExpr, depth int) {
	if fn == "" || len(m.Args) == 0 {
		return
	}
	a := resolve(m.Args[0])
	if !a.lit {
		return
	}
	put(&b.calls, fn, append(b.calls[fn], a.val))
	if code := inlineCode(a.val, m.Args[1:]); code != "" && depth < maxDepth {
		if f, err := parseBash(code); err == nil {
			b.nested(f, fn, depth+1)
		}
	}
}

// nested records the calls of code that function fn runs through eval or
// a shell; functions it defines are followed as their own. Each node is
// visited once, however deeply functions are nested.
func (b *forkScan) nested(n syntax.Node, fn string, depth int) {
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.FuncDecl:
			if m.Name == nil {
				return true
			}
			b.decl(m.Name.Value)
			b.nested(m.Body, m.Name.Value, depth)
			return false
		case *syntax.CallExpr:
			b.call(fn, m, depth)
		}
		return true
	})
}

// verdict blocks functions that call themselves, directly or through
// each other, and loops that spawn background jobs without end.
func (b *forkScan) verdict() string {
	if len(b.calls) == 0 {
		return b.loop
	}
	// Depth-first search for a cycle; state 1 = on the stack, 2 = done.
	state := map[string]int{}
	var cycle func(string) bool
	cycle = func(fn string) bool {
		switch state[fn] {
		case 1:
			return true
		case 2:
			return false
		}
		state[fn] = 1
		for _, callee := range b.calls[fn] {
			if _, isFunc := b.calls[callee]; isFunc && cycle(callee) {
				return true
			}
		}
		state[fn] = 2
		return false
	}
	names := make([]string, 0, len(b.calls))
	for fn := range b.calls {
		names = append(names, fn)
	}
	sort.Strings(names) // deterministic reason
	for _, fn := range names {
		if cycle(fn) {
			return fmt.Sprintf("fork bomb (recursive function %q)", clip(fn, maxNameLen))
		}
	}
	return b.loop
}

// inlineCode returns the literal code eval or sh -c is given.
func inlineCode(prog string, rest []*syntax.Word) string {
	words := make([]string, 0, len(rest))
	for _, w := range rest {
		a := resolve(w)
		if !a.lit {
			return ""
		}
		words = append(words, a.val)
	}
	switch p := progName(prog); {
	case p == "eval":
		return strings.Join(words, " ")
	case shells()[p]:
		for i, w := range words {
			if strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "c") && i+1 < len(words) {
				return words[i+1]
			}
		}
	}
	return ""
}

// maxTurns is how many turns of a loop that starts background jobs count
// as bounded.
const maxTurns = 1000

// spawnLoop reports a loop that starts background jobs on every turn,
// never waits for them, and runs without end or a huge number of times.
func spawnLoop(n syntax.Node) string {
	switch n := n.(type) {
	case *syntax.BinaryCmd:
		// yes | while read l; do x & done
		if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && endlessOutput(rightmost(n.X)) {
			if w, ok := leftmost(n.Y).Cmd.(*syntax.WhileClause); ok && !w.Until && len(w.Cond) > 0 && isCall(w.Cond[len(w.Cond)-1], "read") && spawns(w.Do) {
				return "fork bomb (endless input starting background jobs)"
			}
		}
	case *syntax.WhileClause:
		if endlessCond(n.Cond, n.Until) && spawns(n.Do) {
			return "fork bomb (endless loop starting background jobs)"
		}
	case *syntax.ForClause:
		if spawns(n.Do) && hugeLoop(n.Loop) {
			return "fork bomb (loop starting background jobs without bound)"
		}
	}
	return ""
}

// endlessOutput reports a command whose output never ends.
func endlessOutput(s *syntax.Stmt) bool {
	if s == nil {
		return false
	}
	name, words := callName(s)
	switch name {
	case "yes":
		return true
	case "cat", "head":
		if name == "head" && len(words) > 2 {
			return false
		}
		for _, w := range words[1:] {
			if a := resolve(w); a.lit && (a.val == "/dev/zero" || a.val == "/dev/urandom" || a.val == "/dev/random") {
				return true
			}
		}
	case "seq":
		return len(words) > 1 && resolve(words[len(words)-1]).val == "inf"
	}
	if w, ok := s.Cmd.(*syntax.WhileClause); ok {
		return endlessCond(w.Cond, w.Until)
	}
	return false
}

// endlessCond reports a loop condition that never changes: true, :,
// [ 1 ], (( 1 )), or the negation for until.
func endlessCond(cond []*syntax.Stmt, until bool) bool {
	if len(cond) == 0 {
		return false
	}
	s := cond[len(cond)-1]
	truth, known := constStatus(s)
	if s.Negated {
		truth = !truth
	}
	return known && truth != until
}

// constStatus returns the exit status a statement always has.
func constStatus(s *syntax.Stmt) (ok, known bool) {
	switch cmd := s.Cmd.(type) {
	case *syntax.CallExpr:
		if len(cmd.Args) == 0 {
			return false, false
		}
		name := resolve(cmd.Args[0])
		if !name.lit {
			return false, false
		}
		switch name.val {
		case "true", ":":
			return true, true
		case "false":
			return false, true
		case "[", "test":
			// [ 1 ] and test x: one literal, non-empty operand.
			ops := cmd.Args[1:]
			if name.val == "[" && len(ops) > 0 {
				ops = ops[:len(ops)-1]
			}
			if len(ops) == 1 {
				if a := resolve(ops[0]); a.lit {
					return a.val != "", true
				}
			}
		}
	case *syntax.ArithmCmd:
		if w, isWord := cmd.X.(*syntax.Word); isWord {
			if a := resolve(w); a.lit && isDigits(a.val) {
				return a.val != "0" && strings.Trim(a.val, "0") != "", true
			}
		}
	}
	return false, false
}

// spawns reports a loop body that starts a background job (anywhere in
// it) and never waits or pauses in the foreground on each turn.
func spawns(body []*syntax.Stmt) bool {
	bg := false
	for _, s := range body {
		syntax.Walk(s, func(n syntax.Node) bool {
			if st, ok := n.(*syntax.Stmt); ok && (st.Background || st.Coprocess) {
				bg = true
			}
			if _, ok := n.(*syntax.CoprocClause); ok {
				bg = true
			}
			return !bg
		})
	}
	if !bg {
		return false
	}
	for _, s := range body {
		if s.Background {
			continue
		}
		if name, _ := callName(s); name == "wait" || name == "sleep" {
			return false
		}
	}
	return true
}

// hugeLoop reports a for loop without end or with more than maxTurns
// turns: for ((;;)), for ((i=0; i<100000; i++)), {1..100000}, $(seq 1e6).
func hugeLoop(l syntax.Loop) bool {
	switch l := l.(type) {
	case *syntax.CStyleLoop:
		if l.Cond == nil {
			return true
		}
		if w, ok := l.Cond.(*syntax.Word); ok {
			a := resolve(w)
			return a.lit && isDigits(a.val) && strings.Trim(a.val, "0") != ""
		}
		if b, ok := l.Cond.(*syntax.BinaryArithm); ok {
			if w, isWord := b.Y.(*syntax.Word); isWord {
				if a := resolve(w); a.lit && isDigits(a.val) {
					n, err := strconv.Atoi(a.val)
					return err != nil || n > maxTurns
				}
			}
		}
	case *syntax.WordIter:
		turns := 0
		for _, w := range l.Items {
			turns += wordTurns(w)
			if turns > maxTurns {
				return true
			}
		}
	}
	return false
}

// wordTurns estimates how many words a for item expands to.
func wordTurns(w *syntax.Word) int {
	n := 1
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			for _, m := range braceCountRe().FindAllStringSubmatch(p.Value, -1) {
				lo, _ := strconv.Atoi(m[1])
				hi, _ := strconv.Atoi(m[2])
				n *= max(1, abs(hi-lo)+1)
				if n > maxTurns {
					return n // before several ranges could overflow
				}
			}
		case *syntax.CmdSubst:
			if len(p.Stmts) == 1 {
				if name, words := callName(p.Stmts[0]); name == "seq" || name == "yes" {
					if name == "yes" {
						return maxTurns + 1
					}
					last := resolve(words[len(words)-1])
					if v, err := strconv.ParseFloat(last.val, 64); err == nil && v > maxTurns || last.val == "inf" {
						return maxTurns + 1
					}
				}
			}
		}
		if n > maxTurns {
			return n
		}
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
