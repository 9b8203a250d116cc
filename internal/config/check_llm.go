package config

import (
	"fmt"
	"strings"
)

// checkProviderKey reports the default provider's API key variable when it
// is not set: every call that names no provider would fail with
// provider_error. Ollama, and an alias of it, need no key, and a gateway
// that enables nothing calling the model only gets a warning.
func (c *Config) checkProviderKey(getenv func(string) string) []Problem {
	ref, err := c.ResolveProvider(c.LLM.Provider)
	if err != nil || ref.APIKeyEnv == "" || getenv(ref.APIKeyEnv) != "" {
		return nil // an unknown provider is reported under llm.provider
	}
	field := "llm.api_key_env"
	if ref.Name != ref.Kind {
		field = "llm.aliases." + ref.Name + ".api_key_env"
	}
	if !c.callsTheModel(getenv) {
		// Nothing this gateway enables needs it: a warning, not a demand.
		return []Problem{{Field: field, Warning: true, Message: fmt.Sprintf(
			"%s is not set; no tool this gateway enables calls the model (allow_ask and allow_agent are false, no Telegram bot), "+
				"but the owner's chat API, and garra mcp-server or garra ask with this file, fail until it is", ref.APIKeyEnv)}}
	}
	return []Problem{{Field: field, FailsClosed: true, Message: fmt.Sprintf(
		"%s is not set: every call to the default provider %s fails; export it, or name the variable that holds the key in %s", ref.APIKeyEnv, ref.Name, field)}}
}

// callsTheModel reports whether something the config enables calls the
// default provider: garra_ask of garra mcp-server (a file without the
// gateway's MCP bridge is taken to be the laptop's), the gateway's
// garra_ask or garra_agent, or the Telegram assistant.
func (c *Config) callsTheModel(getenv func(string) string) bool {
	m := c.Gateway.MCPHTTP
	return !m.Enabled || m.AllowAsk || m.AllowAgent || getenv(c.Channels.Telegram.BotTokenEnv) != ""
}

// checkDefaultModel warns when llm.model, the model of every call that
// names none, is a router that may pick costlier models. It is a warning,
// not an error: an operator may choose it, but the default is meant to be
// a spend guardrail for hosts that call in a loop.
func (c *Config) checkDefaultModel() []Problem {
	if !IsCostlyRouter(c.LLM.Model) {
		return nil
	}
	return []Problem{{Field: "llm.model", Warning: true, Message: fmt.Sprintf(
		"%q is a router that may pick costlier models, and it is the default of every call that names no model; "+
			"set a fixed low-cost model (the project's is %s) and pass %s explicitly where it is worth it", c.LLM.Model, DefaultModel, c.LLM.Model)}}
}

// IsCostlyRouter reports whether model is an OpenRouter auto router: an id
// in the openrouter/ namespace whose name contains "auto" (openrouter/auto,
// openrouter/auto:nitro, OpenRouter/Auto-Beta). Such a model chooses the
// model per request, from a pool that includes the most expensive ones.
// openrouter/free and fixed models are not routers of that kind.
func IsCostlyRouter(model string) bool {
	ns, name, ok := strings.Cut(strings.ToLower(strings.TrimSpace(model)), "/")
	if !ok || ns != "openrouter" {
		return false
	}
	name, _, _ = strings.Cut(name, ":") // a variant such as :nitro or :floor routes the same way
	return strings.Contains(name, "auto")
}
