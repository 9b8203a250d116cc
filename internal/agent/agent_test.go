package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/tools"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

var sessionRE = regexp.MustCompile(`^mcp-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`)

// TestMultiStepRun drives the whole loop through the real clients: the
// model reads a file, then diffs, then answers.
func TestMultiStepRun(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t,
				llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "call_a", Name: "file_read", Args: `{"path":"a.txt"}`}}},
				llmdouble.Step{Text: "now the diff", ToolCalls: []llmdouble.Call{{ID: "call_b", Name: "git_diff", Args: `{}`}}},
				llmdouble.Step{Text: "a.txt has 3 lines and one change is staged."},
			)
			clk := newClock()
			exec := newExec(func(_ context.Context, name string, _ json.RawMessage) (tools.Result, error) {
				switch name {
				case "file_read":
					clk.Advance(120 * time.Millisecond)
					return tools.Result{Output: "line1\nline2\nline3\n"}, nil
				case "git_diff":
					clk.Advance(30 * time.Millisecond)
					return tools.Result{Output: "diff --git a/x b/x\n+added"}, nil
				}
				return tools.Result{}, fmt.Errorf("unexpected tool %s", name)
			}, "file_read", "git_diff", "web_fetch")
			r := &agent.Runner{Provider: newProvider(t, f, s), Executor: exec, Now: clk.Now}

			env := r.Run(testCtx(t), agent.Request{
				Message:  "How many lines in a.txt, and what changed?",
				Provider: "openrouter",
				Model:    "z-ai/glm-5.3-flash",
				Timeout:  10 * time.Second,
			})

			if !env.OK || env.Error != nil {
				t.Fatalf("run failed: %+v", env.Error)
			}
			if env.Answer != "a.txt has 3 lines and one change is staged." {
				t.Errorf("answer = %q", env.Answer)
			}
			if env.Provider != "openrouter" || env.Model != "z-ai/glm-5.3-flash" {
				t.Errorf("provider/model = %q/%q", env.Provider, env.Model)
			}
			m := sessionRE.FindStringSubmatch(env.SessionID)
			if m == nil {
				t.Fatalf("session_id = %q, want mcp-<uuid>", env.SessionID)
			}
			if _, err := uuid.Parse(m[1]); err != nil {
				t.Errorf("session_id suffix %q: %v", m[1], err)
			}
			if env.LatencyMS != 150 { // the clock moves only inside the tools
				t.Errorf("latency_ms = %d, want 150", env.LatencyMS)
			}
			wantCalls := []agent.ToolCallSummary{
				{Name: "file_read", DurationMS: 120, Success: true, Summary: "line1 line2 line3"},
				{Name: "git_diff", DurationMS: 30, Success: true, Summary: "diff --git a/x b/x +added"},
			}
			if !reflect.DeepEqual(env.ToolCalls, wantCalls) {
				t.Errorf("tool_calls = %+v\nwant %+v", env.ToolCalls, wantCalls)
			}
			if got, want := exec.Calls(), []execCall{{"file_read", `{"path":"a.txt"}`}, {"git_diff", `{}`}}; !reflect.DeepEqual(got, want) {
				t.Errorf("executor calls = %+v, want %+v", got, want)
			}

			reqs := s.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests to the model, want 3", len(reqs))
			}
			for i, rec := range reqs {
				if rec.Model != "z-ai/glm-5.3-flash" {
					t.Errorf("request %d: model = %q", i+1, rec.Model)
				}
				if !reflect.DeepEqual(rec.ToolNames, []string{"file_read", "git_diff", "web_fetch"}) {
					t.Errorf("request %d: tools = %v", i+1, rec.ToolNames)
				}
				if rec.LastUserText != "How many lines in a.txt, and what changed?" {
					t.Errorf("request %d: user text = %q", i+1, rec.LastUserText)
				}
				if rec.System != agent.DefaultSystemPrompt([]string{"file_read", "git_diff", "web_fetch"}) {
					t.Errorf("request %d: system = %q", i+1, rec.System)
				}
			}
			calls, results := wireHistory(t, reqs[0])
			if len(calls)+len(results) != 0 {
				t.Errorf("first request carries history: %+v %+v", calls, results)
			}
			calls, results = wireHistory(t, reqs[1])
			if want := []wireCall{{"call_a", "file_read"}}; !reflect.DeepEqual(calls, want) {
				t.Errorf("request 2 tool calls = %+v, want %+v", calls, want)
			}
			if want := []wireResult{{"call_a", "line1\nline2\nline3\n", false}}; !reflect.DeepEqual(results, want) {
				t.Errorf("request 2 tool results = %+v, want %+v", results, want)
			}
			calls, results = wireHistory(t, reqs[2])
			if want := []wireCall{{"call_a", "file_read"}, {"call_b", "git_diff"}}; !reflect.DeepEqual(calls, want) {
				t.Errorf("request 3 tool calls = %+v, want %+v", calls, want)
			}
			wantResults := []wireResult{{"call_a", "line1\nline2\nline3\n", false}, {"call_b", "diff --git a/x b/x\n+added", false}}
			if !reflect.DeepEqual(results, wantResults) {
				t.Errorf("request 3 tool results = %+v, want %+v", results, wantResults)
			}
			if s.Remaining() != 0 {
				t.Errorf("%d scripted steps left", s.Remaining())
			}
		})
	}
}

