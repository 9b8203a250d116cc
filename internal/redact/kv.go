package redact

import "strings"

type keyKind uint8

const (
	kindSecret   keyKind = iota // machine-made: tokens, API keys
	kindPassword                // chosen by people: any length counts
	kindAuth                    // an Authorization header value
)

// credentialKeys are the key suffixes, lower case, that mark the value
// after them as a secret. A key matches when it ends with one of them:
// OPENAI_API_KEY, x-api-key, accessToken, client_secret, --token.
var credentialKeys = []struct {
	suffix string
	kind   keyKind
}{
	{"api_key", kindSecret},
	{"api-key", kindSecret},
	{"apikey", kindSecret},
	{"token", kindSecret},
	{"secret", kindSecret},
	{"secret_key", kindSecret},
	{"secret-key", kindSecret},
	{"secretkey", kindSecret},
	{"access_key", kindSecret},
	{"access-key", kindSecret},
	{"accesskey", kindSecret},
	{"private_key", kindSecret},
	{"private-key", kindSecret},
	{"privatekey", kindSecret},
	{"credential", kindSecret},
	{"credentials", kindSecret},
	{"password", kindPassword},
	{"passwd", kindPassword},
	{"passphrase", kindPassword},
	{"authorization", kindAuth},
}

// authSchemes are HTTP authentication scheme names, lower case. After
// Authorization: a known scheme is kept and only the credentials after it
// are redacted.
var authSchemes = []string{
	"basic", "bearer", "digest", "token", "bot", "negotiate", "ntlm",
	"hoba", "mutual", "oauth", "apikey", "api-key", "key", "sso-key",
	"ssws", "dpop", "aws4-hmac-sha256", "privatetoken", "vapid",
	"scram-sha-1", "scram-sha-256", "gnap",
}

// bareStop are the bytes that end an unquoted value, besides whitespace
// and control bytes: quotes, separators (, ; &), the JSON escape character,
// and brackets, which would otherwise swallow the structure around a value.
const bareStop = "\"'`,;&\\()[]{}<>"

// kvRule redacts the value in key=value, key: value, "key": "value",
// key => 'value' and the like, when the key names a credential.
//
// To keep JSON valid and code readable:
//   - quoted values are redacted whatever their content (quotes mean a
//     literal), but only their content: the quotes stay;
//   - an unquoted value after a double-quoted key is left alone: in JSON it
//     is a number, true, false, null, an object or an array;
//   - an unquoted value runs up to whitespace, a quote, a comma, ;, &, a
//     backslash or a bracket;
//   - := and == are not separators (Go declarations and comparisons);
//   - an unquoted value that looks like code is left alone: a call
//     (followed by an opening parenthesis), a selector such as cfg.Token, a
//     format verb or template ($TOKEN, %s, {{…}}), or true, false, null,
//     nil, none, undefined;
//   - after a colon or a spaced =, an unquoted value for a token-like key
//     needs 8 or more characters, so that prose such as "invalid token:
//     expired" and code such as "token = tok" survive; passwords need only
//     one. key=value without spaces (query strings, environment, flags)
//     takes any length.
type kvRule struct{}

func (kvRule) find(t *text, out []span) []span {
	s := t.s
	nextColon, nextEq := -1, -1
	for p := 0; p < len(s); p++ {
		// Jump to the next : or =, each found with a vectorised search.
		if nextColon < p {
			nextColon = indexFrom(s, ':', p)
		}
		if nextEq < p {
			nextEq = indexFrom(s, '=', p)
		}
		p = min(nextColon, nextEq)
		if p == len(s) {
			break
		}
		// Walk back from the separator over blanks and a closing quote to
		// the key.
		j := p
		for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
			j--
		}
		if j > 0 && (s[j-1] == '"' || s[j-1] == '\'') {
			j--
			if j > 0 && s[j] == '"' && s[j-1] == '\\' {
				j--
			}
		}
		k := j
		for k > 0 && isKeyByte(s[k-1]) {
			k--
		}
		if k == j {
			continue
		}
		kind, ok := credentialKey(s[k:j])
		if !ok || strings.HasSuffix(s[:k], "://") {
			continue // not a credential, or a URL's user name (see userinfoRule)
		}
		if sp, ok := valueAfterKey(s, j, kind); ok {
			out = append(out, sp)
			p = sp.b
		}
	}
	return out
}

// indexFrom returns the index of c in s at or after from, or len(s).
func indexFrom(s string, c byte, from int) int {
	if i := strings.IndexByte(s[from:], c); i >= 0 {
		return from + i
	}
	return len(s)
}

