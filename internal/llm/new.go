package llm

import (
	"fmt"
	"net/http"
	"net/url"
)

// Options configures one provider client. The caller (config) resolves the
// API key from whichever environment variable it names; this package never
// reads the environment, so no ambient OPENAI_* or ANTHROPIC_* setting can
// leak into a client.
type Options struct {
	Kind Kind
	// BaseURL overrides the kind's default endpoint ("" = DefaultBaseURL).
	BaseURL string
	// APIKey may be empty only for ollama.
	APIKey string
	// HTTPClient is used for every request; nil means the SDK's default.
	HTTPClient *http.Client
	// MaxRetries is handed to the SDK as is: 0 means a single attempt.
	MaxRetries int
}

// DefaultBaseURL is the endpoint a kind talks to when Options.BaseURL is
// empty, or "" for an unknown kind.
func DefaultBaseURL(k Kind) string {
	switch k {
	case KindOpenAI:
		return "https://api.openai.com/v1"
	case KindOpenRouter:
		return "https://openrouter.ai/api/v1"
	case KindOllama:
		return "http://localhost:11434/v1"
	case KindAnthropic:
		return "https://api.anthropic.com"
	}
	return ""
}

// New builds the Provider for o.Kind. It does no network I/O.
func New(o Options) (Provider, error) {
	if _, err := ParseKind(string(o.Kind)); err != nil {
		return nil, err
	}
	if o.APIKey == "" && o.Kind != KindOllama {
		// The caller knows which env var should have held it and says so.
		return nil, fmt.Errorf("no API key for provider %s", o.Kind)
	}
	if o.MaxRetries < 0 {
		return nil, fmt.Errorf("provider %s: MaxRetries must not be negative (got %d)", o.Kind, o.MaxRetries)
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL(o.Kind)
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// url.Parse errors quote the whole URL, which could carry
		// credentials in its userinfo; keep the message generic.
		return nil, fmt.Errorf("provider %s: base URL must be an absolute http(s) URL", o.Kind)
	}
	if o.Kind == KindAnthropic {
		return newAnthropic(o), nil
	}
	return newOpenAICompat(o), nil
}

// maxTokens applies the spec's default cap.
func maxTokens(req Request) int64 {
	if req.MaxTokens > 0 {
		return int64(req.MaxTokens)
	}
	return DefaultMaxTokens
}
