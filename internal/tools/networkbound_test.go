package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/tools"
)

// confiner is a tools.Confiner that confines nothing and says whether it
// keeps calls off the network.
type confiner struct{ bounded bool }

func (confiner) Confine(string) (tools.Confinement, error) { return tools.Confinement{}, nil }
func (c confiner) NetworkBounded() bool                    { return c.bounded }

// The shell gate's network rules step aside exactly where the runner says
// a boundary outside the gate decides the network; every other rule
// stays.
func TestGateLeavesTheNetworkToABoundedRunner(t *testing.T) {
	if !tools.NewContainerRunner("docker", "").NetworkBounded() {
		t.Error("a container runner (--network none) is not network-bounded")
	}
	for _, tc := range []struct {
		name    string
		bash    tools.BashRunner
		bounded bool
	}{
		{"no confiner", &tools.HostRunner{}, false},
		{"a confiner that leaves the network open", &tools.HostRunner{Confiner: confiner{false}}, false},
		{"a confiner that keeps calls off the network", &tools.HostRunner{Confiner: confiner{true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := tools.NewLocal(tools.LocalOptions{Bash: tc.bash, WorkingDir: dir})
			run := func(cmd string) string {
				t.Helper()
				args, _ := json.Marshal(map[string]any{"command": cmd, "timeout_secs": 5})
				r, err := l.Call(context.Background(), tools.ToolBash, args)
				if err != nil {
					t.Fatal(err)
				}
				return r.Output
			}
			for _, cmd := range []string{"curl -sS -m 2 http://127.0.0.1:1/", "git push origin main"} {
				if blocked := strings.HasPrefix(run(cmd), "blocked: "); blocked == tc.bounded {
					t.Errorf("%q blocked = %v, want %v", cmd, blocked, !tc.bounded)
				}
			}
			if out := run("rm -rf /"); !strings.HasPrefix(out, "blocked: ") {
				t.Errorf("rm -rf / passed the gate: %q", out)
			}
			ts, err := l.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(ts[0].Description, "network-capable"); got == tc.bounded {
				t.Errorf("bash's description names network-capable commands as blocked = %v, want %v", got, !tc.bounded)
			}
		})
	}
}
