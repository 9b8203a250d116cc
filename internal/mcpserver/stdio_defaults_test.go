package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
)

// serverWith connects a client to a server whose asker runs on cfg, with
// the tools' defaults taken from the same cfg, as `garra mcp-server` does.
func serverWith(t *testing.T, cfg *config.Config, policy mcppolicy.Stdio, prov *recordingProvider) *mcp.ClientSession {
	t.Helper()
	return dial(t, Options{Version: "test", Caller: mcppolicy.LocalUser(), Ask: recordingCore(cfg, prov), Agent: fakeAgent{answer: "done"},
		Limits: mcppolicy.Limits{Stdio: policy, DefaultProvider: cfg.LLM.Provider, DefaultModel: cfg.LLM.Model}}, "t")
}

// schemaProps lists each tool's properties as tools/list sends them.
func schemaProps(t *testing.T, cs *mcp.ClientSession) map[string]map[string]map[string]any {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]map[string]any{}
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = s.Properties
	}
	return out
}

// With the built-in configuration the schemas are byte for byte the
// spec's, as they were written before the defaults were rendered. Set
// UPDATE_GOLDEN=1 to rewrite testdata after a deliberate change.
func TestSchemasWithBuiltInDefaultsAreGolden(t *testing.T) {
	d := newServer(Options{Caller: mcppolicy.LocalUser()})
	for name, got := range map[string]json.RawMessage{
		"garra_ask":   askSchema(d),
		"garra_agent": agentSchema(d),
	} {
		path := filepath.Join("testdata", name+".schema.json")
		if os.Getenv("UPDATE_GOLDEN") != "" {
			if err := os.WriteFile(path, got, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s schema drifted from %s:\n%s", name, path, got)
		}
		if !json.Valid(got) {
			t.Errorf("%s schema is not JSON", name)
		}
	}
}

// The advertised defaults follow the configuration and the operator cap,
// and a call that omits them gets exactly what was advertised.
func TestToolsListAdvertisesTheDefaultsInForce(t *testing.T) {
	tests := []struct {
		name                  string
		yaml                  string
		policy                mcppolicy.Stdio
		provider, model       string
		askTimeout, agentTime float64
		lowCostDoc            bool
	}{
		{"built-in", "", mcppolicy.Stdio{EnableTools: true}, "openrouter", "z-ai/glm-5.3-flash", 60, 300, true},
		{"configured model", "llm: {model: anthropic/claude-sonnet-4}", mcppolicy.Stdio{EnableTools: true}, "openrouter", "anthropic/claude-sonnet-4", 60, 300, false},
		{"configured provider and model", "llm: {provider: ollama, model: llama3.2}", mcppolicy.Stdio{EnableTools: true}, "ollama", "llama3.2", 60, 300, false},
		{"alias as the provider", "llm: {provider: homelab, model: qwen3, aliases: {homelab: {provider: ollama}}}", mcppolicy.Stdio{EnableTools: true}, "homelab", "qwen3", 60, 300, false},
		{"operator cap below the defaults", "", mcppolicy.Stdio{EnableTools: true, MaxTimeoutSecs: 30}, "openrouter", "z-ai/glm-5.3-flash", 30, 30, true},
		{"operator cap between the defaults", "", mcppolicy.Stdio{EnableTools: true, MaxTimeoutSecs: 120}, "openrouter", "z-ai/glm-5.3-flash", 60, 120, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			full := config.Default()
			if cfg.LLM.Provider != "" {
				full.LLM.Provider = cfg.LLM.Provider
			}
			if cfg.LLM.Model != "" {
				full.LLM.Model = cfg.LLM.Model
			}
			full.LLM.Aliases = cfg.LLM.Aliases
			prov := &recordingProvider{reply: "ok"}
			cs := serverWith(t, full, tt.policy, prov)
			props := schemaProps(t, cs)
			for tool, timeout := range map[string]float64{"garra_ask": tt.askTimeout, "garra_agent": tt.agentTime} {
				p := props[tool]
				if p["provider"]["default"] != tt.provider || p["model"]["default"] != tt.model || p["timeout_secs"]["default"] != timeout {
					t.Errorf("%s defaults: provider %v model %v timeout %v; want %s %s %v", tool,
						p["provider"]["default"], p["model"]["default"], p["timeout_secs"]["default"], tt.provider, tt.model, timeout)
				}
			}
			doc, _ := props["garra_ask"]["model"]["description"].(string)
			if strings.Contains(doc, "low-cost") != tt.lowCostDoc {
				t.Errorf("model description %q: claims a low-cost default = %v, want %v", doc, !tt.lowCostDoc, tt.lowCostDoc)
			}

			// What the call gets when it names neither is what was shown.
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "hi"}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			var env map[string]any
			_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env)
			if env["provider"] != tt.provider || env["model"] != tt.model || prov.reqs[0].Model != tt.model {
				t.Fatalf("the call used %v/%v (provider saw %q), the schema advertised %s/%s", env["provider"], env["model"], prov.reqs[0].Model, tt.provider, tt.model)
			}
		})
	}
}
