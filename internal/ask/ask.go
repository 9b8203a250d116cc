// Package ask is the one-shot question core shared by `garra ask`, the stdio
// MCP server and the gateway: validate a request, resolve the provider, make
// one model call under a deadline, and return the garra.ask.v1 envelope with
// every message redacted.
package ask

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/redact"
)

// Limits and defaults of the garra_ask schema.
const (
	MaxMessageBytes      = 64 << 10
	MaxSystemPromptBytes = 8 << 10
	MinTimeoutSecs       = 1
	MaxTimeoutSecs       = 600
	DefaultTimeoutSecs   = 60
)

// DefaultSystemPrompt is the minimal prompt used when the caller gives none.
const DefaultSystemPrompt = "You are Garra, a concise and accurate assistant. Answer the user's question directly."

// Request is one question. Zero values mean the defaults.
type Request struct {
	Message      string
	Provider     string
	Model        string
	SystemPrompt string
	TimeoutSecs  int
}

// UsageError is a bad argument, naming the field. Callers map it to
// JSON-RPC invalid_params or to exit code 2.
type UsageError struct {
	Field   string
	Message string
}

func (e *UsageError) Error() string { return e.Field + ": " + e.Message }

// NewProviderFunc builds a provider client; tests and the gateway inject
// their own HTTP clients through it.
type NewProviderFunc func(llm.Options) (llm.Provider, error)

// Core answers questions with one configuration.
type Core struct {
	Config      *config.Config
	Redactor    *redact.Redactor
	Getenv      func(string) string
	NewProvider NewProviderFunc
	// Retries is how many times a failed provider request (429, 5xx,
	// connection errors) is retried within the deadline.
	Retries int
	Now     func() time.Time
	// TracerProvider makes each model call a span; nil = untraced.
	TracerProvider trace.TracerProvider
}

// DefaultRetries is what the CLI and servers use: a transient 429 or 502
// should not fail a call that has time left.
const DefaultRetries = 2

// Normalize trims the message, fills defaults and validates every field
// against the schema's bounds. It does not check operator policy (model
// allowlists, timeout caps): those belong to the surface.
func (c *Core) Normalize(req Request) (Request, error) {
	req.Message = strings.TrimSpace(req.Message)
	switch {
	case req.Message == "":
		return req, &UsageError{"message", "must not be empty"}
	case len(req.Message) > MaxMessageBytes:
		return req, &UsageError{"message", fmt.Sprintf("must be at most %d bytes", MaxMessageBytes)}
	case !utf8.ValidString(req.Message):
		return req, &UsageError{"message", "must be valid UTF-8"}
	}
	if len(req.SystemPrompt) > MaxSystemPromptBytes {
		return req, &UsageError{"system_prompt", fmt.Sprintf("must be at most %d bytes", MaxSystemPromptBytes)}
	}
	// The configured llm.provider and llm.model are the defaults of a call
	// that names none; the config holds the project's when it sets neither.
	if req.Provider == "" {
		req.Provider = c.defaultProvider()
	}
	if _, err := c.Config.ResolveProvider(req.Provider); err != nil {
		return req, &UsageError{"provider", err.Error()}
	}
	if req.Model == "" {
		req.Model = c.defaultModel()
	}
	if req.TimeoutSecs == 0 {
		req.TimeoutSecs = DefaultTimeoutSecs
	}
	if req.TimeoutSecs < MinTimeoutSecs || req.TimeoutSecs > MaxTimeoutSecs {
		return req, &UsageError{"timeout_secs", fmt.Sprintf("must be in [%d, %d]", MinTimeoutSecs, MaxTimeoutSecs)}
	}
	return req, nil
}

// Ask validates req and makes one model call. It never returns an error:
// every failure is an envelope with ok:false and a redacted message.
func (c *Core) Ask(ctx context.Context, req Request) Envelope {
	return c.AskWithHistory(ctx, req, nil)
}

// Provider builds the client for a provider name (kind or alias), reading
// its API key from the environment variable the config names.
func (c *Core) Provider(name string) (llm.Provider, error) {
	ref, err := c.Config.ResolveProvider(name)
	if err != nil {
		return nil, err
	}
	key := ""
	if ref.APIKeyEnv != "" {
		key = c.getenv(ref.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("provider %s: no API key: set %s", name, ref.APIKeyEnv)
		}
	}
	newProvider := c.NewProvider
	if newProvider == nil {
		newProvider = llm.New
	}
	p, err := newProvider(llm.Options{Kind: llm.Kind(ref.Kind), BaseURL: ref.BaseURL, APIKey: key, MaxRetries: c.Retries})
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", name, err)
	}
	if c.TracerProvider != nil {
		base := ref.BaseURL
		if base == "" {
			base = llm.DefaultBaseURL(llm.Kind(ref.Kind))
		}
		p = llm.Traced(p, c.TracerProvider, base)
	}
	// Outermost, so that a call a token quota refuses is not even traced
	// as sent; without a meter in the call's context it only passes on.
	return llm.Metered(p), nil
}

// ErrorKind classifies a failed model call: timeout, over_quota (the
// caller's token quota refused it) or provider_error.
func ErrorKind(err error) errkinds.Kind {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errkinds.Timeout
	case errors.Is(err, context.Canceled):
		return errkinds.Cancelled
	}
	if QuotaError(err) != nil {
		return errkinds.OverQuota
	}
	return errkinds.ProviderError
}

// quotaRefusal is a model call a caller's quota refused (quota.Refusal,
// which this package cannot import).
type quotaRefusal interface {
	error
	Message() string
	QuotaName() string
	RetryAfterSecs() int
}

// QuotaError is the envelope error of a model call a caller's quota
// refused, or nil when err is no such refusal.
func QuotaError(err error) *Error {
	q, ok := errors.AsType[quotaRefusal](err)
	if !ok {
		return nil
	}
	return &Error{Kind: errkinds.OverQuota, Message: q.Message(), Quota: q.QuotaName(), RetryAfterSecs: q.RetryAfterSecs()}
}

func (c *Core) failFromError(err error, timeoutSecs int) Envelope {
	if e := QuotaError(err); e != nil {
		return Envelope{Error: e}
	}
	switch ErrorKind(err) {
	case errkinds.Timeout:
		return c.fail(errkinds.Timeout, fmt.Sprintf("no answer within %d seconds", timeoutSecs))
	case errkinds.Cancelled:
		return c.fail(errkinds.Cancelled, "cancelled by the caller")
	}
	return c.fail(errkinds.ProviderError, err.Error())
}

func (c *Core) fail(kind errkinds.Kind, msg string) Envelope {
	return Envelope{Error: &Error{Kind: kind, Message: c.redactor().String(msg)}}
}

func (c *Core) redactor() *redact.Redactor {
	if c.Redactor == nil {
		return redact.Default()
	}
	return c.Redactor
}

func (c *Core) getenv(k string) string {
	if c.Getenv == nil {
		return os.Getenv(k)
	}
	return c.Getenv(k)
}

func (c *Core) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// defaultProvider is llm.provider, or the project's when the config is bare.
func (c *Core) defaultProvider() string {
	if c.Config.LLM.Provider != "" {
		return c.Config.LLM.Provider
	}
	return config.DefaultProvider
}

// defaultModel is llm.model, or the project's when the config is bare.
func (c *Core) defaultModel() string {
	if c.Config.LLM.Model != "" {
		return c.Config.LLM.Model
	}
	return config.DefaultModel
}
