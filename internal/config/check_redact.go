package config

import (
	"errors"
	"fmt"

	"github.com/garraia/garra/internal/redact"
)

// checkRedactPatterns reports every operator pattern the redactor skips
// (empty, over-long, invalid, matching the empty string, past the 32nd),
// by its index: the gateway runs without it, so the secrets it was meant
// to catch are not redacted.
func checkRedactPatterns(patterns []string) []Problem {
	_, errs := redact.New(patterns)
	ps := make([]Problem, 0, len(errs))
	for _, err := range errs {
		field := "gateway.mcp_http.redact_patterns"
		var pe *redact.PatternError
		if errors.As(err, &pe) {
			field = fmt.Sprintf("%s[%d]", field, pe.Index)
		}
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf("%v (ignored)", err)})
	}
	return ps
}
