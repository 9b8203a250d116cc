package mcpstdio

import (
	"encoding/json"

	"github.com/garraia/garra/internal/config"
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

// schemaDefaults renders the defaults for a tool whose timeout_secs has
// schemaDefault and schemaMax: an omitted timeout gets min(schema default,
// operator cap), exactly what EffectiveTimeout gives the call.
func (d *dispatcher) schemaDefaults(schemaDefault, schemaMax int) schemaDefaults {
	s := schemaDefaults{Provider: d.o.Defaults.Provider, Model: d.o.Defaults.Model,
		TimeoutSecs: min(schemaDefault, d.o.Policy.TimeoutCap(schemaMax))}
	if s.Provider == "" {
		s.Provider = config.DefaultProvider
	}
	if s.Model == "" {
		s.Model = config.DefaultModel
	}
	return s
}

// jsonString is s as a JSON string literal, for the schema templates.
func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
