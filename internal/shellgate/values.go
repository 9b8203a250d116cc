package shellgate

import (
	"path"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// A script builds words at run time: x=/proc; cat "$x/self/environ",
// f=$(printf /pr%sc o), read p < list. The gate follows every assignment it
// can see, so that an expansion is judged by what it may hold rather than
// treated as an opaque blank:
//
//   - text the script spells out (literals, globs, braces, echo and printf of
//     literals, here-documents read by cat) keeps its pattern;
//   - integers ($$, $!, $((…)), $(wc -l <f)) become anyTok;
//   - values from the environment the tool runs with, and the output of
//     programs that only name things (pwd, mktemp, git rev-parse, find .,
//     date), become anyStr: unknown, but not chosen by the command line;
//   - everything else that a program prints or a read receives becomes
//     anyRun: the command line could have made it anything at all.
//
// Assignments are collected for the whole script before it is judged
// (flow-insensitively: a variable may hold any of the values ever assigned
// to it), and nested code (eval, bash -c) adds its assignments as it is met;
// when that invalidates a value already used, the script is judged again.

// value is what an expansion may produce.
type value struct {
	text    string // the exact text, when exact
	pat     string // pattern: literal text and sentinels
	exact   bool   // no sentinel: the value is text
	numeric bool   // only ever an integer
}

var (
	anyValue = value{pat: string(anyStr)}
	runValue = value{pat: string(anyRun)}
	numValue = value{pat: string(anyTok), numeric: true}
)

func litValue(s string) value {
	return value{text: s, pat: quotedPat(s), exact: true}
}

func argValue(a arg) value {
	if a.lit && !a.glob || a.known {
		return litValue(a.val)
	}
	return value{pat: a.pat, numeric: a.numeric}
}

func (v value) run() bool { return strings.IndexByte(v.pat, anyRun) >= 0 }

// concat joins values as the shell joins adjacent word parts.
func concat(vs ...value) value {
	out := value{exact: true, numeric: len(vs) > 0}
	var text, pat strings.Builder
	for _, v := range vs {
		text.WriteString(v.text)
		pat.WriteString(v.pat)
		out.exact = out.exact && v.exact
		out.numeric = out.numeric && v.numeric
	}
	out.pat = pat.String()
	if out.exact {
		out.text = text.String()
		out.numeric = false
	}
	return out
}

// union is a value that may be any of vs.
func union(vs []value) value {
	if len(vs) == 0 {
		return litValue("")
	}
	first := vs[0]
	same, num, slash, opaque := true, true, false, false
	for _, v := range vs {
		if v.run() {
			return runValue
		}
		same = same && v.pat == first.pat
		num = num && v.numeric
		if v.pat == string(anyStr) {
			opaque = true
		} else {
			slash = slash || strings.ContainsAny(v.pat, "/\x00")
		}
	}
	switch {
	case same:
		return first
	case num:
		return numValue
	case opaque && !slash:
		// An unknown from the environment, or names without a directory.
		return anyValue
	case slash:
		// Alternatives that are paths cannot be merged into one pattern
		// without losing the directory they name: assume the worst.
		return runValue
	}
	return anyValue
}

// maxValues bounds the alternatives kept per variable.
const maxValues = 8

// varInfo is everything the script assigns to one variable.
type varInfo struct {
	vals    []value
	run     bool // some assignment is run-time text
	integer bool // declare -i: assignments are evaluated as arithmetic
	assoc   bool // declare -A: subscripts are strings, not arithmetic
	keysRun bool // some subscript is run-time text (${!a[@]} lists them)
}

func (vi *varInfo) add(v value) bool {
	if vi.run {
		return false
	}
	if v.run() {
		vi.run, vi.vals = true, nil
		return true
	}
	for _, old := range vi.vals {
		if old.pat == v.pat && old.numeric == v.numeric {
			return false
		}
	}
	if len(vi.vals) >= maxValues {
		vi.run, vi.vals = true, nil
		return true
	}
	vi.vals = append(vi.vals, v)
	return true
}

func (vi *varInfo) value() value {
	if vi.run {
		return runValue
	}
	return union(vi.vals)
}

// env is what the whole script (nested code included) assigns. It is shared
// by every checker of one Check and only ever grows.
type env struct {
	policy    Policy
	vars      map[string]*varInfo
	funcArgs  map[string]*varInfo       // positional parameters of a function, from its call sites
	funcs     map[string]bool           // functions the script defines
	funcBody  map[string][]*syntax.Stmt // every definition of each function
	aliases   map[string][]arg          // aliases defined so far, as words
	cdFuncs   map[string]bool           // functions that change the working directory
	sourced   bool                      // a file is sourced or parameters set by set --: unknown names
	setPos    bool                      // set -- changes the top-level positional parameters
	cdWild    bool                      // some cd goes somewhere other than a plain subdirectory
	assumed   map[string]bool           // keys read before anything was known about them
	stale     bool                      // an assumed key has since changed
	memo      map[*syntax.CmdSubst]value
	arithMemo map[string]string // verdict on each variable read by arithmetic
	// Structure noted by the collection pass for the walk that follows.
	stdinFrom map[*syntax.Stmt]*syntax.Stmt // the statement whose output feeds a pipe's reader
	pipeTo    map[*syntax.Stmt]*syntax.Stmt // the statement reading a pipe's output
	hasCd     map[syntax.Node]bool          // loops and functions whose body changes directory
}

func newEnv() *env { return &env{} }

// touch records that key changed; if it was already relied on, the
// script must be judged again.
func (e *env) touch(key string) {
	if e.assumed[key] {
		e.stale = true
	}
}

func (e *env) assume(key string) { put(&e.assumed, key, true) }

func (e *env) info(name string) *varInfo {
	vi := e.vars[name]
	if vi == nil {
		vi = &varInfo{}
		put(&e.vars, name, vi)
	}
	return vi
}

// assignVar records one assignment.
func (e *env) assignVar(name string, v value) {
	if e.info(name).add(v) {
		e.touch("v:" + name)
	}
}

// maxValueDepth bounds how deeply values nest (${a:-${b:-…}}, $(echo $(…))).
const maxValueDepth = 32

// partValue is the value of one expansion inside a word.
func (c *checker) partValue(p syntax.WordPart) value {
	if c.env == nil {
		if _, ok := p.(*syntax.ArithmExp); ok {
			return numValue
		}
		return anyValue
	}
	if c.valueDepth > maxValueDepth {
		return runValue
	}
	c.valueDepth++
	v := c.partValueAt(p)
	c.valueDepth--
	return v
}

func (c *checker) partValueAt(p syntax.WordPart) value {
	switch p := p.(type) {
	case *syntax.ParamExp:
		return c.paramValue(p)
	case *syntax.CmdSubst:
		if v, ok := c.env.memo[p]; ok {
			return v
		}
		v := c.producerValue(p.Stmts)
		put(&c.env.memo, p, v)
		return v
	case *syntax.ArithmExp:
		return numValue
	case *syntax.DblQuoted:
		return argValue(c.resolve(&syntax.Word{Parts: []syntax.WordPart{p}}))
	}
	return runValue
}

// specialParams hold integers the shell maintains.
var specialParams = sync.OnceValue(func() map[string]bool {
	return set("$", "!", "?", "#", "PPID", "BASHPID", "RANDOM", "SRANDOM", "LINENO",
		"SECONDS", "EPOCHSECONDS", "UID", "EUID", "HISTCMD", "COLUMNS", "LINES", "PIPESTATUS",
		"GROUPS", "SHLVL", "OPTIND", "BASH_SUBSHELL")
})

// paramValue is the value of $name, ${name…} and their operators.
func (c *checker) paramValue(p *syntax.ParamExp) value {
	if p.Param == nil {
		return runValue
	}
	name := p.Param.Value
	switch {
	case p.Length:
		return numValue
	case p.Excl && p.Index != nil:
		// ${!a[@]}: the keys of an array.
		if vi := c.env.vars[name]; vi != nil && (vi.keysRun || vi.assoc) {
			if vi.keysRun {
				return runValue
			}
			return anyValue
		}
		return numValue
	case p.Excl || p.Names != 0:
		return runValue
	}
	base := c.varValue(name)
	switch {
	case p.Slice != nil:
		return substring(base)
	case p.Repl != nil:
		return c.replace(base, p.Repl)
	case p.Exp != nil:
		return c.expansion(base, p.Exp)
	}
	return base
}

// varValue is the value of the variable name.
func (c *checker) varValue(name string) value {
	switch {
	case specialParams()[name]:
		return numValue
	case name == "_" || name == "BASH_REMATCH" || name == "OPTARG" || name == "REPLY" && c.env.vars[name] == nil:
		// $_ is the previous command's last argument: anything.
		return runValue
	case name == "@" || name == "*" || isDigits(name) && name != "0":
		return c.positional()
	case name == "0" || name == "-":
		return anyValue
	}
	if vi := c.env.vars[name]; vi != nil {
		return vi.value()
	}
	c.env.assume("v:" + name)
	c.env.assume("sourced")
	switch {
	case c.env.sourced:
		return runValue
	case name == "HOME":
		return value{pat: "~"}
	case name == "PWD":
		c.env.assume("cdwild")
		if c.env.cdWild {
			return runValue
		}
	}
	return anyValue
}

// positional is the value of $1…, "$@" and "$*" where they are read: in a
// function, whatever its callers pass; in nested code, the arguments it was
// given; at the top level, nothing (the tool passes none) unless set -- or a
// sourced file changes them.
func (c *checker) positional() value {
	if c.inPos {
		vs := make([]value, 0, len(c.posArgs))
		for _, a := range c.posArgs {
			vs = append(vs, argValue(a))
		}
		return union(vs)
	}
	if n := len(c.funcStack); n > 0 {
		fn := c.funcStack[n-1]
		c.env.assume("f:" + fn)
		if vi := c.env.funcArgs[fn]; vi != nil {
			return vi.value()
		}
		return runValue // called from places the gate does not see
	}
	c.env.assume("setpos")
	if c.env.setPos || c.env.sourced {
		return runValue
	}
	if c.pos != nil {
		return c.pos.value()
	}
	return litValue("")
}

// substring is a part of base (${x:1:2}, ${x#*/}): no new text, but no
// longer a known pattern either.
func substring(base value) value {
	switch {
	case base.run():
		return runValue
	case base.numeric:
		return numValue
	case !strings.ContainsAny(base.pat, "/\x00"):
		return value{pat: string(anyStr)}
	}
	return anyValue
}

// replace computes ${x/a/b} when everything is literal; otherwise the
// result can be assembled from pieces into anything.
func (c *checker) replace(base value, r *syntax.Replace) value {
	orig, with := litValue(""), litValue("")
	if r.Orig != nil {
		orig = argValue(c.resolve(r.Orig))
	}
	if r.With != nil {
		with = argValue(c.resolve(r.With))
	}
	if !base.exact || !orig.exact || !with.exact || strings.ContainsAny(orig.text, "*?[#%\\") {
		return runValue
	}
	if orig.text == "" {
		return base
	}
	if r.All {
		return litValue(strings.ReplaceAll(base.text, orig.text, with.text))
	}
	return litValue(strings.Replace(base.text, orig.text, with.text, 1))
}

// expansion handles ${x:-w}, ${x#w}, ${x^^}, ${x@Q} and the rest.
func (c *checker) expansion(base value, e *syntax.Expansion) value {
	word := litValue("")
	if e.Word != nil {
		word = argValue(c.resolve(e.Word))
	}
	switch e.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		return union([]value{base, word})
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
		return union([]value{litValue(""), word})
	case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		return base
	case syntax.RemSmallPrefix, syntax.RemLargePrefix, syntax.RemSmallSuffix, syntax.RemLargeSuffix:
		return substring(base)
	case syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
		if !base.exact {
			return runValue
		}
		s, conv := base.text, strings.ToUpper
		if e.Op == syntax.LowerFirst || e.Op == syntax.LowerAll {
			conv = strings.ToLower
		}
		if e.Op == syntax.UpperAll || e.Op == syntax.LowerAll {
			return litValue(conv(s))
		}
		if s != "" {
			s = conv(s[:1]) + s[1:]
		}
		return litValue(s)
	case syntax.OtherParamOps:
		switch word.text {
		case "Q", "A", "K", "k", "a":
			if base.run() {
				return runValue
			}
			return anyValue
		case "E":
			if base.exact {
				return litValue(decodeANSIC(base.text))
			}
		case "U", "u", "L":
			if base.exact {
				if word.text == "L" {
					return litValue(strings.ToLower(base.text))
				}
				return litValue(strings.ToUpper(base.text))
			}
		}
	}
	return runValue
}

