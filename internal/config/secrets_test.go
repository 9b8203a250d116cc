package config

import (
	"slices"
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
