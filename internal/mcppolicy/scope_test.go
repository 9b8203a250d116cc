package mcppolicy

import (
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcpprompts"
	"github.com/garraia/garra/internal/toolchain"
)

func TestSendTargetRefusal(t *testing.T) {
	approved := []string{"123", "-100456"}
	scoped := Caller{Name: "n8n", Chats: []string{"telegram:123"}}
	tests := []struct {
		caller  Caller
		channel string
		chat    string
		want    errkinds.Kind
	}{
		{owner, "telegram", "123", ""},
		{owner, "telegram", "-100456", ""},
		{owner, "telegram", "999", errkinds.TargetNotAllowed},
		{owner, "web", "123", errkinds.ChannelUnsupported},
		{scoped, "telegram", "123", ""},
		{scoped, "telegram", "-100456", errkinds.TargetNotAllowed},
	}
	for _, tt := range tests {
		if got := SendTargetRefusal(tt.caller, tt.channel, tt.chat, approved); got != tt.want {
			t.Errorf("%s/%s: %q, want %q", tt.channel, tt.chat, got, tt.want)
		}
	}
	if got := SendTargetRefusal(Caller{Name: "unscoped"}, "telegram", "123", approved); got != errkinds.TargetNotAllowed {
		t.Errorf("an orchestrator with no chats may send nowhere: %q", got)
	}
	if got := SendTargetRefusal(owner, "telegram", "123", nil); got != errkinds.NoAllowlist {
		t.Errorf("no approved destinations: %q", got)
	}
}

func TestChatInScope(t *testing.T) {
	tests := []struct {
		chats []string
		id    string
		want  bool
	}{
		{nil, "telegram:1", false},
		{[]string{"telegram:1"}, "telegram:1", true},
		{[]string{"telegram:1"}, "web:1", false},
		{[]string{"1"}, "telegram:1", true},
		{[]string{"-1001"}, "telegram:-1001", true},
		{[]string{"1"}, "telegram:11", false},
		{[]string{"web:abc"}, "telegram:abc", false},
	}
	for _, tt := range tests {
		if got := ChatInScope(Caller{Name: "o", Chats: tt.chats}, tt.id); got != tt.want {
			t.Errorf("ChatInScope(%v, %q) = %v", tt.chats, tt.id, got)
		}
	}
	if !ChatInScope(owner, "web:x") {
		t.Error("the owner sees every conversation")
	}
	if ChatInScope(LocalUser(), "web:x") {
		t.Error("the stdio user has no conversations")
	}
}

func TestResourceVisible(t *testing.T) {
	sandbox := &config.OrchestratorSandbox{URL: "http://sandbox:8080/mcp"}
	on := Limits{AllowAgent: true}
	tests := []struct {
		name   string
		caller Caller
		limits Limits
		want   string
	}{
		{"owner", owner, Limits{}, "garra://status garra://policy garra://chats garra://chats/{chat}"},
		{"no grants: policy alone", Caller{Name: "x"}, on, "garra://policy"},
		{"list_chats", Caller{Name: "x", Grants: []string{ToolListChats}}, on, "garra://policy garra://chats"},
		{"agent with a sandbox", Caller{Name: "x", Grants: []string{ToolAgent}, Sandbox: sandbox}, on, "garra://policy garra://sandbox/toolchain"},
		{"agent switched off", Caller{Name: "x", Grants: []string{ToolAgent}, Sandbox: sandbox}, Limits{}, "garra://policy"},
		{"agent without a sandbox", Caller{Name: "x", Grants: []string{ToolAgent}}, on, "garra://policy"},
		{"local", LocalUser(), Limits{Stdio: Stdio{EnableTools: true}, HasAgent: true}, "garra://policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(VisibleResources(tt.caller, tt.limits), " "); got != tt.want {
				t.Fatalf("resources %q, want %q", got, tt.want)
			}
		})
	}
	if ResourceOnSurface(LocalUser(), ResourceStatus) || !ResourceOnSurface(Caller{Name: "x"}, ResourceStatus) || ResourceOnSurface(owner, "file:///etc/passwd") {
		t.Fatal("ResourceOnSurface")
	}
}

func TestPromptVisible(t *testing.T) {
	agentOn := Limits{AllowAgent: true}
	tests := []struct {
		name   string
		caller Caller
		limits Limits
		want   string
	}{
		{"owner", owner, agentOn, "onboard_orchestrator diagnose_gateway"},
		{"orchestrator with the agent", Caller{Name: "x", Grants: []string{ToolAgent}}, agentOn, "onboard_orchestrator diagnose_gateway delegate_task"},
		{"orchestrator, agent off", Caller{Name: "x", Grants: []string{ToolAgent}}, Limits{}, "onboard_orchestrator diagnose_gateway"},
		{"local", LocalUser(), Limits{}, "onboard_orchestrator"},
		{"local with the agent", LocalUser(), Limits{Stdio: Stdio{EnableTools: true}, HasAgent: true}, "onboard_orchestrator delegate_task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range []string{PromptOnboard, PromptDiagnose, PromptDelegate, "other"} {
				if PromptVisible(tt.caller, tt.limits, p) {
					got = append(got, p)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("prompts %v, want %q", got, tt.want)
			}
		})
	}
}

// The names here are the ones the servers register.
func TestNamesAgree(t *testing.T) {
	if ResourceToolchain != toolchain.URI {
		t.Errorf("ResourceToolchain %q, the sandbox serves %q", ResourceToolchain, toolchain.URI)
	}
	if PromptOnboard != mcpprompts.Onboard || PromptDiagnose != mcpprompts.Diagnose || PromptDelegate != mcpprompts.Delegate {
		t.Error("prompt names differ from mcpprompts'")
	}
}
