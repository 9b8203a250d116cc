package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
)

// countingBudget is a budget of n takes that counts them.
type countingBudget struct{ n, taken int }

func (b *countingBudget) Take() bool {
	if b.taken >= b.n {
		return false
	}
	b.taken++
	return true
}
func (b *countingBudget) Remaining() int { return b.n - b.taken }
func (b *countingBudget) Limit() int     { return b.n }

// session connects a client to the server New builds from o, with the
// recording provider behind its ask core.
func session(t *testing.T, o Options, prov *recordingProvider) *mcp.ClientSession {
	t.Helper()
	o.Ask = recordingCore(config.Default(), prov)
	return dial(t, o, "t")
}

func envelopeOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
		t.Fatal(err)
	}
	return env
}

func errorKind(env map[string]any) any {
	e, _ := env["error"].(map[string]any)
	return e["kind"]
}

// The call path's order on the gateway: a hidden tool is refused before
// its arguments are read; bad arguments, a refused model and a refused
// call spend no budget and reach no provider; only then is the budget
// charged, and a spent one refuses without calling the provider.
func TestCallPathOrder(t *testing.T) {
	prov := &recordingProvider{reply: "pong"}
	budget := &countingBudget{n: 1}
	n8n := mcppolicy.Caller{Name: "n8n", Grants: []string{mcppolicy.ToolAsk}}
	cs := session(t, Options{Caller: n8n, Limits: mcppolicy.Limits{AllowAsk: true, DefaultModel: config.DefaultModel},
		Budgets: Budgets{Ask: budget}}, prov)
	ctx := context.Background()

	// Hidden, with arguments that would not decode: the refusal wins.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcppolicy.ToolStatus, Arguments: map[string]any{"bogus": 1}})
	if err != nil || !res.IsError || errorKind(envelopeOf(t, res)) != "tool_not_allowed" {
		t.Fatalf("hidden tool: %v %+v", err, res)
	}
	// Invalid arguments: -32602 naming the field.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcppolicy.ToolAsk, Arguments: map[string]any{"message": "x", "extra": 1}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, "extra") {
		t.Fatalf("invalid: %v", err)
	}
	// A model off the list is refused in garra.ask.v1.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcppolicy.ToolAsk, Arguments: map[string]any{"message": "x", "model": "openrouter/auto"}})
	if err != nil || errorKind(envelopeOf(t, res)) != "model_not_allowed" || envelopeOf(t, res)["schema"] != "garra.ask.v1" {
		t.Fatalf("model: %v %+v", err, res)
	}
	if budget.taken != 0 || prov.calls() != 0 {
		t.Fatalf("turned-down calls spent %d of the budget and reached the provider %d times", budget.taken, prov.calls())
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcppolicy.ToolAsk, Arguments: map[string]any{"message": "x"}})
	if err != nil || res.IsError || envelopeOf(t, res)["answer"] != "pong" {
		t.Fatalf("first ask: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcppolicy.ToolAsk, Arguments: map[string]any{"message": "x"}})
	if err != nil || errorKind(envelopeOf(t, res)) != "over_budget" || prov.calls() != 1 {
		t.Fatalf("second ask: %v %+v, provider calls %d", err, res, prov.calls())
	}
}

// garra_ask is one declaration on both surfaces: the same bad arguments
// are invalid params naming the same field on each, and its schema lists
// the same properties with the same bounds; only the texts, the defaults
// and how a model off the list is answered differ.
func TestAskIsOneToolOnBothSurfaces(t *testing.T) {
	local := Options{Caller: mcppolicy.LocalUser()}
	owner := Options{Caller: mcppolicy.OwnerCaller(), Limits: mcppolicy.Limits{AllowAsk: true}}
	for _, bad := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"message": "x", "extra": 1}, "extra"},
		{map[string]any{}, "message"},
		{map[string]any{"message": "x", "timeout_secs": 601}, "timeout_secs"},
		{map[string]any{"message": "x", "timeout_secs": 0}, "timeout_secs"},
		{map[string]any{"message": "x", "model": ""}, "model"},
		{map[string]any{"message": "x", "provider": "gemini"}, "provider"},
		{map[string]any{"message": strings.Repeat("a", 64<<10+1)}, "message"},
	} {
		for name, o := range map[string]Options{"stdio": local, "gateway": owner} {
			prov := &recordingProvider{}
			_, err := session(t, o, prov).CallTool(context.Background(), &mcp.CallToolParams{Name: mcppolicy.ToolAsk, Arguments: bad.args})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, bad.field) || prov.calls() != 0 {
				t.Errorf("%s %v: %v, want -32602 naming %s", name, bad.args, err, bad.field)
			}
		}
	}
	shape := func(raw json.RawMessage) string {
		var s struct {
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		}
		_ = json.Unmarshal(raw, &s)
		for _, p := range s.Properties {
			delete(p, "description")
			delete(p, "default")
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	if l, g := shape(askSchema(newServer(local))), shape(askSchema(newServer(owner))); l != g {
		t.Fatalf("garra_ask's schemas differ beyond texts and defaults:\nstdio   %s\ngateway %s", l, g)
	}
}

// What initialize advertises does not depend on what the caller may see:
// an orchestrator with no tool is told the same as the local user.
func TestCapabilitiesAreTheSameForEveryCaller(t *testing.T) {
	caps := func(o Options) string {
		cs := session(t, o, &recordingProvider{})
		b, _ := json.Marshal(cs.InitializeResult().Capabilities)
		return string(b)
	}
	want := `{"logging":{},"prompts":{},"resources":{},"tools":{}}`
	for name, o := range map[string]Options{
		"local":                  {Caller: mcppolicy.LocalUser()},
		"owner":                  {Caller: mcppolicy.OwnerCaller()},
		"orchestrator, no tools": {Caller: mcppolicy.Caller{Name: "none"}},
	} {
		if got := caps(o); got != want {
			t.Errorf("%s: capabilities %s, want %s", name, got, want)
		}
	}
}
