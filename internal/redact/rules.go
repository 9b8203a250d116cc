package redact

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// text is the input of one redaction round, with the set of trigger
// literals (see reRule.need) that occur in it, found in one pass.
type text struct {
	s     string
	armed uint64 // bit k: triggers[k] occurs in s
}

func newText(s string) *text {
	t := &text{s: s}
	// One vectorised scan per anchor byte; each trigger is checked only
	// where its anchor occurs.
	for _, a := range anchors {
		for off := 0; ; {
			i := strings.IndexByte(s[off:], a.c)
			if i < 0 {
				break
			}
			i += off
			off = i + 1
			for _, k := range a.triggers {
				lit := triggers[k]
				start := i - int(triggerAnchor[k])
				if start >= 0 && strings.HasPrefix(s[start:], lit) {
					t.armed |= 1 << k
				}
			}
		}
	}
	return t
}

// triggers lists every reRule.need literal. Each is searched for through
// its rarest byte, its anchor: triggerAnchor holds the anchor's offset in
// the literal, and anchors groups the triggers by anchor byte.
var (
	triggers      []string
	triggerAnchor []uint8
	anchors       []anchor
)

type anchor struct {
	c        byte
	triggers []uint8
}

// byteRarity ranks bytes by how rarely they occur in logs, prose and
// code; lower is rarer.
func byteRarity(c byte) int {
	switch {
	case strings.IndexByte("JQXZVKYPWxzqj", c) >= 0:
		return 1
	case isUpper(c):
		return 2
	case c == '_' || c == '-':
		return 4
	case isLower(c) || c == ' ':
		return 9
	}
	return 6
}

func init() {
	for _, r := range builtins {
		rr, ok := r.(*reRule)
		if !ok {
			continue
		}
		for _, lit := range rr.need {
			k := slices.Index(triggers, lit)
			if k < 0 {
				k = len(triggers)
				if k >= 64 || len(lit) > 256 {
					// rr.mask is a uint64 and anchors index by uint8.
					panic("redact: more than 64 trigger literals, or one longer than 256 bytes")
				}
				triggers = append(triggers, lit)
				off := 0
				for i := range len(lit) {
					if byteRarity(lit[i]) < byteRarity(lit[off]) {
						off = i
					}
				}
				triggerAnchor = append(triggerAnchor, uint8(off))
				j := slices.IndexFunc(anchors, func(a anchor) bool { return a.c == lit[off] })
				if j < 0 {
					j = len(anchors)
					anchors = append(anchors, anchor{c: lit[off]})
				}
				anchors[j].triggers = append(anchors[j].triggers, uint8(k))
			}
			rr.mask |= 1 << k
		}
	}
	if len(triggers) > 64 {
		panic("redact: more than 64 trigger literals")
	}
	initWrapped()
}

// rule finds secrets in t and appends the byte ranges to replace.
type rule interface {
	find(t *text, out []span) []span
}

