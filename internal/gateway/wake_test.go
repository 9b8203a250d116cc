package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// sleepySandbox is a real sandbox behind a switch: asleep, every request
// fails as a pod that is not there would (502 from the proxy); awake, it
// is served.
type sleepySandbox struct {
	url   string
	awake atomic.Bool
}

func startSleepySandbox(t *testing.T) *sleepySandbox {
	t.Helper()
	backend, _, _ := startSandbox(t)
	u, _ := url.Parse(backend)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	s := &sleepySandbox{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.awake.Load() {
			http.Error(w, "no endpoint", http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/mcp"
	return s
}

// fakeWaker stands in for the Deployments API: a wake of a sleeping
// sandbox starts it after delay; err fails every wake.
type fakeWaker struct {
	sbx   *sleepySandbox
	delay time.Duration
	err   error
	mu    sync.Mutex
	calls []config.SandboxWake
	// asleep counts the wakes that found the sandbox asleep.
	asleep int
}

func (f *fakeWaker) Wake(_ context.Context, w config.SandboxWake, _ time.Time) (bool, error) {
	f.mu.Lock()
	f.calls = append(f.calls, w)
	f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	if f.sbx.awake.Load() {
		return true, nil
	}
	f.mu.Lock()
	f.asleep++
	f.mu.Unlock()
	time.AfterFunc(f.delay, func() { f.sbx.awake.Store(true) })
	return false, nil
}

func (f *fakeWaker) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func wakeYAML(sbxURL, baseURL string) string {
	return enabled + "    allow_agent: true\n" + `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [agent]
        sandbox: {url: "` + sbxURL + `", token_env: SBX_TOKEN, wake: {namespace: agents, deployment: team-a-sandbox-alpha}}
` + "llm: {provider: openrouter, base_url: " + baseURL + "}\n"
}

// A call that finds its sandbox suspended wakes it and waits for it to
// answer, then runs; the next call right after does not ask again.
func TestAgentCallWakesASuspendedSandbox(t *testing.T) {
	sbx := startSleepySandbox(t)
	waker := &fakeWaker{sbx: sbx, delay: 400 * time.Millisecond}
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"echo awake-$((6*7))"}`}}},
		llmdouble.Step{Text: "ran after waking"},
		llmdouble.Step{Text: "second"})
	h := start(t, wakeYAML(sbx.url, double.OpenAIBaseURL()),
		map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123", "SBX_TOKEN": sandboxToken},
		func(o *gateway.Options) { o.Waker = waker })
	cs := client(t, h.url, "alpha-token-1234567")

	start := time.Now()
	env, _ := call(t, cs, "garra_agent", map[string]any{"message": "run it"})
	took := time.Since(start)
	if env["ok"] != true || env["answer"] != "ran after waking" {
		t.Fatalf("the woken run: %v", env)
	}
	calls := env["tool_calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["success"] != true {
		t.Fatalf("bash in the woken sandbox: %v", env)
	}
	if took < 400*time.Millisecond {
		t.Fatalf("answered %v after the call, before the sandbox woke", took)
	}
	if n := waker.count(); n != 1 || waker.calls[0] != (config.SandboxWake{Namespace: "agents", Deployment: "team-a-sandbox-alpha"}) {
		t.Fatalf("wakes %v", waker.calls)
	}
	t.Logf("call answered %v after it started, the sandbox waking after 400ms", took.Round(time.Millisecond))

	// The next call finds it awake: at most a fresh mark, no waiting.
	env, _ = call(t, cs, "garra_agent", map[string]any{"message": "again"})
	waker.mu.Lock()
	asleep := waker.asleep
	waker.mu.Unlock()
	if env["ok"] != true || asleep != 1 {
		t.Fatalf("second call: %v, %d wakes of a sleeping sandbox", env, asleep)
	}
}

// A sandbox that cannot be woken fails the run before the model is asked.
func TestAgentCallFailsWhenTheSandboxCannotWake(t *testing.T) {
	sbx := startSleepySandbox(t)
	waker := &fakeWaker{sbx: sbx, err: errors.New("deployments.apps \"team-a-sandbox-alpha\" is forbidden")}
	double := llmdouble.New(t, llmdouble.Step{Text: "unreached"})
	h := start(t, wakeYAML(sbx.url, double.OpenAIBaseURL()),
		map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123", "SBX_TOKEN": sandboxToken},
		func(o *gateway.Options) { o.Waker = waker })
	cs := client(t, h.url, "alpha-token-1234567")
	env, _ := call(t, cs, "garra_agent", map[string]any{"message": "run it"})
	if env["ok"] != false {
		t.Fatalf("a run without its sandbox: %v", env)
	}
	if n := len(double.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
	// Not throttled away: the next call tries again.
	_, _ = call(t, cs, "garra_agent", map[string]any{"message": "again"})
	if waker.count() != 2 {
		t.Fatalf("wakes %d, want a retry per call after a failure", waker.count())
	}
}

// A call that comes while another is waking the sandbox waits for that
// wake instead of running against a sandbox that is not there yet: both
// runs' bash succeed, and the sandbox was woken once.
func TestCallDuringAWakeWaitsForIt(t *testing.T) {
	sbx := startSleepySandbox(t)
	waker := &fakeWaker{sbx: sbx, delay: 600 * time.Millisecond}
	bash := llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"echo up"}`}}}
	double := llmdouble.New(t, bash, bash, llmdouble.Step{Text: "done"}, llmdouble.Step{Text: "done"})
	h := start(t, wakeYAML(sbx.url, double.OpenAIBaseURL()),
		map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123", "SBX_TOKEN": sandboxToken},
		func(o *gateway.Options) { o.Waker = waker })

	envs := make([]map[string]any, 2)
	var wg sync.WaitGroup
	for i := range envs {
		cs := client(t, h.url, "alpha-token-1234567")
		wg.Go(func() {
			// The second call comes while the first waits for the wake.
			time.Sleep(time.Duration(i) * 200 * time.Millisecond)
			envs[i], _ = call(t, cs, "garra_agent", map[string]any{"message": "run it"})
		})
	}
	wg.Wait()
	for i, env := range envs {
		if env["ok"] != true {
			t.Fatalf("call %d: %v", i, env)
		}
		calls, _ := env["tool_calls"].([]any)
		for _, c := range calls {
			if c.(map[string]any)["success"] != true {
				t.Errorf("call %d ran bash before its sandbox woke: %v", i, env)
			}
		}
	}
	waker.mu.Lock()
	defer waker.mu.Unlock()
	if waker.asleep != 1 {
		t.Errorf("%d wakes of a sleeping sandbox, want 1", waker.asleep)
	}
}
