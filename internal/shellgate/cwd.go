package shellgate

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The working directory is followed through cd, pushd and popd, so that
// cd /etc; rm x or cd /usr && tee y are judged as writes under /etc and
// /usr. The walk is in source order; a subshell, a command substitution, a
// pipeline element or a background job gets its own copy; after a branch
// (if, case, &&, ||) the directory is any of the ones it may have ended in;
// a loop whose body changes directory, a call of a function that does, and
// a cd to a run-time path leave it unknown, and a relative write under an
// unknown directory is blocked.

type frameKind int

const (
	frameNone  frameKind = iota
	frameScope           // restores the directory when it ends
	frameMerge           // merges the directories it may end in
)

type frame struct {
	kind frameKind
	cwd  []string
	fn   bool        // a function body: pop funcStack
	post syntax.Node // arithmetic judged when the frame ends
}

// enter opens the frame for node n.
func (c *checker) enter(n syntax.Node) {
	f := frame{cwd: c.cwd}
	switch n := n.(type) {
	case *syntax.Subshell, *syntax.CmdSubst, *syntax.ProcSubst:
		f.kind = frameScope
	case *syntax.Stmt:
		if n.Background || n.Coprocess || c.inPipe(n) {
			f.kind = frameScope
		}
	case *syntax.FuncDecl:
		f.kind, f.fn = frameScope, true
		name := ""
		if n.Name != nil {
			name = n.Name.Value
		}
		c.funcStack = append(c.funcStack, name)
	case *syntax.IfClause, *syntax.CaseClause:
		f.kind = frameMerge
	case *syntax.BinaryCmd:
		if n.Op == syntax.AndStmt || n.Op == syntax.OrStmt {
			f.kind = frameMerge
		}
	case *syntax.WhileClause, *syntax.ForClause:
		f.kind = frameMerge
		if c.env.hasCd[n] {
			// A later iteration starts wherever the previous one ended.
			c.cwd = []string{unknownDir}
		}
	}
	c.frames = append(c.frames, f)
}

// inPipe reports a statement that is one side of a pipe: it runs in a
// subshell of its own.
func (c *checker) inPipe(s *syntax.Stmt) bool {
	return c.env.stdinFrom[s] != nil || c.env.pipeTo[s] != nil
}

// leave closes the innermost frame.
func (c *checker) leave() {
	if len(c.frames) == 0 {
		return
	}
	f := c.frames[len(c.frames)-1]
	c.frames = c.frames[:len(c.frames)-1]
	switch f.kind {
	case frameScope:
		c.cwd = f.cwd
	case frameMerge:
		c.cwd = unionDirs(f.cwd, c.cwd)
	}
	if f.fn && len(c.funcStack) > 0 {
		c.funcStack = c.funcStack[:len(c.funcStack)-1]
	}
	if f.post != nil && c.reason == "" {
		c.reason = c.arithNode(f.post)
	}
}

// afterCall applies what a simple command does to the working directory.
func (c *checker) afterCall(s *syntax.Stmt) {
	name, words := callName(s)
	switch {
	case name == "cd" || name == "chdir":
		c.chdir(c.resolveAll(words[1:]), false)
	case name == "pushd":
		c.chdir(c.resolveAll(words[1:]), true)
	case name == "popd":
		if n := len(c.dirStack); n > 0 {
			c.oldCwd, c.cwd = c.cwd, c.dirStack[n-1]
			c.dirStack = c.dirStack[:n-1]
		} else {
			c.oldCwd, c.cwd = c.cwd, []string{unknownDir}
		}
	case c.env.cdFuncs[name] && !c.inlined:
		c.oldCwd, c.cwd = c.cwd, []string{unknownDir}
	}
}

// chdir moves to the directory named by the operand of cd or pushd.
func (c *checker) chdir(args []arg, push bool) {
	var target *arg
	for i := range args {
		a := args[i]
		if a.lit && (a.val == "-L" || a.val == "-P" || a.val == "-e" || a.val == "-@" || a.val == "--") {
			continue
		}
		target = &args[i]
		break
	}
	prev := c.cwd
	var next []string
	switch {
	case target == nil:
		next = []string{"~"}
		if push {
			next = []string{unknownDir} // pushd alone swaps with the stack
		}
	case target.pat == "":
		next = prev // cd "" stays
	case target.lit && target.val == "-":
		next = c.oldCwd
		if next == nil {
			next = []string{unknownDir}
		}
	case push && target.lit && (strings.HasPrefix(target.val, "+") || strings.HasPrefix(target.val, "-")),
		target.run() || isDyn(target.pat[0]) && target.pat != "~",
		target.pat[0] != '/' && target.pat[0] != '~' && c.env.vars["CDPATH"] != nil: // CDPATH may send it anywhere
		next = []string{unknownDir}
	default:
		for _, d := range prev {
			next = unionDirs(next, []string{joinDir(d, target.pat)})
		}
	}
	if push {
		c.dirStack = append(c.dirStack, prev)
	}
	c.oldCwd, c.cwd = prev, next
}

// write checks a write to path word a in every directory the script may be in.
func (c *checker) write(a arg, what string) string {
	if a.run() {
		return "write to a run-time path (" + what + "); it could name any file"
	}
	for _, p := range c.inCwd(a.pat) {
		if strings.IndexByte(p, anyRun) >= 0 {
			return "write under an unknown directory after cd (" + what + ")"
		}
		shown := a.val
		if p != a.pat {
			shown = display(p) // the path as resolved against the directory cd went to
		}
		if r := protectedWrite(arg{val: shown, pat: p, lit: a.lit}, what); r != "" {
			return r
		}
	}
	return ""
}

// display renders a pattern for a reason: wildcards become *.
func display(p string) string {
	return strings.Map(func(r rune) rune {
		if r <= anyTok {
			return '*'
		}
		return r
	}, p)
}

// allTargets is targets for each word of as.
func (c *checker) allTargets(as []arg) []arg {
	var all []arg
	for _, a := range as {
		all = append(all, c.targets(a)...)
	}
	return all
}

// targets returns path word a as seen from each directory the script may
// be in, for the rules that classify targets (rm, chmod, tar -C).
func (c *checker) targets(a arg) []arg {
	ps := c.inCwd(a.pat)
	out := make([]arg, 0, len(ps))
	for _, p := range ps {
		b := a
		b.pat = p
		if p != a.pat {
			b.lit = a.lit && !isWild(p)
			b.val = display(p)
		}
		out = append(out, b)
	}
	return out
}
