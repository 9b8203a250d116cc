package shellgate

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Pattern sentinels. A word is reduced to a pattern in which the parts the
// shell decides at run time are replaced by wildcards, so that a path rule
// ("is this /proc/<pid>/environ?") can ask whether the word *could* expand to
// a dangerous value instead of only whether it literally is one.
const (
	anyStr  = '\x00' // expansion ($x, {a,b}): any text, slashes included
	anySeg  = '\x01' // unquoted *: any text without a slash
	anyChar = '\x02' // unquoted ? or [...]: one character that is not a slash
	anyRun  = '\x03' // text computed at run time (command output, read input): anything at all
	anyTok  = '\x04' // an integer or similar token known to hold no slash ($$, $((…)), $(nproc))
	ctlChar = '\x05' // stands in for a literal 0x00-0x04 byte so it is not mistaken for a sentinel
)

// arg is one shell word resolved as far as static analysis allows.
type arg struct {
	val       string // the word with quoting removed; exact only when lit is true
	pat       string // val with run-time parts replaced by sentinels
	lit       bool   // no expansion of any kind: val is what the program receives
	glob      bool   // unquoted glob or brace characters: expands to several names
	split     bool   // unquoted $x or $(…): may split into several words, e.g. "-rf /"
	procSubst bool   // contains <(…) or >(…)
	numeric   bool   // every expansion in it is an integer ($!, $((…)), $(wc -l <f))
	known     bool   // not literal, but every expansion has a known text: val is exact
}

// run reports whether part of the word is text computed at run time, which
// the gate must assume can be anything (a path under /proc, an option, code).
func (a arg) run() bool { return strings.IndexByte(a.pat, anyRun) >= 0 }

// isFlag reports whether the word is a literal option such as -x or --foo.
func (a arg) isFlag() bool {
	return a.lit && len(a.val) > 1 && a.val[0] == '-'
}

// litArg makes an arg for a literal string that did not come from the tree
// (an option's attached value, a file name inside a sed script).
func litArg(s string) arg {
	return arg{val: s, pat: quotedPat(s), lit: true}
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
			return false
		}
	}
	return s != ""
}

func (c *checker) resolveAll(words []*syntax.Word) []arg {
	out := make([]arg, len(words))
	for i, w := range words {
		out[i] = c.resolve(w)
	}
	return out
}

// resolve computes a word without the context of a script: every expansion
// is unknown. It serves the checks that only care whether a word is literal.
func resolve(w *syntax.Word) arg {
	return (&checker{}).resolve(w)
}

// resolve computes the unquoted value of a word. Quoting tricks such as
// "cu"'rl', "curl", c\url and $'\x63url' all resolve to "curl"; anything the
// shell expands at run time makes the word non-literal, and its pattern says
// what the expansion may hold as far as the script shows (see values.go).
func (c *checker) resolve(w *syntax.Word) arg {
	if len(w.Parts) == 1 {
		// Most words are one plain part; they need no copying.
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			if !strings.ContainsAny(p.Value, "\\*?[{"+sentinels) { // no escape, glob or brace
				return arg{val: p.Value, pat: p.Value, lit: true}
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return arg{val: p.Value, pat: quotedPat(p.Value), lit: true}
			}
		}
	}
	a := arg{lit: true, known: true}
	var val, pat strings.Builder
	if n := min(int(w.End().Offset())-int(w.Pos().Offset()), 64); n > 0 {
		val.Grow(n)
		pat.Grow(n)
	}
	expand := func(v value, quoted bool) {
		a.lit = false
		if !quoted && !v.numeric {
			a.split = true
		}
		a.known = a.known && v.exact
		if v.exact {
			val.WriteString(v.text)
		}
		pat.WriteString(v.pat)
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			unquotedLit(p.Value, &val, &pat, &a)
		case *syntax.SglQuoted:
			s := p.Value
			if p.Dollar {
				s = decodeANSIC(s)
			}
			val.WriteString(s)
			writeQuoted(&pat, s)
		case *syntax.DblQuoted:
			for _, dp := range p.Parts {
				if l, ok := dp.(*syntax.Lit); ok {
					s := unescapeDouble(l.Value)
					val.WriteString(s)
					writeQuoted(&pat, s)
					continue
				}
				// Inside double quotes an expansion never splits into words.
				expand(c.partValue(dp), true)
			}
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp:
			expand(c.partValue(p), false)
		case *syntax.ProcSubst:
			a.lit, a.procSubst = false, true
			pat.WriteByte(anyStr)
		case *syntax.ExtGlob:
			a.lit, a.glob = false, true
			pat.WriteByte(anyStr)
		default: // anything newer
			expand(anyValue, false)
		}
	}
	a.val, a.pat = val.String(), pat.String()
	// Integers only: the pattern is made of integer tokens and digits.
	a.numeric = strings.IndexByte(a.pat, anyTok) >= 0 && strings.Trim(a.pat, "\x040123456789") == ""
	a.known = a.known && !a.lit && !a.glob && !a.procSubst
	return a
}

