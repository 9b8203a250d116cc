package main

import (
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/redact"
)

// processRedactor is the redactor of a command that loaded cfg: the
// built-in rules, the operator's redact_patterns, and the value of every
// secret the process holds (config.SecretValues, plus extra), so that a
// key is redacted wherever it shows up, whatever its shape. The pattern
// errors are those of redact.New.
func processRedactor(cfg *config.Config, getenv func(string) string, extra ...string) (*redact.Redactor, []error) {
	red, errs := redact.New(cfg.Gateway.MCPHTTP.RedactPatterns)
	return red.WithSecrets(append(cfg.SecretValues(getenv), extra...)...), errs
}
