package redact

import "regexp/syntax"

// matchesEmpty reports whether an RE2 pattern can match the empty string
// somewhere. Such a pattern (a*, x?, ^, \b, a|b?) matches at nearly every
// position of every text, so it cannot describe a secret: it is a mistake,
// usually one quantifier too many, and New skips it. Zero-width assertions
// count as satisfiable, which errs towards skipping (`^$` and `\b` are
// skipped). An unparsable pattern gives false; New rejects it for its
// syntax.
func matchesEmpty(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	return nullable(re.Simplify())
}

// nullable reports whether re matches the empty string, assuming every
// empty-width assertion holds.
func nullable(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpStar, syntax.OpQuest,
		syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpCapture, syntax.OpPlus:
		return nullable(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || nullable(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !nullable(s) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if nullable(s) {
				return true
			}
		}
		return false
	}
	return false // OpNoMatch, character classes, any character
}
