package main

import (
	"log/slog"
	"os"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/redact"
)

// newLocalAgent assembles garra_agent for the stdio server: the file jail
// from GARRAIA_MCP_ALLOWED_DIRS (else agent.file_roots plus the cwd), bash
// only where the #1272 table allows it (on the host, confined: see
// hands.Confinement), web_search only with a Brave key.
func newLocalAgent(cfg *config.Config, configPath string, core *ask.Core, red *redact.Redactor, getenv func(string) string, log *slog.Logger) *agent.LocalRunner {
	cwd, _ := os.Getwd()
	roots := jail.RootsFromEnv(getenv, cfg.Agent.FileRoots, cwd)
	fileJail := jail.New(roots)
	if len(fileJail.Roots()) == 0 {
		log.Warn("garra_agent file tools have no usable root: every path is denied", "fix", "set GARRAIA_MCP_ALLOWED_DIRS to existing directories")
	}

	exposure := hands.Exposure(cfg, nil)
	defaultDir := ""
	if r := fileJail.Roots(); len(r) > 0 {
		defaultDir = r[0]
	}
	conf := hands.NewConfinement(cfg, hands.ConfineOptions{Role: hands.RoleLaptop, ConfigPath: configPath})
	hands.LogConfinement(log, exposure, conf)
	bash := hands.Bash(cfg, exposure, defaultDir, conf)
	if bash == nil {
		log.Warn("bash is not registered for garra_agent", "reason", exposure.Warning)
	}
	log.Info("garra_agent enabled", "file_roots", len(fileJail.Roots()), "bash", exposure.Where.String(), "web_search", cfg.LLM.Brave.APIKey != "")

	return &agent.LocalRunner{
		Provider:        core.Provider,
		Jail:            fileJail,
		Bash:            bash,
		BraveAPIKey:     cfg.LLM.Brave.APIKey,
		BraveBaseURL:    cfg.LLM.Brave.BaseURL,
		FileWriteBackup: cfg.Agent.FileWriteBackup,
		Redactor:        red,
		SessionPrefix:   agent.DefaultSessionPrefix,
	}
}