// blockUntilDone is a tool that honours cancellation and nothing else.
func blockUntilDone(ctx context.Context, _ string, _ json.RawMessage) (tools.Result, error) {
	<-ctx.Done()
	return tools.Result{}, ctx.Err()
}

func TestTimeoutMidTool(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t,
				llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "c1", Name: "file_read", Args: `{"path":"a"}`}}},
				llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "c2", Name: "bash", Args: `{"command":"sleep 600"}`}}},
				llmdouble.Step{Text: "never reached"},
			)
			exec := newExec(func(ctx context.Context, name string, args json.RawMessage) (tools.Result, error) {
				if name == "bash" {
					return blockUntilDone(ctx, name, args)
				}
				return tools.Result{Output: "ok"}, nil
			}, "bash", "file_read")
			r := &agent.Runner{Provider: newProvider(t, f, s), Executor: exec}
			const timeout = 400 * time.Millisecond
			start := time.Now()
			env := r.Run(testCtx(t), agent.Request{Message: "go", Provider: "p", Model: "m", Timeout: timeout})
			elapsed := time.Since(start)

			assertFailure(t, env, errkinds.Timeout, "timed out while running tool bash")
			if elapsed < timeout || elapsed > timeout+1500*time.Millisecond {
				t.Errorf("returned after %v, want promptly after %v", elapsed, timeout)
			}
			if len(env.ToolCalls) != 2 {
				t.Fatalf("tool_calls = %+v", env.ToolCalls)
			}
			if c := env.ToolCalls[0]; c.Name != "file_read" || !c.Success || c.Summary != "ok" {
				t.Errorf("first call = %+v", c)
			}
			if c := env.ToolCalls[1]; c.Name != "bash" || c.Success || c.Summary != "interrupted: timeout" {
				t.Errorf("interrupted call = %+v", c)
			}
			if n := len(s.Requests()); n != 2 {
				t.Errorf("%d model calls, want 2", n)
			}
		})
	}
}

// TestTimeoutWithUncooperativeExecutor: a remote executor that ignores
// cancellation cannot hold the run past its deadline.
func TestTimeoutWithUncooperativeExecutor(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
		<-release
		return tools.Result{Output: "too late"}, nil
	}, "web_fetch")
	p := &scriptProvider{reply: func(_ context.Context, _ int, _ llm.Request) (*llm.Response, error) {
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "x", Name: "web_fetch", Arguments: json.RawMessage(`{}`)}}}, nil
	}}
	r := &agent.Runner{Provider: p, Executor: exec}
	start := time.Now()
	env := r.Run(testCtx(t), agent.Request{Message: "go", Timeout: 200 * time.Millisecond})
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Errorf("returned after %v", elapsed)
	}
	assertFailure(t, env, errkinds.Timeout, "web_fetch")
	if len(env.ToolCalls) != 1 || env.ToolCalls[0].Success {
		t.Errorf("tool_calls = %+v", env.ToolCalls)
	}
}