// producerValue is what a command substitution (or a pipe) yields: the
// printed text for echo and printf of known words and for cat of a literal
// here-document, a name-like unknown for programs that only name things,
// and run-time text for everything else.
func (c *checker) producerValue(stmts []*syntax.Stmt) value {
	if len(stmts) == 1 {
		return c.stmtOutput(stmts[0])
	}
	vs := make([]value, 0, 2*len(stmts))
	for i, s := range stmts {
		if i > 0 {
			vs = append(vs, litValue("\n"))
		}
		vs = append(vs, c.stmtOutput(s))
	}
	return concat(vs...)
}

// stmtOutput is what one statement writes to its standard output.
func (c *checker) stmtOutput(s *syntax.Stmt) value {
	for _, r := range s.Redirs {
		if (r.N == nil || r.N.Value == "1") && isOutRedirect(r.Op) {
			return litValue("") // stdout goes to a file
		}
	}
	switch cmd := s.Cmd.(type) {
	case nil:
		return runValue // $(< file)
	case *syntax.CallExpr:
		if len(cmd.Args) == 0 {
			return litValue("")
		}
		return c.callOutput(s)
	case *syntax.BinaryCmd:
		switch cmd.Op {
		case syntax.Pipe, syntax.PipeAll:
			// The reader's output, when it only filters lines of its input.
			if filterOnly(cmd.Y) {
				in := c.stmtOutput(cmd.X)
				if wcLike(cmd.Y) {
					return numValue
				}
				return in
			}
			return c.stmtOutput(cmd.Y)
		case syntax.AndStmt:
			// $(cd dir && pwd): the directory cd went to.
			if isCall(cmd.Y, "pwd") && isCall(cmd.X, "cd") {
				return c.cdTargetValue(cmd.X)
			}
		}
	case *syntax.Subshell:
		return c.producerValue(cmd.Stmts)
	case *syntax.Block:
		return c.producerValue(cmd.Stmts)
	}
	return runValue
}

