package config

import (
	"os"
	"strings"
	"testing"
)

// longToken is a token Check accepts (MinTokenBytes or more).
const longToken = "tok-0123456789abcdef0123456789abcdef"

func TestCheck(t *testing.T) {
	env := map[string]string{"BADGOOD_MCP_KEY": longToken, "SBX": "s", "OPENROUTER_API_KEY": "k", "PG_DSN": "postgres://garra:pw@db/garra"}
	tests := []struct {
		name   string
		yaml   string
		fields []string // fields with a problem, in order
	}{
		{"defaults are clean", "", nil},
		{"enabled without key", "gateway: {mcp_http: {enabled: true}}", []string{"gateway.mcp_http.enabled"}},
		{"enabled with key", "gateway: {api_key: " + longToken + ", mcp_http: {enabled: true}}", nil},
		{"allow_send without destinations", "gateway: {mcp_http: {allow_send: true}}", []string{"gateway.mcp_http.allow_send"}},
		{"allow_send with destinations", "gateway: {mcp_http: {allow_send: true}}\nchannels: {telegram: {proactive_chat_ids: ['-100123']}}", nil},
		{"bad chat id", "channels: {telegram: {proactive_chat_ids: ['abc']}}", []string{"channels.telegram.proactive_chat_ids[0]"}},
		{"agent_max_seconds low", "gateway: {mcp_http: {agent_max_seconds: 4}}", []string{"gateway.mcp_http.agent_max_seconds"}},
		{"agent_max_seconds high", "gateway: {mcp_http: {agent_max_seconds: 601}}", []string{"gateway.mcp_http.agent_max_seconds"}},
		{"drain_seconds negative", "gateway: {drain_seconds: -1}", []string{"gateway.drain_seconds"}},
		{"drain_seconds high", "gateway: {drain_seconds: 901}", []string{"gateway.drain_seconds"}},
		{"handover_seconds negative", "gateway: {handover_seconds: -1}", []string{"gateway.handover_seconds"}},
		{"handover_seconds high", "gateway: {handover_seconds: 61}", []string{"gateway.handover_seconds"}},
		{"sandbox wake without its Deployment", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: K, sandbox: {url: 'http://s:8080/mcp', token_env: T, wake: {namespace: ns}}}]}}",
			[]string{"gateway.mcp_http.orchestrators[a].key_env", "gateway.mcp_http.orchestrators[a].sandbox.token_env", "gateway.mcp_http.orchestrators[a].sandbox.wake.deployment"}},
		{"bad redact pattern", "gateway: {mcp_http: {redact_patterns: ['(unclosed']}}", []string{"gateway.mcp_http.redact_patterns[0]"}},
		{"empty-matching redact patterns", `gateway: {mcp_http: {redact_patterns: ['corp-[0-9]{6}', 'a*', 'ok', '\b']}}`,
			[]string{"gateway.mcp_http.redact_patterns[1]", "gateway.mcp_http.redact_patterns[3]"}},
		{"provider key unset", "llm: {api_key_env: MY_ROUTER_KEY}", []string{"llm.api_key_env"}},
		{"other provider's key unset", "llm: {provider: anthropic}", []string{"llm.api_key_env"}},
		{"alias provider's key unset", "llm: {provider: work, aliases: {work: {provider: openai, api_key_env: WORK_KEY}}}", []string{"llm.aliases.work.api_key_env"}},
		{"ollama needs no key", "llm: {provider: ollama, model: llama3.2}", nil},
		{"alias of ollama needs no key", "llm: {provider: lab, aliases: {lab: {provider: ollama}}}", nil},
		{"router as the default model", "llm: {model: openrouter/auto}", []string{"llm.model"}},
		{"router named explicitly is fine", "llm: {model: z-ai/glm-5.3-flash}\ngateway: {mcp_http: {ask_allowed_models: [openrouter/auto]}}", nil},
		{"bad provider", "llm: {provider: gemini}", []string{"llm.provider"}},
		{"bad profile", "execution: {profile: laptop}", []string{"execution.profile"}},
		{"bad sandbox", "agent: {sandbox: {mode: some, backend: lxc}}", []string{"agent.sandbox.mode", "agent.sandbox.backend"}},
		{"orchestrator ok", "gateway: {mcp_http: {allow_agent: true, orchestrators: [{name: badgood, key_env: BADGOOD_MCP_KEY, tools: [status, agent], sandbox: {url: 'http://x:8080/mcp', token_env: SBX}}]}}", nil},
		{"orchestrator nome alias", "gateway: {mcp_http: {orchestrators: [{nome: badgood, key_env: BADGOOD_MCP_KEY}]}}", nil},
		{"orchestrator key unset", "gateway: {mcp_http: {orchestrators: [{name: n8n, key_env: N8N_KEY}]}}", []string{"gateway.mcp_http.orchestrators[n8n].key_env"}},
		{"orchestrator problems", "gateway: {mcp_http: {orchestrators: [{name: Bad_Name, tools: [shell, agent], sandbox: {url: 'ftp://x'}}]}}",
			[]string{"gateway.mcp_http.orchestrators[Bad_Name].name", "gateway.mcp_http.orchestrators[Bad_Name].key_env",
				"gateway.mcp_http.orchestrators[Bad_Name].tools", "gateway.mcp_http.orchestrators[Bad_Name].tools",
				"gateway.mcp_http.orchestrators[Bad_Name].sandbox.url", "gateway.mcp_http.orchestrators[Bad_Name].sandbox.token_env"}},
		{"orchestrator named owner", "gateway: {mcp_http: {orchestrators: [{name: owner, key_env: BADGOOD_MCP_KEY}]}}", []string{"gateway.mcp_http.orchestrators[owner].name"}},
		{"orchestrator nome owner", "gateway: {mcp_http: {orchestrators: [{nome: owner, key_env: BADGOOD_MCP_KEY}]}}", []string{"gateway.mcp_http.orchestrators[owner].name"}},
		{"deny_tools ok", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: BADGOOD_MCP_KEY, tools: [status, ask], deny_tools: [ask, agent]}]}}", nil},
		{"deny_tools unknown", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: BADGOOD_MCP_KEY, deny_tools: [shell]}]}}", []string{"gateway.mcp_http.orchestrators[a].deny_tools"}},
		{"store postgres by variable", "store: {driver: postgres, dsn_env: PG_DSN}", nil},
		{"store postgres variable unset", "store: {driver: postgres, dsn_env: NO_SUCH_DSN}", []string{"store.dsn_env"}},
		{"store postgres without a dsn", "store: {driver: postgres}", []string{"store.dsn_env"}},
		{"store postgres with both", "store: {driver: postgres, dsn_env: PG_DSN, dsn_file: /x}", []string{"store.dsn_file"}},
		{"store postgres file missing", "store: {driver: postgres, dsn_file: /nonexistent/garra-dsn}", []string{"store.dsn_file"}},
		{"store bad driver", "store: {driver: mysql}", []string{"store.driver"}},
		{"store sqlite with a dsn", "store: {dsn_env: PG_DSN}", []string{"store.driver"}},
		{"duplicate orchestrators", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: BADGOOD_MCP_KEY}, {name: a, key_env: BADGOOD_MCP_KEY}]}}", []string{"gateway.mcp_http.orchestrators[a].name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			var got []string
			for _, p := range cfg.Check(func(k string) string { return env[k] }) {
				if p.Message == "" {
					t.Errorf("empty message for %s", p.Field)
				}
				got = append(got, p.Field)
			}
			if strings.Join(got, "|") != strings.Join(tt.fields, "|") {
				t.Fatalf("problems %v, want %v", cfg.Check(func(k string) string { return env[k] }), tt.fields)
			}
		})
	}
}

func TestReservedOrchestratorNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{{"owner", true}, {"owners", false}, {"n8n", false}, {"", false}} {
		if got := OrchestratorNameReserved(tt.name); got != tt.want {
			t.Errorf("OrchestratorNameReserved(%q) = %v", tt.name, got)
		}
	}
	cfg, err := Parse([]byte("gateway: {mcp_http: {orchestrators: [{name: owner, key_env: K}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.applyDefaults()
	ps := cfg.Check(func(string) string { return longToken })
	if len(ps) != 1 || !strings.Contains(ps[0].Message, `"owner" is reserved`) {
		t.Fatalf("problems %v", ps)
	}
}

func TestOrchestratorNomeConflicts(t *testing.T) {
	if _, err := Parse([]byte("gateway: {mcp_http: {orchestrators: [{name: a, nome: b, key_env: K}]}}")); err == nil {
		t.Fatal("name and nome that differ must be an error")
	}
	if _, err := Parse([]byte("gateway: {mcp_http: {orchestrators: [{name: a, key_env: K, colour: red}]}}")); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("unknown orchestrator key: %v", err)
	}
}

// Which problems are warnings (printed, exit 0) and which are errors, and
// that each message names what to fix.
func TestCheckSeverityAndMessages(t *testing.T) {
	tests := []struct {
		yaml    string
		field   string
		warning bool
		says    string
	}{
		{"llm: {model: openrouter/auto}", "llm.model", true, "router that may pick costlier models"},
		{"llm: {model: OpenRouter/Auto:nitro}", "llm.model", true, "z-ai/glm-5.3-flash"},
		{"", "llm.api_key_env", false, "OPENROUTER_API_KEY is not set"},
		{"llm: {provider: openai, api_key_env: CORP_OPENAI}", "llm.api_key_env", false, "CORP_OPENAI is not set"},
		{"llm: {provider: w, aliases: {w: {provider: anthropic}}}", "llm.aliases.w.api_key_env", false, "ANTHROPIC_API_KEY is not set"},
		{"gateway: {mcp_http: {redact_patterns: ['x?']}}", "gateway.mcp_http.redact_patterns[0]", false, "matches the empty string (ignored)"},
	}
	for _, tt := range tests {
		cfg, err := Parse([]byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		cfg.applyDefaults()
		var found bool
		for _, p := range cfg.Check(func(string) string { return "" }) {
			if p.Field != tt.field {
				continue
			}
			found = true
			if p.Warning != tt.warning || !strings.Contains(p.Message, tt.says) {
				t.Errorf("%q: %+v, want warning=%v saying %q", tt.yaml, p, tt.warning, tt.says)
			}
		}
		if !found {
			t.Errorf("%q: no problem for %s", tt.yaml, tt.field)
		}
	}
}

func TestIsCostlyRouter(t *testing.T) {
	tests := []struct {
		model string
		want  bool
	}{
		{"openrouter/auto", true},
		{"OpenRouter/Auto", true},
		{" openrouter/auto ", true},
		{"openrouter/auto:nitro", true},
		{"openrouter/auto:floor", true},
		{"openrouter/auto-beta", true},
		{"openrouter/autorouter", true},
		{"openrouter/free", false},
		{"openrouter/optimus-alpha", false},
		{"openrouter", false},
		{"z-ai/glm-5.3-flash", false},
		{"anthropic/claude-auto", false}, // another namespace: a fixed model
		{"auto", false},
		{"openrouter/free:auto", false}, // the variant does not make it a router
		{"", false},
	}
	for _, tt := range tests {
		if got := IsCostlyRouter(tt.model); got != tt.want {
			t.Errorf("IsCostlyRouter(%q) = %v, want %v", tt.model, got, tt.want)
		}
	}
}

// A URL, a listen address and a key the config does not need: each
// problem named by its field, with the severity the gateway gives it.
func TestCheckEndpointsAndNeededKeys(t *testing.T) {
	gw := "gateway: {api_key: " + longToken + ", mcp_http: {enabled: true}}\n"
	tests := []struct {
		name, yaml string
		want       map[string]string // field → severity
	}{
		{"base_url without a scheme", "llm: {provider: ollama, base_url: 'localhost:11434/v1'}", map[string]string{"llm.base_url": SeverityError}},
		{"base_url not a URL", "llm: {provider: ollama, base_url: 'http://[::1'}", map[string]string{"llm.base_url": SeverityError}},
		{"base_url with a bad port", "llm: {provider: ollama, base_url: 'http://h:99999/v1'}", map[string]string{"llm.base_url": SeverityError}},
		{"alias base_url", "llm: {provider: ollama, aliases: {lab: {provider: ollama, base_url: 'ftp://x'}}}", map[string]string{"llm.aliases.lab.base_url": SeverityError}},
		{"brave and telegram URLs", "llm: {provider: ollama, brave: {base_url: nohost}}\nchannels: {telegram: {api_base_url: 'https://'}}",
			map[string]string{"llm.brave.base_url": SeverityError, "channels.telegram.api_base_url": SeverityError}},
		{"good URLs", "llm: {provider: ollama, base_url: 'http://127.0.0.1:11434/v1', brave: {base_url: 'https://b.example/res'}}", nil},
		{"listen without a port", "llm: {provider: ollama}\ngateway: {listen: 127.0.0.1}", map[string]string{"gateway.listen": SeverityError}},
		{"listen with a port out of range", "llm: {provider: ollama}\ngateway: {listen: ':70000'}", map[string]string{"gateway.listen": SeverityError}},
		{"listen with a named port", "llm: {provider: ollama}\ngateway: {listen: 'localhost:http'}", map[string]string{"gateway.listen": SeverityError}},
		{"listen on any free port", "llm: {provider: ollama}\ngateway: {listen: '127.0.0.1:0'}", nil},
		{"a gateway that never calls the model", gw, map[string]string{"llm.api_key_env": SeverityWarning}},
		{"a gateway with allow_ask", "gateway: {api_key: " + longToken + ", mcp_http: {enabled: true, allow_ask: true}}", map[string]string{"llm.api_key_env": SeverityDisabled}},
		{"a gateway with allow_agent", "gateway: {api_key: " + longToken + ", mcp_http: {enabled: true, allow_agent: true}}", map[string]string{"llm.api_key_env": SeverityDisabled}},
		{"the laptop's file", "", map[string]string{"llm.api_key_env": SeverityDisabled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			got := map[string]string{}
			for _, p := range cfg.Check(func(string) string { return "" }) {
				got[p.Field] = p.Severity()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %v, want %v", cfg.Check(func(string) string { return "" }), tt.want)
			}
			for f, sev := range tt.want {
				if got[f] != sev {
					t.Errorf("%s: severity %q, want %q (all: %v)", f, got[f], sev, got)
				}
			}
		})
	}
}

// Two orchestrators with one token, or one holding the owner's key, are
// errors naming the later entry; the message never holds the token.
func TestCheckSharedTokens(t *testing.T) {
	dir := t.TempDir()
	keyFile := dir + "/owner"
	const pad = "-0123456789abcdef0123456789abcdef" // long enough for Check
	if err := os.WriteFile(keyFile, []byte("owner-secret-1"+pad+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"A": "tok-a" + pad, "B": "tok-a" + pad, "C": "tok-c" + pad, "OWN": "owner-secret-1" + pad}
	orch := func(list string) string {
		return "llm: {provider: ollama}\ngateway: {api_key_file: " + keyFile + ", mcp_http: {enabled: true, orchestrators: [" + list + "]}}"
	}
	tests := []struct {
		name, yaml string
		fields     []string
	}{
		{"distinct tokens", orch("{name: a, key_env: A}, {name: c, key_env: C}"), nil},
		{"two orchestrators, one token", orch("{name: a, key_env: A}, {name: c, key_env: C}, {name: b, key_env: B}"), []string{"gateway.mcp_http.orchestrators[b].key_env"}},
		{"an orchestrator with the owner's key", orch("{name: o, key_env: OWN}"), []string{"gateway.mcp_http.orchestrators[o].key_env"}},
		{"the owner's key from the environment", "llm: {provider: ollama}\ngateway: {mcp_http: {enabled: true, orchestrators: [{name: c, key_env: C}]}}", []string{"gateway.mcp_http.orchestrators[c].key_env"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			getenv := func(k string) string { return env[k] }
			if strings.Contains(tt.name, "environment") {
				getenv = func(k string) string {
					if k == EnvGatewayAPIKey {
						return "tok-c" + pad
					}
					return env[k]
				}
				cfg.applyEnv(getenv) // as Load does
			}
			var got []string
			ps := cfg.Check(getenv)
			for _, p := range ps {
				got = append(got, p.Field)
				if p.Severity() != SeverityError {
					t.Errorf("%s: severity %s, want error", p.Field, p.Severity())
				}
				for _, secret := range []string{"tok-a", "tok-c", "owner-secret-1"} {
					if strings.Contains(p.Message, secret) {
						t.Errorf("%s: message holds a token: %s", p.Field, p.Message)
					}
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.fields, "|") {
				t.Fatalf("problems %v, want %v", ps, tt.fields)
			}
			if Refused(ps) != (len(tt.fields) > 0) {
				t.Errorf("Refused = %v", Refused(ps))
			}
		})
	}
}
