package agent

import (
	"context"
	"time"

	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/internal/tools"
)

// Call is one garra_agent invocation as a surface hands it over: validated
// and defaulted, except WorkingDir, which only the file jail can judge.
type Call struct {
	Message      string
	Provider     string
	Model        string
	SystemPrompt string
	WorkingDir   string // "" = none
	Timeout      time.Duration
	// OnToolCall observes the run's tool calls; nil = nobody asked.
	OnToolCall ToolObserver
}

// ErrInvalidWorkingDir is returned by LocalRunner.RunAgent when working_dir
// is missing, not a directory or outside the roots; surfaces map it to
// invalid_params.
var ErrInvalidWorkingDir = jail.ErrInvalidWorkingDir

// LocalRunner runs the agent with its tools in this process: the stdio
// server's garra_agent. It owns the tool constructors so that the
// dispatcher never names one.
type LocalRunner struct {
	// Provider builds the client for a provider name (ask.Core.Provider).
	Provider func(name string) (llm.Provider, error)
	// Jail confines the file tools to the server's roots.
	Jail *jail.Jail
	// Bash runs shell commands; nil when bash is not exposed.
	Bash         tools.BashRunner
	BraveAPIKey  string
	BraveBaseURL string
	// FileWriteBackup makes file_write keep <path>.bak of a replaced file.
	FileWriteBackup bool
	Redactor        *redact.Redactor
	// SessionPrefix names sessions ("mcp" on the stdio server).
	SessionPrefix string
}

// RunAgent narrows the jail to the call's working_dir, builds the tools and
// runs the loop. The only error is ErrInvalidWorkingDir; everything else is
// in the envelope.
func (l *LocalRunner) RunAgent(ctx context.Context, c Call) (Envelope, error) {
	fileJail := l.Jail
	workDir := ""
	if c.WorkingDir != "" {
		narrowed, err := l.Jail.Narrow(c.WorkingDir)
		if err != nil {
			return Envelope{}, ErrInvalidWorkingDir
		}
		defer func() { _ = narrowed.Close() }()
		fileJail = narrowed
		workDir = narrowed.Roots()[0]
	}
	r := &Runner{Redactor: l.Redactor}
	provider, err := l.Provider(c.Provider)
	if err != nil {
		// Reported by the loop as the first model turn's provider_error,
		// with the session id and envelope shape of any other failure.
		provider = UnavailableProvider{Err: err}
	}
	r.Provider = provider
	r.Executor = tools.NewLocal(tools.LocalOptions{
		Jail:            fileJail,
		WorkingDir:      workDir,
		Bash:            l.Bash,
		BraveAPIKey:     l.BraveAPIKey,
		BraveBaseURL:    l.BraveBaseURL,
		FileWriteBackup: l.FileWriteBackup,
	})
	return r.Run(ctx, Request{
		Message:       c.Message,
		Provider:      c.Provider,
		Model:         c.Model,
		SystemPrompt:  c.SystemPrompt,
		Timeout:       c.Timeout,
		SessionPrefix: l.SessionPrefix,
		OnToolCall:    c.OnToolCall,
	}), nil
}

// UnavailableProvider stands in for a provider that could not be built
// (no API key, bad base URL).
type UnavailableProvider struct{ Err error }

// Kind is empty: no provider was built.
func (u UnavailableProvider) Kind() llm.Kind { return "" }

// Complete fails every call with the reason the provider could not be built.
func (u UnavailableProvider) Complete(context.Context, llm.Request) (*llm.Response, error) {
	return nil, u.Err
}
