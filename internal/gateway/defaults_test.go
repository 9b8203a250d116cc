package gateway_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

// tools/list shows the defaults in force: llm.provider and llm.model, the
// only model an empty ask_allowed_models admits; a call that omits the
// model gets that one, and the project's default is then refused.
func TestToolsListAdvertisesTheConfiguredDefaults(t *testing.T) {
	for _, tt := range []struct {
		name, llm, model string
	}{
		{"built-in", "", "z-ai/glm-5.3-flash"},
		{"configured", "model: qwen/qwen3-coder, ", "qwen/qwen3-coder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			double := llmdouble.New(t, llmdouble.Step{Text: "pong"})
			yaml := enabled + "    allow_ask: true\n    allow_agent: true\n    orchestrators: [{name: orch, key_env: ORCH_KEY, tools: [ask, agent]}]\n" +
				"llm: {" + tt.llm + "provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
			h := start(t, yaml, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123", "ORCH_KEY": "orch-key-0123456789"})
			cs := client(t, h.url, "orch-key-0123456789")
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, tool := range res.Tools {
				if tool.Name != "garra_ask" && tool.Name != "garra_agent" {
					continue
				}
				seen++
				b, _ := json.Marshal(tool.InputSchema)
				var s struct {
					Properties map[string]map[string]any `json:"properties"`
				}
				if err := json.Unmarshal(b, &s); err != nil {
					t.Fatal(err)
				}
				if s.Properties["model"]["default"] != tt.model || s.Properties["provider"]["default"] != "openrouter" {
					t.Errorf("%s advertises %v/%v, want openrouter/%s", tool.Name, s.Properties["provider"]["default"], s.Properties["model"]["default"], tt.model)
				}
			}
			if seen != 2 {
				t.Fatalf("garra_ask and garra_agent not listed: %+v", res.Tools)
			}
			env, isErr := call(t, cs, "garra_ask", map[string]any{"message": "hi"})
			if isErr || env["model"] != tt.model {
				t.Fatalf("an omitted model got %v, the schema advertised %s", env["model"], tt.model)
			}
			if tt.model != "z-ai/glm-5.3-flash" {
				if env, _ := call(t, cs, "garra_ask", map[string]any{"message": "hi", "model": "z-ai/glm-5.3-flash"}); kindOf(env) != "model_not_allowed" {
					t.Fatalf("the project default is not the default in force here: %v", env)
				}
			}
		})
	}
}
