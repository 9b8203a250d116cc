package gateway_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/test/golden"
)

// goldenGrants are the orchestrators of the golden surface: one per tool
// alone, every tool, every tool with a deny list, and none.
var goldenGrants = []struct{ name, tools, deny string }{
	{"status", "[status]", ""},
	{"list-chats", "[list_chats]", ""},
	{"read-history", "[read_history]", ""},
	{"pair-status", "[pair_status]", ""},
	{"send-message", "[send_message]", ""},
	{"ask", "[ask]", ""},
	{"agent", "[agent]", ""},
	{"all", "[status, list_chats, read_history, pair_status, send_message, ask, agent]", ""},
	{"all-deny-ask-agent", "[status, list_chats, read_history, pair_status, send_message, ask, agent]", "[ask, agent]"},
	{"none", "[]", ""},
}

// goldenSwitches are the operator settings the surface is shown under:
// every switch on (with non-default bounds and defaults, which the schemas
// render), and the defaults.
var goldenSwitches = map[string]string{
	"on": "    allow_send: true\n    allow_ask: true\n    allow_agent: true\n    agent_max_seconds: 120\n" +
		"    max_history_messages: 20\n",
	"defaults": "",
}

// The methods whose answers make up a caller's surface.
var surfaceMethods = []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list"}

// Each caller's tools/list (and its resources and prompts lists) is
// testdata/surface/<switches>-<caller>.jsonl byte for byte: any schema or
// visibility change shows in review. UPDATE_GOLDEN=1 rewrites the files.
func TestSurfaceGolden(t *testing.T) {
	for sw, flags := range goldenSwitches {
		yaml := enabled + flags + "    orchestrators:\n"
		env := map[string]string{}
		for _, g := range goldenGrants {
			yaml += fmt.Sprintf("      - name: %s\n        key_env: KEY_%s\n        tools: %s\n", g.name, strings.ToUpper(strings.ReplaceAll(g.name, "-", "_")), g.tools)
			if g.deny != "" {
				yaml += "        deny_tools: " + g.deny + "\n"
			}
			env["KEY_"+strings.ToUpper(strings.ReplaceAll(g.name, "-", "_"))] = "token-of-" + g.name + "-0123456789"
		}
		yaml += "llm: {provider: openai, model: gpt-test}\nchannels: {telegram: {proactive_chat_ids: ['111']}}\n"
		h := start(t, yaml, env)
		callers := map[string]string{"owner": ownerKey}
		for _, g := range goldenGrants {
			callers["orch-"+g.name] = "token-of-" + g.name + "-0123456789"
		}
		for caller, token := range callers {
			t.Run(sw+"/"+caller, func(t *testing.T) {
				var got bytes.Buffer
				for i, m := range surfaceMethods {
					code, body := post(t, h.url, token, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{}}`, i+1, m), nil)
					if code != 200 {
						t.Fatalf("%s: %d %s", m, code, body)
					}
					got.WriteString(strings.TrimRight(body, "\n") + "\n")
				}
				golden.Compare(t, filepath.Join("testdata", "surface", sw+"-"+caller+".jsonl"), got.Bytes())
			})
		}
	}
}
