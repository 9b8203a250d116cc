package mcppolicy

import (
	"slices"

	"github.com/garraia/garra/internal/errkinds"
)

// A check is one rule of the refusal chain: the kind refusing tool for c
// under l, or "" to pass the call on to the next rule.
type check func(c Caller, l Limits, tool string) errkinds.Kind

// chain is the refusal chain in the specs' order. The operator's switch
// comes before the caller's identity, so a switched-off tool reads the
// same to everyone; then the caller's deny list (tool_denied, whatever its
// tools list says), its grants (tool_not_allowed), and last the send
// switch's approved destinations (no_allowlist).
var chain = []check{onSurface, switchedOn, notDenied, granted, hasDestinations}

// Refusal returns the stable kind refusing tool for c before any argument
// is read, or "" when the call may proceed. NotFound means the tool does
// not exist for c: it is answered as an unknown tool, not refused.
func Refusal(c Caller, l Limits, tool string) errkinds.Kind {
	for _, rule := range chain {
		if kind := rule(c, l, tool); kind != "" {
			return kind
		}
	}
	return ""
}

// Visible lists the tools c may call now, in AllTools order: what
// tools/list shows it. By construction it is exactly the tools whose
// Refusal is "".
func Visible(c Caller, l Limits) []string {
	var out []string
	for _, t := range AllTools {
		if Refusal(c, l, t) == "" {
			out = append(out, t)
		}
	}
	return out
}

// CanCall reports whether tool is visible to c.
func CanCall(c Caller, l Limits, tool string) bool { return Refusal(c, l, tool) == "" }

func onSurface(c Caller, _ Limits, tool string) errkinds.Kind {
	if !OnSurface(c, tool) {
		return errkinds.NotFound
	}
	return ""
}

// switchedOn applies the operator's switches. On stdio garra_agent is an
// opt-in the spec answers as an unknown tool when off, so that the
// surface is the garra_ask-only one byte for byte.
func switchedOn(c Caller, l Limits, tool string) errkinds.Kind {
	if c.Kind == Local {
		if tool == ToolAgent && !(l.EnableTools && l.HasAgent) {
			return errkinds.NotFound
		}
		return ""
	}
	switch tool {
	case ToolSendMessage:
		if !l.AllowSend {
			return errkinds.SendDisabled
		}
	case ToolAsk:
		if !l.AllowAsk {
			return errkinds.AskDisabled
		}
	case ToolAgent:
		if !l.AllowAgent {
			return errkinds.AgentDisabled
		}
	}
	return ""
}

// notDenied applies an orchestrator's deny list, which wins over its
// grants. It binds no one else.
func notDenied(c Caller, _ Limits, tool string) errkinds.Kind {
	if c.Kind == Orchestrator && slices.Contains(c.Denied, tool) {
		return errkinds.ToolDenied
	}
	return ""
}

// granted applies the caller's identity: the local user has its surface's
// tools, the owner every gateway tool but garra_agent (which belongs to
// orchestrators), an orchestrator what its tools list names.
func granted(c Caller, _ Limits, tool string) errkinds.Kind {
	var ok bool
	switch c.Kind {
	case Local:
		ok = true
	case Owner:
		ok = tool != ToolAgent
	default:
		ok = slices.Contains(c.Grants, tool)
	}
	if !ok {
		return errkinds.ToolNotAllowed
	}
	return ""
}

// hasDestinations refuses garra_send_message while no destination is
// approved: the switch approves nothing, the list does.
func hasDestinations(c Caller, l Limits, tool string) errkinds.Kind {
	if c.Kind != Local && tool == ToolSendMessage && l.SendDestinations == 0 {
		return errkinds.NoAllowlist
	}
	return ""
}
