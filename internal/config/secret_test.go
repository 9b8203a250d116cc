package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeSecret(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadSecretFile(t *testing.T) {
	dir := t.TempDir()
	// The layout of a Secret volume: key -> ..data/key -> ..2026_01_01/key.
	data := filepath.Join(dir, "..2026_01_01")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	writeSecret(t, data, "token", "tok-from-a-secret-volume\n")
	if err := os.Symlink("..2026_01_01", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/token", filepath.Join(dir, "token")); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("s3cr3t", MaxSecretFileBytes)
	tests := []struct {
		name, path, want, err string
	}{
		{"secret volume link, newline trimmed", filepath.Join(dir, "token"), "tok-from-a-secret-volume", ""},
		{"surrounding whitespace", writeSecret(t, dir, "ws", "  \tkey value \r\n"), "key value", ""},
		{"exactly the cap", writeSecret(t, dir, "cap", strings.Repeat("k", MaxSecretFileBytes)), strings.Repeat("k", MaxSecretFileBytes), ""},
		{"empty", writeSecret(t, dir, "empty", ""), "", "is empty"},
		{"only a newline", writeSecret(t, dir, "nl", "\n"), "", "is empty"},
		{"missing", filepath.Join(dir, "nope"), "", "no such file"},
		{"directory", data, "", "not a regular file"},
		{"too large", writeSecret(t, dir, "big", big), "", "larger than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSecretFile(tt.path)
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ReadSecretFile = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("the error holds the content: %v", err)
			}
		})
	}
	if os.Getuid() != 0 { // root reads anything
		unreadable := writeSecret(t, dir, "unreadable", "x")
		if err := os.Chmod(unreadable, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSecretFile(unreadable); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("unreadable: %v", err)
		}
	}
}

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	file := writeSecret(t, dir, "tok", "from-file\n")
	env := map[string]string{"TOK": "from-env"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name, env, file, want, err string
	}{
		{"env", "TOK", "", "from-env", ""},
		{"file", "", file, "from-file", ""},
		{"both", "TOK", file, "", "are both set: set only one"},
		{"neither", "", "", "", "not set"},
		{"env unset", "UNSET", "", "", "UNSET is not set"},
		{"file missing", "", filepath.Join(dir, "missing"), "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Orchestrator{Name: "o", KeyEnv: tt.env, KeyFile: tt.file}
			s := OrchestratorSandbox{URL: "http://s", TokenEnv: tt.env, TokenFile: tt.file}
			for what, fn := range map[string]func() (string, error){
				"key_": func() (string, error) {
					ts, err := o.Tokens(getenv)
					return strings.Join(ts, ","), err
				}, "token_": func() (string, error) { return s.Token(getenv) },
			} {
				got, err := fn()
				if tt.err == "" && (err != nil || got != tt.want) {
					t.Errorf("%s: Token = %q, %v; want %q", what, got, err, tt.want)
				}
				if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), what)) {
					t.Errorf("%s: err = %v, want %q naming the %s* key", what, err, tt.err, what)
				}
				if err != nil && (strings.Contains(err.Error(), "from-env") || strings.Contains(err.Error(), "from-file")) {
					t.Errorf("%s: the error holds a token: %v", what, err)
				}
			}
		})
	}
}

