package mcpstdio

import (
	"encoding/json"

	"github.com/garraia/garra/internal/mcppolicy"
)

// Defaults are what a call that names no provider or model gets: the
// configuration's llm.provider and llm.model (the Asker applies the same
// ones). tools/list advertises them, so the schema's defaults are the
// defaults in force. Empty fields mean the project's.
type Defaults struct {
	Provider string
	Model    string
}

// schemaDefaults are the values rendered into one tool's input schema.
type schemaDefaults struct {
	Provider    string
	Model       string
	TimeoutSecs int
}

// schemaDefaults renders the defaults of tool: an omitted timeout gets
// min(schema default, operator cap), exactly what the call is given.
func (d *dispatcher) schemaDefaults(tool string) schemaDefaults {
	l := d.limits()
	return schemaDefaults{Provider: l.DefaultProvider, Model: l.DefaultModel,
		TimeoutSecs: mcppolicy.TimeoutBounds(mcppolicy.LocalUser(), l, tool).Default}
}

// jsonString is s as a JSON string literal, for the schema templates.
func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