func isOutRedirect(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		return true
	}
	return false
}

// callName is the literal program name of a simple command, through
// builtin and command.
func callName(s *syntax.Stmt) (string, []*syntax.Word) {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok {
		return "", nil
	}
	words := call.Args
	for len(words) > 0 {
		a := resolve(words[0])
		if !a.lit {
			return "", nil
		}
		name := progName(a.val)
		if (name == "builtin" || name == "command") && len(words) > 1 {
			if next := resolve(words[1]); next.lit && (next.val == "-v" || next.val == "-V") {
				return "which", words[1:] // command -v NAME prints where NAME is
			}
			words = words[1:]
			continue
		}
		return name, words
	}
	return "", nil
}

func isCall(s *syntax.Stmt, name string) bool {
	n, _ := callName(s)
	return n == name
}

// lineFilters print some of their input lines unchanged (or only count
// them), so their output is no worse than their input.
var lineFilters = sync.OnceValue(func() map[string]bool {
	return set("head", "tail", "sort", "uniq", "tac", "shuf", "wc", "grep", "egrep", "fgrep", "cat")
})

func filterOnly(s *syntax.Stmt) bool {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
		return filterOnly(b.X) && filterOnly(b.Y)
	}
	name, words := callName(s)
	if !lineFilters()[name] {
		return false
	}
	for _, w := range words[1:] {
		a := resolve(w)
		if !a.lit {
			return false
		}
		switch {
		case name == "grep" || name == "egrep" || name == "fgrep":
			// -o prints parts of lines; file operands bring other text.
			if strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.Contains(a.val, "o") ||
				strings.HasPrefix(a.val, "--only") || strings.HasPrefix(a.val, "-f") || strings.HasPrefix(a.val, "--file") {
				return false
			}
		case !strings.HasPrefix(a.val, "-") && name != "head" && name != "tail":
			return false // a file operand: its content, not the input
		case (name == "head" || name == "tail") && !strings.HasPrefix(a.val, "-") && !isDigits(a.val):
			return false
		}
	}
	return true
}

