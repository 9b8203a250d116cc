package redact

import (
	"slices"
	"strings"
)

// wrappedRule redacts a prefixed key (sk-, ghp_, AIza, AKIA, xoxb-, a
// Telegram bot token …) written with line breaks or blanks inside, as a
// terminal, an editor or a person pasting it leaves it: from where the
// prefix starts, across each break (skipBreak) to the last piece that
// still belongs to the key. Unbroken keys are left to the regular rules.
//
// What belongs to the key is bounded so that the prose after it survives:
//   - each piece is a maximal run of the format's alphabet;
//   - for formats of a fixed length the pieces must add up to exactly that
//     length, and no piece is taken that would exceed it;
//   - for formats of variable length a piece after a break must look
//     random, mixing digits with letters or lower case with upper case
//     after its first letter (so "is", "The", "HTTP" and "2024" end the
//     key), and the total stays within the format's maximum.
type wrappedRule struct{}

// maxWrappedBreaks bounds the breaks inside one key: a wrapped key breaks
// once per line, and the longest keys span three or four lines.
const maxWrappedBreaks = 4

// wrappedFormat is one key format wrappedRule knows.
type wrappedFormat struct {
	prefix   string     // what the key starts with
	need     string     // the trigger literal (reRule.need) that arms it
	alphabet *[256]bool // bytes of the body after the prefix
	min, max int        // body length, breaks excluded; min == max: fixed length
	// check, if set, vets the whole match (prefix included, breaks in it).
	check func(s string, a, b int) bool
}

var (
	skAlphabet    = byteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
	alnumAlphabet = byteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
	patAlphabet   = byteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
	awsAlphabet   = byteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	slackAlphabet = byteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
	hexAlphabet   = byteSet("0123456789abcdef")
)

// wrappedFormats, by trigger; where prefixes share a trigger the more
// specific comes first and wins.
var wrappedFormats = func() []wrappedFormat {
	f := []wrappedFormat{
		// OpenRouter: 64 hex digits. Anthropic API keys: 93 characters
		// and AA. Other sk- keys (OpenAI's) vary in length.
		{prefix: "sk-or-v1-", need: "sk-", alphabet: &hexAlphabet, min: 64, max: 64},
		{prefix: "sk-ant-api03-", need: "sk-", alphabet: &skAlphabet, min: 95, max: 95},
		{prefix: "sk-", need: "sk-", alphabet: &skAlphabet, min: 20, max: 200, check: skMatch},
		{prefix: "AIza", need: "AIza", alphabet: &skAlphabet, min: 35, max: 35},
		{prefix: "github_pat_", need: "github_pat_", alphabet: &patAlphabet, min: 82, max: 82},
		{prefix: "AKIA", need: "AKIA", alphabet: &awsAlphabet, min: 16, max: 16},
		{prefix: "ASIA", need: "ASIA", alphabet: &awsAlphabet, min: 16, max: 16},
	}
	for _, p := range []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"} {
		f = append(f, wrappedFormat{prefix: p, need: p, alphabet: &alnumAlphabet, min: 36, max: 36})
	}
	for _, p := range []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_"} {
		f = append(f, wrappedFormat{prefix: p, need: p[1:], alphabet: &alnumAlphabet, min: 16, max: 128})
	}
	for _, c := range "abposre" {
		f = append(f, wrappedFormat{prefix: "xox" + string(c) + "-", need: "xox", alphabet: &slackAlphabet, min: 10, max: 255})
	}
	// Telegram: the bot id, a colon, AA and 33 more characters. The id
	// is part of the match (see telegramStart) and the prefix is ":AA".
	f = append(f, wrappedFormat{prefix: ":AA", need: ":AA", alphabet: &skAlphabet, min: 33, max: 33})
	return f
}()

// wrappedMasks[i] is the trigger bit of wrappedFormats[i], set by init in
// rules.go once the triggers are known.
var wrappedMasks []uint64