func TestTimeoutInModel(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t,
				llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "c1", Name: "file_read", Args: `{"path":"a"}`}}},
				llmdouble.Step{Text: "too late", Delay: 10 * time.Second},
			)
			exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
				return tools.Result{Output: "contents"}, nil
			}, "file_read")
			r := &agent.Runner{Provider: newProvider(t, f, s), Executor: exec}
			const timeout = 400 * time.Millisecond
			start := time.Now()
			env := r.Run(testCtx(t), agent.Request{Message: "go", Timeout: timeout})
			elapsed := time.Since(start)

			assertFailure(t, env, errkinds.Timeout, "waiting for the model")
			if elapsed < timeout || elapsed > timeout+1500*time.Millisecond {
				t.Errorf("returned after %v, want promptly after %v", elapsed, timeout)
			}
			want := []agent.ToolCallSummary{{Name: "file_read", DurationMS: env.ToolCalls[0].DurationMS, Success: true, Summary: "contents"}}
			if !reflect.DeepEqual(env.ToolCalls, want) {
				t.Errorf("tool_calls = %+v", env.ToolCalls)
			}
		})
	}
}

func TestToolRefusalIsFedBack(t *testing.T) {
	const refusal = "access denied: the path is outside the allowed roots"
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t,
				llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "c1", Name: "file_read", Args: `{"path":"/etc/shadow"}`}}},
				llmdouble.Step{Text: "I cannot read that file: it is outside the allowed roots."},
			)
			exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
				return tools.Result{Output: refusal, IsError: true}, nil
			}, "file_read")
			r := &agent.Runner{Provider: newProvider(t, f, s), Executor: exec}
			env := r.Run(testCtx(t), agent.Request{Message: "read /etc/shadow", Timeout: 10 * time.Second})

			if !env.OK {
				t.Fatalf("run failed: %+v", env.Error)
			}
			if env.Answer != "I cannot read that file: it is outside the allowed roots." {
				t.Errorf("answer = %q", env.Answer)
			}
			if len(env.ToolCalls) != 1 || env.ToolCalls[0].Success || env.ToolCalls[0].Summary != refusal {
				t.Errorf("tool_calls = %+v", env.ToolCalls)
			}
			_, results := wireHistory(t, s.Requests()[1])
			if want := []wireResult{{"c1", refusal, true}}; !reflect.DeepEqual(results, want) {
				t.Errorf("fed back %+v, want %+v", results, want)
			}
		})
	}
}

func TestUnknownToolIsFedBack(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t,
				llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "c1", Name: "bash", Args: `{"command":"ls"}`}}},
				llmdouble.Step{Text: "No shell here; I listed nothing."},
			)
			exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
				t.Error("the executor must not see an unknown tool")
				return tools.Result{}, nil
			}, "file_read", "git_diff")
			r := &agent.Runner{Provider: newProvider(t, f, s), Executor: exec}
			env := r.Run(testCtx(t), agent.Request{Message: "ls", Timeout: 10 * time.Second})

			if !env.OK {
				t.Fatalf("run failed: %+v", env.Error)
			}
			if len(env.ToolCalls) != 1 || env.ToolCalls[0].Name != "bash" || env.ToolCalls[0].Success ||
				!strings.Contains(env.ToolCalls[0].Summary, "unknown tool") {
				t.Errorf("tool_calls = %+v", env.ToolCalls)
			}
			_, results := wireHistory(t, s.Requests()[1])
			if len(results) != 1 || !results[0].IsError || results[0].ID != "c1" ||
				!strings.Contains(results[0].Content, `unknown tool "bash"`) ||
				!strings.Contains(results[0].Content, "file_read, git_diff") {
				t.Errorf("fed back %+v", results)
			}
		})
	}
}