func wcLike(s *syntax.Stmt) bool {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok {
		return wcLike(b.Y)
	}
	name, _ := callName(s)
	return name == "wc"
}

// numericPrograms print integers (and whitespace).
var numericPrograms = sync.OnceValue(func() map[string]bool {
	return set("nproc", "wc", "seq", "getconf", "pgrep", "pidof", "expr", "id", "tput", "jobs")
})

// namingPrograms print names the command line does not choose: user,
// host and system names, dates, temporary files.
var namingPrograms = sync.OnceValue(func() map[string]bool {
	return set("whoami", "hostname", "uname", "date", "mktemp", "tty", "logname", "arch",
		"pwd", "which", "type", "dirname", "basename", "realpath", "readlink", "nproc")
})

// callOutput models the output of one simple command.
func (c *checker) callOutput(s *syntax.Stmt) value {
	name, words := callName(s)
	if name == "" {
		return runValue
	}
	args := c.resolveAll(words[1:])
	switch name {
	case "echo":
		return echoValue(args)
	case "printf":
		return printfValue(args)
	case "cat":
		if len(args) == 0 || len(args) == 1 && args[0].lit && args[0].val == "-" {
			return c.stdinValue(s)
		}
		return runValue
	case "pwd":
		c.env.assume("cdwild")
		if c.env.cdWild {
			return runValue
		}
		return anyValue
	case "basename", "dirname":
		return nameOp(name, args)
	case "which", "type":
		// which X prints X's path: keep the name so a copy of it is seen.
		for _, a := range args {
			if a.lit && !strings.HasPrefix(a.val, "-") {
				return value{pat: string(anyStr) + "/" + a.pat}
			}
		}
		return anyValue
	case "git":
		return gitOutput(args)
	case "find", "ls", "grep", "egrep", "fgrep", "du":
		return c.listingOutput(name, args)
	case "go":
		if len(args) > 0 && args[0].lit && (args[0].val == "env" || args[0].val == "list" || args[0].val == "version") {
			return anyValue
		}
		return runValue
	case "realpath", "readlink":
		canon := name == "realpath"
		var ops []arg
		for _, a := range args {
			if a.run() || strings.Contains(a.pat, "proc") || strings.Contains(a.pat, "/dev/") {
				return runValue
			}
			if a.isFlag() {
				canon = canon || strings.ContainsAny(a.val[1:], "fem") && !strings.HasPrefix(a.val, "--")
				continue
			}
			ops = append(ops, a)
		}
		// The canonical name of an absolute path is, for the checks here,
		// that path (a system directory stays one).
		if canon && len(ops) == 1 && ops[0].lit && strings.HasPrefix(ops[0].val, "/") {
			return litValue(path.Clean(ops[0].val))
		}
		return anyValue
	case "date":
		for _, a := range args {
			if a.lit && (strings.HasPrefix(a.val, "-f") || strings.HasPrefix(a.val, "--f")) {
				return runValue
			}
		}
		return anyValue
	case "mktemp":
		return mktempValue(args)
	}
	switch {
	case numericPrograms()[name]:
		if name == "expr" || name == "id" && !allFlagsIn(args, "-u", "-g", "-G", "-ur", "-gr") {
			return anyValue
		}
		return numValue
	case namingPrograms()[name]:
		return anyValue
	case strings.HasSuffix(name, "sum") || name == "cksum":
		return anyValue
	}
	return runValue
}