func initWrapped() {
	wrappedMasks = make([]uint64, len(wrappedFormats))
	for i, f := range wrappedFormats {
		k := slices.Index(triggers, f.need)
		if k < 0 || !strings.Contains(f.prefix, f.need) {
			panic("redact: wrapped format " + f.prefix + " has no trigger literal")
		}
		wrappedMasks[i] = 1 << k
	}
}

func (wrappedRule) find(t *text, out []span) []span {
	s := t.s
	for i, f := range wrappedFormats {
		if t.armed&wrappedMasks[i] == 0 {
			continue
		}
		for off := 0; ; {
			k := strings.Index(s[off:], f.prefix)
			if k < 0 {
				break
			}
			p := off + k
			b := p + len(f.prefix)
			// The first piece is read once: an occurrence inside it (sk-sk-…)
			// would read the same bytes again, and belongs to this one.
			first := scanSet(s, b, f.alphabet, len(s))
			off = max(p+1, first)
			if winner := wrappedFormatAt(s, p, f.need); winner != nil && winner.prefix != f.prefix {
				continue // a more specific format owns this key
			}
			a := p
			if f.prefix == ":AA" {
				if a = telegramStart(s, p); a < 0 {
					continue
				}
			} else if !startsWord(s, p) {
				continue
			}
			if e, ok := f.body(s, b, first); ok && (f.check == nil || f.check(s, a, e)) {
				out = append(out, span{a, e})
				off = e
			}
		}
	}
	return out
}

// wrappedFormatAt returns the first format with trigger need whose prefix
// occurs at s[p], or nil.
func wrappedFormatAt(s string, p int, need string) *wrappedFormat {
	for i := range wrappedFormats {
		f := &wrappedFormats[i]
		if f.need == need && strings.HasPrefix(s[p:], f.prefix) {
			return f
		}
	}
	return nil
}

// body reads the key body that starts at s[b] and whose first piece ends
// at e, across breaks, and returns where the match ends. ok is false when
// no break was crossed (the regular rules see the key whole) or the pieces
// do not make a key of this format. Each piece is read at most up to the
// format's maximum, so the work per key is bounded.
func (f *wrappedFormat) body(s string, b, e int) (int, bool) {
	n, breaks := e-b, 0
	if n == 0 {
		return 0, false
	}
	for n < f.max && breaks < maxWrappedBreaks {
		q := skipBreak(s, e)
		if q == e {
			break
		}
		g := scanSet(s, q, f.alphabet, f.max-n+1)
		c := g - q
		if c == 0 || n+c > f.max || (f.min != f.max && !looksRandom(s[q:g])) {
			break
		}
		n, e, breaks = n+c, g, breaks+1
	}
	if breaks == 0 || n < f.min {
		return 0, false
	}
	return e, true
}

// scanSet returns the end of the run of set's bytes at s[i], reading at
// most limit bytes.
func scanSet(s string, i int, set *[256]bool, limit int) int {
	end := min(len(s), i+limit)
	for i < end && set[s[i]] {
		i++
	}
	return i
}

// looksRandom reports whether a piece of a key after a break looks like
// key material rather than a word: digits mixed with letters, or an
// upper-case letter after the first byte mixed with lower case.
func looksRandom(p string) bool {
	var digit, letter, lower, innerUpper bool
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case isDigit(c):
			digit = true
		case isLower(c):
			letter, lower = true, true
		case isUpper(c):
			letter = true
			innerUpper = innerUpper || i > 0
		}
	}
	return (digit && letter) || (innerUpper && lower)
}

// telegramStart returns where the bot id before the ":AA" at s[p] starts:
// 5 to 16 digits, or -1.
func telegramStart(s string, p int) int {
	a := p
	for a > 0 && isDigit(s[a-1]) && p-a < 16 {
		a--
	}
	if p-a < 5 || (a > 0 && isDigit(s[a-1])) {
		return -1
	}
	return a
}

// skMatch is skKey's rule for a match that may contain breaks: the body
// must hold an upper-case letter, a digit or an underscore.
func skMatch(s string, a, b int) bool {
	_, _, ok := skKey(s, a, b)
	return ok
}
