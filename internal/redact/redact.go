// Package redact removes credentials from text before it leaves the
// process.
//
// Garra holds API keys for the LLM providers it calls, and those keys have
// many ways out: a provider echoing the request in an error message, an
// HTTP client logging a header, a model repeating an environment dump a
// tool printed, a chat history that quotes a config file. Every such path
// (provider error messages, stderr logs, and each JSON envelope Garra
// writes: answers, errors, tool-call summaries, chat history) is passed
// through a Redactor, which replaces anything that looks like a secret with
// [Placeholder].
//
// # What is recognised
//
// The built-in rules cover provider keys (OpenAI sk-, sk-proj-, OpenRouter
// sk-or-v1-, Anthropic sk-ant-, Google AIza…, Stripe sk_live_), GitHub
// tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), AWS access key ids
// (AKIA…, ASIA…), Slack xox?- tokens, Slack and Discord webhook URLs,
// Telegram bot tokens, JWTs, PEM private key blocks (the BEGIN and END
// lines are kept), Bearer tokens (the word Bearer is kept), Authorization
// and Proxy-Authorization values (a known scheme name such as Basic is
// kept), passwords in URLs (scheme://user:[REDACTED]@host), and values of
// keys that name a credential (api_key, apikey, x-api-key, token,
// access_token, secret, client_secret, password, passwd, passphrase,
// private_key, access_key, secret_key, credentials) written as key=value,
// key: value, "key": "value" or key => "value". Prefixed keys must start a
// word, so task-list or risk-free never count as sk-, and an sk- body made
// only of lower-case letters and hyphens (sk-fading-circle-spinner) is a
// CSS class, not a key. A prefixed key (sk-, AIza, gh?_, github_pat_,
// AKIA, ASIA, xox?-, sk_live_, a Telegram bot token) written with line
// breaks or short runs of blanks inside, raw or JSON-escaped, is redacted
// from where its prefix starts to its last piece; pieces must add up to
// the format's length, or, for formats of variable length, look random,
// so the prose after the key is kept. Operators can add their own RE2
// patterns; see [New].
//
// # Known secrets
//
// The keys and tokens a process holds need not be recognised by shape:
// [Redactor.WithSecrets] registers their values, which are then redacted
// wherever they occur, in their common encodings too (JSON, URL, base64)
// and across line breaks after their first eight bytes.
//
// Two heuristics catch secrets that carry no recognisable prefix:
//
//   - Hex: a run of 32 or more hex digits containing both a digit and a
//     letter is redacted, except (a) exactly 40 lowercase hex digits, which
//     is how git names commits and agent output is full of them (git log,
//     rev-parse, blame); the price is that a bare 40-hex credential, such
//     as a legacy GitHub OAuth token, is only caught when a key, header or
//     Bearer gives it away; (b) a run labelled as a digest (sha256:…,
//     sha512-…, md5=…, h1:…), because content hashes are not secrets; and
//     (c) a provider object id (req_…, resp_…, msg_…, run_…, call_…,
//     batch_…), which operators need to quote to get support. Hyphenated UUIDs never reach 32 digits in one
//     group and are left alone; a hyphenless UUID, an MD5 without label
//     or a W3C trace id is redacted.
//   - Base64: a run of 40 or more characters from the base64 and base64url
//     alphabets (A-Z a-z 0-9 + / - _, then optional = padding) is redacted
//     only if it contains an upper-case letter, a lower-case letter and a
//     digit and looks random rather than made of words: high entropy,
//     frequent switches between character classes, few word-like runs, and
//     segments (between + / - _) that are not mostly short or single-case.
//     Random base64 switches class about two times in three; identifiers,
//     file paths and prose switch at word boundaries only, so
//     TestParseHTTP2Response…, /Users/Name/Projects2024/… and
//     /usr/share/i18n/charmaps/JIS_C6229-1984-HAND-ADD stay readable. The
//     price is that about one random 40-character secret in 200 (one in
//     500 at 44 characters, none at 64) is not recognised by shape alone.
//     Digest-labelled values (go.sum's h1:, integrity sha512-…), data:
//     URIs, base64 images and PDFs (iVBORw0KGgo…, /9j/…) and OpenSSH
//     public keys (ssh-ed25519 AAAA…) are not treated as secrets.
//
// # Guarantees
//
// Redaction is idempotent: String(String(s)) == String(s). Applied to the
// text of a JSON document it keeps the document valid: the placeholder
// contains no quote or backslash, built-in rules never match across a
// quote, key/value rules stop at quotes, commas, whitespace and &, values
// of quoted keys are only redacted when they are strings (so a JSON number
// never becomes a bare word), and no replacement starts or ends inside a
// JSON escape sequence. Operator patterns get the same quote and escape
// treatment, but a pattern that matches JSON structure (a number, true) can
// still break a document; write such patterns with a (?P<secret>…) group.
//
// # Limits
//
// Redaction is pattern matching, not a proof. An unquoted value ends at
// whitespace, so "password: correct horse" loses only "correct"; a secret
// glued to letters on both sides (xyz0123…abc) has no boundary to be found
// by; a bare 40-hex token looks like a commit. Keys that reach Garra
// through its own configuration should also be withheld where they are
// used, not only redacted where they leave.
package redact

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Placeholder replaces every redacted secret. It contains no quote,
// backslash or whitespace, so it is safe inside JSON strings, header values
// and query strings, and no rule matches it, which makes redaction
// idempotent.
const Placeholder = "[REDACTED]"

