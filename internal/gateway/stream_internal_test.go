package gateway

import (
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func id(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	i, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestShapeOf(t *testing.T) {
	const agentCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"garra_agent","arguments":{}`
	for _, tt := range []struct {
		name string
		body string
		want rpcShape
	}{
		{"call with a token", agentCall + `,"_meta":{"progressToken":"p1"}}}`, rpcShape{call: id(t, 7.0), progress: true}},
		{"numeric token", agentCall + `,"_meta":{"progressToken":0}}}`, rpcShape{call: id(t, 7.0), progress: true}},
		{"no token", agentCall + `}}`, rpcShape{call: id(t, 7.0)}},
		{"null token", agentCall + `,"_meta":{"progressToken":null}}}`, rpcShape{call: id(t, 7.0)}},
		{"string id", `{"jsonrpc":"2.0","id":"7","method":"tools/list"}`, rpcShape{call: id(t, "7")}},
		{"cancel", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`,
			rpcShape{cancelled: []jsonrpc.ID{id(t, 7.0)}}},
		{"cancel without id", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`, rpcShape{}},
		{"batch: no call, its cancels", `[` + agentCall + `,"_meta":{"progressToken":"p"}}},` +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}]`,
			rpcShape{cancelled: []jsonrpc.ID{id(t, "a")}}},
		{"one-message batch is still a batch", `[` + agentCall + `}}]`, rpcShape{}},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}`, rpcShape{}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, rpcShape{}},
		{"malformed", `{"jsonrpc":"2.0","id":`, rpcShape{}},
		{"empty", ``, rpcShape{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := parseBody([]byte(tt.body)); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("shape = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWantsStream(t *testing.T) {
	both := []string{"application/json, text/event-stream"}
	for _, tt := range []struct {
		name   string
		accept []string
		shape  rpcShape
		want   bool
	}{
		{"progress asked, SSE accepted", both, rpcShape{progress: true}, true},
		{"SSE accepted as */*", []string{"*/*"}, rpcShape{progress: true}, true},
		{"no progress asked", both, rpcShape{}, false},
		{"SSE not accepted", []string{"application/json"}, rpcShape{progress: true}, false},
	} {
		if got := wantsStream(tt.accept, tt.shape); got != tt.want {
			t.Errorf("%s: wantsStream = %v", tt.name, got)
		}
	}
}

func TestCallKey(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range []string{callKey("alpha", id(t, 7.0)), callKey("alpha", id(t, "7")), callKey("beta", id(t, 7.0))} {
		if k == "" || keys[k] {
			t.Fatalf("key %q empty or not distinct", k)
		}
		keys[k] = true
	}
	if callKey("alpha", jsonrpc.ID{}) != "" {
		t.Fatal("a request without an id has a key")
	}
}