func allFlagsIn(args []arg, flags ...string) bool {
	for _, a := range args {
		if !a.lit || !slices.Contains(flags, a.val) {
			return false
		}
	}
	return len(args) > 0
}

// mktempValue is the name mktemp prints: in /tmp, in the directory given
// by -p/--tmpdir, or where its template says (relative templates without
// -t are in the working directory).
func mktempValue(args []arg) value {
	dir, tmpl, inTmp := "", "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.lit:
			return anyValue
		case a.val == "-p" && i+1 < len(args):
			dir, inTmp = args[i+1].val, true
			i++
		case strings.HasPrefix(a.val, "--tmpdir="):
			dir, inTmp = strings.TrimPrefix(a.val, "--tmpdir="), true
		case a.val == "--tmpdir" || a.val == "-t" || strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.Contains(a.val, "t"):
			inTmp = true
		case strings.HasPrefix(a.val, "-"):
		default:
			tmpl = a.val
		}
	}
	switch {
	case strings.Contains(tmpl, "/") && !inTmp:
		dir = path.Dir(tmpl)
	case tmpl != "" && !inTmp:
		return value{pat: string(anySeg)} // a name in the working directory
	case dir == "":
		dir = "/tmp"
	}
	return value{pat: litValue(strings.TrimSuffix(dir, "/")).pat + "/" + string(anySeg)}
}

