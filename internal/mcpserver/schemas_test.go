package mcpserver

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/strictargs"
)

// The hand-written schemas and the input types that decode them must list
// the same properties, on every surface, or a valid call would be refused
// (or an invalid one pass); and what the schema requires must exist.
func TestSchemasMatchInputTypes(t *testing.T) {
	local := newServer(Options{Caller: mcppolicy.LocalUser()})
	gateway := newServer(Options{Caller: mcppolicy.OwnerCaller(), Limits: mcppolicy.Limits{AgentMaxSeconds: 60, MaxHistoryMessages: 10}})
	for _, c := range []struct {
		name  string
		s     *server
		tool  *tool
		input any
	}{
		{"stdio garra_ask", local, askTool, &askArgs{}},
		{"stdio garra_agent", local, agentTool, &agentArgs{}},
		{"gateway garra_ask", gateway, askTool, &askArgs{}},
		{"gateway garra_agent", gateway, agentTool, &askArgs{}},
		{"garra_status", gateway, statusTool, &noArgs{}},
		{"garra_list_chats", gateway, listChatsTool, &listChatsArgs{}},
		{"garra_read_history", gateway, readHistoryTool, &readHistoryArgs{}},
		{"garra_pair_status", gateway, pairStatusTool, &noArgs{}},
		{"garra_send_message", gateway, sendTool, &sendArgs{}},
	} {
		raw, ok := c.tool.describe(c.s).InputSchema.(json.RawMessage)
		if !ok {
			t.Fatalf("%s: the schema is not written out", c.name)
		}
		var schema struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
			Additional *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		props := slices.Sorted(maps.Keys(schema.Properties))
		fields := slices.Sorted(maps.Keys(strictargs.FieldNames(c.input)))
		if !slices.Equal(props, fields) {
			t.Errorf("%s: schema properties %v, input type %v", c.name, props, fields)
		}
		for _, r := range schema.Required {
			if !slices.Contains(fields, r) {
				t.Errorf("%s: requires %q, which the input type lacks", c.name, r)
			}
		}
		if schema.Type != "object" || schema.Additional == nil || *schema.Additional {
			t.Errorf("%s: want an object with additionalProperties false", c.name)
		}
	}
}
