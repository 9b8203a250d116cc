package config

import "fmt"

// Quota is one orchestrator's own allowance on the gateway, inside the
// bridge-wide budgets. A field left out (0) is unlimited at its level: an
// orchestrator's field falls back to gateway.mcp_http.quota's, and one
// left out at both is bounded only by the shared budgets.
type Quota struct {
	// AskPerMinute, AgentPerMinute and SendPerMinute bound garra_ask,
	// garra_agent and garra_send_message calls in any one-minute window.
	AskPerMinute   int `json:"ask_per_minute,omitempty"`
	AgentPerMinute int `json:"agent_per_minute,omitempty"`
	SendPerMinute  int `json:"send_per_minute,omitempty"`
	// AgentConcurrent bounds the garra_agent runs in flight at once.
	AgentConcurrent int `json:"agent_concurrent,omitempty"`
	// LLMTokensPerDay bounds the model tokens (input and output) of
	// garra_ask and garra_agent in one UTC day.
	LLMTokensPerDay int64 `json:"llm_tokens_per_day,omitempty"`
}

// IsZero reports whether q bounds nothing.
func (q Quota) IsZero() bool { return q == Quota{} }

// Over is q with every field it leaves out taken from def: an
// orchestrator's quota over the gateway's default.
func (q Quota) Over(def Quota) Quota {
	pick := func(own, d int) int {
		if own > 0 {
			return own
		}
		return d
	}
	out := Quota{
		AskPerMinute:    pick(q.AskPerMinute, def.AskPerMinute),
		AgentPerMinute:  pick(q.AgentPerMinute, def.AgentPerMinute),
		SendPerMinute:   pick(q.SendPerMinute, def.SendPerMinute),
		AgentConcurrent: pick(q.AgentConcurrent, def.AgentConcurrent),
		LLMTokensPerDay: q.LLMTokensPerDay,
	}
	if out.LLMTokensPerDay <= 0 {
		out.LLMTokensPerDay = def.LLMTokensPerDay
	}
	return out
}

// QuotaFor is the quota in force for the orchestrator called name: its own
// fields over the gateway's default. An unknown name gets the default.
func (m MCPHTTP) QuotaFor(name string) Quota {
	def := deref(m.Quota)
	for _, o := range m.Orchestrators {
		if o.Name == name {
			return deref(o.Quota).Over(def)
		}
	}
	return def
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// quotaProblems names each negative field of q under field (a quota's
// fields are left out for no limit, never negative).
func quotaProblems(field string, q *Quota) []Problem {
	if q == nil {
		return nil
	}
	var ps []Problem
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"ask_per_minute", int64(q.AskPerMinute)},
		{"agent_per_minute", int64(q.AgentPerMinute)},
		{"send_per_minute", int64(q.SendPerMinute)},
		{"agent_concurrent", int64(q.AgentConcurrent)},
		{"llm_tokens_per_day", q.LLMTokensPerDay},
	} {
		if f.v < 0 {
			ps = append(ps, Problem{Field: field + ".quota." + f.name, Message: fmt.Sprintf("%d must be at least 1 (leave it out for no limit)", f.v)})
		}
	}
	return ps
}
