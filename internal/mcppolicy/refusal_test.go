package mcppolicy

import (
	"strings"
	"testing"

	"github.com/garraia/garra/internal/errkinds"
)

var owner = Caller{Kind: Owner, Name: OwnerName}

func TestVisible(t *testing.T) {
	n8n := Caller{Name: "n8n", Grants: []string{ToolStatus, ToolAgent, ToolAsk, ToolSendMessage}}
	tests := []struct {
		name   string
		caller Caller
		sw     Limits
		want   string
	}{
		{"owner, defaults", owner, Limits{}, "garra_status garra_list_chats garra_read_history garra_pair_status"},
		{"owner, all on", owner, Limits{AllowSend: true, SendDestinations: 1, AllowAsk: true, AllowAgent: true},
			"garra_status garra_list_chats garra_read_history garra_pair_status garra_send_message garra_ask"},
		{"owner, send on without destinations", owner, Limits{AllowSend: true}, "garra_status garra_list_chats garra_read_history garra_pair_status"},
		{"orchestrator, defaults", n8n, Limits{}, "garra_status"},
		{"orchestrator, agent on", n8n, Limits{AllowAgent: true}, "garra_status garra_agent"},
		{"orchestrator, all on", n8n, Limits{AllowSend: true, SendDestinations: 2, AllowAsk: true, AllowAgent: true}, "garra_status garra_send_message garra_ask garra_agent"},
		{"orchestrator without grants", Caller{Name: "x"}, Limits{AllowAgent: true, AllowAsk: true}, ""},
		{"deny wins over tools", Caller{Name: "x", Grants: []string{ToolStatus, ToolAgent, ToolAsk}, Denied: []string{ToolAgent}},
			Limits{AllowAgent: true, AllowAsk: true}, "garra_status garra_ask"},
		{"deny of an ungranted tool changes nothing", Caller{Name: "x", Grants: []string{ToolStatus}, Denied: []string{ToolAsk}},
			Limits{AllowAsk: true}, "garra_status"},
		{"deny everything granted", Caller{Name: "x", Grants: []string{ToolStatus}, Denied: []string{ToolStatus}}, Limits{}, ""},
		{"a deny list does not bind the owner", Caller{Name: OwnerName, Kind: Owner, Denied: []string{ToolStatus}}, Limits{},
			"garra_status garra_list_chats garra_read_history garra_pair_status"},
		{"local, defaults", LocalUser(), Limits{}, "garra_ask"},
		{"local, tools enabled", LocalUser(), Limits{Stdio: Stdio{EnableTools: true}, HasAgent: true}, "garra_ask garra_agent"},
		{"local, tools enabled without an agent", LocalUser(), Limits{Stdio: Stdio{EnableTools: true}}, "garra_ask"},
		{"local, an agent without the opt-in", LocalUser(), Limits{HasAgent: true}, "garra_ask"},
		{"local ignores the gateway's switches", LocalUser(), Limits{AllowSend: true, SendDestinations: 1, AllowAgent: true}, "garra_ask"},
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
	agentOnly := Caller{Name: "badgood", Grants: []string{ToolStatus, ToolAgent}}
	all := Limits{AllowSend: true, SendDestinations: 1, AllowAsk: true, AllowAgent: true}
	tests := []struct {
		name   string
		caller Caller
		sw     Limits
		tool   string
		want   errkinds.Kind
	}{
		{"agent off comes first", agentOnly, Limits{}, ToolAgent, errkinds.AgentDisabled},
		{"agent off, even for a caller without it", Caller{Name: "x"}, Limits{}, ToolAgent, errkinds.AgentDisabled},
		{"agent on, not granted", Caller{Name: "x"}, all, ToolAgent, errkinds.ToolNotAllowed},
		{"agent on, granted", agentOnly, all, ToolAgent, ""},
		{"owner never has agent", owner, all, ToolAgent, errkinds.ToolNotAllowed},
		{"ask off", owner, Limits{}, ToolAsk, errkinds.AskDisabled},
		{"ask on, owner", owner, all, ToolAsk, ""},
		{"ask on, not granted", agentOnly, all, ToolAsk, errkinds.ToolNotAllowed},
		{"send off", owner, Limits{}, ToolSendMessage, errkinds.SendDisabled},
		{"send on, no destinations", owner, Limits{AllowSend: true}, ToolSendMessage, errkinds.NoAllowlist},
		{"send on, not granted", agentOnly, all, ToolSendMessage, errkinds.ToolNotAllowed},
		{"send on, owner", owner, all, ToolSendMessage, ""},
		{"read tool not granted", agentOnly, all, ToolReadHistory, errkinds.ToolNotAllowed},
		{"status granted", agentOnly, Limits{}, ToolStatus, ""},
		{"owner reads", owner, Limits{}, ToolListChats, ""},
		{"denied although granted", Caller{Name: "x", Grants: []string{ToolStatus}, Denied: []string{ToolStatus}}, all, ToolStatus, errkinds.ToolDenied},
		{"denied and not granted", Caller{Name: "x", Denied: []string{ToolAsk}}, all, ToolAsk, errkinds.ToolDenied},
		{"switch off before the deny list", Caller{Name: "x", Grants: []string{ToolAgent}, Denied: []string{ToolAgent}}, Limits{}, ToolAgent, errkinds.AgentDisabled},
		{"the rest of the grants stand", Caller{Name: "x", Grants: []string{ToolStatus, ToolAsk}, Denied: []string{ToolAsk}}, all, ToolStatus, ""},
		{"not a gateway tool", owner, all, "garra_shell", errkinds.NotFound},
		{"local asks", LocalUser(), Limits{}, ToolAsk, ""},
		{"local agent without the opt-in is unknown", LocalUser(), Limits{HasAgent: true}, ToolAgent, errkinds.NotFound},
		{"local agent on", LocalUser(), Limits{Stdio: Stdio{EnableTools: true}, HasAgent: true}, ToolAgent, ""},
		{"local has no chat tools", LocalUser(), all, ToolStatus, errkinds.NotFound},
		{"local cannot send", LocalUser(), all, ToolSendMessage, errkinds.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Refusal(tt.caller, tt.sw, tt.tool); got != tt.want {
				t.Fatalf("Refusal = %q, want %q", got, tt.want)
			}
		})
	}
}