// TestExecutorSaysUnknownTool: a remote executor whose tool list changed
// after Tools answers ErrUnknownTool; that is fed back too.
func TestExecutorSaysUnknownTool(t *testing.T) {
	exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
		return tools.Result{}, fmt.Errorf("remote: %w", tools.ErrUnknownTool)
	}, "web_search")
	p := &scriptProvider{reply: func(_ context.Context, turn int, _ llm.Request) (*llm.Response, error) {
		if turn == 1 {
			return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "x", Name: "web_search"}}}, nil
		}
		return &llm.Response{Text: "search is gone"}, nil
	}}
	env := (&agent.Runner{Provider: p, Executor: exec}).Run(testCtx(t), agent.Request{Message: "q"})
	if !env.OK || len(env.ToolCalls) != 1 || env.ToolCalls[0].Success {
		t.Fatalf("envelope = %+v", env)
	}
	last := p.Requests()[1].Messages
	if m := last[len(last)-1]; m.Role != llm.RoleTool || !m.IsError || m.ToolCallID != "x" || !strings.Contains(m.Content, "unknown tool") {
		t.Errorf("fed back %+v", m)
	}
}

func TestProviderErrorOnSecondTurn(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t,
				llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "c1", Name: "git_diff", Args: `{}`}}},
				llmdouble.Step{Status: 500, ErrorMessage: "upstream exploded"},
			)
			exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
				return tools.Result{Output: "no changes"}, nil
			}, "git_diff")
			r := &agent.Runner{Provider: newProvider(t, f, s), Executor: exec}
			env := r.Run(testCtx(t), agent.Request{Message: "diff?", Timeout: 10 * time.Second})

			assertFailure(t, env, errkinds.ProviderError, "upstream exploded")
			if !strings.Contains(env.Error.Message, "model turn 2") {
				t.Errorf("message = %q", env.Error.Message)
			}
			want := []agent.ToolCallSummary{{Name: "git_diff", DurationMS: env.ToolCalls[0].DurationMS, Success: true, Summary: "no changes"}}
			if !reflect.DeepEqual(env.ToolCalls, want) {
				t.Errorf("tool_calls = %+v", env.ToolCalls)
			}
		})
	}
}

func TestExecutorFailureEndsRun(t *testing.T) {
	exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
		return tools.Result{}, errors.New("sandbox unreachable: dial tcp 10.0.0.7:7000: connection refused")
	}, "bash", "file_read")
	p := &scriptProvider{reply: func(_ context.Context, _ int, _ llm.Request) (*llm.Response, error) {
		return &llm.Response{ToolCalls: []llm.ToolCall{
			{ID: "a", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			{ID: "b", Name: "file_read", Arguments: json.RawMessage(`{"path":"x"}`)},
		}}, nil
	}}
	env := (&agent.Runner{Provider: p, Executor: exec}).Run(testCtx(t), agent.Request{Message: "ls"})
	assertFailure(t, env, errkinds.ProviderError, "tool bash: executor failed: sandbox unreachable")
	if len(env.ToolCalls) != 1 || env.ToolCalls[0].Success || !strings.Contains(env.ToolCalls[0].Summary, "executor failed") {
		t.Errorf("tool_calls = %+v", env.ToolCalls)
	}
	if n := len(exec.Calls()); n != 1 {
		t.Errorf("executor called %d times after failing, want 1", n)
	}
	if n := len(p.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
}

func TestMaxTurnsExceeded(t *testing.T) {
	s := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "c1", Name: "file_read", Args: `{"path":"a"}`}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{ID: "c2", Name: "file_read", Args: `{"path":"b"}`}}},
		llmdouble.Step{Text: "never asked"},
	)
	exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
		return tools.Result{Output: "data"}, nil
	}, "file_read")
	r := &agent.Runner{Provider: newProvider(t, families[0], s), Executor: exec, MaxTurns: 2}
	env := r.Run(testCtx(t), agent.Request{Message: "loop", Timeout: 10 * time.Second})

	assertFailure(t, env, errkinds.ProviderError, "no final answer after 2 model turns")
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
	// The calls of the turn over budget are not run.
	if len(env.ToolCalls) != 1 || len(exec.Calls()) != 1 {
		t.Errorf("tool_calls = %+v, executor calls = %+v", env.ToolCalls, exec.Calls())
	}
}

