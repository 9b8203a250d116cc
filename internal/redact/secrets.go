package redact

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// MinSecretLen is the length, in bytes, below which WithSecrets registers
// a value as itself only, not in its encoded forms: a held secret is
// redacted whatever its length (a short one is a weak secret, and `garra
// config check` refuses short keys and tokens, but still one this process
// must not echo), while the encodings of so short a value would match too
// much ordinary text.
const MinSecretLen = 8

// secretAnchorLen is how much of a registered form must occur unbroken for
// a match to be tried; after it, line breaks and blanks may interrupt the
// value (see skipBreak).
const secretAnchorLen = 8

// WithSecrets returns a Redactor that applies r's rules and also redacts
// each of values wherever it occurs, whatever it looks like: the keys,
// tokens and passwords this process holds are known, so they need not be
// recognised by shape. A value is also found
//
//   - with surrounding whitespace trimmed (a token read from a file);
//   - in its encoded forms: JSON-escaped, URL query- and path-escaped, and
//     base64 (standard and URL alphabets; a padded or embedded encoding
//     is caught from where the value's own encoding starts);
//   - interrupted, after its first eight bytes, by line breaks or short
//     runs of blanks, raw or JSON-escaped, as a wrapped or pasted key is.
//
// Empty values are ignored; values shorter than MinSecretLen are matched
// as they are, unbroken and unencoded. Values are matched literally and case-sensitively, longest first; overlapping
// matches merge into one redaction. r is not modified; a nil r means
// Default().
func (r *Redactor) WithSecrets(values ...string) *Redactor {
	if r == nil {
		r = Default()
	}
	var forms []string
	if r.secrets != nil {
		forms = slices.Clone(r.secrets.forms)
	}
	for _, v := range values {
		forms = appendForms(forms, v)
	}
	return &Redactor{extra: r.extra, secrets: newSecretSet(forms)}
}

// WithSecretsOf returns a Redactor that applies r's rules and redacts the
// secrets registered on o (WithSecrets), in place of any of r's own: two
// redactors of one policy that know the same values share the work of
// registering them, thousands of tokens on a large gateway. A nil r means
// Default().
func (r *Redactor) WithSecretsOf(o *Redactor) *Redactor {
	if r == nil {
		r = Default()
	}
	var set *secretSet
	if o != nil {
		set = o.secrets
	}
	return &Redactor{extra: r.extra, secrets: set}
}

// secretSet holds the registered forms, longest first, indexed by their
// first two bytes so that one pass over the text finds the candidates,
// however many secrets there are.
type secretSet struct {
	forms   []string
	pairs   [1 << 16 / 64]uint64 // bit p: some form starts with the byte pair p
	byPair  map[uint16][]int     // pair -> indexes into forms
	singles [256 / 64]uint64     // bit b: the one-byte form b is registered
}

func newSecretSet(forms []string) *secretSet {
	slices.SortFunc(forms, func(a, b string) int {
		return cmp.Or(len(b)-len(a), strings.Compare(a, b))
	})
	forms = slices.Compact(forms)
	if len(forms) == 0 {
		return nil
	}
	set := &secretSet{forms: forms, byPair: map[uint16][]int{}}
	for i, f := range forms {
		if len(f) == 1 {
			set.singles[f[0]/64] |= 1 << (f[0] % 64)
			continue
		}
		p := pairAt(f, 0)
		set.pairs[p/64] |= 1 << (p % 64)
		set.byPair[p] = append(set.byPair[p], i)
	}
	return set
}

func pairAt(s string, i int) uint16 { return uint16(s[i])<<8 | uint16(s[i+1]) }