func TestReadSecretLines(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          []string
		err           string
	}{
		{"one", "tok-a\n", []string{"tok-a"}, ""},
		{"two with blanks", "\n  tok-new  \n\n\ttok-old\r\n", []string{"tok-new", "tok-old"}, ""},
		{"blank only", " \n\n \n", nil, "is empty"},
		{"too large", strings.Repeat("x", MaxSecretFileBytes+1), nil, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := writeSecret(t, dir, strings.ReplaceAll(tt.name, " ", "-"), tt.content)
			got, err := ReadSecretLines(f)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("ReadSecretLines = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	// The orchestrator accepts every line; its sandbox is sent the first.
	f := writeSecret(t, dir, "rot", "tok-new\ntok-old\n")
	ts, err := Orchestrator{Name: "o", KeyFile: f}.Tokens(nil)
	if err != nil || strings.Join(ts, ",") != "tok-new,tok-old" {
		t.Errorf("Tokens = %q, %v", ts, err)
	}
	st, err := OrchestratorSandbox{URL: "http://s", TokenFile: f}.Token(nil)
	if err != nil || st != "tok-new" {
		t.Errorf("sandbox Token = %q, %v; want the first line", st, err)
	}
	vals := (&Config{Gateway: Gateway{MCPHTTP: MCPHTTP{Orchestrators: []Orchestrator{{Name: "o", KeyFile: f}}}}}).SecretValues(func(string) string { return "" })
	for _, want := range []string{"tok-new", "tok-old"} {
		if !slices.Contains(vals, want) {
			t.Errorf("SecretValues = %d values, missing a line of a token file", len(vals))
		}
	}
}

func TestReadAPIKeyFile(t *testing.T) {
	dir := t.TempDir()
	file := writeSecret(t, dir, "api-key", "owner-key\n")
	tests := []struct {
		name          string
		literal, path string
		env           string
		want, err     string
	}{
		{"from the file", "", file, "", "owner-key", ""},
		{"no file configured", "literal", "", "", "literal", ""},
		{"env beats the file", "", filepath.Join(dir, "missing"), "env-key", "env-key", ""},
		{"literal and file", "literal", file, "", "", "both set"},
		{"unreadable", "", filepath.Join(dir, "missing"), "", "", "gateway.api_key_file: open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			cfg.Gateway.APIKey, cfg.Gateway.APIKeyFile = tt.literal, tt.path
			getenv := func(k string) string {
				if k == EnvGatewayAPIKey {
					return tt.env
				}
				return ""
			}
			cfg.applyEnv(getenv) // as Load does
			err := cfg.ReadAPIKeyFile(getenv)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if cfg.Gateway.APIKey != tt.want {
				t.Fatalf("api_key = %q, want %q", cfg.Gateway.APIKey, tt.want)
			}
		})
	}
}

func TestCheckSecretFiles(t *testing.T) {
	dir := t.TempDir()
	key := writeSecret(t, dir, "key", longToken+"\n")
	tok := writeSecret(t, dir, "tok", "t"+longToken+"\n") // its own: one token proves one caller
	missing := filepath.Join(dir, "missing")
	env := map[string]string{"K": longToken, "OPENROUTER_API_KEY": "k"}
	tests := []struct {
		name, yaml string
		fields     []string
	}{
		{"files", "gateway: {api_key_file: " + key + ", mcp_http: {enabled: true, orchestrators: [{name: a, key_file: " + tok + ", sandbox: {url: 'http://s:8080/mcp', token_file: " + key + "}}]}}", nil},
		{"missing files", "gateway: {api_key_file: " + missing + ", mcp_http: {enabled: true, orchestrators: [{name: a, key_file: " + missing + ", sandbox: {url: 'http://s:8080/mcp', token_file: " + missing + "}}]}}",
			[]string{"gateway.api_key_file", "gateway.mcp_http.orchestrators[a].key_file", "gateway.mcp_http.orchestrators[a].sandbox.token_file"}},
		{"both sources", "gateway: {api_key: x, api_key_file: " + key + ", mcp_http: {orchestrators: [{name: a, key_env: K, key_file: " + key + ", sandbox: {url: 'http://s:8080/mcp', token_env: K, token_file: " + key + "}}]}}",
			[]string{"gateway.api_key_file", "gateway.mcp_http.orchestrators[a].key_file", "gateway.mcp_http.orchestrators[a].sandbox.token_file"}},
		{"env beats the key file", "gateway: {api_key_file: " + missing + ", mcp_http: {enabled: true}}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			e := env
			if strings.HasPrefix(tt.name, "env beats") {
				e = map[string]string{EnvGatewayAPIKey: "from-env-" + longToken, "OPENROUTER_API_KEY": "k"}
			}
			getenv := func(k string) string { return e[k] }
			cfg.applyEnv(getenv)
			var got []string
			for _, p := range cfg.Check(getenv) {
				got = append(got, p.Field)
			}
			if strings.Join(got, "|") != strings.Join(tt.fields, "|") {
				t.Fatalf("problems %v, want %v", cfg.Check(getenv), tt.fields)
			}
		})
	}
	// CheckWith reads through the given reader, not the disk.
	cfg, _ := Parse([]byte("gateway: {api_key_file: /run/k, mcp_http: {enabled: true, orchestrators: [{name: a, key_file: /run/a}]}}"))
	cfg.applyDefaults()
	seen := []string{}
	ps := cfg.CheckWith(func(k string) string { return env[k] }, func(p string) (string, error) { seen = append(seen, p); return longToken, nil })
	if len(ps) != 0 || strings.Join(seen, ",") != "/run/k,/run/a" {
		t.Fatalf("CheckWith: problems %v, read %v", ps, seen)
	}
}

// What the config names as files is held by the process too, so it is
// among the values every redactor knows.
func TestSecretValuesReadsSecretFiles(t *testing.T) {
	dir := t.TempDir()
	owner := writeSecret(t, dir, "owner", "owner-from-a-file\n")
	tok := writeSecret(t, dir, "tok", "orchestrator-from-a-file")
	sbx := writeSecret(t, dir, "sbx", "sandbox-from-a-file")
	cfg, err := Parse([]byte("gateway: {api_key_file: " + owner + ", mcp_http: {orchestrators: [" +
		"{name: a, key_file: " + tok + ", sandbox: {url: 'http://a:8080/mcp', token_file: " + sbx + "}}, " +
		"{name: b, key_env: B, key_file: " + filepath.Join(dir, "missing") + "}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.applyDefaults()
	got := cfg.SecretValues(func(k string) string {
		if k == "B" {
			return "b-from-env"
		}
		return ""
	})
	want := []string{"owner-from-a-file", "orchestrator-from-a-file", "sandbox-from-a-file", "b-from-env"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("SecretValues = %q, want %q", got, want)
	}
}