// MaxPatterns is the number of operator patterns New accepts; later ones
// are skipped.
const MaxPatterns = 32

// MaxPatternLen is the maximum length of one operator pattern, in
// characters.
const MaxPatternLen = 512

// SecretGroup is the name of the submatch that an operator pattern can use
// to redact only part of what it matches: with `token (?P<secret>\w+)` the
// word token is kept.
const SecretGroup = "secret"

// maxPasses bounds the rounds of redaction applied to one input. Each round
// runs every rule on the result of the previous one, and rounds continue
// until nothing changes, which is what makes String idempotent even when a
// replacement exposes a match another rule could not see before (two rounds
// in practice).
const maxPasses = 8

// Redactor replaces secrets in text with Placeholder. It is immutable after
// New and safe for concurrent use. A nil *Redactor behaves like Default().
type Redactor struct {
	extra   []operatorRule
	secrets *secretSet // known secrets (WithSecrets); nil = none
}

type operatorRule struct {
	re    *regexp.Regexp
	group int // submatch to redact; 0 redacts the whole match
}

// PatternError reports an operator pattern that New skipped. It names the
// pattern by its index in the list given to New, never by its text, since
// an operator may have pasted part of a secret into it.
type PatternError struct {
	Index  int
	Reason string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("redact pattern %d skipped: %s", e.Index, e.Reason)
}

// New returns a Redactor that applies the built-in rules and then the extra
// operator patterns, in RE2 syntax (package regexp). A pattern's whole
// match is replaced, or only its submatch named "secret" if it has one.
// Empty, invalid, empty-matching (see matchesEmpty) and over-long (more
// than MaxPatternLen characters) patterns, and every pattern after the
// first MaxPatterns (counted by position, valid or not), are skipped; each
// skip is reported as a *PatternError naming the pattern's index and the
// reason. The returned Redactor is usable whatever the errors. Patterns
// should be specific: one that matches almost anything, like \w, costs
// time in proportion to its matches.
func New(extra []string) (*Redactor, []error) {
	r := &Redactor{}
	var errs []error
	for i, p := range extra {
		reason := ""
		switch {
		case i >= MaxPatterns:
			reason = fmt.Sprintf("more than %d patterns", MaxPatterns)
		case p == "":
			reason = "empty pattern"
		case utf8.RuneCountInString(p) > MaxPatternLen:
			reason = fmt.Sprintf("longer than %d characters", MaxPatternLen)
		}
		if reason == "" {
			re, err := regexp.Compile(p)
			switch {
			case err != nil:
				reason = "invalid RE2 syntax: " + syntaxReason(err)
			case matchesEmpty(p):
				reason = "matches the empty string"
			default:
				g := 0
				if k := re.SubexpIndex(SecretGroup); k > 0 {
					g = k
				}
				r.extra = append(r.extra, operatorRule{re: re, group: g})
				continue
			}
		}
		errs = append(errs, &PatternError{Index: i, Reason: reason})
	}
	return r, errs
}

// syntaxReason describes a compile error without quoting the pattern, which
// regexp's own message does.
func syntaxReason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return "does not compile"
}

var defaultRedactor = sync.OnceValue(func() *Redactor {
	r, _ := New(nil)
	return r
})

// Default returns the Redactor with the built-in rules only. It is built
// once and shared.
func Default() *Redactor { return defaultRedactor() }

// String returns s with every secret replaced by Placeholder. It returns s
// itself when nothing was found.
func (r *Redactor) String(s string) string {
	out, _ := r.redact(s)
	return out
}

// Bytes is String for a byte slice. b is never modified; when nothing was
// found b itself is returned, otherwise a new slice.
func (r *Redactor) Bytes(b []byte) []byte {
	out, changed := r.redact(string(b))
	if !changed {
		return b
	}
	return []byte(out)
}

func (r *Redactor) redact(s string) (string, bool) {
	if r == nil {
		r = Default()
	}
	changed := false
	for range maxPasses {
		spans := r.collect(s)
		if len(spans) == 0 {
			break
		}
		s = replace(s, spans)
		changed = true
	}
	return s, changed
}

// span is a byte range [a, b) of the text to replace.
type span struct{ a, b int }

