package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/proctest"
)

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu  sync.Mutex
	got []*mcp.ProgressNotificationParams
}

func (p *progressLog) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.got = append(p.got, r.Params)
	}}
}

func (p *progressLog) notes() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

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
	progress := &progressLog{}
	cfg := writeConfig(t, "openrouter", double.OpenAIBaseURL())
	cs, stdout, _ := startServerWith(t, progress.options(),
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
	notes := waitNotes(t, progress, len(want))
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
	if n := len(progress.notes()); n != len(want) {
		t.Fatalf("%d notifications after a call without a progress token, want %d", n, len(want))
	}
}

// waitNotes waits for n notifications (the client hands them to its
// handler asynchronously) and fails on more.
func waitNotes(t *testing.T, p *progressLog, n int) []*mcp.ProgressNotificationParams {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(p.notes()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for an extra one to show up
	notes := p.notes()
	if len(notes) != n {
		t.Fatalf("%d progress notifications, want %d", len(notes), n)
	}
	return notes
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
		pids := waitPids(t, filepath.Join(repo, fmt.Sprintf("run%d.pid", i)), 2, stderr)
		cancelled := time.Now()
		cancel()
		took = append(took, waitAllGone(t, pids, cancelled))
		if err := <-done; err == nil {
			t.Fatal("the cancelled call returned a result")
		}
	}
	t.Logf("stdio cancel → bash and its child gone: %s", spread(took))
	if n := len(double.Requests()); n != runs {
		t.Fatalf("the model was asked %d times for %d cancelled runs; a cancelled run must not go on", n, runs)
	}
	// The session still serves.
	if env, isErr := callAgent(t, cs, map[string]any{"message": "hi", "working_dir": repo}); isErr || env.Answer != "still here" {
		t.Fatalf("after the cancels: %+v", env)
	}
}

// waitPids waits until path holds n pids (a command writes its own).
func waitPids(t *testing.T, path string, n int, logs fmt.Stringer) []int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.Fields(string(b))) >= n {
			return proctest.PidsIn(t, path)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never wrote %s; log:\n%s", filepath.Base(path), logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAllGone returns how long after since every pid was gone, failing
// past cancelBound (and killing what is left).
func waitAllGone(t *testing.T, pids []int, since time.Time) time.Duration {
	t.Helper()
	for slices.ContainsFunc(pids, proctest.Alive) {
		if time.Since(since) > cancelBound {
			for _, p := range pids {
				proctest.WaitGone(t, p, "a cancelled command")
			}
			t.Fatalf("the command outlived its cancelled call by %v", time.Since(since))
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(since)
}

// spread is "p50 X, max Y over N runs".
func spread(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	return fmt.Sprintf("p50 %v, max %v over %d runs", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}
