package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcpserver"
	"github.com/garraia/garra/internal/mcpstdio"
	"github.com/garraia/garra/test/golden"
)

// idleAgent stands for the agent: listing tools never runs it.
type idleAgent struct{}

func (idleAgent) RunAgent(context.Context, agent.Call) (agent.Envelope, error) {
	return agent.Envelope{}, fmt.Errorf("not run in this test")
}

// The local user's surface, per operator setting: tools/list (and the
// resources and prompts lists) over the real line transport are
// testdata/surface/<name>.jsonl byte for byte. UPDATE_GOLDEN=1 rewrites
// them.
func TestSurfaceGolden(t *testing.T) {
	cases := map[string]mcpserver.Options{
		"stdio-default": {},
		"stdio-tools":   {Limits: mcppolicy.Limits{Stdio: mcppolicy.Stdio{EnableTools: true}}, Agent: idleAgent{}, FileRoots: 1},
		"stdio-tools-configured": {Limits: mcppolicy.Limits{Stdio: mcppolicy.Stdio{EnableTools: true, MaxTimeoutSecs: 45, ModelAllowlist: []string{"m1"}},
			DefaultProvider: "ollama", DefaultModel: "m1"}, Agent: idleAgent{}},
		// Tools enabled but no agent to run them: garra_agent stays hidden.
		"stdio-tools-no-agent": {Limits: mcppolicy.Limits{Stdio: mcppolicy.Stdio{EnableTools: true}}},
	}
	methods := []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list"}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse(nil)
			if err != nil {
				t.Fatal(err)
			}
			o.Version, o.Caller = "test", mcppolicy.LocalUser()
			o.Ask = &ask.Core{Config: cfg, Getenv: func(string) string { return "" }}
			in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"golden","version":"0"}}}` + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
			for i, m := range methods {
				in += fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{}}`, i+1, m) + "\n"
			}
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := mcpserver.New(o).Run(ctx, &mcpstdio.Transport{In: strings.NewReader(in), Out: &out}); err != nil && ctx.Err() != nil {
				t.Fatal(err)
			}
			// Replies may come in any order: put them in request order,
			// leaving out initialize's (id 0).
			byID := map[string]string{}
			for _, line := range strings.SplitAfter(out.String(), "\n") {
				var r struct {
					ID json.RawMessage `json:"id"`
				}
				if line != "" && json.Unmarshal([]byte(line), &r) == nil {
					byID[string(r.ID)] = line
				}
			}
			var got []byte
			for i := range methods {
				line, ok := byID[strconv.Itoa(i+1)]
				if !ok {
					t.Fatalf("no reply to %s in:\n%s", methods[i], out.String())
				}
				got = append(got, line...)
			}
			golden.Compare(t, filepath.Join("testdata", "surface", name+".jsonl"), got)
		})
	}
}