// credentialKey reports whether key ends with one of credentialKeys,
// ignoring case.
func credentialKey(key string) (keyKind, bool) {
	for _, i := range keysByLastByte[key[len(key)-1]|0x20] {
		c := credentialKeys[i]
		if n := len(key) - len(c.suffix); n >= 0 && strings.EqualFold(key[n:], c.suffix) {
			return c.kind, true
		}
	}
	return 0, false
}

// keysByLastByte indexes credentialKeys by the last byte of the suffix.
var keysByLastByte = func() (t [256][]uint8) {
	for i, c := range credentialKeys {
		last := c.suffix[len(c.suffix)-1]
		t[last] = append(t[last], uint8(i))
	}
	return t
}()

func isKeyByte(c byte) bool { return isWord(c) || c == '-' || c == '.' }

// valueAfterKey parses the separator and value after a key ending at j and
// returns the span to redact.
func valueAfterKey(s string, j int, kind keyKind) (span, bool) {
	n := len(s)
	p := j
	keyQuoted := false
	switch {
	case p < n && s[p] == '"':
		keyQuoted = true
		p++
	case p+1 < n && s[p] == '\\' && s[p+1] == '"':
		keyQuoted = true
		p += 2
	case p < n && s[p] == '\'':
		p++
	}
	q := skipBlanks(s, p)
	spaceBefore := q > p
	p = q
	if p >= n {
		return span{}, false
	}
	sep := s[p]
	switch sep {
	case ':':
		if p+1 < n && (s[p+1] == '=' || s[p+1] == ':') {
			return span{}, false // := declares, :: qualifies
		}
		p++
	case '=':
		if p+1 < n && s[p+1] == '=' {
			return span{}, false // == compares
		}
		p++
		if p < n && s[p] == '>' {
			p++ // => as in Ruby, PHP and Perl hashes
			spaceBefore = true
		}
	default:
		return span{}, false
	}
	q = skipBlanks(s, p)
	spaced := spaceBefore || q > p
	p = q
	// A list of values, as in http.Header dumps: map[Authorization:[Bearer
	// …]] and {"Authorization": ["Bearer …"]}.
	if p < n && s[p] == '[' && !strings.HasPrefix(s[p:], Placeholder) {
		p = skipBlanks(s, p+1)
	}
	if p >= n || strings.HasPrefix(s[p:], Placeholder) {
		return span{}, false
	}

	// Quoted values.
	var a, b int
	switch {
	case s[p] == '\\' && p+1 < n && s[p+1] == '"':
		// Inside a JSON string: \"key\":\"value\". The value ends at the
		// next backslash, which is its closing \" or an escape the value
		// cannot be told apart from.
		a = p + 2
		b = a
		for b < n && s[b] != '\\' && s[b] != '"' && s[b] != '\n' && s[b] != '\r' {
			b++
		}
	case s[p] == '"':
		a = p + 1
		b = a
		for b < n && s[b] != '"' && s[b] != '\n' && s[b] != '\r' {
			if s[b] == '\\' {
				b += escapeLen(s, b)
				continue
			}
			b++
		}
		b = min(b, n)
	case s[p] == '\'':
		a = p + 1
		b = a
		for b < n && s[b] != '\'' && s[b] != '\\' && s[b] != '\n' && s[b] != '\r' {
			b++
		}
	default:
		return bareValue(s, p, sep, kind, keyQuoted, spaced)
	}
	if b <= a || jsonStructure(s[a:b]) {
		// Nothing, or the "quote" closed a JSON string ending in token=
		// and what follows is the document's structure: ","next":….
		return span{}, false
	}
	if kind == kindAuth {
		a = afterScheme(s, a, b)
	}
	return span{a, b}, b > a
}

func bareValue(s string, p int, sep byte, kind keyKind, keyQuoted, spaced bool) (span, bool) {
	if keyQuoted {
		return span{}, false
	}
	if !isBareStart(s[p]) {
		return span{}, false
	}
	e := bareEnd(s, p)
	if kind == kindAuth {
		return authBare(s, p, e)
	}
	for e > p+1 && s[e-1] == '.' {
		e-- // full stop ending a sentence
	}
	v := s[p:e]
	switch {
	case e < len(s) && s[e] == '(':
		return span{}, false // a call: token=getToken()
	case isLiteralWord(v), isSelector(v):
		return span{}, false
	case kind == kindSecret && (sep != '=' || spaced) && len(v) < 8:
		return span{}, false
	}
	return span{p, e}, true
}

