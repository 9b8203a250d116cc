package gateway

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garraia/garra/internal/errkinds"
)

func TestVisible(t *testing.T) {
	owner := Caller{Name: OwnerName, Owner: true}
	n8n := Caller{Name: "n8n", Grants: []string{ToolStatus, ToolAgent, ToolAsk, ToolSendMessage}}
	tests := []struct {
		name   string
		caller Caller
		sw     Switches
		want   string
	}{
		{"owner, defaults", owner, Switches{}, "garra_status garra_list_chats garra_read_history garra_pair_status"},
		{"owner, all on", owner, Switches{AllowSend: true, SendDestinations: 1, AllowAsk: true, AllowAgent: true},
			"garra_status garra_list_chats garra_read_history garra_pair_status garra_send_message garra_ask"},
		{"owner, send on without destinations", owner, Switches{AllowSend: true}, "garra_status garra_list_chats garra_read_history garra_pair_status"},
		{"orchestrator, defaults", n8n, Switches{}, "garra_status"},
		{"orchestrator, agent on", n8n, Switches{AllowAgent: true}, "garra_status garra_agent"},
		{"orchestrator, all on", n8n, Switches{AllowSend: true, SendDestinations: 2, AllowAsk: true, AllowAgent: true}, "garra_status garra_send_message garra_ask garra_agent"},
		{"orchestrator without grants", Caller{Name: "x"}, Switches{AllowAgent: true, AllowAsk: true}, ""},
		{"deny wins over tools", Caller{Name: "x", Grants: []string{ToolStatus, ToolAgent, ToolAsk}, Denied: []string{ToolAgent}},
			Switches{AllowAgent: true, AllowAsk: true}, "garra_status garra_ask"},
		{"deny of an ungranted tool changes nothing", Caller{Name: "x", Grants: []string{ToolStatus}, Denied: []string{ToolAsk}},
			Switches{AllowAsk: true}, "garra_status"},
		{"deny everything granted", Caller{Name: "x", Grants: []string{ToolStatus}, Denied: []string{ToolStatus}}, Switches{}, ""},
		{"a deny list does not bind the owner", Caller{Name: OwnerName, Owner: true, Denied: []string{ToolStatus}}, Switches{},
			"garra_status garra_list_chats garra_read_history garra_pair_status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(Visible(tt.caller, tt.sw), " "); got != tt.want {
				t.Fatalf("Visible = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	owner := Caller{Name: OwnerName, Owner: true}
	agentOnly := Caller{Name: "badgood", Grants: []string{ToolStatus, ToolAgent}}
	all := Switches{AllowSend: true, SendDestinations: 1, AllowAsk: true, AllowAgent: true}
	tests := []struct {
		name   string
		caller Caller
		sw     Switches
		tool   string
		want   errkinds.Kind
	}{
		{"agent off comes first", agentOnly, Switches{}, ToolAgent, errkinds.AgentDisabled},
		{"agent off, even for a caller without it", Caller{Name: "x"}, Switches{}, ToolAgent, errkinds.AgentDisabled},
		{"agent on, not granted", Caller{Name: "x"}, all, ToolAgent, errkinds.ToolNotAllowed},
		{"agent on, granted", agentOnly, all, ToolAgent, ""},
		{"owner never has agent", owner, all, ToolAgent, errkinds.ToolNotAllowed},
		{"ask off", owner, Switches{}, ToolAsk, errkinds.AskDisabled},
		{"ask on, owner", owner, all, ToolAsk, ""},
		{"ask on, not granted", agentOnly, all, ToolAsk, errkinds.ToolNotAllowed},
		{"send off", owner, Switches{}, ToolSendMessage, errkinds.SendDisabled},
		{"send on, no destinations", owner, Switches{AllowSend: true}, ToolSendMessage, errkinds.NoAllowlist},
		{"send on, not granted", agentOnly, all, ToolSendMessage, errkinds.ToolNotAllowed},
		{"send on, owner", owner, all, ToolSendMessage, ""},
		{"read tool not granted", agentOnly, all, ToolReadHistory, errkinds.ToolNotAllowed},
		{"status granted", agentOnly, Switches{}, ToolStatus, ""},
		{"owner reads", owner, Switches{}, ToolListChats, ""},
		{"denied although granted", Caller{Name: "x", Grants: []string{ToolStatus}, Denied: []string{ToolStatus}}, all, ToolStatus, errkinds.ToolDenied},
		{"denied and not granted", Caller{Name: "x", Denied: []string{ToolAsk}}, all, ToolAsk, errkinds.ToolDenied},
		{"switch off before the deny list", Caller{Name: "x", Grants: []string{ToolAgent}, Denied: []string{ToolAgent}}, Switches{}, ToolAgent, errkinds.AgentDisabled},
		{"the rest of the grants stand", Caller{Name: "x", Grants: []string{ToolStatus, ToolAsk}, Denied: []string{ToolAsk}}, all, ToolStatus, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Refusal(tt.caller, tt.sw, tt.tool); got != tt.want {
				t.Fatalf("Refusal = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestModelAllowed(t *testing.T) {
	const project = "z-ai/glm-5.3-flash"
	tests := []struct {
		allowed []string
		def     string
		model   string
		want    bool
	}{
		{nil, project, project, true},
		{nil, project, "openrouter/auto", false},
		{nil, "llama3.2", "llama3.2", true}, // the configured llm.model is the default
		{nil, "llama3.2", project, false},   // and the project's is then not
		{[]string{"openrouter/auto"}, project, "openrouter/auto", true},
		{[]string{"openrouter/auto"}, project, project, false}, // a list replaces the default
	}
	for _, tt := range tests {
		if got := ModelAllowed(tt.allowed, tt.def, tt.model); got != tt.want {
			t.Errorf("ModelAllowed(%v, %q, %q) = %v", tt.allowed, tt.def, tt.model, got)
		}
	}
}

func TestSendTargetRefusal(t *testing.T) {
	approved := []string{"123", "-100456"}
	scoped := Caller{Name: "n8n", Chats: []string{"telegram:123"}}
	tests := []struct {
		caller  Caller
		channel string
		chat    string
		want    errkinds.Kind
	}{
		{Caller{Owner: true}, "telegram", "123", ""},
		{Caller{Owner: true}, "telegram", "-100456", ""},
		{Caller{Owner: true}, "telegram", "999", errkinds.TargetNotAllowed},
		{Caller{Owner: true}, "web", "123", errkinds.ChannelUnsupported},
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
	if got := SendTargetRefusal(Caller{Owner: true}, "telegram", "123", nil); got != errkinds.NoAllowlist {
		t.Errorf("no approved destinations: %q", got)
	}
}

func TestHostAllowed(t *testing.T) {
	allowed := []string{"team-a-gateway", "team-a-gateway.agents.svc"}
	for host, want := range map[string]bool{
		"127.0.0.1:3888": true, "localhost:3888": true, "[::1]:3888": true, "127.0.0.2": true, "LOCALHOST": true,
		"team-a-gateway:3888": true, "Team-A-Gateway.agents.svc.:3888": true,
		"evil.example.com": false, "team-a-gateway.evil.com": false, "10.0.0.5:3888": false, "": false, "0.0.0.0:3888": false,
	} {
		if got := HostAllowed(host, allowed); got != want {
			t.Errorf("HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestAcceptsBoth(t *testing.T) {
	for v, want := range map[string]bool{
		"application/json, text/event-stream": true, "*/*": true, "text/event-stream;q=0.9, application/json": true,
		"application/json": false, "text/event-stream": false, "": false, "text/html": false,
	} {
		if got := acceptsBoth([]string{v}); got != want {
			t.Errorf("acceptsBoth(%q) = %v", v, got)
		}
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestBudgetSlidingWindow(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	b := NewBudget(2, time.Minute, clock.now)
	if got := []bool{b.Take(), b.Take(), b.Take()}; !slices.Equal(got, []bool{true, true, false}) {
		t.Fatalf("takes = %v, want exactly 2", got)
	}
	clock.advance(30 * time.Second)
	if b.Take() {
		t.Fatal("window has not slid yet")
	}
	clock.advance(30 * time.Second)
	if b.Remaining() != 2 || !b.Take() {
		t.Fatal("window should have slid after 60s")
	}
	if NewBudget(0, time.Minute, clock.now).Limit() != 1 || NewBudget(-5, time.Minute, clock.now).Limit() != 1 {
		t.Fatal("a limit below 1 must be raised to 1")
	}
}

func TestBudgetExactUnderConcurrency(t *testing.T) {
	b := NewBudget(7, time.Minute, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.Take() {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if granted != 7 {
		t.Fatalf("granted %d, want 7", granted)
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
	if !ChatInScope(Caller{Owner: true}, "web:x") {
		t.Error("the owner sees every conversation")
	}
}

func TestWorkspaceDir(t *testing.T) {
	a, b := WorkspaceDir("/data", "badgood"), WorkspaceDir("/data", "n8n")
	if a == b || !strings.HasPrefix(a, "/data/workspace/") || len(a) != len("/data/workspace/")+32 {
		t.Fatalf("WorkspaceDir: %s %s", a, b)
	}
	if strings.Contains(a, "badgood") {
		t.Fatal("the caller's name must not appear in the path")
	}
}

func TestBudgetTakeNIsAllOrNothing(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	b := NewBudget(5, time.Minute, clock.now)
	if !b.TakeN(3) || b.Remaining() != 2 {
		t.Fatalf("TakeN(3): remaining %d", b.Remaining())
	}
	if b.TakeN(3) || b.Remaining() != 2 {
		t.Fatalf("a TakeN that does not fit took something: remaining %d", b.Remaining())
	}
	if !b.TakeN(2) || b.TakeN(1) || !b.TakeN(0) || b.TakeN(-1) {
		t.Fatal("TakeN at the edge")
	}
	clock.advance(time.Minute)
	if !b.TakeN(5) {
		t.Fatal("the window slid; 5 must fit")
	}
}

func TestBatchLen(t *testing.T) {
	for _, tt := range []struct {
		body string
		want int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 1},
		{` [ {"id":1}, {"id":2}, {"method":"notifications/initialized"} ]`, 3},
		{"\n\t[{}]", 1},
		{`[]`, 1},
		{`[{"id":1},`, 1}, // malformed: the SDK answers 400
		{`not json`, 1},
		{``, 1},
	} {
		if got := batchLen([]byte(tt.body)); got != tt.want {
			t.Errorf("batchLen(%q) = %d, want %d", tt.body, got, tt.want)
		}
	}
}
