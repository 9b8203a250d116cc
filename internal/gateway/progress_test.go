package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/proctest"
	"github.com/garraia/garra/test/progresstest"
)

// seenResponses records the Content-Type and X-Accel-Buffering of every
// response a client gets, by JSON-RPC method of its request.
type seenResponses struct {
	token string
	mu    sync.Mutex
	got   []string // "method content-type accel"
}

func (s *seenResponses) RoundTrip(r *http.Request) (*http.Response, error) {
	method := ""
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		var m struct{ Method string }
		_ = json.Unmarshal(body, &m)
		method = m.Method
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		s.mu.Lock()
		s.got = append(s.got, strings.TrimSpace(method+" "+resp.Header.Get("Content-Type")+" "+resp.Header.Get("X-Accel-Buffering")))
		s.mu.Unlock()
	}
	return resp, err
}

// last is the last response to a request of method.
func (s *seenResponses) last(method string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.got) - 1; i >= 0; i-- {
		if strings.HasPrefix(s.got[i], method+" ") {
			return s.got[i]
		}
	}
	return ""
}

// The go-sdk client that sends a progressToken gets one progress
// notification per tool call of the run, on an event stream (with
// X-Accel-Buffering: no), before the result. Without a token the same
// client gets plain JSON and no notification.
func TestAgentProgressOverSSE(t *testing.T) {
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_write", Args: `{"path":"a.txt","content":"hidden-arg"}`}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{
			{Name: "file_read", Args: `{"path":"a.txt"}`},
			{Name: "no_such_tool", Args: `{}`},
		}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"a.txt"}`}}},
		llmdouble.Step{Text: "done"},
		// The second run, without a token.
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"a.txt"}`}}},
		llmdouble.Step{Text: "done again"},
	)
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + twoAgents +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"})

	seen := &seenResponses{token: "alpha-token-1234567"}
	notes := &progresstest.Log{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, notes.Options()).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", HTTPClient: &http.Client{Transport: seen}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	params := &mcp.CallToolParams{Name: "garra_agent", Arguments: map[string]any{"message": "work"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	var env struct {
		ToolCalls []struct{ Name string } `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil || len(env.ToolCalls) != 4 {
		t.Fatalf("envelope: %v %s", err, res.Content[0].(*mcp.TextContent).Text)
	}
	if got := seen.last("tools/call"); got != "tools/call text/event-stream no" {
		t.Fatalf("the call with a progressToken was answered %q", got)
	}
	got := notes.Wait(t, len(env.ToolCalls))
	for i, n := range got {
		if n.ProgressToken != "tok-1" || n.Progress != float64(i+1) || n.Message != env.ToolCalls[i].Name || n.Total != 0 {
			t.Errorf("notification %d: %+v (tool %s)", i, n, env.ToolCalls[i].Name)
		}
		if strings.Contains(n.Message, "hidden-arg") || strings.Contains(n.Message, "a.txt") {
			t.Errorf("notification %d carries an argument: %q", i, n.Message)
		}
	}

	if _, isErr := call(t, cs, "garra_agent", map[string]any{"message": "again"}); isErr {
		t.Fatal("second run failed")
	}
	if got := seen.last("tools/call"); got != "tools/call application/json" {
		t.Fatalf("the call without a progressToken was answered %q", got)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(notes.List()); n != len(env.ToolCalls) {
		t.Fatalf("%d notifications after a call without a token", n)
	}
	if got := seen.last("tools/list"); got != "" && got != "tools/list application/json" {
		t.Fatalf("tools/list answered %q", got)
	}
}

// A client speaking raw HTTP, the way curl or an older SDK does (no
// MCP-Protocol-Version: the SDK takes it as 2025-03-26), gets the same
// notifications as SSE events before the result event, and plain JSON
// when it sends no progressToken.
func TestAgentProgressRawHTTP(t *testing.T) {
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_write", Args: `{"path":"b.txt","content":"x"}`}, {Name: "file_read", Args: `{"path":"b.txt"}`}}},
		llmdouble.Step{Text: "done"},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"b.txt"}`}}},
		llmdouble.Step{Text: "done"},
	)
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + twoAgents +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"})

	withToken := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"garra_agent","arguments":{"message":"go"},"_meta":{"progressToken":42}}}`
	resp := rawPost(t, h.url, "alpha-token-1234567", withToken)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("Content-Type %q, X-Accel-Buffering %q", ct, resp.Header.Get("X-Accel-Buffering"))
	}
	events := sseData(t, resp.Body)
	if len(events) != 3 {
		t.Fatalf("%d events, want 2 notifications and the result: %q", len(events), events)
	}
	for i, tool := range []string{"file_write", "file_read"} {
		var n struct {
			Method string
			Params mcp.ProgressNotificationParams
		}
		if err := json.Unmarshal([]byte(events[i]), &n); err != nil || n.Method != "notifications/progress" ||
			n.Params.ProgressToken != float64(42) || n.Params.Progress != float64(i+1) || n.Params.Message != tool {
			t.Fatalf("event %d: %s", i, events[i])
		}
	}
	if !strings.Contains(events[2], `"id":3`) || !strings.Contains(events[2], `\"ok\":true`) {
		t.Fatalf("last event is not the result: %s", events[2])
	}

	// No token: one JSON body, as before.
	code, body := post(t, h.url, "alpha-token-1234567", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"garra_agent","arguments":{"message":"go"}}}`, nil)
	var msg struct {
		ID     int
		Result json.RawMessage
	}
	if code != 200 || json.Unmarshal([]byte(body), &msg) != nil || msg.ID != 4 || msg.Result == nil {
		t.Fatalf("a call without a token: %d %.300s", code, body)
	}
}

// rawPost sends body to /mcp the way curl does and returns the response,
// whose body the caller reads (and the cleanup closes).
func rawPost(t *testing.T, url, token, body string) *http.Response {
	t.Helper()
	resp, err := doRawPost(context.Background(), url, token, body)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// doRawPost is rawPost for another goroutine than the test's.
func doRawPost(ctx context.Context, url, token, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return http.DefaultClient.Do(req)
}

// sseData is the data of each event of an event stream, in order.
func sseData(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// cancelBound is how soon after a notifications/cancelled the sandbox
// command of the call it names must be gone. Measured on loopback: tens
// of milliseconds; the bound leaves room for a loaded machine.
const cancelBound = 3 * time.Second

// A notifications/cancelled in its own POST, from the caller that made
// the call, stops the run and the bash command it started, in the
// orchestrator's sandbox or on the host (execution.profile isolated-pod,
// under its supervisor), while the call's own connection stays open (a
// TS SDK client cancels that way); the call's result says it was
// cancelled. Another caller's notice naming the same id cancels nothing.
// Each cancelled run was charged to the agent budget, as a run that
// passed the checks is.
func TestCancelNotificationStopsTheBashCommand(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	t.Run("sandbox", func(t *testing.T) {
		sbxURL, sbxLogs, ws := startSandbox(t)
		testCancelNotification(t, `sandbox: {url: "`+sbxURL+`", token_env: SBX_TOKEN}`, "", func(*harness) string { return ws }, sbxLogs)
	})
	t.Run("host", func(t *testing.T) {
		testCancelNotification(t, "", "execution: {profile: isolated-pod}\n",
			func(h *harness) string { return gateway.WorkspaceDir(h.cfg.DataDirPath(), "alpha") }, nil)
	})
}

// testCancelNotification runs the cancel test with alpha's orchestrator
// entry completed by where (its sandbox, or nothing), top-level config
// extra, and the directory bash runs in.
func testCancelNotification(t *testing.T, where, extra string, workDir func(*harness) string, logs fmt.Stringer) {
	const runs = 5
	var steps []llmdouble.Step
	for i := range runs {
		steps = append(steps, llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash",
			Args: fmt.Sprintf(`{"command":"echo $$ > run%d.pid; sleep 600 & echo $! >> run%d.pid; wait"}`, i, i)}}})
	}
	double := llmdouble.New(t, steps...)
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 600\n" + fmt.Sprintf("    agent_budget_per_minute: %d\n", runs+1) + `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [agent]
        ` + where + `
      - name: beta
        key_env: BETA_KEY
        tools: [status]