// echoValue is what echo prints for these words.
func echoValue(args []arg) value {
	escapes := false
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !a.lit || len(a.val) < 2 || a.val[0] != '-' || strings.Trim(a.val[1:], "neE") != "" {
			break
		}
		if strings.ContainsRune(a.val, 'e') {
			escapes = true
		}
	}
	vs := make([]value, 0, 2*len(args))
	for j, a := range args[i:] {
		if j > 0 {
			vs = append(vs, litValue(" "))
		}
		vs = append(vs, argValue(a))
	}
	v := concat(vs...)
	if escapes && strings.Contains(v.text+v.pat, "\\") {
		if !v.exact {
			return runValue
		}
		return litValue(decodeANSIC(v.text))
	}
	return v
}

// printfValue evaluates printf FORMAT ARGS for the common conversions.
func printfValue(args []arg) value {
	if len(args) > 0 && args[0].lit && args[0].val == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return litValue("")
	}
	if !args[0].lit {
		return runValue
	}
	if strings.HasPrefix(args[0].val, "-v") {
		return litValue("") // printf -v prints nothing
	}
	format := decodeANSIC(args[0].val)
	rest := args[1:]
	var out []value
	for round := 0; round == 0 || len(rest) > 0 && round < 64; round++ {
		used := false
		for i := 0; i < len(format); i++ {
			ch := format[i]
			if ch != '%' {
				out = append(out, litValue(format[i:i+1]))
				continue
			}
			j := i + 1
			for j < len(format) && strings.IndexByte("-+ #0123456789.", format[j]) >= 0 {
				j++
			}
			if j >= len(format) {
				return runValue
			}
			conv := format[j]
			i = j
			if conv == '%' {
				out = append(out, litValue("%"))
				continue
			}
			a := litArg("")
			if len(rest) > 0 {
				a, rest, used = rest[0], rest[1:], true
			}
			switch conv {
			case 's', 'q':
				out = append(out, argValue(a))
			case 'b':
				if !a.lit {
					return runValue
				}
				out = append(out, litValue(decodeANSIC(a.val)))
			case 'd', 'i', 'u', 'x', 'X', 'o', 'c', 'e', 'f', 'g', 'E', 'G':
				if a.lit && conv != 'c' {
					out = append(out, numValue)
				} else {
					out = append(out, value{pat: string(anyTok)})
				}
			default:
				return runValue
			}
		}
		if !used {
			break
		}
	}
	return concat(out...)
}

