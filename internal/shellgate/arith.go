package shellgate

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash evaluates arithmetic over strings: the value of every variable an
// expression reads is itself evaluated as an expression, and array
// subscripts met on the way are expanded, command substitutions included.
// So x='a[$(id)]'; echo $((x)) runs id, and so does (( n )) after
// read n < file. The same holds for [[ $x -eq 1 ]], array subscripts
// (${a[$i]}, a[$i]=v), substring offsets, let, declare -i, and the names
// given to read, printf -v, unset and [[ -v ]].
//
// The rule: arithmetic may read integers, names whose every assignment the
// script shows (and finds harmless in turn), and the tool's environment; it
// may not read run-time text or names taken from the file system.

// maxArithDepth bounds how far values that are expressions are followed.
const maxArithDepth = 16

// arithRun returns a reason when evaluating x could run code.
func (c *checker) arithRun(x syntax.ArithmExpr) string {
	if x == nil || c.env == nil {
		return ""
	}
	return c.arith(x, 0)
}

func (c *checker) arith(x syntax.ArithmExpr, depth int) string {
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		if r := c.arith(x.X, depth); r != "" {
			return r
		}
		return c.arith(x.Y, depth)
	case *syntax.UnaryArithm:
		return c.arith(x.X, depth)
	case *syntax.ParenArithm:
		return c.arith(x.X, depth)
	case *syntax.FlagsArithm:
		if x.X != nil {
			return c.arith(x.X, depth)
		}
	case *syntax.Word:
		return c.arithWord(x, depth)
	}
	return ""
}

// arithWord checks one operand of an arithmetic expression.
func (c *checker) arithWord(w *syntax.Word, depth int) string {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if isName(p.Value) {
				if r := c.arithName(p.Value, depth); r != "" {
					return r
				}
			}
		case *syntax.SglQuoted, *syntax.DblQuoted:
			// let 'a[$i]=1': the string is parsed as an expression.
			v := argValue(c.resolve(&syntax.Word{Parts: []syntax.WordPart{p}}))
			if r := c.arithValue(v, depth); r != "" {
				return r
			}
		case *syntax.ParamExp:
			if r := c.paramArith(p, depth); r != "" {
				return r
			}
			if r := c.arithValue(c.paramValue(p), depth); r != "" {
				return r
			}
		case *syntax.CmdSubst:
			if r := c.arithValue(c.partValue(p), depth); r != "" {
				return r
			}
		}
	}
	return ""
}

// paramArith checks the arithmetic inside a parameter expansion: the
// subscript of an indexed array and substring offsets.
func (c *checker) paramArith(p *syntax.ParamExp, depth int) string {
	if p.Index != nil && !c.isAssoc(p.Param) {
		if r := c.arith(p.Index, depth); r != "" {
			return r
		}
	}
	if p.Slice != nil {
		if r := c.arith(p.Slice.Offset, depth); r != "" {
			return r
		}
		if p.Slice.Length != nil {
			return c.arith(p.Slice.Length, depth)
		}
	}
	return ""
}

func (c *checker) isAssoc(name *syntax.Lit) bool {
	if name == nil || c.env == nil {
		return false
	}
	vi := c.env.vars[name.Value]
	return vi != nil && vi.assoc
}

// arithName checks a variable read by name inside an expression.
func (c *checker) arithName(name string, depth int) string {
	if specialParams()[name] {
		return ""
	}
	vi := c.env.vars[name]
	if vi == nil {
		c.env.assume("v:" + name)
		if c.env.sourced {
			return "arithmetic on a variable set by a sourced file"
		}
		return "" // the tool's environment
	}
	if vi.integer {
		return ""
	}
	// Each variable is judged once per pass: x='x+x' must not double the
	// work at every level.
	if r, ok := c.env.arithMemo[name]; ok {
		return r
	}
	put(&c.env.arithMemo, name, "") // a cycle evaluates to an error, not to code
	r := c.arithValue(vi.value(), depth)
	c.env.arithMemo[name] = r
	return r
}

// arithValue checks a value that arithmetic will evaluate as an expression.
func (c *checker) arithValue(v value, depth int) string {
	switch {
	case v.numeric:
		return ""
	case v.run():
		return "arithmetic evaluates run-time text, which can run commands through a[$(…)]"
	case v.exact:
		return c.arithText(v.text, depth+1)
	case strings.ContainsAny(v.pat, "\x01\x02"):
		return "arithmetic evaluates file names, which can run commands through a[$(…)]"
	}
	return ""
}

// arithText checks a string bash will parse as an expression.
func (c *checker) arithText(s string, depth int) string {
	if strings.TrimSpace(s) == "" || isDigits(strings.TrimSpace(s)) {
		return ""
	}
	if depth > maxArithDepth {
		return "arithmetic too deeply nested to analyse"
	}
	if strings.Contains(s, "$(") || strings.Contains(s, "`") {
		return "command substitution inside arithmetic or [[ ]]"
	}
	p := parsers.Get().(*syntax.Parser)
	x, err := p.Arithmetic(strings.NewReader(s))
	parsers.Put(p)
	if err != nil {
		if strings.ContainsAny(s, "$[") {
			return "unparsable arithmetic with expansions"
		}
		return ""
	}
	return c.arith(x, depth)
}

// subscriptName checks a name given to read, printf -v, unset, [[ -v ]],
// declare and the like: its subscript is evaluated.
func (c *checker) subscriptName(a arg) string {
	if a.run() {
		return "run-time variable name, whose array subscript can run commands"
	}
	i := strings.IndexByte(a.val, '[')
	if !a.lit || i <= 0 || !strings.HasSuffix(a.val, "]") {
		return ""
	}
	sub := a.val[i+1 : len(a.val)-1]
	if subscriptSubst(a.val) {
		return "command substitution in an array subscript"
	}
	if vi := c.env.vars[a.val[:i]]; vi != nil && vi.assoc {
		// An associative key is expanded once, not evaluated.
		if strings.Contains(sub, "$") {
			w, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Document(strings.NewReader(sub))
			if err != nil || c.resolve(w).run() {
				return "run-time text in an array subscript"
			}
		}
		return ""
	}
	return c.arithText(sub, 0)
}

// testArith checks [[ ]]: the operands of -eq, -lt, … are arithmetic, and
// -v takes a variable name.
func (c *checker) testArith(x syntax.TestExpr) string {
	switch x := x.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, side := range []syntax.TestExpr{x.X, x.Y} {
				if w, ok := side.(*syntax.Word); ok {
					if r := c.arithWord(w, 0); r != "" {
						return r
					}
				}
			}
			return ""
		}
		if r := c.testArith(x.X); r != "" {
			return r
		}
		return c.testArith(x.Y)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			if w, ok := x.X.(*syntax.Word); ok {
				return c.subscriptName(c.resolve(w))
			}
		}
		return c.testArith(x.X)
	case *syntax.ParenTest:
		return c.testArith(x.X)
	}
	return ""
}

func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9') {
			return false
		}
	}
	return true
}
