package mcpprompts

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/yaml"

	"github.com/garraia/garra/internal/config"
)

// blocks returns the fenced code blocks of lang in text.
func blocks(text, lang string) []string {
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)\n```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

func text(r *mcp.GetPromptResult) string { return r.Messages[0].Content.(*mcp.TextContent).Text }

// invalid asserts err is -32602 naming arg.
func invalid(t *testing.T, err error, arg string) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, arg+": ") {
		t.Fatalf("err %v, want -32602 naming %q", err, arg)
	}
}

func TestOnboardRendersValidConfigs(t *testing.T) {
	in, err := ParseOnboard(map[string]string{"name": "badgood", "tools": "[status, agent, read_history, agent]"}, "http://127.0.0.1:3888/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(in.Tools, ",") != "status,agent,read_history" {
		t.Fatalf("tools %v", in.Tools)
	}
	out := text(OnboardResult(in))

	ys := blocks(out, "yaml")
	if len(ys) != 2 {
		t.Fatalf("%d yaml blocks", len(ys))
	}
	// The GarraServer entry.
	var gs struct {
		Spec struct {
			Orchestrators []map[string]any `json:"orchestrators"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(ys[0]), &gs); err != nil {
		t.Fatalf("GarraServer block: %v\n%s", err, ys[0])
	}
	o := gs.Spec.Orchestrators[0]
	if o["name"] != "badgood" || len(o["tools"].([]any)) != 3 || o["chats"] == nil {
		t.Fatalf("entry %v", o)
	}
	// The config.yml entry decodes strictly into the real config types.
	cfg, err := config.Parse([]byte(ys[1]))
	if err != nil {
		t.Fatalf("config.yml block: %v\n%s", err, ys[1])
	}
	if oc := cfg.Gateway.MCPHTTP.Orchestrators[0]; oc.Name != "badgood" || oc.KeyEnv != "BADGOOD_MCP_KEY" || len(oc.Tools) != 3 {
		t.Fatalf("config entry %+v", oc)
	}

	js := blocks(out, "json")
	if len(js) != 1 {
		t.Fatalf("%d json blocks", len(js))
	}
	var client struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(js[0]), &client); err != nil {
		t.Fatal(err)
	}
	g := client.MCPServers["garra"]
	if g.Type != "http" || g.URL != "http://127.0.0.1:3888/mcp" || g.Headers["Authorization"] != "Bearer ${BADGOOD_MCP_KEY}" {
		t.Fatalf("client config %+v", g)
	}
	for _, want := range []string{"allowAgent: true", "agent_disabled", "<garraserver>-orch-badgood", "garra://policy"} {
		if !strings.Contains(out, want) {
			t.Errorf("onboarding text lacks %q", want)
		}
	}
	if strings.Contains(out, "allowSend") || strings.Contains(out, "allowAsk") {
		t.Error("switch notes for tools that were not asked for")
	}
}

func TestOnboardDefaults(t *testing.T) {
	in, err := ParseOnboard(map[string]string{"name": "n8n"}, "http://127.0.0.1:3888/mcp")
	if err != nil || strings.Join(in.Tools, ",") != "status" || in.Endpoint != "http://127.0.0.1:3888/mcp" {
		t.Fatalf("%+v %v", in, err)
	}
	if out := text(OnboardResult(in)); strings.Contains(out, "chats:") {
		t.Fatal("chats rendered for an orchestrator without chat tools")
	}
}

func TestOnboardBadArguments(t *testing.T) {
	tests := []struct {
		args map[string]string
		arg  string
	}{
		{map[string]string{}, "name"},
		{map[string]string{"name": "  "}, "name"},
		{map[string]string{"name": "BadGood"}, "name"},
		{map[string]string{"name": "-x"}, "name"},
		{map[string]string{"name": strings.Repeat("a", 41)}, "name"},
		{map[string]string{"name": "a", "tools": "status, shell"}, "tools"},
		{map[string]string{"name": "a", "tools": ",,"}, "tools"},
		{map[string]string{"name": "a", "endpoint": "ftp://x/mcp"}, "endpoint"},
		{map[string]string{"name": "a", "endpoint": "http://user:pw@x/mcp"}, "endpoint"},
		{map[string]string{"name": "a", "tools_wanted": "status"}, "tools_wanted"},
	}
	for _, tt := range tests {
		_, err := ParseOnboard(tt.args, "http://127.0.0.1:3888/mcp")
		invalid(t, err, tt.arg)
	}
	if _, err := ParseOnboard(map[string]string{"name": strings.Repeat("a", 40)}, "http://127.0.0.1:3888/mcp"); err != nil {
		t.Fatalf("40 characters refused: %v", err)
	}
}

func TestDelegate(t *testing.T) {
	b := AgentBounds{Min: 5, Default: 300, Max: 600}
	goal := `Leia o relatorio em docs/ e liste "pendentes" <a & b>`
	in, err := ParseDelegate(map[string]string{"goal": "  " + goal + "\n", "timeout": "120"}, b)
	if err != nil {
		t.Fatal(err)
	}
	out := text(DelegateResult(in))
	js := blocks(out, "json")
	var call struct {
		Name      string `json:"name"`
		Arguments struct {
			Message     string `json:"message"`
			TimeoutSecs int    `json:"timeout_secs"`
		} `json:"arguments"`
	}
	if len(js) != 1 || json.Unmarshal([]byte(js[0]), &call) != nil {
		t.Fatalf("no call block:\n%s", out)
	}
	if call.Name != "garra_agent" || call.Arguments.Message != goal || call.Arguments.TimeoutSecs != 120 {
		t.Fatalf("call %+v", call)
	}
	if in, _ := ParseDelegate(map[string]string{"goal": "x"}, b); in.TimeoutSecs != 300 {
		t.Fatalf("default timeout %d", in.TimeoutSecs)
	}
	for _, tt := range []struct {
		args map[string]string
		arg  string
	}{
		{map[string]string{}, "goal"},
		{map[string]string{"goal": " \n"}, "goal"},
		{map[string]string{"goal": strings.Repeat("a", MaxGoalBytes+1)}, "goal"},
		{map[string]string{"goal": "x", "timeout": "4"}, "timeout"},
		{map[string]string{"goal": "x", "timeout": "601"}, "timeout"},
		{map[string]string{"goal": "x", "timeout": "1m"}, "timeout"},
		{map[string]string{"goal": "x", "model": "openrouter/auto"}, "model"},
	} {
		_, err := ParseDelegate(tt.args, b)
		invalid(t, err, tt.arg)
	}
}