// nameOp computes basename and dirname.
func nameOp(prog string, args []arg) value {
	var ops []arg
	for _, a := range args {
		if !a.isFlag() {
			ops = append(ops, a)
		}
	}
	if len(ops) == 0 {
		return litValue("")
	}
	a := ops[0]
	if a.run() {
		return runValue
	}
	if a.lit {
		if prog == "dirname" {
			return litValue(path.Dir(a.val))
		}
		b := path.Base(a.val)
		if len(ops) > 1 && ops[1].lit {
			b = strings.TrimSuffix(b, ops[1].val)
		}
		return litValue(b)
	}
	return anyValue
}

// gitOutput: the subcommands that print names, hashes and counts.
func gitOutput(args []arg) value {
	sub := ""
	var rest []arg
	for i, a := range args {
		if !a.lit {
			return runValue
		}
		if !strings.HasPrefix(a.val, "-") {
			sub, rest = a.val, args[i+1:]
			break
		}
		if a.val == "-C" || a.val == "-c" {
			return runValue
		}
	}
	switch sub {
	case "rev-parse":
		for _, a := range rest {
			switch a.val {
			case "--show-toplevel":
				// The top of the working tree the command runs in: for a
				// path, the same as the working directory.
				return litValue(".")
			case "--git-dir", "--git-common-dir":
				return litValue(".git")
			case "--absolute-git-dir":
				return value{pat: string(anyStr) + "/.git"}
			case "--git-path":
				return value{pat: ".git/" + string(anyStr)}
			}
		}
		return anyValue
	case "ls-files", "diff", "status", "branch", "describe", "rev-list", "ls-tree", "symbolic-ref",
		"merge-base", "name-rev", "hash-object", "write-tree", "stash", "worktree", "tag", "remote":
		for _, a := range rest {
			if a.val == "-p" || a.val == "--patch" || strings.HasPrefix(a.val, "--format") || a.val == "-n" && sub == "tag" {
				return runValue // content, messages
			}
		}
		if sub == "diff" && !hasAny(rest, "--name-only", "--name-status", "--stat", "--numstat", "--shortstat") {
			return runValue
		}
		return anyValue
	case "log", "show":
		for _, a := range rest {
			f, ok := strings.CutPrefix(a.val, "--format=")
			if g, ok2 := strings.CutPrefix(a.val, "--pretty=format:"); ok2 {
				f, ok = g, true
			}
			if ok && hashFormat(f) {
				return anyValue
			}
		}
	}
	return runValue
}

func hasAny(args []arg, names ...string) bool {
	return slices.ContainsFunc(args, func(a arg) bool { return a.lit && slices.Contains(names, a.val) })
}