// collect returns the sorted, disjoint, JSON-safe spans to replace in s.
func (r *Redactor) collect(s string) []span {
	if s == "" {
		return nil
	}
	t := newText(s)
	var found []span
	for _, rule := range builtins {
		found = rule.find(t, found)
	}
	for _, o := range r.extra {
		for _, m := range o.re.FindAllStringSubmatchIndex(s, -1) {
			a, b := m[2*o.group], m[2*o.group+1]
			if a >= 0 && b > a {
				found = append(found, span{a, b})
			}
		}
	}
	found = r.secrets.find(s, found)
	if len(found) == 0 {
		return nil
	}
	marks := placeholders(nil, s)
	var clean []span
	for _, sp := range found {
		clean = appendSafe(clean, s, sp, marks)
	}
	if len(clean) == 0 {
		return nil
	}
	slices.SortFunc(clean, func(x, y span) int { return x.a - y.a })
	merged := clean[:1]
	for _, sp := range clean[1:] {
		last := &merged[len(merged)-1]
		if sp.a <= last.b {
			last.b = max(last.b, sp.b)
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// placeholders lists where Placeholder already occurs in s.
func placeholders(dst []span, s string) []span {
	for off := 0; ; {
		i := strings.Index(s[off:], Placeholder)
		if i < 0 {
			return dst
		}
		a := off + i
		dst = append(dst, span{a, a + len(Placeholder)})
		off = a + len(Placeholder)
	}
}

// appendSafe appends sp to dst after making it safe to replace: it is split
// at unescaped double quotes, trimmed so it neither starts nor ends inside
// a JSON escape sequence, widened to cover any placeholder it overlaps, and
// dropped if what is left is empty or already exactly a placeholder.
func appendSafe(dst []span, s string, sp span, marks []span) []span {
	a, b := escapeStart(s, sp.a), sp.b
	for i := a; i < b; {
		switch s[i] {
		case '\\':
			i += escapeLen(s, i)
			continue
		case '"':
			dst = appendPiece(dst, s, a, i, marks)
			a = i + 1
		}
		i++
	}
	return appendPiece(dst, s, a, b, marks)
}

func appendPiece(dst []span, s string, a, b int, marks []span) []span {
	b = escapeEnd(s, a, b)
	if b <= a || (quoteAdjacent(s, a, b) && jsonStructure(s[a:b])) {
		return dst // nothing left, or the colon between a key and its value
	}
	// marks are sorted and disjoint: widen over those that overlap.
	k, _ := slices.BinarySearchFunc(marks, a, func(m span, a int) int { return m.b - a - 1 })
	for ; k < len(marks) && marks[k].a < b; k++ {
		m := marks[k]
		if m.a == a && m.b == b {
			return dst
		}
		a, b = min(a, m.a), max(b, m.b)
	}
	return append(dst, span{a, b})
}

// quoteAdjacent reports whether s[a:b] touches a double quote on either
// side.
func quoteAdjacent(s string, a, b int) bool {
	return (a > 0 && s[a-1] == '"') || (b < len(s) && s[b] == '"')
}

// escapeLen returns the length of the escape sequence starting with the
// backslash at s[i]: 6 for \uXXXX, otherwise 2 (or 1 at the end of s).
func escapeLen(s string, i int) int {
	if i+1 >= len(s) {
		return 1
	}
	if s[i+1] == 'u' && i+6 <= len(s) && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
		return 6
	}
	return 2
}

// escapeCovering returns the start and end of the escape sequence that
// contains s[i] without starting there, or -1.
func escapeCovering(s string, i int) (int, int) {
	for p := i - 1; p >= 0 && p >= i-5; p-- {
		if s[p] != '\\' {
			continue
		}
		// The nearest backslash starts an escape if it is preceded by an
		// even number of backslashes.
		n := 0
		for q := p; q >= 0 && s[q] == '\\'; q-- {
			n++
		}
		if n%2 == 1 {
			if e := p + escapeLen(s, p); e > i {
				return p, e
			}
		}
		return -1, -1
	}
	return -1, -1
}

// escapeStart moves a span start that lies inside an escape sequence to
// the end of that sequence.
func escapeStart(s string, a int) int {
	if a < len(s) {
		if _, e := escapeCovering(s, a); e > 0 {
			return e
		}
	}
	return a
}

// escapeEnd moves a span end that cuts an escape sequence back to where the
// sequence starts.
func escapeEnd(s string, a, b int) int {
	if b <= a || b >= len(s) {
		return b
	}
	// s[b] is the first byte kept; if it belongs to a sequence that started
	// inside the span, the span must give that sequence back.
	if p, _ := escapeCovering(s, b); p >= a {
		return p
	}
	return b
}

func replace(s string, spans []span) string {
	var sb strings.Builder
	sb.Grow(len(s))
	prev := 0
	for _, sp := range spans {
		sb.WriteString(s[prev:sp.a])
		sb.WriteString(Placeholder)
		prev = sp.b
	}
	sb.WriteString(s[prev:])
	return sb.String()
}
