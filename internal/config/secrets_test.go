package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSecretValues(t *testing.T) {
	cfg, err := Parse([]byte(`
llm:
  provider: openrouter
  api_key_env: MY_ROUTER_KEY
  aliases:
    local: {provider: openai, base_url: "http://127.0.0.1:1", api_key_env: LOCAL_KEY}
gateway:
  api_key: owner-from-file
  mcp_http:
    orchestrators:
      - {name: a, key_env: A_KEY, sandbox: {url: "http://a:8080/mcp", token_env: A_SBX}}
      - {name: b, key_env: B_KEY}
      - {name: c, key_env: UNSET_KEY}
channels:
  telegram: {bot_token_env: TG}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.applyDefaults()
	env := map[string]string{
		"GARRAIA_GATEWAY_API_KEY": "owner-from-env", EnvBraveAPIKey: "brave-key",
		"MY_ROUTER_KEY": "router-key", "OPENAI_API_KEY": "openai-key", "ANTHROPIC_API_KEY": "anthropic-key",
		"LOCAL_KEY": "local-key", "OPENROUTER_API_KEY": "unused-default-router-key",
		"A_KEY": "a-token", "A_SBX": "a-sandbox-token", "B_KEY": "a-token", "TG": "tg-token",
	}
	getenv := func(k string) string { return env[k] }
	cfg.applyEnv(getenv)
	got := cfg.SecretValues(getenv)
	want := []string{"owner-from-env", "brave-key", "anthropic-key", "openai-key", "router-key", "local-key",
		"unused-default-router-key", "a-token", "a-sandbox-token", "tg-token"}
	if !slices.Equal(got, want) {
		t.Fatalf("SecretValues\n got %q\nwant %q", got, want)
	}
	if got := Default().SecretValues(func(string) string { return "" }); len(got) != 0 {
		t.Fatalf("nothing set: %q", got)
	}
}

func TestStoreDSNIsASecret(t *testing.T) {
	file := t.TempDir() + "/dsn"
	if err := os.WriteFile(file, []byte("postgres://garra:from-file-pw@db/garra\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PG_DSN": "postgres://garra:from-env-pw@db/garra"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct{ store, want string }{
		{"store: {driver: postgres, dsn_env: PG_DSN}", env["PG_DSN"]},
		{"store: {driver: postgres, dsn_file: " + file + "}", "postgres://garra:from-file-pw@db/garra"},
	} {
		cfg, err := FromBytes([]byte(tc.store), getenv)
		if err != nil {
			t.Fatal(err)
		}
		dsn, err := cfg.StoreDSN(getenv, ReadSecretFile)
		if err != nil || dsn != tc.want {
			t.Fatalf("%s: dsn %q %v", tc.store, dsn, err)
		}
		if !slices.Contains(cfg.SecretValues(getenv), tc.want) {
			t.Fatalf("%s: the DSN is not redacted", tc.store)
		}
	}
	cfg, _ := FromBytes([]byte("store: {driver: postgres, dsn_env: EMPTY}"), getenv)
	if _, err := cfg.StoreDSN(getenv, ReadSecretFile); err == nil || !strings.HasPrefix(err.Error(), "store.dsn_env: ") {
		t.Fatalf("unset variable: %v", err)
	}
	if d := Default(); d.Store.Driver != StoreSQLite {
		t.Fatalf("default driver %q", d.Store.Driver)
	}
}
