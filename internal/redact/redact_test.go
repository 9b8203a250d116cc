package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fake credentials are generated, not written out, so that secret scanners
// have nothing to flag in this file. The generator is seeded: every run
// sees the same values.
var rng = rand.New(rand.NewPCG(2024, 7))

const (
	upperChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lowerChars = "abcdefghijklmnopqrstuvwxyz"
	digitChars = "0123456789"
	alnumChars = upperChars + lowerChars + digitChars
	urlChars   = alnumChars + "-_"
	hexChars   = "0123456789abcdef"
)

func fake(r *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func fakeB64(r *rand.Rand, nbytes int, enc *base64.Encoding) string {
	b := make([]byte, nbytes)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return enc.EncodeToString(b)
}

var (
	openAIKey     = "sk-" + "proj-" + fake(rng, urlChars, 120)
	openAILegacy  = "sk-" + fake(rng, alnumChars, 48)
	openRouterKey = "sk-" + "or-v1-" + fake(rng, hexChars, 64)
	anthropicKey  = "sk-" + "ant-api03-" + fake(rng, urlChars, 93) + "AA"
	googleKey     = "AI" + "za" + fake(rng, urlChars, 35)
	stripeKey     = "sk_" + "live_" + fake(rng, alnumChars, 24)
	ghpToken      = "gh" + "p_" + fake(rng, alnumChars, 36)
	ghoToken      = "gh" + "o_" + fake(rng, alnumChars, 36)
	ghPAT         = "github" + "_pat_" + fake(rng, alnumChars, 22) + "_" + fake(rng, alnumChars, 59)
	awsKeyID      = "AK" + "IA" + fake(rng, upperChars+digitChars, 16)
	slackToken    = "xo" + "xb-" + fake(rng, digitChars, 12) + "-" + fake(rng, digitChars, 13) + "-" + fake(rng, alnumChars, 24)
	telegramToken = fake(rng, digitChars, 10) + ":AA" + fake(rng, urlChars, 33)
	jwtToken      = "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0." + fakeB64(rng, 32, base64.RawURLEncoding)
	pemBody       = fakeB64(rng, 48, base64.StdEncoding) + "\n" + fakeB64(rng, 48, base64.StdEncoding) + "\n" + fakeB64(rng, 20, base64.StdEncoding)
	pemKey        = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + pemBody + "\n-----END RSA " + "PRIVATE KEY-----"
	hex32         = "0f" + fake(rng, hexChars, 30)
	hex64         = "a1" + fake(rng, hexChars, 62)
	b64Secret     = fakeB64(rng, 33, base64.StdEncoding)        // 44 characters
	b64URLSecret  = fakeB64(rng, 48, base64.RawURLEncoding)     // 64 characters
	bearerToken   = "tok_" + fake(rng, alnumChars, 32) + ".x~y" // not matched by any other rule
	gitSHA        = "9c" + fake(rng, hexChars, 38)

	// allSecrets are recognisable on their own; bearerToken only after
	// Bearer or Authorization.
	allSecrets = []string{
		openAIKey, openAILegacy, openRouterKey, anthropicKey, googleKey, stripeKey,
		ghpToken, ghoToken, ghPAT, awsKeyID, slackToken, telegramToken, jwtToken,
		pemBody, hex32, hex64, b64Secret, b64URLSecret,
	}
)

// sub replaces $S in tmpl with v.
func sub(tmpl, v string) string { return strings.ReplaceAll(tmpl, "$S", v) }

func TestBuiltins(t *testing.T) {
	// Each case puts secret into tmpl at $S; the expected output has
	// Placeholder there and everything else untouched.
	cases := []struct {
		name, tmpl, secret string
	}{
		{"openai prose", "the key $S was rejected", openAIKey},
		{"openai legacy json", `{"error":{"message":"Incorrect API key provided: $S","code":401}}`, openAILegacy},
		{"openai env", "OPENAI_API_KEY=$S\nHOME=/root", openAIKey},
		{"openrouter header", "x-api-key: $S\r\nHost: openrouter.ai", openRouterKey},
		{"openrouter query", "https://openrouter.ai/api/v1/chat?api_key=$S&stream=true", openRouterKey},
		{"anthropic json", `{"headers":{"x-api-key":"$S"}}`, anthropicKey},
		{"anthropic prose after dash", "key was -$S.", anthropicKey},
		{"google query", "GET https://generativelanguage.googleapis.com/v1/models?key=$S HTTP/1.1", googleKey},
		{"stripe", "charging with $S", stripeKey},
		{"github classic", "git clone https://x-access-token:$S@github.com/o/r.git", ghpToken},
		{"github oauth prose", "token $S expired", ghoToken},
		{"github fine grained", "GH_PAT=$S", ghPAT},
		{"aws key id", "aws_access_key_id = $S", awsKeyID},
		{"aws key id json", `{"AccessKeyId":"$S"}`, awsKeyID},
		{"slack", "posting with $S to #general", slackToken},
		{"telegram url", "POST https://api.telegram.org/bot$S/sendMessage", telegramToken},
		{"telegram prose", "bot token is $S, keep it safe", telegramToken},
		{"jwt cookie", "Cookie: session=$S; Path=/", jwtToken},
		{"jwt json", `{"id_token_hint":"$S"}`, jwtToken},
		{"pem", "-----BEGIN RSA PRIVATE KEY-----$S-----END RSA PRIVATE KEY-----", "\n" + pemBody + "\n"},
		{"hex 32 prose", "signing secret $S in use", hex32},
		{"hex 64 json", `{"webhook":"$S"}`, hex64},
		{"hex after key-", "mailgun key-$S", hex32},
		{"hex 0x", "private key 0x$S", hex64},
		{"base64 std", "blob $S end", b64Secret},
		{"base64 url in path", "GET /v1/files/$S/content", b64URLSecret},
		{"bearer header", "Authorization: Bearer $S", bearerToken},
		{"bearer lower case", "curl -H 'authorization: bearer $S' https://x.test", bearerToken},
		{"bearer alone", "sent Bearer $S upstream", bearerToken},
		{"bearer json", `{"Authorization":"Bearer $S"}`, bearerToken},
		{"bearer http.Header json", `{"Authorization":["Bearer $S"]}`, bearerToken},
		{"bearer http.Header fmt", "map[Authorization:[Bearer $S] Accept:[*/*]]", bearerToken},
		{"basic", "Authorization: Basic $S", "dXNlcjpwYXNzd29yZA=="},
		{"github token scheme", "Authorization: token $S", "abc123def456"},
		{"unknown scheme", "Proxy-Authorization: $S\n", "Custom abc123"},
		{"authorization raw", `authorization="$S"`, "abc123def456"},
		{"x-api-key short", "X-Api-Key: $S\n", "abc123456789"},
		{"digest params", `Authorization: Digest username="bob", response="$S"`, hex32},
		{"aws credentials file", "[default]\naws_secret_access_key = $S\n", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"slack webhook", "POST https://hooks.slack.com/services/$S", "T0000/B0000/" + fake(rng, alnumChars, 24)},
		{"discord webhook", "https://discord.com/api/webhooks/$S?wait=true", "1234567890/" + fake(rng, urlChars, 68)},
		{"password kv", "password=$S&user=bob", "hunter2"},
		{"password json", `{"user":"bob","password":"$S"}`, "hunter 2!"},
		{"password json escaped quote", `{"password":"$S","n":1}`, `a\"b\\c`},
		{"password yaml", "db:\n  password: $S\n  host: db", "hunter2"},
		{"passwd quoted", "DB_PASSWD='$S'", "s3cr3t"},
		{"client secret", "client_id=abc&client_secret=$S&grant_type=client_credentials", "Zx9-_.~"},
		{"access token query", "https://x.test/cb#access_token=$S&expires_in=3600", "ya29.a0AfH6SM"},
		{"secret colon", "webhook secret: $S", "whsec_abcdefgh"},
		{"camel apiKey json", `{"apiKey": "$S"}`, "abc"},
		{"token flag", "garra ask --token=$S --model x", "t0k"},
		{"credentials ruby", `:credentials => "$S"`, "c0nf1dent1al"},
		{"private key field", `"private_key": "$S"`, "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n"},
		{"nested escaped json", `{"body":"{\"api_key\":\"$S\",\"n\":1}"}`, "abc123"},
		{"url password", "DATABASE_URL=postgres://app:$S@db.internal:5432/app", "s3cr3t-pw"},
		{"secret after escape", `{"log":"line one\n$S\nline three"}`, b64Secret},
		{"secret after unicode escape", `{"log":"caf\u00e9 $S"}`, hex64},
		{"hex glued to escape", `{"log":"a\n$S"}`, hex64},
		{"key glued to escape", `{"log":"a\n$S"}`, ghpToken},
		{"key glued to unicode escape", `{"q":"x\u0026$S"}`, googleKey},
		{"bearer glued to escape", `{"h":"\nBearer $S"}`, bearerToken},
	}
	r := Default()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, want := sub(c.tmpl, c.secret), sub(c.tmpl, Placeholder)
			if got := r.String(in); got != want {
				t.Errorf("String(%q)\n got %q\nwant %q", in, got, want)
			}
			if got := string(r.Bytes([]byte(in))); got != want {
				t.Errorf("Bytes(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

// The built-in expressions compile on first use, so a malformed one would
// panic only when some text arms it: compile them all here, and check that
// each redacted group exists.
func TestBuiltinExpressionsCompile(t *testing.T) {
	n := 0
	for _, r := range builtins {
		rr, ok := r.(*reRule)
		if !ok {
			continue
		}
		n++
		if re := rr.re(); rr.group > re.NumSubexp() {
			t.Errorf("%s: group %d, the expression has %d", re, rr.group, re.NumSubexp())
		}
	}
	if n == 0 {
		t.Fatal("no expression rule among the built-ins")
	}
}

func TestBuiltinsInContexts(t *testing.T) {
	// Every self-identifying secret, in prose, JSON, a header with an
	// ordinary name, a URL query and a URL path.
	contexts := []string{
		"error: $S was rejected.",
		`{"value":"$S","n":1}`,
		"X-Request-Context: $S\r\nAccept: */*",
		"https://api.example.com/v1/items?id=1&q=$S&page=2",
		"https://api.example.com/v1/$S/items",
	}
	r := Default()
	for _, sec := range allSecrets {
		if sec == pemBody {
			continue // multi-line; covered by its own cases
		}
		for _, ctx := range contexts {
			in, want := sub(ctx, sec), sub(ctx, Placeholder)
			if got := r.String(in); got != want {
				t.Errorf("secret %.12s… in %q:\n got %q\nwant %q", sec, ctx, got, want)
			}
		}
	}
}

// negatives must come out of the redactor unchanged.
var negatives = []string{
	"The quick brown fox jumps over the lazy dog. It's 42 degrees; see page 7.",
	"/home/user/work/main/internal/redact/redact_test.go:123: unexpected output",
	"/Users/JohnSmith/Projects2024/garra/internal/redact",
	"/usr/share/i18n/charmaps/JIS_C6229-1984-HAND-ADD",
	`C:\Users\Alice\AppData\Local\Temp\go-build1234567890\b001\exe`,
	"update the task-list and the risk-assessment, then run sk-learn",
	"<div class=\"sk-fading-circle-spinner-animation\"></div>",
	"git checkout 3f2a9c1 && git show 3f2a9c1d",
	"commit " + gitSHA + "\nAuthor: A <a@b.c>",
	"https://github.com/DragonFlyBSD/DragonFlyBSD/commit/" + gitSHA,
	"id 123e4567-e89b-12d3-a456-426614174000 and 123E4567-E89B-12D3-A456-426614174000",
	"github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=",
	`"integrity": "sha512-` + fakeB64(rng, 64, base64.StdEncoding) + `"`,
	"image@sha256:" + hex64,
	"request req_" + hex32 + " failed; response resp_" + hex64[:48],
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo` + fakeB64(rng, 90, base64.StdEncoding) + `"}}`,
	"data:image/png;base64," + fakeB64(rng, 60, base64.StdEncoding),
	"model: z-ai/glm-5.3-flash",
	`{"model":"anthropic/claude-sonnet-4.5","max_tokens":4096,"temperature":0.7}`,
	`{"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}`,
	`{"token": 12345678, "secret": true, "password": null, "api_key": {"type": "string"}}`,
	`{"properties":{"token":{"type":"string","description":"API token to use"}}}`,
	"numbers 1234567890123456789012345678901234567890 3.14159 -17 0x1F",
	`{"big": 1E000000000000000000000000000000, "small": 1e-300}`,
	"v0.0.0-20240101120000-abcdef123456",
	"Invalid token: expired",
	"uses a Bearer token for Bearer authentication; Authorization: Bearer",
	"TestParseHTTP2ResponseWithContentLength123 and rewriteValueAMD64_OpRoundToEvenScaledFloat32x8",
	"secret_name: prod-db\npassword_reset_url=https://example.com/reset\ntokens: 12",
	"ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY api_key: ${OPENAI_API_KEY}",
	"https://example.com/docs/getting-started?version=2#install",
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + fakeB64(rng, 32, base64.RawStdEncoding) + " agent@garra",
	"token = tok\nsecret = s\n",
	"user@example.com wrote: see https://example.com:8443/path@v2",
	`token := os.Getenv("GARRA_TOKEN")
if token == "" {
	return fmt.Errorf("missing token: set GARRA_TOKEN (password: %s)", hint)
}
req.Header.Set("Authorization", "Bearer "+token)
cfg := Config{APIKey: cfg.APIKey, Password: opts.Password, Token: nil}
secret := []byte(cfg.Secret)
func (c *Client) Token() string { return c.token }
var maxTokens = 1024
apiKey = loadKey(path)
type Options struct {
	APIKey string ` + "`json:\"api_key,omitempty\"`" + `
}`,
}

func TestNegatives(t *testing.T) {
	r := Default()
	for _, in := range negatives {
		if got := r.String(in); got != in {
			t.Errorf("String changed clean text\n  in %q\n got %q", in, got)
		}
	}
}

func TestGitSHAAndHexChoices(t *testing.T) {
	r := Default()
	upperSHA := strings.ToUpper(gitSHA)
	for _, c := range []struct{ in, want string }{
		{"HEAD is " + gitSHA, "HEAD is " + gitSHA},                  // git object name kept
		{"HEAD is " + upperSHA, "HEAD is " + Placeholder},           // upper-case 40 hex is not git's
		{"sum " + hex64 + "  file.tar", "sum [REDACTED]  file.tar"}, // unlabelled 64 hex goes
		{"sha256:" + hex64, "sha256:" + hex64},                      // labelled digest stays
		{"md5=" + hex32, "md5=" + hex32},
		{"trace " + hex32, "trace " + Placeholder},
		{"short " + hex32[:31], "short " + hex32[:31]},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestBase64Heuristic checks the shape heuristic on random base64 (which it
// must catch) and on identifiers and paths (which it must not).
func TestBase64Heuristic(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1)) // own stream: results do not depend on -run
	for _, tc := range []struct {
		nbytes  int
		maxMiss float64
	}{{30, 0.012}, {33, 0.006}, {48, 0.001}} {
		const n = 5000
		miss, total := 0, 0
		for i := range n {
			enc := base64.RawStdEncoding
			if i%2 == 1 {
				enc = base64.RawURLEncoding
			}
			v := fakeB64(rnd, tc.nbytes, enc)
			if !strings.ContainsAny(v, upperChars) || !strings.ContainsAny(v, lowerChars) || !strings.ContainsAny(v, digitChars) {
				continue // needs all three classes by definition
			}
			total++
			if !looksBase64(v) {
				miss++
			}
		}
		if rate := float64(miss) / float64(total); rate > tc.maxMiss {
			t.Errorf("%d-byte base64: missed %d of %d (%.4f > %.4f)", tc.nbytes, miss, total, rate, tc.maxMiss)
		}
	}
	for _, v := range []string{
		"TestParseHTTP2ResponseWithContentLength123",
		"BenchmarkRedactorStringWithManySecrets4KiB",
		"ErrInvalidArgumentPassedToFunctionNumber42",
		"ThisIsAVeryLongSentenceWithoutSpaces2024Edition",
		"rewriteValueAMD64_OpRoundToEvenScaledFloat32x8",
		"http2cipher_TLS_DHE_PSK_WITH_AES_256_GCM_SHA384",
		"ETHTOOL_LINK_MODE_100000baseLR2_ER2_FR2_Full_BIT",
		"/Users/JohnSmith/Projects2024/garra/internal/redact",
		"/var/lib/docker/overlay2/3f9a1c2B/merged/usr/local",
		"/usr/local/go/src/crypto/tls/testdata/Client-TLSv12-AES256-GCM-SHA384",
		"x86_64-unknown-linux-gnu/release/build/Foo123-Bar",
		"com/WebAssembly/WASI/blob/" + gitSHA + "/legacy/preview1/docs",
		"some-long-kebab-case-identifier-with-V2-suffix",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1a",
	} {
		if looksBase64(v) {
			t.Errorf("looksBase64(%q) = true", v)
		}
	}
}

func TestOperatorPatterns(t *testing.T) {
	long := "x" + strings.Repeat("y", MaxPatternLen-1)
	patterns := []string{
		`acme-[0-9]{6}`, // 0: whole match
		`(?i)internal id:? (?P<secret>[a-z0-9]+)`, // 1: named group only
		`(unclosed`,                          // 2: invalid
		strings.Repeat("a", MaxPatternLen+1), // 3: too long
		"",                                   // 4: empty
		long,                                 // 5: exactly the limit, valid
	}
	for len(patterns) < MaxPatterns {
		patterns = append(patterns, fmt.Sprintf(`filler%d`, len(patterns)))
	}
	patterns = append(patterns, `surplus-[0-9]+`) // 32: the 33rd
	r, errs := New(patterns)

	want := map[int]string{2: "invalid", 3: "longer than", 4: "empty", MaxPatterns: "more than"}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs)
	}
	for _, err := range errs {
		var pe *PatternError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v is not a *PatternError", err)
		}
		if !strings.Contains(pe.Reason, want[pe.Index]) {
			t.Errorf("pattern %d: reason %q, want it to mention %q", pe.Index, pe.Reason, want[pe.Index])
		}
		if !strings.Contains(err.Error(), fmt.Sprint(pe.Index)) {
			t.Errorf("error %q does not name index %d", err, pe.Index)
		}
		if strings.Contains(err.Error(), "unclosed") || strings.Contains(err.Error(), "aaaa") {
			t.Errorf("error %q quotes the pattern", err)
		}
	}

	for _, c := range []struct{ in, want string }{
		{"order acme-123456 shipped", "order [REDACTED] shipped"},
		{"Internal ID: zz9plural", "Internal ID: [REDACTED]"},
		{"see " + long + " here", "see [REDACTED] here"},
		{"filler7 filler31", "[REDACTED] [REDACTED]"},
		{"surplus-42 stays", "surplus-42 stays"},
		{"built-ins still apply: " + ghpToken, "built-ins still apply: [REDACTED]"},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if Default().String("order acme-123456") != "order acme-123456" {
		t.Error("operator pattern leaked into Default()")
	}
}

func TestOperatorPatternsStayIdempotent(t *testing.T) {
	// Patterns that match inside the placeholder, or match everything,
	// must neither grow the output nor change it on a second pass. (x*,
	// which matches the empty string, is skipped.)
	r, errs := New([]string{`E`, `\w+`, `D.*`, `x*`})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "pattern 3 skipped: matches the empty string") {
		t.Fatal(errs)
	}
	for _, in := range []string{"hello world", "EDGE CASE", "token=abc123def456 x", ""} {
		once := r.String(in)
		if twice := r.String(once); twice != once {
			t.Errorf("not idempotent on %q: %q then %q", in, once, twice)
		}
		if len(once) > len(in)+len(Placeholder)*len(strings.Fields(in)) {
			t.Errorf("output grew: %q -> %q", in, once)
		}
	}
}

func TestOperatorPatternKeepsJSONStringsClosed(t *testing.T) {
	// A careless pattern spanning quotes is split at them.
	r, _ := New([]string{`"internal":"[^"]*"`})
	in := `{"internal":"abc","ok":true}`
	got := r.String(in)
	if !json.Valid([]byte(got)) || strings.Contains(got, "abc") {
		t.Errorf("String(%s) = %s", in, got)
	}
}

func TestJSONStaysValid(t *testing.T) {
	r := Default()
	doc := map[string]any{
		"ok":      false,
		"answer":  "Here are the keys: " + strings.Join(allSecrets, ", ") + ". Done.",
		"history": []any{map[string]any{"role": "tool", "content": "env:\nOPENAI_API_KEY=" + openAIKey + "\nTOKEN=" + hex32 + "\n"}},
		"pem":     pemKey,
		"nested":  `{"api_key":"` + anthropicKey + `","password":"p\"w","n":1}`,
		"token":   12345678,
		"secret":  true,
		"tricky":  "caf\u00e9\t" + b64Secret + "\x01\"" + hex64 + "\\" + jwtToken + "<>&",
		"headers": map[string][]string{"Authorization": {"Bearer " + bearerToken}, "X-Api-Key": {openRouterKey}},
		"url":     "postgres://u:" + fake(rng, alnumChars, 12) + "@h/db?sslmode=disable&password=pw",
	}
	for _, indent := range []bool{false, true} {
		var b []byte
		var err error
		if indent {
			b, err = json.MarshalIndent(doc, "", "  ")
		} else {
			b, err = json.Marshal(doc)
		}
		if err != nil {
			t.Fatal(err)
		}
		// Also embed the whole document as a string in another one, the
		// way tool results travel inside chat history.
		outer, _ := json.Marshal(map[string]string{"content": string(b)})
		for _, in := range [][]byte{b, outer} {
			got := r.Bytes(in)
			if !json.Valid(got) {
				t.Fatalf("redacted JSON is invalid:\n%s", got)
			}
			for _, s := range append(allSecrets, bearerToken) {
				if bytes.Contains(got, []byte(s)) || bytes.Contains(got, []byte(strings.ReplaceAll(s, "\n", `\n`))) {
					t.Errorf("secret %.12s… survived", s)
				}
			}
			var v map[string]any
			if err := json.Unmarshal(got, &v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestJSONStaysValidRandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2, 1)) // own stream: results do not depend on -run
	// Random documents assembled from secrets, keys and characters that
	// need escaping.
	r := Default()
	pieces := append([]string{
		"\n", "\"", "\\", "\u00e9", "\t", " ", ":", "=", "&", ",", "/", "Bearer ", "Authorization: ",
		"token=", "password: ", "api_key", `"`, "\\u0041", "0x", "sk-", "eyJ", "-----BEGIN PRIVATE KEY-----",
		"-----END PRIVATE KEY-----", "[REDACTED]", "\x00", "<", "'",
	}, allSecrets...)
	for i := range 3000 {
		var sb strings.Builder
		for range 1 + rnd.IntN(8) {
			sb.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		key := pieces[rnd.IntN(len(pieces))]
		b, _ := json.Marshal(map[string]any{key: sb.String(), "n": i})
		got := r.Bytes(b)
		if !json.Valid(got) {
			t.Fatalf("invalid after redaction:\n in %s\nout %s", b, got)
		}
		if again := r.Bytes(got); !bytes.Equal(again, got) {
			t.Fatalf("not idempotent:\n once %s\ntwice %s", got, again)
		}
	}
}

func TestNoLeakBetweenSeparators(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 1)) // own stream: results do not depend on -run
	// Secrets between arbitrary separators vanish, in plain text and in
	// the same text as a JSON string.
	seps := []string{" ", "\n", ", ", "\"", "'", "=", ": ", "/", "(", ")", "\t", "; ", "&", "?", "#", "|", "`", "<", ">", " token=", " Bearer ", `"api_key":"`}
	r := Default()
	for range 2000 {
		var parts, secrets []string
		for range 1 + rnd.IntN(6) {
			sec := allSecrets[rnd.IntN(len(allSecrets))]
			secrets = append(secrets, sec)
			parts = append(parts, seps[rnd.IntN(len(seps))], sec, seps[rnd.IntN(len(seps))])
		}
		in := strings.Join(parts, "")
		js, _ := json.Marshal(in)
		out, outJSON := r.String(in), r.String(string(js))
		for _, sec := range secrets {
			enc, _ := json.Marshal(sec)
			if strings.Contains(out, sec) || strings.Contains(outJSON, strings.Trim(string(enc), `"`)) {
				t.Fatalf("secret survived\n  in %q\n out %q\njson %s", in, out, outJSON)
			}
		}
	}
}

func TestLinearTime(t *testing.T) {
	// Repetitive input must not make a rule rescan the text per match.
	const n = 1 << 18
	r := Default()
	for name, in := range map[string]string{
		"sk-":     strings.Repeat("sk-", n/3),
		"token=":  strings.Repeat("token=", n/6),
		"a:":      strings.Repeat("a:", n/2),
		"Bearer":  strings.Repeat("Bearer ", n/7),
		"url":     strings.Repeat("://a:b", n/6),
		"pem":     "-----BEGIN RSA PRIVATE KEY-----" + strings.Repeat("-a", n/2),
		"escapes": strings.Repeat(`\`, n) + ghpToken,
		"paths":   strings.Repeat("a/", n/2) + b64Secret,
		"keys":    strings.Repeat("aaaa", n/8) + strings.Repeat(":", n/2),
		"hex":     strings.Repeat(hex32+" ", n/33),
	} {
		start := time.Now()
		r.String(in)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %d bytes took %v", name, len(in), d)
		}
	}
}

func TestIdempotent(t *testing.T) {
	r := Default()
	var inputs []string
	inputs = append(inputs, negatives...)
	inputs = append(inputs, allSecrets...)
	inputs = append(inputs,
		"Authorization: Custom abc123 was rejected",
		"authorization: abc123 for user bob",
		"token=[REDACTED] password=[REDACTED]x",
		"Bearer [REDACTED]",
		"[REDACTED][REDACTED] [REDAC"+"TED",
		pemKey,
		"-----BEGIN OPENSSH PRIVATE KEY-----\n"+pemBody+"\n(truncated)",
		strings.Join(allSecrets, ""),
		strings.Join(allSecrets, "/"),
	)
	for _, in := range inputs {
		once := r.String(in)
		if twice := r.String(once); twice != once {
			t.Errorf("not idempotent\n  in %q\nonce %q\ntwice %q", in, once, twice)
		}
	}
}

func TestBytesDoesNotModifyInput(t *testing.T) {
	r := Default()
	clean := []byte("nothing to see")
	if got := r.Bytes(clean); &got[0] != &clean[0] {
		t.Error("Bytes copied clean input")
	}
	in := []byte("key " + ghpToken)
	orig := string(in)
	_ = r.Bytes(in)
	if string(in) != orig {
		t.Error("Bytes modified its input")
	}
	if r.Bytes(nil) != nil {
		t.Error("Bytes(nil) != nil")
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if got := r.String("key " + ghpToken); got != "key "+Placeholder {
		t.Errorf("nil Redactor: %q", got)
	}
}

type secretURL struct{ u *url.URL }

func (s secretURL) String() string { return s.u.String() }

type lazySecret struct{}

func (lazySecret) LogValue() slog.Value { return slog.StringValue("lazy " + slackToken) }

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, nil), nil))
	log = log.With("auth", "Bearer "+bearerToken, slog.Group("client", "key", openAIKey)).WithGroup("req")
	u, _ := url.Parse("https://bob:" + fake(rng, alnumChars, 10) + "@example.com/x")
	var nilURL *url.URL
	log.Info("calling provider with key "+anthropicKey,
		"err", fmt.Errorf("provider: 401: invalid x-api-key %s", openRouterKey),
		slog.Group("headers", slog.String("X-Api-Key", googleKey), slog.Group("deep", "t", telegramToken)),
		"url", secretURL{u},
		"nilurl", nilURL,
		"lazy", lazySecret{},
		"cfg", struct {
			APIKey string
			Port   int
		}{stripeKey, 8080},
		"raw", []byte("token="+hex32),
		"n", 42,
		"ok", true,
		"plain", "nothing secret here",
		"password", "hunter2",
		slog.Any("credentials", map[string]string{"user": "bob"}),
		slog.Int("max_token", 5),
	)
	out := buf.String()
	if !json.Valid(bytes.TrimSpace(buf.Bytes())) {
		t.Fatalf("handler output is not JSON: %s", out)
	}
	for _, s := range append(allSecrets, u.User.String()) {
		if strings.Contains(out, s) {
			t.Errorf("secret %.12s… reached the log: %s", s, out)
		}
	}
	var rec struct {
		Msg  string `json:"msg"`
		Auth string `json:"auth"`
		Cl   struct {
			Key string `json:"key"`
		} `json:"client"`
		Req struct {
			Err     string `json:"err"`
			Headers struct {
				Key  string `json:"X-Api-Key"`
				Deep struct {
					T string `json:"t"`
				} `json:"deep"`
			} `json:"headers"`
			URL    string `json:"url"`
			NilURL string `json:"nilurl"`
			Lazy   string `json:"lazy"`
			Cfg    struct {
				APIKey string
				Port   int
			} `json:"cfg"`
			Raw      string `json:"raw"`
			N        int    `json:"n"`
			OK       bool   `json:"ok"`
			Plain    string `json:"plain"`
			Password string `json:"password"`
			Creds    string `json:"credentials"`
			MaxToken int    `json:"max_token"`
		} `json:"req"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"msg", rec.Msg, "calling provider with key [REDACTED]"},
		{"With attr", rec.Auth, "Bearer [REDACTED]"},
		{"With group", rec.Cl.Key, Placeholder},
		{"error", rec.Req.Err, "provider: 401: invalid x-api-key [REDACTED]"},
		{"group", rec.Req.Headers.Key, Placeholder},
		{"nested group", rec.Req.Headers.Deep.T, Placeholder},
		{"stringer", rec.Req.URL, "https://bob:[REDACTED]@example.com/x"},
		{"nil stringer", rec.Req.NilURL, "!PANIC: runtime error: invalid memory address or nil pointer dereference"},
		{"LogValuer", rec.Req.Lazy, "lazy [REDACTED]"},
		{"struct", rec.Req.Cfg.APIKey, Placeholder},
		{"bytes", rec.Req.Raw, "token=[REDACTED]"},
		{"plain", rec.Req.Plain, "nothing secret here"},
		{"credential key", rec.Req.Password, Placeholder},
		{"credential key, any value", rec.Req.Creds, Placeholder},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if rec.Req.N != 42 || !rec.Req.OK || rec.Req.Cfg.Port != 8080 || rec.Req.MaxToken != 5 {
		t.Errorf("scalars changed: %+v", rec.Req)
	}
}

func TestHandlerText(t *testing.T) {
	// The text handler, as cmd/garra uses for stderr.
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, nil), Default()))
	log.WithGroup("http").Warn("retrying", "err", errors.New("401 for Bearer "+bearerToken),
		slog.Group("hdr", "Authorization", "Basic dXNlcjpwYXNzd29yZA=="), "attempt", 2)
	out := buf.String()
	for _, want := range []string{
		`msg=retrying`,
		`http.err="401 for Bearer [REDACTED]"`,
		`http.hdr.Authorization="Basic [REDACTED]"`,
		`http.attempt=2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, bearerToken) || strings.Contains(out, "dXNlcjpwYXNzd29yZA") {
		t.Errorf("secret in output: %s", out)
	}
}

// A named string type (an error kind) is logged as the string it is,
// once quoted at most, and still redacted; where the key names a
// credential, its value goes whole.
func TestHandlerNamedString(t *testing.T) {
	type kind string
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, nil), Default()))
	log.Info("mcp call", "error_kind", kind("agent_disabled"), "empty", kind(""), "note", kind("Bearer "+bearerToken), "api_key", kind("k-123"))
	out := buf.String()
	for _, want := range []string{`error_kind=agent_disabled `, `empty="" `, `note="Bearer [REDACTED]"`, `api_key=[REDACTED]`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, bearerToken) || strings.Contains(out, "k-123") {
		t.Errorf("secret in output: %s", out)
	}
}

func TestHandlerEnabled(t *testing.T) {
	h := NewHandler(slog.NewJSONHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}), Default())
	if h.Enabled(t.Context(), slog.LevelInfo) || !h.Enabled(t.Context(), slog.LevelError) {
		t.Error("Enabled does not follow the wrapped handler")
	}
}

func TestConcurrentUse(t *testing.T) {
	r, errs := New([]string{`acme-[0-9]{6}`})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(NewHandler(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil), r))
	inputs := append(append([]string{}, negatives...), allSecrets...)
	inputs = append(inputs, "order acme-123456", benchText)
	want := make([]string, len(inputs))
	for i, in := range inputs {
		want[i] = r.String(in)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 50 {
				i := (g*31 + k) % len(inputs)
				if got := r.String(inputs[i]); got != want[i] {
					t.Errorf("concurrent String differs for input %d", i)
					return
				}
				if got := string(r.Bytes([]byte(inputs[i]))); got != want[i] {
					t.Errorf("concurrent Bytes differs for input %d", i)
					return
				}
				if got := Default().String(ghpToken); got != Placeholder {
					t.Errorf("Default: %q", got)
					return
				}
				log.Info(inputs[i], "k", inputs[i])
			}
		})
	}
	wg.Wait()
	for _, s := range allSecrets {
		if s == hex32 || s == hex64 {
			continue // some negatives hold them in exempt places (req_…, sha256:…)
		}
		if strings.Contains(buf.String(), s) {
			t.Errorf("secret %.12s… reached the log", s)
		}
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func FuzzString(f *testing.F) {
	for _, s := range negatives {
		f.Add(s)
	}
	for _, s := range allSecrets {
		f.Add(`{"token":"` + s + `"}`)
	}
	f.Add(`{"a":"\u00e9\n` + b64Secret + `\\"}`)
	f.Add("Authorization: Basic " + b64Secret)
	f.Add("0E000000000000000000000000000000") // a JSON number, not hex
	r := Default()
	f.Fuzz(func(t *testing.T, in string) {
		once := r.String(in)
		if twice := r.String(once); twice != once {
			t.Fatalf("not idempotent\n  in %q\nonce %q\ntwice %q", in, once, twice)
		}
		if json.Valid([]byte(in)) && !json.Valid([]byte(once)) {
			t.Fatalf("broke JSON\n  in %s\n out %s", in, once)
		}
	})
}

// benchText is about 4 KiB of what Garra writes: log lines, a JSON
// envelope with a chat history, a provider error, some Go code and a diff,
// with a handful of secrets.
var benchText = func() string {
	var sb strings.Builder
	sb.WriteString(`time=2025-06-01T12:00:00Z level=INFO msg="garra mcp-server starting" config=/etc/garra/config.yaml policy="tools=off" provider=openrouter pid=4242
time=2025-06-01T12:00:01Z level=WARN msg="provider error" status=401 body="{\"error\":{\"message\":\"Incorrect API key provided: ` + openAILegacy + `\",\"type\":\"invalid_request_error\"}}"
`)
	env, _ := json.Marshal(map[string]any{
		"ok":         true,
		"provider":   "openrouter",
		"model":      "z-ai/glm-5.3-flash",
		"latency_ms": 1834,
		"answer": "The function reads the key from the environment and sends it as `Authorization: Bearer " + bearerToken + "`. " +
			"I changed internal/llm/openaicompat.go so that the request id (req_" + hex32 + ") is logged, and ran go test ./... which passed. " +
			"The commit is " + gitSHA + ". See https://github.com/garraia/garra/blob/main/internal/redact/redact.go#L42 for details.",
		"history": []map[string]string{
			{"role": "user", "content": "Why does my request to https://openrouter.ai/api/v1/chat/completions fail with 401? My config has api_key: " + openRouterKey},
			{"role": "assistant", "content": "Your key looks revoked. Check the OPENROUTER_API_KEY variable and run `garra config check`."},
			{"role": "tool", "content": "$ env | grep -i key\nOPENROUTER_API_KEY=" + openRouterKey + "\nGOFLAGS=-mod=mod\nHOME=/home/agent\n"},
		},
		"usage": map[string]int{"prompt_tokens": 1234, "completion_tokens": 567, "total_tokens": 1801},
	})
	sb.Write(env)
	sb.WriteString("\n")
	sb.WriteString(`diff --git a/internal/llm/openaicompat.go b/internal/llm/openaicompat.go
index 3f2a9c1..8b7e6d2 100644
--- a/internal/llm/openaicompat.go
+++ b/internal/llm/openaicompat.go
@@ -41,9 +41,12 @@ func newOpenAICompat(o Options) *openAICompat {
 	opts := []option.RequestOption{
 		option.WithBaseURL(o.BaseURL),
-		option.WithAPIKey(o.APIKey),
+		option.WithAPIKey(o.APIKey), // never logged
+		option.WithMaxRetries(2),
 	}
 	if o.Timeout > 0 {
 		opts = append(opts, option.WithRequestTimeout(o.Timeout))
 	}
+	slog.Debug("client ready", "base_url", o.BaseURL, "model", o.Model)
 	return &openAICompat{client: openai.NewClient(opts...)}
 }
`)
	for sb.Len() < 4096-200 {
		sb.WriteString("time=2025-06-01T12:00:02Z level=INFO msg=\"tool call\" tool=read_file path=/home/dev/proj/internal/ask/ask.go bytes=5120 duration=3.2ms\n")
	}
	return sb.String()
}()

func BenchmarkString(b *testing.B) {
	r := Default()
	in := benchText
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(in)
	}
}

// BenchmarkStringClean measures the common case: nothing to redact.
func BenchmarkStringClean(b *testing.B) {
	r := Default()
	var sb strings.Builder
	for sb.Len() < 4096 {
		sb.WriteString("time=2025-06-01T12:00:02Z level=INFO msg=\"tool call\" tool=read_file path=/home/dev/proj/internal/ask/ask.go bytes=5120 duration=3.2ms\n")
	}
	in := sb.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(in)
	}
}
