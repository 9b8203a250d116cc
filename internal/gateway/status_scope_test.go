package gateway_test

import (
	"testing"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/gateway"
)

// garra_status and garra://status count only the conversations in the
// caller's chat scope.
func TestStatusCountsOnlyConversationsInScope(t *testing.T) {
	store := &memStore{convs: []chat.Conversation{
		{ID: "telegram:111", Channel: "telegram"}, {ID: "telegram:222", Channel: "telegram"}, {ID: "web:abc", Channel: "web"},
	}}
	yaml := enabled + `
    orchestrators:
      - name: one
        key_env: ONE_KEY
        tools: [status]
        chats: ["telegram:111"]
      - name: bare
        key_env: BARE_KEY
        tools: [status]
        chats: ["222", "web:abc"]
      - name: none
        key_env: NONE_KEY
        tools: [status]
`
	env := map[string]string{"ONE_KEY": "one-token-123456789", "BARE_KEY": "bare-token-12345678", "NONE_KEY": "none-token-12345678"}
	h := start(t, yaml, env, func(o *gateway.Options) { o.Store = store })
	tests := []struct {
		name  string
		token string
		want  float64
	}{
		{"owner sees every conversation", ownerKey, 3},
		{"one conversation id", env["ONE_KEY"], 1},
		{"a bare chat id and a web id", env["BARE_KEY"], 2},
		{"no chats, no conversations", env["NONE_KEY"], 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := client(t, h.url, tt.token)
			res, isErr := call(t, cs, "garra_status", nil)
			if isErr || res["data"].(map[string]any)["conversations"] != tt.want {
				t.Fatalf("garra_status %v, want %v conversations", res, tt.want)
			}
			doc := read(t, cs, "garra://status")
			if doc["data"].(map[string]any)["conversations"] != tt.want {
				t.Fatalf("garra://status %v, want %v conversations", doc, tt.want)
			}
		})
	}
}
