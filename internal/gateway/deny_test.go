package gateway_test

import (
	"fmt"
	"strings"
	"testing"
)

// deny_tools wins over tools: the denied tool is absent from tools/list,
// from garra://policy, and a direct call is refused with tool_denied.
func TestDenyToolsWinOverTools(t *testing.T) {
	yaml := enabled + "    allow_ask: true\n" + `
    orchestrators:
      - name: n8n
        key_env: N8N_KEY
        tools: [status, list_chats, ask]
        deny_tools: [ask, list_chats]
`
	h := start(t, yaml, map[string]string{"N8N_KEY": "n8n-token-1234567890"})
	cs := client(t, h.url, "n8n-token-1234567890")
	if got := toolNames(t, cs); got != "garra_status" {
		t.Fatalf("tools/list %q, want only garra_status", got)
	}
	for _, tool := range []string{"garra_ask", "garra_list_chats"} {
		args := map[string]any{}
		if tool == "garra_ask" {
			args["message"] = "x"
		}
		env, isErr := call(t, cs, tool, args)
		if !isErr || kindOf(env) != "tool_denied" {
			t.Fatalf("%s: isError %v env %v, want tool_denied", tool, isErr, env)
		}
	}
	if p := fmt.Sprint(read(t, cs, "garra://policy")["tools"]); p != "[garra_status]" {
		t.Fatalf("policy shows a denied tool: %s", p)
	}
}

// An orchestrator may not be called "owner": the gateway disables it (its
// token authenticates no one) and says why.
func TestOrchestratorNamedOwnerIsDisabled(t *testing.T) {
	yaml := enabled + `
    orchestrators:
      - name: owner
        key_env: FAKE_OWNER_KEY
        tools: [status]
`
	h := start(t, yaml, map[string]string{"FAKE_OWNER_KEY": "fake-owner-token-123"})
	if code, _ := post(t, h.url, "fake-owner-token-123", toolsList, nil); code != 401 {
		t.Fatalf("the reserved-name orchestrator's token got %d, want 401", code)
	}
	if !strings.Contains(h.logs.String(), "its name is reserved") {
		t.Fatalf("no warning:\n%s", h.logs.String())
	}
}
