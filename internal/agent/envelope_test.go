package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/errkinds"
)

func TestEnvelopeJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  agent.Envelope
		want string
	}{
		{
			name: "success",
			env: agent.Envelope{
				OK: true, Answer: "3 files", Provider: "openrouter", Model: "z-ai/glm-5.3-flash",
				LatencyMS: 15230, SessionID: "mcp-0b6c",
				ToolCalls: []agent.ToolCallSummary{{Name: "bash", DurationMS: 120, Success: true, Summary: "3 files"}},
			},
			want: `{"schema":"garra.agent.v1","ok":true,"answer":"3 files","provider":"openrouter","model":"z-ai/glm-5.3-flash","latency_ms":15230,"session_id":"mcp-0b6c","tool_calls":[{"name":"bash","duration_ms":120,"success":true,"summary":"3 files"}]}`,
		},
		{
			name: "success without tool calls",
			env:  agent.Envelope{OK: true, Answer: "hi", Provider: "p", Model: "m", LatencyMS: 7, SessionID: "mcp-1"},
			want: `{"schema":"garra.agent.v1","ok":true,"answer":"hi","provider":"p","model":"m","latency_ms":7,"session_id":"mcp-1","tool_calls":[]}`,
		},
		{
			name: "failure",
			env: agent.Envelope{
				Provider: "p", Model: "m", LatencyMS: 300000, SessionID: "mcp-2",
				ToolCalls: []agent.ToolCallSummary{{Name: "bash", DurationMS: 299000, Success: false, Summary: "interrupted: timeout"}},
				Error:     &ask.Error{Kind: errkinds.Timeout, Message: "agent run did not finish within 300 seconds (timed out while running tool bash)"},
			},
			want: `{"schema":"garra.agent.v1","ok":false,"error":{"kind":"timeout","message":"agent run did not finish within 300 seconds (timed out while running tool bash)"},"session_id":"mcp-2","tool_calls":[{"name":"bash","duration_ms":299000,"success":false,"summary":"interrupted: timeout"}]}`,
		},
		{
			name: "failure without tool calls or error",
			env:  agent.Envelope{SessionID: "mcp-3"},
			want: `{"schema":"garra.agent.v1","ok":false,"error":{"kind":"provider_error","message":"unknown failure"},"session_id":"mcp-3","tool_calls":[]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
			if tc.env.JSON() != tc.want {
				t.Errorf("JSON() = %s", tc.env.JSON())
			}
		})
	}
}

func TestDefaultSystemPrompt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tools  []string
		noBash bool
	}{
		{"with shell", []string{"bash", "file_read", "file_write", "web_fetch", "git_diff", "web_search"}, false},
		{"without shell", []string{"file_read", "file_write", "web_fetch", "git_diff"}, true},
		{"only bash", []string{"bash"}, false},
		{"bash-like name is not bash", []string{"bash_history"}, true},
		{"no tools", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := agent.DefaultSystemPrompt(tc.tools)
			for _, name := range tc.tools {
				if !strings.Contains(p, name) {
					t.Errorf("prompt does not name %s:\n%s", name, p)
				}
			}
			if got := strings.Contains(p, agent.NoShellNotice); got != tc.noBash {
				t.Errorf("no-shell notice present = %v, want %v:\n%s", got, tc.noBash, p)
			}
			if got := strings.Contains(strings.ToLower(p), "there is no shell"); got != tc.noBash {
				t.Errorf("no-shell wording present = %v, want %v", got, tc.noBash)
			}
			if len(tc.tools) > 0 && !strings.Contains(p, "Investigate instead of describing") {
				t.Errorf("prompt lacks the investigate instruction:\n%s", p)
			}
		})
	}
}
