package main

import (
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/redact"
)

// The commands' redactor knows every secret of the config by value, and
// keeps the operator's patterns.
func TestProcessRedactor(t *testing.T) {
	cfg := config.Default()
	cfg.Gateway.APIKey = "ownerkeywithoutanyshape"
	cfg.Gateway.MCPHTTP.RedactPatterns = []string{`corp-[0-9]{6}`, `(`}
	cfg.Gateway.MCPHTTP.Orchestrators = []config.Orchestrator{{Name: "a", KeyEnv: "A_KEY", Sandbox: &config.OrchestratorSandbox{URL: "http://a/mcp", TokenEnv: "A_SBX"}}}
	env := map[string]string{"OPENROUTER_API_KEY": "providerkeywithoutshape", "A_KEY": "orchestratortokenvalue",
		"A_SBX": "sandboxtokenvalue", "TELEGRAM_BOT_TOKEN": "telegramtokenvalue"}
	red, errs := processRedactor(cfg, func(k string) string { return env[k] }, "extrasecretvalue")
	if len(errs) != 1 {
		t.Fatalf("pattern errors: %v", errs)
	}
	for _, s := range []string{"ownerkeywithoutanyshape", "providerkeywithoutshape", "orchestratortokenvalue",
		"sandboxtokenvalue", "telegramtokenvalue", "extrasecretvalue", "corp-123456"} {
		if got := red.String("v=" + s + "."); got != "v="+redact.Placeholder+"." {
			t.Errorf("%s: %q", s, got)
		}
	}
	if got := red.String("nothing secret here"); got != "nothing secret here" {
		t.Errorf("clean text changed: %q", got)
	}
	if strings.Contains(red.String("ownerkey\nwithoutanyshape"), "withoutanyshape") {
		t.Error("a wrapped key survived")
	}
}