func TestDefaultMaxTurns(t *testing.T) {
	exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
		return tools.Result{Output: "again"}, nil
	}, "web_fetch")
	p := &scriptProvider{reply: func(_ context.Context, turn int, _ llm.Request) (*llm.Response, error) {
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: fmt.Sprint(turn), Name: "web_fetch"}}}, nil
	}}
	env := (&agent.Runner{Provider: p, Executor: exec}).Run(testCtx(t), agent.Request{Message: "loop"})
	assertFailure(t, env, errkinds.ProviderError, fmt.Sprintf("after %d model turns", agent.DefaultMaxTurns))
	if n := len(p.Requests()); n != agent.DefaultMaxTurns {
		t.Errorf("%d model calls, want %d", n, agent.DefaultMaxTurns)
	}
	if len(env.ToolCalls) != agent.DefaultMaxTurns-1 {
		t.Errorf("%d tool calls, want %d", len(env.ToolCalls), agent.DefaultMaxTurns-1)
	}
}

// fakeKey is shaped like an OpenRouter key.
const fakeKey = "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// keyFragments are pieces of fakeKey's secret part that must never leak,
// not even half a key left over by truncation.
func keyFragments() []string {
	secret := strings.TrimPrefix(fakeKey, "sk-or-v1-")
	var out []string
	for i := 0; i+12 <= len(secret); i += 6 {
		out = append(out, secret[i:i+12])
	}
	return out
}

func assertNoKey(t *testing.T, where, s string) {
	t.Helper()
	for _, frag := range keyFragments() {
		if strings.Contains(s, frag) {
			t.Errorf("%s leaks part of the key (%s): %s", where, frag, s)
			return
		}
	}
}

func TestRedaction(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t,
				llmdouble.Step{ToolCalls: []llmdouble.Call{
					{ID: "c1", Name: "file_read", Args: `{"path":".env"}`},
					{ID: "c2", Name: "bash", Args: `{"command":"cat notes"}`},
				}},
				llmdouble.Step{Text: "The key is " + fakeKey + "."},
			)
			exec := newExec(func(_ context.Context, name string, _ json.RawMessage) (tools.Result, error) {
				if name == "file_read" {
					return tools.Result{Output: "OPENROUTER_API_KEY=" + fakeKey + "\nOTHER=1"}, nil
				}
				// The key straddles the summary cut: redaction must come first.
				return tools.Result{Output: strings.Repeat("word ", 30) + fakeKey}, nil
			}, "file_read", "bash")
			r := &agent.Runner{Provider: newProvider(t, f, s), Executor: exec}
			env := r.Run(testCtx(t), agent.Request{Message: "what is my key? it might be " + fakeKey, Timeout: 10 * time.Second})
			if !env.OK {
				t.Fatalf("run failed: %+v", env.Error)
			}
			out := env.JSON()
			assertNoKey(t, "envelope", out)
			if !strings.Contains(env.Answer, "[REDACTED]") || !strings.Contains(env.ToolCalls[0].Summary, "[REDACTED]") {
				t.Errorf("redaction marker missing: %s", out)
			}
			// The task itself is redacted before it reaches the provider.
			assertNoKey(t, "first request", string(s.Requests()[0].RawBody))
		})
	}
}

func TestRedactionOfErrors(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t, llmdouble.Step{Status: 401, ErrorMessage: "Incorrect API key provided: " + fakeKey})
			r := &agent.Runner{Provider: newProvider(t, f, s)}
			env := r.Run(testCtx(t), agent.Request{Message: "hi", Timeout: 10 * time.Second})
			assertFailure(t, env, errkinds.ProviderError, "Incorrect API key provided")
			assertNoKey(t, "envelope", env.JSON())
		})
	}
	exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
		return tools.Result{}, errors.New("dial https://user:" + fakeKey + "@sandbox.internal failed, token=" + fakeKey)
	}, "bash")
	p := &scriptProvider{reply: func(context.Context, int, llm.Request) (*llm.Response, error) {
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "a", Name: "bash"}}}, nil
	}}
	env := (&agent.Runner{Provider: p, Executor: exec}).Run(testCtx(t), agent.Request{Message: "x"})
	assertFailure(t, env, errkinds.ProviderError, "executor failed")
	assertNoKey(t, "executor failure envelope", env.JSON())
}

func TestCallerCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	p := &scriptProvider{reply: func(ctx context.Context, _ int, _ llm.Request) (*llm.Response, error) {
		cancel()
		<-ctx.Done()
		return nil, fmt.Errorf("openai: %w", ctx.Err())
	}}
	env := (&agent.Runner{Provider: p}).Run(ctx, agent.Request{Message: "x", Timeout: time.Minute})
	assertFailure(t, env, errkinds.Cancelled, "agent run cancelled")
}