// authBare handles an unquoted Authorization value starting at p whose
// first word ends at e.
func authBare(s string, p, e int) (span, bool) {
	w1 := s[p:e]
	q := skipBlanks(s, e)
	var e2 int
	if q > e && q < len(s) && isBareStart(s[q]) && !strings.HasPrefix(s[q:], Placeholder) {
		e2 = bareEnd(s, q)
	}
	switch {
	case isAuthScheme(w1):
		if e2 > q && isAuthParam(s, q, e2) {
			// Digest username="…", AWS4-HMAC-SHA256 Credential=…: a list
			// of parameters, left to the other rules (hex signatures,
			// AKIA…, oauth_token="…").
			return span{}, false
		}
		if e2 > q {
			return span{q, e2}, true
		}
		return span{}, false // the scheme alone: Authorization: Bearer
	case e2 > q && isSchemeLike(w1):
		// An unknown scheme and its credentials; both go, since the first
		// word might be the credential and the second one prose.
		return span{p, e2}, true
	}
	return span{p, e}, true
}

// isAuthParam reports whether s[a:b], the word after an authentication
// scheme, starts a name=value parameter list (Digest username="bob",
// AWS4-HMAC-SHA256 Credential=…) rather than being a token68 credential,
// in which = can only be trailing padding.
func isAuthParam(s string, a, b int) bool {
	w := s[a:b]
	i := strings.IndexByte(w, '=')
	if i <= 0 || i > 32 {
		return false
	}
	for k := range i {
		if c := w[k]; !isUpper(c) && !isLower(c) && c != '_' && c != '-' {
			return false
		}
	}
	if strings.TrimRight(w[i:], "=") != "" {
		return true // name=value: = inside the word, so not padding
	}
	// name="value": a short lower-case name, = and a quote.
	return w[i:] == "=" && i <= 16 && strings.ToLower(w[:i]) == w[:i] && b < len(s) && s[b] == '"'
}

// afterScheme returns where the credentials start in a quoted
// Authorization value s[a:b]: after its scheme if it starts with a known
// one followed by blanks, else at a.
func afterScheme(s string, a, b int) int {
	w := a
	for w < b && s[w] != ' ' && s[w] != '\t' {
		w++
	}
	if w < b && isAuthScheme(s[a:w]) {
		return skipBlanks(s[:b], w)
	}
	return a
}

func isAuthScheme(w string) bool {
	for _, sc := range authSchemes {
		if strings.EqualFold(w, sc) {
			return true
		}
	}
	return false
}

// isSchemeLike reports whether w could be an authentication scheme name:
// a letter followed by letters and hyphens.
func isSchemeLike(w string) bool {
	if w == "" || len(w) > 32 || !isLower(w[0]|0x20) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; !isUpper(c) && !isLower(c) && c != '-' {
			return false
		}
	}
	return true
}

// isBareStart reports whether an unquoted value can start with c: not with
// a stop byte, nor with $ or % (templates and format verbs: $TOKEN, %s).
func isBareStart(c byte) bool {
	return c > ' ' && c != 0x7f && strings.IndexByte(bareStop, c) < 0 && c != '$' && c != '%'
}

func bareEnd(s string, p int) int {
	e := p
	for e < len(s) && s[e] > ' ' && s[e] != 0x7f && strings.IndexByte(bareStop, s[e]) < 0 {
		e++
	}
	return e
}

func skipBlanks(s string, p int) int {
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	return p
}

func isLiteralWord(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "null", "nil", "none", "undefined":
		return true
	}
	return false
}

// isSelector reports whether v is a dotted Go/JS/Python selector made of
// identifiers without digits, such as cfg.Token or os.Args: code, not a
// credential.
func isSelector(v string) bool {
	dots := 0
	start := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '.':
			if start {
				return false
			}
			dots++
			start = true
		case isUpper(c) || isLower(c) || c == '_':
			start = false
		default:
			return false
		}
	}
	return dots > 0 && !start
}

// jsonStructure reports whether v, found next to a double quote, is JSON
// structure rather than string content: it starts with what may follow a
// string (: , ] }) or ends with what may precede one (: , [ {), and holds
// nothing but punctuation, whitespace, numbers and literals.
func jsonStructure(v string) bool {
	t := strings.Trim(v, " \t\r\n")
	if t == "" || (strings.IndexByte(":,]}", t[0]) < 0 && strings.IndexByte(":,[{", t[len(t)-1]) < 0) {
		return false
	}
	for i := 0; i < len(t); i++ {
		if strings.IndexByte(":,[]{} \t\r\n0123456789.+-eEtrufalsn", t[i]) < 0 {
			return false
		}
	}
	return true
}
