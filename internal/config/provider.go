package config

import (
	"fmt"
	"sort"
)

// ProviderKinds are the four provider wire families, in the spec's enum order.
var ProviderKinds = []string{"ollama", "anthropic", "openai", "openrouter"}

// DefaultAPIKeyEnv is where each kind's API key is read from unless the
// config names another variable. Ollama needs none.
var DefaultAPIKeyEnv = map[string]string{
	"openai":     "OPENAI_API_KEY",
	"openrouter": "OPENROUTER_API_KEY",
	"anthropic":  "ANTHROPIC_API_KEY",
}

// ProviderRef is a provider name resolved to how it is reached.
type ProviderRef struct {
	Name      string // what the caller asked for (a kind or an alias)
	Kind      string // one of ProviderKinds
	BaseURL   string // "" = the kind's default endpoint
	APIKeyEnv string // "" = no key needed
}

func isKind(s string) bool {
	for _, k := range ProviderKinds {
		if k == s {
			return true
		}
	}
	return false
}

// ProviderNames lists every accepted provider name: the four kinds, then the
// aliases in sorted order.
func (c *Config) ProviderNames() []string {
	names := append([]string(nil), ProviderKinds...)
	aliases := make([]string, 0, len(c.LLM.Aliases))
	for a := range c.LLM.Aliases {
		if !isKind(a) {
			aliases = append(aliases, a)
		}
	}
	sort.Strings(aliases)
	return append(names, aliases...)
}

// ResolveProvider maps a provider name (a kind or an llm.aliases entry) to
// its kind, endpoint and key variable. llm.base_url and llm.api_key_env apply
// to the configured llm.provider only.
func (c *Config) ResolveProvider(name string) (ProviderRef, error) {
	if a, ok := c.LLM.Aliases[name]; ok && !isKind(name) {
		if !isKind(a.Provider) {
			return ProviderRef{}, fmt.Errorf("llm.aliases.%s.provider: %q is not one of ollama, anthropic, openai, openrouter", name, a.Provider)
		}
		env := a.APIKeyEnv
		if env == "" {
			env = DefaultAPIKeyEnv[a.Provider]
		}
		return ProviderRef{Name: name, Kind: a.Provider, BaseURL: a.BaseURL, APIKeyEnv: env}, nil
	}
	if !isKind(name) {
		return ProviderRef{}, fmt.Errorf("provider %q is not one of %v", name, c.ProviderNames())
	}
	ref := ProviderRef{Name: name, Kind: name, APIKeyEnv: DefaultAPIKeyEnv[name]}
	if name == c.LLM.Provider {
		ref.BaseURL = c.LLM.BaseURL
		if c.LLM.APIKeyEnv != "" {
			ref.APIKeyEnv = c.LLM.APIKeyEnv
		}
	}
	return ref, nil
}