` + extra + "llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "BETA_KEY": "beta-token-12345678",
		"OPENROUTER_API_KEY": "llm-test-key-0123", "SBX_TOKEN": sandboxToken})
	ws := workDir(h)
	if logs == nil {
		logs = h.logs
	}

	var took []time.Duration
	for i := range runs {
		// Odd runs asked for progress (an event stream), even ones did not.
		meta := ""
		if i%2 == 1 {
			meta = `,"_meta":{"progressToken":"p"}`
		}
		id := 100 + i
		result := make(chan string, 1)
		go func() {
			resp, err := doRawPost(context.Background(), h.url, "alpha-token-1234567", fmt.Sprintf(
				`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"garra_agent","arguments":{"message":"wait"}%s}}`, id, meta))
			if err != nil {
				result <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			result <- string(b)
		}()
		pids := proctest.WaitPids(t, filepath.Join(ws, fmt.Sprintf("run%d.pid", i)), 2, logs)
		notice := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user"}}`, id)
		if i == 0 {
			// Another caller's notice for the same id: nothing stops.
			if code, _ := post(t, h.url, "beta-token-12345678", notice, nil); code != http.StatusAccepted {
				t.Fatalf("beta's notice: %d", code)
			}
			time.Sleep(300 * time.Millisecond)
			if !slices.ContainsFunc(pids, proctest.Alive) {
				t.Fatal("another caller's notice cancelled alpha's run")
			}
		}
		sent := time.Now()
		if code, body := post(t, h.url, "alpha-token-1234567", notice, nil); code != http.StatusAccepted {
			t.Fatalf("the notice: %d %s", code, body)
		}
		took = append(took, proctest.GoneWithin(t, pids, sent, cancelBound))
		select {
		case body := <-result:
			if !strings.Contains(body, fmt.Sprintf(`"id":%d`, id)) || !strings.Contains(body, "agent run cancelled") {
				t.Fatalf("the cancelled call's result: %.400s", body)
			}
		case <-time.After(cancelBound):
			t.Fatal("the cancelled call got no result")
		}
	}
	t.Logf("HTTP notifications/cancelled → bash and its child gone: %s", proctest.Spread(took))
	if n := len(double.Requests()); n != runs {
		t.Fatalf("the model was asked %d times for %d cancelled runs", n, runs)
	}
	if got := grep(metricsText(t, h.url), `garra_budget_remaining{budget="agent"}`); !strings.HasSuffix(got, " 1") {
		t.Fatalf("%d cancelled runs of a budget of %d: %q", runs, runs+1, got)
	}
}
