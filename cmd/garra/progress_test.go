package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/proctest"
	"github.com/garraia/garra/test/progresstest"
)

// garra_agent on stdio: a client that sends a progressToken gets one
// notification per tool call, step by step, naming the tool, before the
// result; the arguments never travel.
func TestStdioAgentReportsProgress(t *testing.T) {
	repo := gitRepo(t)
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"notes.txt"}`}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{
			{Name: "file_write", Args: `{"path":"secret-name.txt","content":"x"}`},
			{Name: "git_diff", Args: `{}`},
		}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"secret-name.txt"}`}}},
		llmdouble.Step{Text: "done"},
		// The second run, without a token.
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "git_diff", Args: `{}`}}},
		llmdouble.Step{Text: "ok"},
	)
	progress := &progresstest.Log{}
	cfg := writeConfig(t, "openrouter", double.OpenAIBaseURL())
	cs, stdout, _ := startServerWith(t, progress.Options(),
		testEnv(t, "OPENROUTER_API_KEY="+fakeKey, "GARRAIA_MCP_ENABLE_TOOLS=yes", "GARRAIA_MCP_ALLOWED_DIRS="+repo), "--config", cfg)

	params := &mcp.CallToolParams{Name: "garra_agent", Arguments: map[string]any{"message": "work", "working_dir": repo}}
	params.SetProgressToken("run-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	var env agentEnvelope
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil || len(env.ToolCalls) != 4 {
		t.Fatalf("envelope %+v %v", env, err)
	}
	want := []string{"file_read", "file_write", "git_diff", "file_read"}
	notes := progress.Wait(t, len(want))
	for i, n := range notes {
		if n.ProgressToken != "run-1" || n.Progress != float64(i+1) || n.Message != want[i] || env.ToolCalls[i].Name != want[i] {
			t.Errorf("notification %d: %+v", i, n)
		}
	}
	// The notifications went out before the result, on stdout, and carry
	// no argument.
	out := stdout.String()
	last := strings.LastIndex(out, `"method":"notifications/progress"`)
	if last < 0 || last > strings.Index(out, "session_id") {
		t.Fatal("the progress notifications did not precede the result")
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "notifications/progress") && strings.Contains(line, "secret-name") {
			t.Fatalf("a notification carries an argument: %s", line)
		}
	}

	// Without a token: no notification at all.
	if _, isErr := callAgent(t, cs, map[string]any{"message": "again", "working_dir": repo}); isErr {
		t.Fatal("second run failed")
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(progress.List()); n != len(want) {
		t.Fatalf("%d notifications after a call without a progress token, want %d", n, len(want))
	}
}

// cancelBound is how soon after the client cancels a call its bash
// command must be gone. Measured on loopback: tens of milliseconds; the
// bound leaves room for a loaded machine.
const cancelBound = 3 * time.Second

// A notifications/cancelled for a running garra_agent stops the run and
// its bash command (host bash under its supervisor, execution.profile
// isolated-pod), and the server goes on serving. Several runs, to report
// the spread of cancel → process gone.
func TestStdioCancelStopsTheBashCommand(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	const runs = 5
	repo := gitRepo(t)
	var steps []llmdouble.Step
	for i := range runs {
		steps = append(steps, llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash",
			Args: fmt.Sprintf(`{"command":"echo $$ > run%d.pid; sleep 600 & echo $! >> run%d.pid; wait"}`, i, i)}}})
	}
	// Cancelled runs take one step each; the last is for the check that
	// the session still serves.
	double := llmdouble.New(t, append(steps, llmdouble.Step{Text: "still here"})...)
	cs, _, stderr := agentServer(t, double, repo, "GARRAIA_EXECUTION_PROFILE=isolated-pod")

	var took []time.Duration
	for i := range runs {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_agent",
				Arguments: map[string]any{"message": "wait", "working_dir": repo, "timeout_secs": 600}})
			done <- err
		}()
		pids := proctest.WaitPids(t, filepath.Join(repo, fmt.Sprintf("run%d.pid", i)), 2, stderr)
		cancelled := time.Now()
		cancel()
		took = append(took, proctest.GoneWithin(t, pids, cancelled, cancelBound))
		if err := <-done; err == nil {
			t.Fatal("the cancelled call returned a result")
		}
	}
	t.Logf("stdio cancel → bash and its child gone: %s", proctest.Spread(took))
	if n := len(double.Requests()); n != runs {
		t.Fatalf("the model was asked %d times for %d cancelled runs; a cancelled run must not go on", n, runs)
	}
	// The session still serves.
	if env, isErr := callAgent(t, cs, map[string]any{"message": "hi", "working_dir": repo}); isErr || env.Answer != "still here" {
		t.Fatalf("after the cancels: %+v", env)
	}
}
