package mcppolicy

import (
	"fmt"
	"slices"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
)

// Refused is a call refused after its arguments were read (a model off
// the list, a destination not approved): answered in the tool's envelope
// with its stable kind, never as invalid params.
type Refused struct{ Kind errkinds.Kind }

func (r *Refused) Error() string { return string(r.Kind) }

// refuse is a *Refused as an error.
func refuse(kind errkinds.Kind) error { return &Refused{Kind: kind} }

// InvalidKind is the audit kind of a call whose arguments were rejected:
// usage on stdio (as `garra ask` names it), invalid_params on the gateway.
func InvalidKind(c Caller) errkinds.Kind {
	if c.Kind == Local {
		return errkinds.Usage
	}
	return errkinds.InvalidParams
}

// AliasesAllowed reports whether a call may name a provider alias of the
// config's llm.aliases. The gateway reaches only the four provider kinds.
func AliasesAllowed(c Caller) bool { return c.Kind == Local }

// CheckModel decides the (normalized) model of a garra_ask or garra_agent
// call: nil when it may be used. On stdio a model outside
// GARRAIA_MCP_MODEL_ALLOWLIST (empty: any) is invalid params naming the
// field; on the gateway one outside ask_allowed_models (empty: the default
// model only) is refused as model_not_allowed, before anything leaves.
func CheckModel(c Caller, l Limits, model string) error {
	if c.Kind == Local {
		if !l.stdioModelAllowed(model) {
			return fmt.Errorf("model: %q is not in %s", model, EnvModelAllowlist)
		}
		return nil
	}
	if !ModelAllowed(l.AskAllowedModels, l.DefaultModel, model) {
		return refuse(errkinds.ModelNotAllowed)
	}
	return nil
}

// ModelAllowed applies ask_allowed_models: empty means the default model
// only, which is llm.model (itself the project default when the config
// names none).
func ModelAllowed(allowed []string, defaultModel, model string) bool {
	if len(allowed) == 0 {
		return model == defaultModel
	}
	return slices.Contains(allowed, model)
}

// AllowedModels is what garra://policy shows a gateway caller as its
// models.
func AllowedModels(l Limits) []string {
	if len(l.AskAllowedModels) == 0 {
		return []string{l.DefaultModel}
	}
	return l.AskAllowedModels
}

// The stdio garra_agent's timeout_secs bounds.
const (
	StdioAgentMinTimeoutSecs     = 5
	StdioAgentDefaultTimeoutSecs = 300
	StdioAgentMaxTimeoutSecs     = 1800
)

// Timeouts are one tool's timeout_secs bounds for a caller.
type Timeouts struct {
	// Min and Max are the schema's bounds.
	Min, Max int
	// Default is what a call that omits timeout_secs gets; the schema
	// advertises it.
	Default int
	// Cap is the highest value a call may give (at most Max).
	Cap int
}

// TimeoutBounds are garra_ask's or garra_agent's bounds for c. On stdio
// the operator cap lowers the ceiling and the default, never the schema's
// maximum; on the gateway garra_agent's schema itself stops at
// agent_max_seconds, its default.
func TimeoutBounds(c Caller, l Limits, tool string) Timeouts {
	switch {
	case c.Kind == Local && tool == ToolAgent:
		capSecs := l.timeoutCap(StdioAgentMaxTimeoutSecs)
		return Timeouts{Min: StdioAgentMinTimeoutSecs, Max: StdioAgentMaxTimeoutSecs, Default: min(StdioAgentDefaultTimeoutSecs, capSecs), Cap: capSecs}
	case c.Kind == Local:
		capSecs := l.timeoutCap(ask.MaxTimeoutSecs)
		return Timeouts{Min: ask.MinTimeoutSecs, Max: ask.MaxTimeoutSecs, Default: min(ask.DefaultTimeoutSecs, capSecs), Cap: capSecs}
	case tool == ToolAgent:
		return Timeouts{Min: config.MinAgentMaxSeconds, Max: l.AgentMaxSeconds, Default: l.AgentMaxSeconds, Cap: l.AgentMaxSeconds}
	default:
		return Timeouts{Min: ask.MinTimeoutSecs, Max: ask.MaxTimeoutSecs, Default: ask.DefaultTimeoutSecs, Cap: ask.MaxTimeoutSecs}
	}
}

// Timeout decides timeout_secs of a garra_ask or garra_agent call
// (requested nil: omitted, which gets the default). A value outside the
// bounds is an error naming the field; a caller may ask for less than the
// ceiling, never more.
func Timeout(c Caller, l Limits, tool string, requested *int) (int, error) {
	b := TimeoutBounds(c, l, tool)
	if requested == nil {
		return b.Default, nil
	}
	n := *requested
	switch {
	case c.Kind == Local && (n < b.Min || n > b.Max):
		return 0, fmt.Errorf("timeout_secs: must be in [%d, %d], got %d", b.Min, b.Max, n)
	case c.Kind == Local && n > b.Cap:
		return 0, fmt.Errorf("timeout_secs: %d exceeds the operator cap of %d (%s)", n, b.Cap, EnvMaxTimeoutSecs)
	case n < b.Min || n > b.Cap:
		if tool == ToolAgent {
			return 0, fmt.Errorf("timeout_secs: must be in [%d, %d] (agent_max_seconds)", b.Min, b.Cap)
		}
		return 0, fmt.Errorf("timeout_secs: must be in [%d, %d]", b.Min, b.Cap)
	}
	return n, nil
}

// HistoryLimit decides garra_read_history's limit (nil: the ceiling,
// max_history_messages).
func HistoryLimit(l Limits, requested *int) (int, error) {
	if requested == nil {
		return l.MaxHistoryMessages, nil
	}
	if *requested < 1 || *requested > l.MaxHistoryMessages {
		return 0, fmt.Errorf("limit: must be in [1, %d]", l.MaxHistoryMessages)
	}
	return *requested, nil
}
