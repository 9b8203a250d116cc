package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrecedence(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no ~/.garraia/config.yml
	flagFile := writeFile(t, "llm: {model: from-flag}\n")
	envFile := writeFile(t, "llm: {model: from-env}\n")

	tests := []struct {
		name      string
		flag      string
		env       map[string]string
		wantModel string
		wantPath  string
	}{
		{"flag beats env", flagFile, map[string]string{EnvConfigPath: envFile}, "from-flag", flagFile},
		{"env when no flag", "", map[string]string{EnvConfigPath: envFile}, "from-env", envFile},
		{"missing default file means defaults", "", nil, DefaultModel, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, src, err := Load(tt.flag, envOf(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.LLM.Model != tt.wantModel || src.Path != tt.wantPath {
				t.Fatalf("model=%q path=%q, want %q %q", cfg.LLM.Model, src.Path, tt.wantModel, tt.wantPath)
			}
		})
	}
}

func TestLoadDefaultFileInHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".garraia"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".garraia", "config.yml"), []byte("llm: {provider: ollama}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, src, err := Load("", envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.Provider != "ollama" || src.Explicit {
		t.Fatalf("provider=%q explicit=%v", cfg.LLM.Provider, src.Explicit)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	missing := filepath.Join(t.TempDir(), "nope.yml")
	tests := []struct {
		name, flag string
		env        map[string]string
		wantSubstr string
	}{
		{"missing explicit flag file", missing, nil, "nope.yml"},
		{"missing explicit env file", "", map[string]string{EnvConfigPath: missing}, "nope.yml"},
		{"unknown key named", writeFile(t, "llm: {modle: x}\n"), nil, "modle"}, //nolint:misspell // the typo is the test
		{"wrong type named", writeFile(t, "gateway: {rate_limit: {requests_per_minute: lots}}\n"), nil, "requests_per_minute"},
		{"not yaml", writeFile(t, "llm: [\n"), nil, "config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Load(tt.flag, envOf(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.wantSubstr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantSubstr)
			}
		})
	}
}

func TestEnvBeatsFile(t *testing.T) {
	p := writeFile(t, "gateway: {api_key: file-key}\nexecution: {profile: standard}\n")
	cfg, _, err := Load(p, envOf(map[string]string{
		EnvGatewayAPIKey:    "env-key",
		EnvExecutionProfile: ProfileIsolatedPod,
		EnvBraveAPIKey:      "brave",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.APIKey != "env-key" || cfg.Execution.Profile != ProfileIsolatedPod || cfg.LLM.Brave.APIKey != "brave" {
		t.Fatalf("env did not win: %+v %+v %+v", cfg.Gateway.APIKey, cfg.Execution, cfg.LLM.Brave)
	}
}

func TestDefaults(t *testing.T) {
	c := Default()
	m := c.Gateway.MCPHTTP
	if c.LLM.Provider != "openrouter" || c.LLM.Model != "z-ai/glm-5.3-flash" || c.Gateway.Listen != "127.0.0.1:3888" ||
		m.MaxHistoryMessages != 50 || m.AskBudgetPerMinute != 10 || m.AgentBudgetPerMinute != 2 || m.AgentMaxSeconds != 300 ||
		c.Gateway.RateLimit.RequestsPerMinute != 120 || c.Execution.Profile != "standard" || c.Agent.Sandbox.Mode != "off" {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestResolveProvider(t *testing.T) {
	cfg, err := Parse([]byte(`
llm:
  provider: openai
  base_url: http://127.0.0.1:9/v1
  api_key_env: MY_OPENAI
  aliases:
    local: {provider: ollama, base_url: http://127.0.0.1:11434/v1}
    corp: {provider: anthropic, base_url: https://llm.corp/, api_key_env: CORP_KEY}
    broken: {provider: gemini}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.applyDefaults()
	tests := []struct {
		name    string
		want    ProviderRef
		wantErr string
	}{
		{"openai", ProviderRef{"openai", "openai", "http://127.0.0.1:9/v1", "MY_OPENAI"}, ""},
		{"openrouter", ProviderRef{"openrouter", "openrouter", "", "OPENROUTER_API_KEY"}, ""},
		{"anthropic", ProviderRef{"anthropic", "anthropic", "", "ANTHROPIC_API_KEY"}, ""},
		{"ollama", ProviderRef{"ollama", "ollama", "", ""}, ""},
		{"local", ProviderRef{"local", "ollama", "http://127.0.0.1:11434/v1", ""}, ""},
		{"corp", ProviderRef{"corp", "anthropic", "https://llm.corp/", "CORP_KEY"}, ""},
		{"broken", ProviderRef{}, "llm.aliases.broken.provider"},
		{"gemini", ProviderRef{}, `provider "gemini" is not one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cfg.ResolveProvider(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	names := strings.Join(cfg.ProviderNames(), ",")
	if names != "ollama,anthropic,openai,openrouter,broken,corp,local" {
		t.Fatalf("ProviderNames = %s", names)
	}
}

// The seed's agent.sandbox.elevated key is part of the file format (the
// strict decoder would refuse it otherwise).
func TestParseAcceptsSandboxElevated(t *testing.T) {
	cfg, err := Parse([]byte("agent:\n  sandbox:\n    mode: all\n    backend: docker\n    elevated: [bash, web_fetch]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Agent.Sandbox; s.Mode != "all" || len(s.Elevated) != 2 || s.Elevated[0] != "bash" || s.Elevated[1] != "web_fetch" {
		t.Fatalf("sandbox = %+v", s)
	}
}
