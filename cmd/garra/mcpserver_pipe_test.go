package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

// seedInitialize is the line of the spec's manual check:
//
//	echo '…' | garra mcp-server 2>/dev/null
const seedInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// pipe runs `garra mcp-server` with input as its whole stdin (closed right
// after, as echo does) and returns its stdout. It is safe to call from
// several goroutines: it reports instead of failing the test.
func pipe(env []string, input string, args ...string) (string, error) {
	cmd := exec.Command(garraBin, append([]string{"mcp-server"}, args...)...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return out.String(), fmt.Errorf("mcp-server: %w\nstderr: %s", err, errb.String())
		}
		return out.String(), nil
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("mcp-server did not exit after end of input\nstderr: %s", errb.String())
	}
}

// stdoutReplies parses every stdout line as a JSON-RPC message, by id.
func stdoutReplies(t *testing.T, stdout string) map[string]map[string]any {
	t.Helper()
	assertJSONRPCOnly(t, stdout)
	got := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprint(m["id"])] = m
	}
	return got
}

// The spec's pipe check, 100 times: 100 replies. Before the stdio
// transport drained in-flight requests at end of input, the reply lost the
// race with EOF about four times in ten.
func TestSeedPipeCheckAlwaysReplies(t *testing.T) {
	const runs, workers = 100, 4
	env := testEnv(t)
	var replied atomic.Int32
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				out, err := pipe(env, seedInitialize+"\n")
				if err != nil {
					t.Errorf("run %d: %v", i, err)
					continue
				}
				var r struct {
					ID     int `json:"id"`
					Result struct {
						ProtocolVersion string `json:"protocolVersion"`
						ServerInfo      struct {
							Name string `json:"name"`
						} `json:"serverInfo"`
					} `json:"result"`
				}
				if strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &r) != nil ||
					r.ID != 1 || r.Result.ServerInfo.Name != "garra" || r.Result.ProtocolVersion != "2024-11-05" {
					t.Errorf("run %d: stdout %q", i, out)
					continue
				}
				replied.Add(1)
			}
		}()
	}
	for i := range runs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if n := replied.Load(); n != runs {
		t.Fatalf("%d replies out of %d runs", n, runs)
	}
}

// A garra_ask against a slow provider, then end of input: the answer still
// comes.
func TestPipeAskThenEOFGetsTheAnswer(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "slow but sure", Delay: 700 * time.Millisecond})
	cfg := writeConfig(t, "openrouter", double.URL()+"/v1")
	input := seedInitialize + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"garra_ask","arguments":{"message":"hi"}}}` + "\n"
	start := time.Now()
	out, err := pipe(testEnv(t, "OPENROUTER_API_KEY="+fakeKey), input, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := stdoutReplies(t, out)
	if time.Since(start) < 700*time.Millisecond {
		t.Fatal("the server exited before the provider could answer")
	}
	res, _ := got["2"]["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(got) != 2 || len(content) != 1 {
		t.Fatalf("replies %v", got)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	var env map[string]any
	if err := json.Unmarshal([]byte(text), &env); err != nil || env["ok"] != true || env["answer"] != "slow but sure" {
		t.Fatalf("garra_ask reply %q", text)
	}
}

// Over live pipes: a malformed line gets -32700 with id null at once, and
// the same process goes on serving.
func TestPipeMalformedLineThenServing(t *testing.T) {
	cmd := exec.Command(garraBin, "mcp-server")
	cmd.Env = testEnv(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout closed: the server stopped\nstderr: %s", stderr.String())
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("stdout line %q", l)
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("no reply\nstderr: %s", stderr.String())
		}
		return nil
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize",`) // cut short
	if m := next(); m["id"] != nil || m["error"].(map[string]any)["code"] != float64(-32700) {
		t.Fatalf("reply to a malformed line: %v", m)
	}
	send(seedInitialize)
	if m := next(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize after the bad line: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`not json at all`)
	if m := next(); m["id"] != nil || m["error"].(map[string]any)["code"] != float64(-32700) {
		t.Fatalf("reply to a second malformed line: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := next(); m["id"] != float64(2) || !strings.Contains(fmt.Sprint(m["result"]), "garra_ask") {
		t.Fatalf("tools/list: %v", m)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
	}
}
