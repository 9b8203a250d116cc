package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// Secrets with no recognisable shape, as the process may hold them: an
// owner key (base64url of 32 bytes is caught by shape only sometimes), a
// short hex token, a word-like password, and a key with characters that
// need escaping.
var (
	ownerKey     = fakeB64(rng, 32, base64.RawURLEncoding)
	orchToken    = "orch-" + fake(rng, lowerChars, 14)
	wordPassword = "correct-horse-battery-staple"
	escapyKey    = "p@ss/w0rd+\"q\"&<x>=" + fake(rng, alnumChars, 6)
	lowerKey     = fake(rng, lowerChars, 24) // no shape at all
)

func TestWithSecrets(t *testing.T) {
	r, _ := New(nil)
	r = r.WithSecrets(ownerKey, orchToken, wordPassword, escapyKey, lowerKey, "", "short", " \n")
	jsonEsc := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
	cases := []struct {
		name, tmpl, secret string
	}{
		{"prose", "the token $S was rejected", orchToken},
		{"start and end", "$S", lowerKey},
		{"glued to words", "xx$Syy", lowerKey},
		{"openai error body", `{"error":{"message":"Incorrect API key provided: $S. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`, lowerKey},
		{"anthropic error body", `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: $S"}}`, ownerKey},
		{"openrouter error body", `{"error":{"message":"No auth credentials found for $S","code":401}}`, orchToken},
		{"header", "X-Garra-Token: $S\r\nAccept: */*", orchToken},
		{"word-like password", "login with $S please", wordPassword},
		{"json escaped", `{"v":"$S"}`, jsonEsc(escapyKey)},
		{"json escaped in json", `{"outer":"{\"v\":\"$S\"}"}`, jsonEsc(jsonEsc(escapyKey))},
		{"query escaped", "https://x.test/cb?k=$S&n=1", url.QueryEscape(escapyKey)},
		{"path escaped", "https://x.test/k/$S/items", url.PathEscape(escapyKey)},
		// The padding is left: it carries nothing of the value.
		{"base64 std", "data: $S==\n", base64.RawStdEncoding.EncodeToString([]byte(wordPassword))},
		{"base64 url", "v=$S;", base64.RawURLEncoding.EncodeToString([]byte(escapyKey))},
		{"newline inside", "key:\n$S\nend", lowerKey[:12] + "\n" + lowerKey[12:]},
		{"crlf and indent inside", "key: $S done", lowerKey[:10] + "\r\n    " + lowerKey[10:]},
		{"spaces inside", "pasted $S here", orchToken[:9] + "  " + orchToken[9:]},
		{"json newline inside", `{"v":"$S"}`, lowerKey[:8] + `\n` + lowerKey[8:16] + `\r\n  ` + lowerKey[16:]},
		{"two breaks", "<$S>", ownerKey[:8] + "\n" + ownerKey[8:30] + " " + ownerKey[30:]},
		{"twice", "$S", orchToken + " and " + orchToken},
		{"short value", "$S and sweet", "short"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := sub(c.tmpl, c.secret)
			want := sub(c.tmpl, Placeholder)
			if c.name == "twice" {
				want = Placeholder + " and " + Placeholder
			}
			if got := r.String(in); got != want {
				t.Errorf("String(%q)\n got %q\nwant %q", in, got, want)
			}
			if json.Valid([]byte(in)) && !json.Valid(r.Bytes([]byte(in))) {
				t.Error("broke JSON")
			}
		})
	}

	// Unregistered: empty, whitespace only; and text that only starts
	// like a secret.
	for _, in := range []string{
		"a word-like phrase: correct-horse", "orch-" + strings.Repeat("z", 14),
		lowerKey[:7] + "\n" + lowerKey[7:],       // broken inside the first eight bytes
		lowerKey[:12] + "\n\n" + lowerKey[12:],   // a blank line is not a wrap
		lowerKey[:12] + "      " + lowerKey[12:], // nor are six spaces
	} {
		if got := r.String(in); got != in {
			t.Errorf("String(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestWithSecretsKeepsReceiverAndRules(t *testing.T) {
	base, errs := New([]string{`internal-[0-9]+`})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	withS := base.WithSecrets(lowerKey)
	if got := base.String(lowerKey); got != lowerKey {
		t.Errorf("the receiver changed: %q", got)
	}
	in := "id internal-42, key " + lowerKey + ", openai " + openAILegacy
	want := "id " + Placeholder + ", key " + Placeholder + ", openai " + Placeholder
	if got := withS.String(in); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// Chained registrations add up; nil means Default.
	both := withS.WithSecrets(orchToken)
	if got := both.String(lowerKey + " " + orchToken); got != Placeholder+" "+Placeholder {
		t.Errorf("chained: %q", got)
	}
	var nilR *Redactor
	if got := nilR.WithSecrets(orchToken).String("t=" + orchToken + " " + ghpToken); got != "t="+Placeholder+" "+Placeholder {
		t.Errorf("nil receiver: %q", got)
	}
	// A trimmed value is found too: tokens read from files end in \n.
	if got := Default().WithSecrets(orchToken + "\n").String("x " + orchToken + " y"); got != "x "+Placeholder+" y" {
		t.Errorf("untrimmed value: %q", got)
	}
}

// WithSecretsOf gives the receiver's rules the other redactor's secrets,
// and neither changes.
func TestWithSecretsOf(t *testing.T) {
	base, errs := New([]string{`internal-[0-9]+`})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	known := Default().WithSecrets(lowerKey)
	shared := base.WithSecretsOf(known)
	in := "id internal-42, key " + lowerKey
	if got, want := shared.String(in), "id "+Placeholder+", key "+Placeholder; got != want {
		t.Errorf("shared: %q, want %q", got, want)
	}
	if got, want := known.String(in), "id internal-42, key "+Placeholder; got != want {
		t.Errorf("the other changed: %q, want %q", got, want)
	}
	if got, want := base.String(in), "id "+Placeholder+", key "+lowerKey; got != want {
		t.Errorf("the receiver changed: %q, want %q", got, want)
	}
	if got := base.WithSecretsOf(nil).String(lowerKey); got != lowerKey {
		t.Errorf("no secrets: %q", got)
	}
}

func TestWithSecretsNested(t *testing.T) {
	// One secret inside another, and two overlapping: the union goes.
	long := "prefix-" + lowerKey + "-suffix"
	r := Default().WithSecrets(lowerKey, long, lowerKey[12:]+"tail0000")
	for in, want := range map[string]string{
		"a " + long + " b":                   "a " + Placeholder + " b",
		"a " + lowerKey + " b":               "a " + Placeholder + " b",
		"a " + lowerKey + "tail0000 b":       "a " + Placeholder + " b",
		"a " + lowerKey[12:] + "tail0000 b":  "a " + Placeholder + " b",
		"a " + lowerKey + lowerKey + " b":    "a " + Placeholder + " b",
		`{"k":"` + long + `","n":` + "1}":    `{"k":"` + Placeholder + `","n":1}`,
		"[REDACTED] " + lowerKey + " [REDAC": "[REDACTED] " + Placeholder + " [REDAC",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestWithSecretsJSONAndIdempotent(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 9))
	secrets := []string{ownerKey, orchToken, wordPassword, escapyKey, lowerKey, "REDACTED", "[REDACTED]x"}
	r := Default().WithSecrets(secrets...)
	pieces := append([]string{
		"\n", "\"", "\\", "\u00e9", "\t", " ", ":", "=", "&", "\\n", "[REDACTED]", "<", "'", "sk-", "x",
	}, secrets...)
	for i := range 3000 {
		var sb strings.Builder
		for range 1 + rnd.IntN(8) {
			p := pieces[rnd.IntN(len(pieces))]
			if rnd.IntN(4) == 0 && len(p) > 10 {
				p = p[:9] + "\n" + p[9:] // a wrapped one
			}
			sb.WriteString(p)
		}
		b, _ := json.Marshal(map[string]any{"content": sb.String(), "n": i})
		got := r.Bytes(b)
		if !json.Valid(got) {
			t.Fatalf("invalid after redaction:\n in %s\nout %s", b, got)
		}
		if again := r.Bytes(got); !bytes.Equal(again, got) {
			t.Fatalf("not idempotent:\n once %s\ntwice %s", got, again)
		}
		var v struct{ Content string }
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets[:5] {
			if strings.Contains(v.Content, s) {
				t.Fatalf("secret %.8s… survived in %q", s, v.Content)
			}
		}
	}
}

func TestWrappedKeys(t *testing.T) {
	// Each key is cut in two (or three) pieces by a break; the whole key,
	// from its prefix, must go, and the text around it must stay.
	cut := func(key string, breaks ...string) string {
		// Cut at evenly spaced points after the prefix's first bytes.
		n := len(breaks) + 1
		step := (len(key) - 6) / n
		var sb strings.Builder
		prev := 0
		for i, b := range breaks {
			at := 6 + step*(i+1)
			sb.WriteString(key[prev:at])
			sb.WriteString(b)
			prev = at
		}
		sb.WriteString(key[prev:])
		return sb.String()
	}
	keys := map[string]string{
		"openai project": openAIKey, "openai legacy": openAILegacy, "openrouter": openRouterKey,
		"anthropic": anthropicKey, "google": googleKey, "stripe": stripeKey, "github classic": ghpToken,
		"github oauth": ghoToken, "github fine grained": ghPAT, "aws": awsKeyID, "slack": slackToken,
		"telegram": telegramToken,
	}
	breaks := map[string][]string{
		"newline": {"\n"}, "crlf": {"\r\n"}, "space": {" "}, "two spaces": {"  "}, "tab": {"\t"},
		"newline and indent": {"\n    "}, "space then newline": {" \n"}, "json newline": {`\n`},
		"json crlf and indent": {`\r\n  `}, "two breaks": {"\n", " "},
	}
	contexts := []string{
		"the key $S was rejected",
		"the key $S\nThe next line is prose.",
		"OPENAI_API_KEY=$S\nHOME=/root",
		"Incorrect API key provided: $S. You can find your API key at https://example.com.",
		`{"error":{"message":"Incorrect API key provided: $S","code":401}}`,
		"$S",
	}
	r := Default()
	for kname, key := range keys {
		for bname, bs := range breaks {
			broken := cut(key, bs...)
			for _, ctx := range contexts {
				if strings.HasPrefix(ctx, "{") && strings.ContainsAny(broken, "\n\r\t") {
					continue // a raw control byte cannot be in a JSON string
				}
				in, want := sub(ctx, broken), sub(ctx, Placeholder)
				if got := r.String(in); got != want {
					t.Errorf("%s, %s in %q:\n got %q\nwant %q", kname, bname, ctx, got, want)
				}
			}
		}
	}
}

func TestWrappedKeysStopAtProse(t *testing.T) {
	r := Default()
	p := Placeholder
	tests := []struct{ in, want string }{
		// A complete key followed by a break and more text: the text stays.
		{openAILegacy + "\nis invalid", p + "\nis invalid"},
		{openAILegacy + " The end", p + " The end"},
		{openAILegacy + "\nHTTP 401", p + "\nHTTP 401"},
		{awsKeyID + "\nAKIAISNOTAKEY", p + "\nAKIAISNOTAKEY"},
		{googleKey + " abc123", p + " abc123"},
		{ghpToken + "\n" + fake(rng, alnumChars, 10), p + "\n" + "$REST"},
		{openRouterKey + " deadbeef00", p + " deadbeef00"},
		// Fixed-length keys whose pieces do not add up are not keys.
		{"AKIA" + awsKeyID[4:12] + "\nBUT NOT THE REST", "AKIA" + awsKeyID[4:12] + "\nBUT NOT THE REST"},
		{"AIza" + googleKey[4:20] + " is short", "AIza" + googleKey[4:20] + " is short"},
		// Variable-length keys stop at a word.
		{openAILegacy[:30] + "\nand then prose", "$FIRST\nand then prose"},
		// Not keys at all.
		{"run sk-learn\nfit the Model2 now", "run sk-learn\nfit the Model2 now"},
		{"task-list\nA1b2C3d4", "task-list\nA1b2C3d4"},
		{"sk-fading-circle\nspinner", "sk-fading-circle\nspinner"},
	}
	for _, tt := range tests {
		got := r.String(tt.in)
		want := tt.want
		switch {
		case strings.Contains(want, "$REST"):
			want = strings.Replace(want, "$REST", tt.in[strings.LastIndexByte(tt.in, '\n')+1:], 1)
		case strings.Contains(want, "$FIRST"):
			want = strings.Replace(want, "$FIRST", r.String(openAILegacy[:30]), 1)
		}
		if got != want {
			t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, want)
		}
	}
}

func FuzzWithSecrets(f *testing.F) {
	for _, s := range allSecrets {
		f.Add(s[:len(s)/2] + "\n" + s[len(s)/2:])
	}
	f.Add(`{"a":"` + lowerKey[:9] + `\n` + lowerKey[9:] + `"}`)
	f.Add("sk-" + strings.Repeat("Ab1 ", 60))
	r := Default().WithSecrets(lowerKey, ownerKey, escapyKey)
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

func BenchmarkStringWithSecrets(b *testing.B) {
	// The gateway's case: a provider key, the owner key and a handful of
	// orchestrator and sandbox tokens registered.
	var values []string
	for range 8 {
		values = append(values, fakeB64(rng, 32, base64.RawURLEncoding))
	}
	r := Default().WithSecrets(append(values, openRouterKey)...)
	in := benchText
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(in)
	}
}

// A held secret is redacted whatever its length, down to one byte.
func TestWithSecretsCoversShortValues(t *testing.T) {
	for _, v := range []string{"Q", "k9", "pw1", "s3cr", "Zz9x!", "abc-12", "tok_4Xy"} {
		r := Default().WithSecrets(v)
		in := "before " + v + " after\n" + v
		want := "before " + Placeholder + " after\n" + Placeholder
		if got := r.String(in); got != want {
			t.Errorf("a %d-byte secret: String(%q) = %q, want %q", len(v), in, got, want)
		}
	}
}