// builtins run in every Redactor, before operator patterns. The order does
// not matter: all rules see the same text and their spans are merged.
var builtins = []rule{
	// OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-), OpenRouter
	// (sk-or-v1-) and Anthropic (sk-ant-api03-, sk-ant-admin01-) keys.
	&reRule{
		re:    lazyRegexp(`sk-[A-Za-z0-9_-]{20,}`),
		need:  []string{"sk-"},
		check: skKey,
	},
	// Stripe secret and restricted keys.
	&reRule{
		re:    lazyRegexp(`[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`),
		need:  []string{"k_live_", "k_test_"},
		check: wordStart,
	},
	// Google API keys (Gemini, Maps, …).
	&reRule{
		re:    lazyRegexp(`AIza[A-Za-z0-9_-]{35}`),
		need:  []string{"AIza"},
		check: wordStart,
	},
	// GitHub personal, OAuth, user-to-server, server-to-server and refresh
	// tokens, and fine-grained personal access tokens.
	&reRule{
		re:    lazyRegexp(`gh[pousr]_[A-Za-z0-9]{36,}`),
		need:  []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
		check: wordStart,
	},
	&reRule{
		re:    lazyRegexp(`github_pat_[A-Za-z0-9_]{30,}`),
		need:  []string{"github_pat_"},
		check: wordStart,
	},
	// AWS access key ids (long-term and temporary).
	&reRule{
		re:    lazyRegexp(`(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
		need:  []string{"AKIA", "ASIA"},
		check: wordStart,
	},
	// Slack bot, user, app, workspace and refresh tokens.
	&reRule{
		re:    lazyRegexp(`xox[abposre]-[A-Za-z0-9-]{10,}`),
		need:  []string{"xox"},
		check: wordStart,
	},
	// Telegram bot tokens: the bot id, a colon, and 35 characters starting
	// with AA. The whole token goes, as the id alone identifies the bot.
	// No boundary check: the token is usually glued to /bot in API URLs.
	&reRule{
		re:   lazyRegexp(`[0-9]{5,16}:AA[A-Za-z0-9_-]{30,}`),
		need: []string{":AA"},
	},
	// JSON Web Tokens: base64url header and payload, both JSON objects, and
	// a signature that may be empty (alg none).
	&reRule{
		re:    lazyRegexp(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`),
		need:  []string{"eyJ"},
		check: wordStart,
	},
	// PEM private keys of any kind (RSA, EC, OPENSSH, ENCRYPTED, PGP …
	// BLOCK). The BEGIN and END lines stay, the body goes. A body cut off
	// before its END line is redacted up to the first "--", quote or
	// escape other than \n, \r, \t, \/ and \\; JSON-escaped line breaks are
	// thus part of the body.
	&reRule{
		re:    lazyRegexp(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----((?:[^"\\-]|\\[nrt/\\]|-[^"\\-])*)`),
		need:  []string{"PRIVATE KEY"},
		group: 1,
	},
	// Incoming-webhook URLs, which let anyone holding them post.
	&reRule{
		re:    lazyRegexp(`hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_-]+)`),
		need:  []string{"hooks.slack.com/"},
		group: 1,
	},
	&reRule{
		re:    lazyRegexp(`discord(?:app)?\.com/api/webhooks/([0-9]+/[A-Za-z0-9_-]+)`),
		need:  []string{"/api/webhooks/"},
		group: 1,
	},
	bearerRule{},
	userinfoRule{},
	kvRule{},
	encodedRule{},
	wrappedRule{},
}

// reRule is a regular expression, applied only when one of the literals in
// need occurs in the text (a cheap test that spares most inputs the regexp
// scan, and the regexp its compilation until such an input comes). group
// selects the submatch to redact. check, if set, vets each match and may
// narrow the span; a rejected match is skipped whole.
type reRule struct {
	re    func() *regexp.Regexp
	need  []string
	mask  uint64 // bits of need in triggers
	group int
	check func(s string, a, b int) (int, int, bool)
}

func (r *reRule) find(t *text, out []span) []span {
	s := t.s
	if t.armed&r.mask == 0 {
		return out
	}
	for _, m := range r.re().FindAllStringSubmatchIndex(s, -1) {
		a, b := m[2*r.group], m[2*r.group+1]
		if a < 0 {
			continue
		}
		ok := true
		if r.check != nil {
			a, b, ok = r.check(s, a, b)
		}
		if ok && b > a {
			out = append(out, span{a, b})
		}
	}
	return out
}

// lazyRegexp compiles expr the first time it is asked for: most text
// never arms a rule, so most processes never need its expression.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// wordStart accepts a match not glued to a preceding letter, digit or
// underscore, so that a prefix inside a longer word does not count.
func wordStart(s string, a, b int) (int, int, bool) {
	return a, b, startsWord(s, a)
}

// startsWord reports whether s[a] starts a word: it follows no letter,
// digit or underscore, or follows a JSON escape (the n of \n, the 6 of
// \u0026), which ends a word as much as the character it stands for.
func startsWord(s string, a int) bool {
	return a == 0 || !isWord(s[a-1]) || escapeEndsAt(s, a)
}

// escapeEndsAt reports whether a JSON escape sequence ends right before
// s[a].
func escapeEndsAt(s string, a int) bool {
	for _, n := range [...]int{2, 6} {
		p := a - n
		if p < 0 || s[p] != '\\' || p+escapeLen(s, p) != a {
			continue
		}
		k := 0
		for q := p; q >= 0 && s[q] == '\\'; q-- {
			k++
		}
		if k%2 == 1 {
			return true
		}
	}
	return false
}

// skKey accepts an sk- key that starts a word and whose body is not a
// kebab-case identifier: real keys always contain an upper-case letter,
// digit or underscore, while names like sk-fading-circle-spinner do not.
// Words that merely contain "sk-", like task-list, fail the start check.
func skKey(s string, a, b int) (int, int, bool) {
	if !startsWord(s, a) {
		return a, b, false
	}
	for i := a + 3; i < b; i++ {
		c := s[i]
		if c == '_' || isDigit(c) || isUpper(c) {
			return a, b, true
		}
	}
	return a, b, false
}

// bearerRule redacts the token after the word Bearer (or bearer, or
// BEARER) and keeps the word. The token must look like one: 16 or more characters, or 8 or
// more with a digit, so that prose such as "a Bearer token" or "Bearer
// authentication" stays intact. A trailing full stop is left out.
type bearerRule struct{}

func (bearerRule) find(t *text, out []span) []span {
	s := t.s
	// Look for the rarer tail "earer" (or "EARER"), then check the b. Each
	// spelling's next position is kept, so the text is scanned once.
	next := [2]int{-1, -1}
	for off := 1; off < len(s); {
		for v, tail := range [2]string{"earer", "EARER"} {
			if next[v] < off && next[v] != len(s) {
				next[v] = len(s)
				if k := strings.Index(s[off:], tail); k >= 0 {
					next[v] = off + k
				}
			}
		}
		i := min(next[0], next[1]) - 1
		if i+1 >= len(s) {
			return out
		}
		off = i + len("bearer")
		if s[i]|0x20 != 'b' || !startsWord(s, i) {
			continue
		}
		p := skipBlanks(s, off)
		if p == off {
			continue
		}
		e := p
		for e < len(s) && isB64Token(s[e]) {
			e++
		}
		for e > p && s[e-1] == '.' {
			e--
		}
		if n := e - p; n >= 16 || (n >= 8 && hasDigit(s[p:e])) {
			out = append(out, span{p, e})
			off = e
		}
	}
	return out
}

// userinfoRule redacts the password in URLs such as
// postgres://user:secret@host/db, keeping the user name.
type userinfoRule struct{}

func (userinfoRule) find(t *text, out []span) []span {
	s := t.s
	for off := 0; ; {
		i := strings.Index(s[off:], "://")
		if i < 0 {
			return out
		}
		i += off + 3
		off = i
		colon := -1
		for p := i; p < len(s); p++ {
			c := s[p]
			if c == '@' {
				if colon >= 0 && p > colon+1 {
					out = append(out, span{colon + 1, p})
				}
				off = p + 1
				break
			}
			if c == ':' && colon < 0 {
				colon = p
				continue
			}
			if c <= ' ' || strings.IndexByte("/?#\"'<>\\[]{}`", c) >= 0 {
				break
			}
		}
	}
}

// b64TokenSet is the RFC 6750 b64token alphabet used by Bearer tokens.
var b64TokenSet = byteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=")

// b64Set is the union of the base64 and base64url alphabets, without the
// = padding.
var b64Set = byteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")

func byteSet(chars string) (set [256]bool) {
	for i := 0; i < len(chars); i++ {
		set[chars[i]] = true
	}
	return set
}

func isB64Token(c byte) bool { return b64TokenSet[c] }
func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isUpper(c byte) bool    { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool    { return 'a' <= c && c <= 'z' }
func isAlnum(c byte) bool    { return isDigit(c) || isUpper(c) || isLower(c) }
func isWord(c byte) bool     { return isAlnum(c) || c == '_' }
func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			return true
		}
	}
	return false
}
