package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// Keys without any recognisable shape are redacted because the gateway
// holds them: in a provider error body that echoes the key, in answers, in
// agent envelopes and in its logs.
func TestHeldSecretsAreRedactedByValue(t *testing.T) {
	const (
		providerKey = "zebraquokkaplatypusnarwhal"
		alphaToken  = "alphaorchestratortokenvalue"
		sandboxTok  = "sandboxtokenforbetaonly"
	)
	double := llmdouble.New(t,
		llmdouble.Step{Status: 401, ErrorMessage: "Incorrect API key provided: " + providerKey + ". You can find your API key at https://example.com/keys."},
		llmdouble.Step{Text: "the owner key is " + ownerKey[:10] + "\n" + ownerKey[10:] + " and alpha's is " + alphaToken},
		llmdouble.Step{Text: "done; by the way the key was " + providerKey + " and beta's sandbox token " + sandboxTok},
	)
	yaml := enabled + "    allow_ask: true\n    allow_agent: true\n" + `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [ask, agent]
      - name: beta
        key_env: BETA_KEY
        tools: [status]
        sandbox: {url: "http://127.0.0.1:1/mcp", token_env: BETA_SBX}
` + "llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"OPENROUTER_API_KEY": providerKey, "ALPHA_KEY": alphaToken,
		"BETA_KEY": "betaorchestratortoken", "BETA_SBX": sandboxTok})
	cs := client(t, h.url, alphaToken)

	var outputs []string
	env, _ := call(t, cs, "garra_ask", map[string]any{"message": "q"})
	if kindOf(env) != "provider_error" {
		t.Fatalf("ask: %v", env)
	}
	msg := env["error"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "Incorrect API key provided: "+redact.Placeholder+".") {
		t.Errorf("provider error message: %q", msg)
	}
	outputs = append(outputs, msg)

	env, _ = call(t, cs, "garra_ask", map[string]any{"message": "q"})
	if env["answer"] != "the owner key is "+redact.Placeholder+" and alpha's is "+redact.Placeholder {
		t.Errorf("ask answer: %v", env["answer"])
	}
	env, _ = call(t, cs, "garra_agent", map[string]any{"message": "task"})
	if env["ok"] != true || env["answer"] != "done; by the way the key was "+redact.Placeholder+" and beta's sandbox token "+redact.Placeholder {
		t.Errorf("agent: %v", env)
	}
	b, _ := json.Marshal(env)
	outputs = append(outputs, string(b), h.logs.String())
	for _, out := range outputs {
		for _, s := range []string{providerKey, alphaToken, sandboxTok, ownerKey[10:]} {
			if strings.Contains(out, s) {
				t.Errorf("%s… left the gateway in %q", s[:6], out)
			}
		}
	}
}
