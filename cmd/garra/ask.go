package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/errkinds"
)

func newAskCommand(o *rootOptions) *cobra.Command {
	var (
		req    ask.Request
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "ask MESSAGE",
		Short: "Ask an LLM one question (the same core as the garra_ask tool)",
		Example: `  garra ask "What is a Kubernetes operator?"
  garra ask --provider ollama --model llama3.2 --json "hello"`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("ask: MESSAGE is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, _, err := o.loadConfig()
			if err != nil {
				return err
			}
			red, _ := processRedactor(cfg, o.getenv)
			core := &ask.Core{Config: cfg, Redactor: red, Getenv: o.getenv, Retries: ask.DefaultRetries}
			req.Message = strings.Join(args, " ")
			// 0 means "default" to the core; on the command line it is a mistake.
			if req.TimeoutSecs < ask.MinTimeoutSecs {
				return usageError("ask: --timeout: must be in [%d, %d]", ask.MinTimeoutSecs, ask.MaxTimeoutSecs)
			}
			if _, err := core.Normalize(req); err != nil {
				var ue *ask.UsageError
				if errors.As(err, &ue) {
					flag := map[string]string{"timeout_secs": "--timeout", "system_prompt": "--system", "provider": "--provider", "model": "--model"}[ue.Field]
					if flag == "" {
						flag = "MESSAGE"
					}
					return usageError("ask: %s: %s", flag, ue.Message)
				}
				return err
			}
			env := core.Ask(cmd.Context(), req)
			out := cmd.OutOrStdout()
			var werr error
			if asJSON {
				b, _ := json.Marshal(env)
				_, werr = fmt.Fprintln(out, string(b))
			} else if env.OK {
				_, werr = fmt.Fprintln(out, env.Answer)
			}
			if werr != nil {
				return fmt.Errorf("ask: write the answer: %w", werr)
			}
			if !env.OK {
				if env.Error.Kind == errkinds.Usage {
					return usageError("ask: %s", env.Error.Message)
				}
				return &exitError{code: 1, msg: fmt.Sprintf("ask: %s: %s", env.Error.Kind, env.Error.Message)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Provider, "provider", "", "provider: ollama, anthropic, openai, openrouter or a configured alias (default llm.provider, else openrouter)")
	f.StringVar(&req.Model, "model", "", "model id (default llm.model, else z-ai/glm-5.3-flash)")
	f.IntVar(&req.TimeoutSecs, "timeout", ask.DefaultTimeoutSecs, "timeout in seconds, 1 to 600")
	f.StringVar(&req.SystemPrompt, "system", "", "system prompt (at most 8 KiB)")
	f.BoolVar(&asJSON, "json", false, "print the garra.ask.v1 envelope as JSON")
	return cmd
}