func TestSessionIDAndNoExecutor(t *testing.T) {
	p := &scriptProvider{reply: func(context.Context, int, llm.Request) (*llm.Response, error) {
		return &llm.Response{Text: "plain answer"}, nil
	}}
	r := &agent.Runner{Provider: p, NewID: func() string { return "fixed" }}
	env := r.Run(testCtx(t), agent.Request{Message: "x", SessionPrefix: "mcp-http-orch1"})
	if !env.OK || env.SessionID != "mcp-http-orch1-fixed" || env.Answer != "plain answer" {
		t.Errorf("envelope = %+v", env)
	}
	if env.ToolCalls == nil || len(env.ToolCalls) != 0 {
		t.Errorf("tool_calls = %#v, want empty non-nil", env.ToolCalls)
	}
	req := p.Requests()[0]
	if len(req.Tools) != 0 || !strings.Contains(req.System, "No tools are available") || !strings.Contains(req.System, agent.NoShellNotice) {
		t.Errorf("request without executor = %+v", req)
	}
	// A caller's prompt replaces the default.
	env = r.Run(testCtx(t), agent.Request{Message: "x", SystemPrompt: "be terse"})
	if got := p.Requests()[1].System; got != "be terse" || env.SessionID != "mcp-fixed" {
		t.Errorf("system = %q, session = %q", got, env.SessionID)
	}
}

// TestEnvironmentJoinsTheDefaultPrompt: the sandbox's toolchain is a
// paragraph of the generated prompt, and a caller's own prompt is left as
// given.
func TestEnvironmentJoinsTheDefaultPrompt(t *testing.T) {
	p := &scriptProvider{reply: func(context.Context, int, llm.Request) (*llm.Response, error) {
		return &llm.Response{Text: "ok"}, nil
	}}
	r := &agent.Runner{Provider: p}
	const env = "Programs on the sandbox's PATH: go (go version go1.99.1)."
	r.Run(testCtx(t), agent.Request{Message: "x", Environment: env})
	if got, want := p.Requests()[0].System, agent.DefaultSystemPrompt(nil)+"\n\n"+env; got != want {
		t.Errorf("system = %q, want %q", got, want)
	}
	r.Run(testCtx(t), agent.Request{Message: "x", Environment: env, SystemPrompt: "be terse"})
	if got := p.Requests()[1].System; got != "be terse" {
		t.Errorf("system with a caller's prompt = %q", got)
	}
	r.Run(testCtx(t), agent.Request{Message: "x"})
	if got := p.Requests()[2].System; got != agent.DefaultSystemPrompt(nil) {
		t.Errorf("system without an environment = %q", got)
	}
}

func TestNoProvider(t *testing.T) {
	env := (&agent.Runner{}).Run(testCtx(t), agent.Request{Message: "x"})
	assertFailure(t, env, errkinds.ProviderError, "no model provider")
	if !strings.HasPrefix(env.SessionID, "mcp-") {
		t.Errorf("session_id = %q", env.SessionID)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "(no output)"},
		{" \n\t ", "(no output)"},
		{"3 files\n", "3 files"},
		{"a\r\n\tb  c\x1b[0m\x00", "a b c[0m"},
		{strings.Repeat("é", agent.SummaryMaxRunes), strings.Repeat("é", agent.SummaryMaxRunes)},
		{strings.Repeat("é", agent.SummaryMaxRunes+1), strings.Repeat("é", agent.SummaryMaxRunes) + "…"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
	} {
		if got := agent.Summarize(nil, tc.in); got != tc.want {
			t.Errorf("Summarize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func assertFailure(t *testing.T, env agent.Envelope, kind errkinds.Kind, contains string) {
	t.Helper()
	if env.OK || env.Error == nil {
		t.Fatalf("want failure %s, got %+v", kind, env)
	}
	if env.Error.Kind != kind || !strings.Contains(env.Error.Message, contains) {
		t.Errorf("error = %+v, want kind %s containing %q", env.Error, kind, contains)
	}
	if env.ToolCalls == nil {
		t.Errorf("tool_calls is nil; it must always travel")
	}
}
