package mcpstdio

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operator knobs read once when `garra mcp-server` boots.
const (
	EnvModelAllowlist = "GARRAIA_MCP_MODEL_ALLOWLIST"
	EnvMaxTimeoutSecs = "GARRAIA_MCP_MAX_TIMEOUT_SECS"
	EnvEnableTools    = "GARRAIA_MCP_ENABLE_TOOLS"
	EnvAllowedDirs    = "GARRAIA_MCP_ALLOWED_DIRS"
)

// Policy is the operator's limits on the stdio tools.
type Policy struct {
	// ModelAllowlist, when non-empty, is the only models a call may use
	// (explicit or defaulted).
	ModelAllowlist []string
	// MaxTimeoutSecs caps timeout_secs; 0 means no cap beyond the schema's.
	MaxTimeoutSecs int
	// EnableTools advertises and dispatches garra_agent.
	EnableTools bool
}

// PolicyFromEnv reads the GARRAIA_MCP_* knobs. A malformed value is an
// error naming the variable: a typo must not silently lift a limit.
func PolicyFromEnv(getenv func(string) string) (Policy, error) {
	var p Policy
	for _, m := range strings.Split(getenv(EnvModelAllowlist), ",") {
		if m = strings.TrimSpace(m); m != "" {
			p.ModelAllowlist = append(p.ModelAllowlist, m)
		}
	}
	if v := strings.TrimSpace(getenv(EnvMaxTimeoutSecs)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("%s=%q: want a whole number of seconds ≥ 1", EnvMaxTimeoutSecs, v)
		}
		p.MaxTimeoutSecs = n
	}
	p.EnableTools = Truthy(getenv(EnvEnableTools))
	return p, nil
}

// Truthy reports whether an env value switches a knob on: 1, true or yes,
// in any case.
func Truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes":
		return true
	}
	return false
}

// ModelAllowed reports whether model may be used under the allowlist.
func (p Policy) ModelAllowed(model string) bool {
	return len(p.ModelAllowlist) == 0 || slices.Contains(p.ModelAllowlist, model)
}

// TimeoutCap is the effective ceiling for a tool whose schema maximum is
// schemaMax: the operator cap clamped to the schema.
func (p Policy) TimeoutCap(schemaMax int) int {
	if p.MaxTimeoutSecs > 0 && p.MaxTimeoutSecs < schemaMax {
		return p.MaxTimeoutSecs
	}
	return schemaMax
}

// EffectiveTimeout decides timeout_secs for a call. requested is 0 when the
// call omitted it: then min(schemaDefault, cap). An explicit value outside
// [schemaMin, schemaMax] or above the operator cap is an error naming the
// field.
func (p Policy) EffectiveTimeout(requested, schemaMin, schemaDefault, schemaMax int, given bool) (int, error) {
	limit := p.TimeoutCap(schemaMax)
	if !given {
		return min(schemaDefault, limit), nil
	}
	if requested < schemaMin || requested > schemaMax {
		return 0, fmt.Errorf("timeout_secs: must be in [%d, %d], got %d", schemaMin, schemaMax, requested)
	}
	if requested > limit {
		return 0, fmt.Errorf("timeout_secs: %d exceeds the operator cap of %d (%s)", requested, limit, EnvMaxTimeoutSecs)
	}
	return requested, nil
}

// String is the one boot-log line describing the policy in force.
func (p Policy) String() string {
	models := "any"
	if len(p.ModelAllowlist) > 0 {
		models = strings.Join(p.ModelAllowlist, ",")
	}
	maxTimeout := "schema max"
	if p.MaxTimeoutSecs > 0 {
		maxTimeout = strconv.Itoa(p.MaxTimeoutSecs) + "s"
	}
	return fmt.Sprintf("models=%s max_timeout=%s agent_tool=%t", models, maxTimeout, p.EnableTools)
}