// appendForms appends the forms of v worth looking for.
func appendForms(dst []string, v string) []string {
	add := func(f string) {
		if len(f) >= MinSecretLen {
			dst = append(dst, f)
		}
	}
	for _, raw := range []string{v, strings.TrimSpace(v)} {
		if raw == "" {
			continue
		}
		if len(raw) < MinSecretLen {
			dst = append(dst, raw)
			continue
		}
		add(raw)
		// JSON-escaped once, and twice for JSON carried inside a JSON
		// string (tool results in chat history); with and without the
		// HTML escapes Go's encoder adds by default.
		for _, html := range []bool{true, false} {
			once := jsonEscape(raw, html)
			add(once)
			add(jsonEscape(once, html))
		}
		add(url.QueryEscape(raw))
		add(url.PathEscape(raw))
		add(base64.RawStdEncoding.EncodeToString([]byte(raw)))
		add(base64.RawURLEncoding.EncodeToString([]byte(raw)))
	}
	return dst
}

// jsonEscape returns v as it appears inside a JSON string.
func jsonEscape(v string, html bool) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(html)
	if enc.Encode(v) != nil {
		return ""
	}
	js := strings.TrimSuffix(sb.String(), "\n")
	return js[1 : len(js)-1]
}

// find appends the spans where one of the registered forms occurs. A nil
// set finds nothing.
func (set *secretSet) find(s string, out []span) []span {
	if set == nil {
		return out
	}
	for a := range len(s) {
		if b := s[a]; set.singles[b/64]&(1<<(b%64)) != 0 {
			out = append(out, span{a, a + 1})
		}
		if a+2 > len(s) {
			break
		}
		p := pairAt(s, a)
		if set.pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		for _, k := range set.byPair[p] {
			f := set.forms[k]
			anchor := f[:min(len(f), secretAnchorLen)]
			if !strings.HasPrefix(s[a:], anchor) {
				continue
			}
			if e, ok := matchBroken(s, a+len(anchor), f[len(anchor):]); ok {
				out = append(out, span{a, e})
			}
		}
	}
	return out
}

// matchBroken matches rest at s[i:], allowing a break (skipBreak) before
// any byte of rest that does not follow directly, and returns the end of
// the match.
func matchBroken(s string, i int, rest string) (int, bool) {
	for k := 0; k < len(rest); k++ {
		if i < len(s) && s[i] == rest[k] {
			i++
			continue
		}
		j := skipBreak(s, i)
		if j == i || j >= len(s) || s[j] != rest[k] {
			return 0, false
		}
		i = j + 1
	}
	return i, true
}

// Bounds of a break inside a secret.
const (
	maxBreakBlanks = 4 // spaces or tabs before a line break, or alone
	maxBreakIndent = 8 // spaces or tabs after a line break
)

// skipBreak returns the end of the break that starts at s[i], or i when
// there is none. A break is what wrapping or pasting puts inside a key: up
// to maxBreakBlanks spaces or tabs, then at most one line break (\n, \r\n
// or \r, raw or as a JSON escape), then, after a line break, up to
// maxBreakIndent spaces or tabs. It never contains a quote, so a span
// across it stays inside one JSON string.
func skipBreak(s string, i int) int {
	p := skipUpTo(s, i, maxBreakBlanks)
	if n := lineBreakLen(s, p); n > 0 {
		return skipUpTo(s, p+n, maxBreakIndent)
	}
	return p
}

func skipUpTo(s string, p, n int) int {
	end := min(len(s), p+n)
	for p < end && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	return p
}

// lineBreakLen returns the length of the line break at s[p], raw or
// JSON-escaped, or 0. An escaped one must not follow a backslash, which
// would make its own backslash a literal one.
func lineBreakLen(s string, p int) int {
	rest := s[p:]
	switch {
	case strings.HasPrefix(rest, "\r\n"):
		return 2
	case strings.HasPrefix(rest, "\n"), strings.HasPrefix(rest, "\r"):
		return 1
	case p > 0 && s[p-1] == '\\':
		return 0
	case strings.HasPrefix(rest, `\r\n`):
		return 4
	case strings.HasPrefix(rest, `\n`), strings.HasPrefix(rest, `\r`):
		return 2
	}
	return 0
}
