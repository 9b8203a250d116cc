package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/tools"
)

// observed is one OnToolCall notice.
type observed struct {
	Step int
	Tool string
}

type observer struct {
	mu  sync.Mutex
	got []observed
}

func (o *observer) observe(_ context.Context, step int, tool string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, observed{step, tool})
}

func (o *observer) seen() []observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]observed(nil), o.got...)
}

// Every call tool_calls lists is observed once, in order, before it runs,
// with its step and its name as the envelope shows it: refused calls,
// invented names and several calls in one turn included. Arguments and
// outputs never reach the observer.
func TestObserverSeesEveryToolCall(t *testing.T) {
	const secret = "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	turns := [][]llm.ToolCall{
		{{ID: "1", Name: "file_read", Arguments: json.RawMessage(`{"path":"` + secret + `"}`)}},
		{{ID: "2", Name: "bash", Arguments: json.RawMessage(`{"command":"echo hi"}`)},
			{ID: "3", Name: "invented\n" + secret, Arguments: json.RawMessage(`{}`)}},
		{{ID: "4", Name: "file_read", Arguments: json.RawMessage(`{"path":"denied"}`)}},
	}
	p := &scriptProvider{reply: func(_ context.Context, turn int, _ llm.Request) (*llm.Response, error) {
		if turn <= len(turns) {
			return &llm.Response{ToolCalls: turns[turn-1]}, nil
		}
		return &llm.Response{Text: "done"}, nil
	}}
	obs := &observer{}
	exec := newExec(func(_ context.Context, name string, args json.RawMessage) (tools.Result, error) {
		// The call is observed before it runs.
		if n := len(obs.seen()); n == 0 || obs.seen()[n-1].Tool != name {
			t.Errorf("%s ran before it was observed: %v", name, obs.seen())
		}
		if strings.Contains(string(args), "denied") {
			return tools.Result{Output: "access denied " + secret, IsError: true}, nil
		}
		return tools.Result{Output: "output " + secret}, nil
	}, "file_read", "bash")
	r := &agent.Runner{Provider: p, Executor: exec}
	env := r.Run(testCtx(t), agent.Request{Message: "go", Timeout: 10 * time.Second, OnToolCall: obs.observe})
	if !env.OK || len(env.ToolCalls) != 4 {
		t.Fatalf("run: %+v", env)
	}
	var want []observed
	for i, c := range env.ToolCalls {
		want = append(want, observed{i + 1, c.Name})
	}
	if got := obs.seen(); !reflect.DeepEqual(got, want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
	if got := fmt.Sprint(obs.seen()); strings.Contains(got, secret) || strings.Contains(got, "\n") {
		t.Fatalf("the observer saw a secret or a raw name: %s", got)
	}
}

// A run without tool calls is never observed; a nil observer is fine.
func TestObserverWithoutToolCalls(t *testing.T) {
	p := &scriptProvider{reply: func(context.Context, int, llm.Request) (*llm.Response, error) {
		return &llm.Response{Text: "no tools needed"}, nil
	}}
	obs := &observer{}
	r := &agent.Runner{Provider: p, Executor: newExec(nil, "bash")}
	if env := r.Run(testCtx(t), agent.Request{Message: "hi", OnToolCall: obs.observe}); !env.OK || len(obs.seen()) != 0 {
		t.Fatalf("env %+v, observed %v", env, obs.seen())
	}
}

// An observer that blocks (a client that stopped reading its progress
// stream) cannot hold the run past its deadline.
func TestBlockedObserverDoesNotHoldTheRun(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p := &scriptProvider{reply: func(context.Context, int, llm.Request) (*llm.Response, error) {
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "x", Name: "bash", Arguments: json.RawMessage(`{}`)}}}, nil
	}}
	exec := newExec(func(context.Context, string, json.RawMessage) (tools.Result, error) {
		t.Error("the tool ran although its run had timed out")
		return tools.Result{}, nil
	}, "bash")
	r := &agent.Runner{Provider: p, Executor: exec}
	start := time.Now()
	env := r.Run(testCtx(t), agent.Request{Message: "go", Timeout: 200 * time.Millisecond,
		OnToolCall: func(context.Context, int, string) { <-release }})
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Errorf("returned after %v", elapsed)
	}
	assertFailure(t, env, errkinds.Timeout, "bash")
}