// unquotedLit handles an unquoted literal part: backslash escapes are
// removed, and glob and brace syntax becomes pattern wildcards.
func unquotedLit(s string, val, pat *strings.Builder, a *arg) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '\n' {
				continue
			}
			val.WriteByte(s[i])
			writeQuoted(pat, s[i:i+1])
		case c == '*':
			a.glob = true
			val.WriteByte(c)
			pat.WriteByte(anySeg)
		case c == '?':
			a.glob = true
			val.WriteByte(c)
			pat.WriteByte(anyChar)
		case c == '[':
			end := strings.IndexByte(s[i+1:], ']')
			if end < 0 {
				val.WriteByte(c)
				pat.WriteByte(c)
				continue
			}
			a.glob = true
			val.WriteString(s[i : i+end+2])
			pat.WriteByte(anyChar)
			i += end + 1
		case c == '{':
			// A brace group may also span quoted parts ({a,"b"}), which a
			// single literal cannot see; any unquoted brace is therefore
			// treated as a possible expansion.
			a.glob = true
			val.WriteByte(c)
			end := braceEnd(s, i)
			if end < 0 {
				pat.WriteByte(anyStr)
				continue
			}
			if braceRangeRe().MatchString(s[i+1 : end]) {
				pat.WriteByte(anyTok) // {1..10}: integers only
			} else {
				a.numeric = false
				pat.WriteByte(anyStr)
			}
			val.WriteString(s[i+1 : end+1])
			i = end
		default:
			val.WriteByte(c)
			writeQuoted(pat, s[i:i+1])
		}
	}
}

// braceRangeRe is the inside of a numeric sequence expansion, {1..5} or
// {10..1..2} without the braces; braceCountRe finds whole ones in a word.
// Both are compiled on first use, like the package's other tables.
var (
	braceRangeRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^-?[0-9]+\.\.-?[0-9]+(\.\.-?[0-9]+)?$`)
	})
	braceCountRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\{(-?[0-9]{1,9})\.\.(-?[0-9]{1,9})(\.\.-?[0-9]+)?\}`)
	})
)

// braceEnd returns the index of the '}' closing the group opened at s[open]
// when the group is a real brace expansion (has a top-level comma or ".."),
// or -1.
func braceEnd(s string, open int) int {
	depth := 0
	expands := false
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				if expands {
					return i
				}
				return -1
			}
		case ',':
			if depth == 1 {
				expands = true
			}
		case '.':
			if depth == 1 && i+1 < len(s) && s[i+1] == '.' {
				expands = true
			}
		}
	}
	return -1
}

// quotedPat is the pattern of quoted text s, which is s itself unless it
// holds bytes that would read as sentinels.
func quotedPat(s string) string {
	if !strings.ContainsAny(s, sentinels) {
		return s
	}
	var b strings.Builder
	writeQuoted(&b, s)
	return b.String()
}

// sentinels are the bytes a pattern reserves (see above).
const sentinels = "\x00\x01\x02\x03\x04"

func writeQuoted(pat *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ctlChar-1 {
			c = ctlChar
		}
		pat.WriteByte(c)
	}
}

// unescapeDouble removes the backslashes that are special inside double quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	return unescape(s, "$`\"\\\n")
}

// unescapeHeredoc removes the backslashes that are special in the body of a
// here-document whose delimiter was not quoted.
func unescapeHeredoc(s string) string { return unescape(s, "$`\\\n") }

// unescape removes each backslash before one of special; one before a
// newline goes with it.
func unescape(s, special string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(special, s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decodeANSIC decodes the body of a $'…' string, so that $'\x63url' is seen
// as the "curl" that bash will run.
func decodeANSIC(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a', 'b', 'e', 'E', 'f', 'n', 'r', 't', 'v':
			b.WriteByte("\a\b\x1b\x1b\f\n\r\t\v"[strings.IndexByte("abeEfnrtv", c)])
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			digits := 2
			switch c {
			case 'u':
				digits = 4
			case 'U':
				digits = 8
			}
			j := i + 1
			for j < len(s) && j-i-1 < digits && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			if c == 'x' {
				n, _ := strconv.ParseUint(s[i+1:j], 16, 8) // two digits: cannot overflow
				b.WriteByte(byte(n))
			} else if n, _ := strconv.ParseInt(s[i+1:j], 16, 32); n <= unicode.MaxRune && utf8.ValidRune(rune(n)) {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n & 0xff)) // bash keeps the low byte of \777
			i = j - 1
		default: // \\ \' \" \? and unknown escapes
			if c != '\\' && c != '\'' && c != '"' && c != '?' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// match reports whether pattern pat (see the sentinels above) can match s.
// Dynamic programming keeps it linear in len(pat)*len(s) whatever the input.
func match(pat, s string) bool {
	prev := make([]bool, len(s)+1)
	cur := make([]bool, len(s)+1)
	prev[0] = true
	for i := 0; i < len(pat); i++ {
		p := pat[i]
		cur[0] = prev[0] && (p == anyStr || p == anyRun || p == anySeg || p == anyTok)
		for j := 1; j <= len(s); j++ {
			c := s[j-1]
			switch p {
			case anyStr, anyRun:
				cur[j] = prev[j] || cur[j-1]
			case anySeg, anyTok:
				cur[j] = prev[j] || (c != '/' && cur[j-1])
			case anyChar:
				cur[j] = prev[j-1] && c != '/'
			default:
				cur[j] = prev[j-1] && c == p
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(s)]
}

// hasLiteral reports whether the pattern has at least one fixed character
// other than the ones in except.
func hasLiteral(pat, except string) bool {
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		if c >= ctlChar && !strings.ContainsRune(except, rune(c)) {
			return true
		}
	}
	return false
}

// isWild reports whether the pattern contains any wildcard sentinel.
func isWild(pat string) bool {
	return strings.ContainsAny(pat, sentinels)
}