// hashFormat reports a git --format made only of hashes and dates.
func hashFormat(f string) bool {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			if strings.IndexByte(" -:/\t", f[i]) < 0 {
				return false
			}
			continue
		}
		rest := f[i+1:]
		ok := false
		for _, p := range []string{"H", "h", "T", "t", "P", "p", "ad", "cd", "at", "ct", "ai", "ci", "as", "cs", "ar", "cr", "aI", "cI"} {
			if strings.HasPrefix(rest, p) {
				i += len(p)
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// listingOutput: find, ls, grep -l and du print names found under their
// operands; grep without -l prints content. Names found in a tree that
// could hold /proc are run-time text.
func (c *checker) listingOutput(prog string, args []arg) value {
	var roots []arg
	i := 0
	switch prog {
	case "find":
		for ; i < len(args) && args[i].lit && (args[i].val == "-H" || args[i].val == "-P" || args[i].val == "-L" || strings.HasPrefix(args[i].val, "-O") || args[i].val == "-D"); i++ {
			if args[i].val == "-L" {
				return runValue
			}
			if args[i].val == "-D" {
				i++
			}
		}
		for ; i < len(args) && !(args[i].lit && (strings.HasPrefix(args[i].val, "-") || args[i].val == "(" || args[i].val == "!")); i++ {
			roots = append(roots, args[i])
		}
		for _, a := range args[i:] {
			if !a.lit || a.val == "-follow" || a.val == "-ls" || strings.HasPrefix(a.val, "-printf") ||
				strings.HasPrefix(a.val, "-fprint") || strings.HasPrefix(a.val, "-exec") || strings.HasPrefix(a.val, "-ok") {
				return runValue
			}
		}
		return c.treeValue(roots)
	case "grep", "egrep", "fgrep":
		names, pattern := false, true
		for _, a := range args {
			switch {
			case a.lit && (a.val == "-e" || a.val == "-f" || strings.HasPrefix(a.val, "--regexp") || strings.HasPrefix(a.val, "--file")):
				pattern = false
			case a.lit && (strings.HasPrefix(a.val, "--files-with") || strings.HasPrefix(a.val, "--count")):
				names = true
			case a.lit && strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--"):
				names = names || strings.ContainsAny(a.val, "lLc")
			case a.isFlag():
			default:
				if pattern {
					pattern = false
					continue
				}
				roots = append(roots, a)
			}
		}
		if !names {
			return runValue
		}
		return c.treeValue(roots)
	}
	for _, a := range args {
		if !a.isFlag() {
			roots = append(roots, a)
		}
	}
	return c.treeValue(roots)
}

// treeValue is the value of names found below roots (. when none).
func (c *checker) treeValue(roots []arg) value {
	if len(roots) == 0 {
		roots = []arg{litArg(".")}
	}
	for _, r := range roots {
		for _, p := range c.inCwd(r.pat) {
			if treeHolds(p) {
				return runValue
			}
		}
	}
	return anyValue
}

// treeHolds reports whether the tree below pattern p could contain a
// sensitive file: / itself, /proc, /dev, or an unknown directory.
func treeHolds(p string) bool {
	if p == "" {
		return false
	}
	if p[0] != '/' {
		return isDyn(p[0]) || strings.HasPrefix(p, "..")
	}
	first := firstComp(path.Clean(p))
	return first == "" || !hasLiteral(first, "") || match(first, "proc") || match(first, "dev") ||
		match(first, "run") || match(first, "var")
}

// stdinValue is what a statement reads on standard input: a literal
// here-document or here-string, the output of the command piped into it,
// or run-time text.
func (c *checker) stdinValue(s *syntax.Stmt) value {
	if s == nil || c.env == nil {
		return runValue
	}
	if r := stdinRedirect(s.Redirs); r != nil {
		switch r.Op {
		case syntax.WordHdoc:
			return concat(argValue(c.resolve(r.Word)), litValue("\n"))
		case syntax.Hdoc, syntax.DashHdoc:
			return c.hdocValue(r)
		case syntax.RdrIn, syntax.RdrInOut:
			if len(r.Word.Parts) == 1 {
				if ps, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok {
					return c.producerValue(ps.Stmts)
				}
			}
		}
		return runValue
	}
	if from := c.env.stdinFrom[s]; from != nil {
		return c.stmtOutput(from)
	}
	if c.stdin != nil {
		return *c.stdin
	}
	return runValue
}

// hdocValue is the text of a here-document, with its expansions.
func (c *checker) hdocValue(r *syntax.Redirect) value {
	if r.Hdoc == nil {
		return litValue("")
	}
	if body, ok := hereText(r); ok {
		return litValue(body)
	}
	var vs []value
	for _, p := range r.Hdoc.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			vs = append(vs, litValue(unescapeHeredoc(l.Value)))
			continue
		}
		vs = append(vs, c.partValue(p))
	}
	return concat(vs...)
}

// cdTargetValue is the directory cd in $(cd X && pwd) goes to.
func (c *checker) cdTargetValue(s *syntax.Stmt) value {
	_, words := callName(s)
	args := c.resolveAll(words[1:])
	for _, a := range args {
		if a.isFlag() {
			continue
		}
		if a.run() {
			return runValue
		}
		if a.lit && a.val != "" && a.val[0] == '/' {
			return litValue(path.Clean(a.val))
		}
		if a.lit && plainRelative(a.val) {
			return anyValue
		}
		return runValue
	}
	return value{pat: "~"}
}

// plainRelative: a relative path that stays below where it starts.
func plainRelative(p string) bool {
	if p == "" || p[0] == '/' || p[0] == '~' || p == "-" {
		return false
	}
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../")
}

func isDyn(c byte) bool { return c == anyStr || c == anyRun || c == anyTok }