// Visible(tool) == (Refusal(tool) == "") for every caller kind, grant,
// deny list and switch combination: what tools/list shows is exactly what
// a call may use, and nothing shown is refused before its arguments.
func TestVisibleIsExactlyWhatIsNotRefused(t *testing.T) {
	callers := []Caller{owner, LocalUser(), {Name: "none"}}
	for i, tool := range AllTools {
		callers = append(callers,
			Caller{Name: "one", Grants: []string{tool}},
			Caller{Name: "all-but-one", Grants: AllTools, Denied: []string{tool}},
			Caller{Name: "some", Grants: AllTools[:i+1], Denied: AllTools[i/2 : i/2+1]})
	}
	callers = append(callers, Caller{Name: "all", Grants: AllTools})
	var limits []Limits
	for bits := range 1 << 6 {
		limits = append(limits, Limits{
			AllowSend: bits&1 != 0, SendDestinations: bits >> 1 & 1, AllowAsk: bits&4 != 0, AllowAgent: bits&8 != 0,
			Stdio: Stdio{EnableTools: bits&16 != 0}, HasAgent: bits&32 != 0,
		})
	}
	for _, c := range callers {
		for _, l := range limits {
			vis := Visible(c, l)
			for _, tool := range append([]string{"garra_unknown"}, AllTools...) {
				shown := strings.Contains(" "+strings.Join(vis, " ")+" ", " "+tool+" ")
				if refused := Refusal(c, l, tool); shown != (refused == "") {
					t.Fatalf("%+v under %+v: %s shown=%v but Refusal=%q", c, l, tool, shown, refused)
				}
			}
		}
	}
}
