package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/internal/toolchain"
	"github.com/garraia/garra/internal/tools"
)

const sandboxTestToken = "cmd-sandbox-token-0123456789abcdef"

var listeningLine = regexp.MustCompile(`msg="garra sandbox listening" addr=(\S+)`)

// waitListening reads log lines from r until the listening line and
// returns the bound address; every line read goes to all.
func waitListening(t *testing.T, r io.Reader, all *lockedBuffer) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sent := false
		for sc.Scan() {
			_, _ = all.Write(append(sc.Bytes(), '\n'))
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case addr, ok := <-found:
		if !ok {
			t.Fatalf("the sandbox exited before listening:\n%s", all.String())
		}
		return addr
	case <-time.After(15 * time.Second):
		t.Fatalf("no listening line:\n%s", all.String())
	}
	return ""
}

func exerciseSandbox(t *testing.T, addr, ws string) {
	t.Helper()
	r := tools.NewRemote(tools.RemoteOptions{URL: "http://" + addr + "/mcp", Token: sandboxTestToken})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := r.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tools.Names(list), ","); got != "bash,file_read,file_write,git_diff,web_fetch" {
		t.Fatalf("tools: %s", got)
	}
	res, err := r.Call(ctx, "file_write", json.RawMessage(`{"path":"hello.txt","content":"hi"}`))
	if err != nil || res.IsError {
		t.Fatalf("file_write: %+v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("on disk: %q %v", b, err)
	}
	res, err = r.Call(ctx, "bash", json.RawMessage(`{"command":"pwd"}`))
	want, _ := filepath.EvalSymlinks(ws)
	if err != nil || res.IsError || strings.TrimSpace(res.Output) != want {
		t.Fatalf("pwd: %+v %v, want %s", res, err, want)
	}
	bad := tools.NewRemote(tools.RemoteOptions{URL: "http://" + addr + "/mcp", Token: "wrong-" + sandboxTestToken})
	if _, err := bad.Tools(ctx); !errors.Is(err, tools.ErrRemoteUnauthorized) {
		t.Fatalf("wrong token: %v", err)
	}
}

// TestSandboxCommandInProcess runs the command itself (no binary, no
// root.go registration needed): serve, call, cancel, clean return.
func TestSandboxCommandInProcess(t *testing.T) {
	ws := t.TempDir()
	env := map[string]string{sandbox.TokenEnv: sandboxTestToken}
	cmd := newSandboxCommand(&rootOptions{getenv: func(k string) string { return env[k] }})
	pr, pw := io.Pipe()
	cmd.SetErr(pw)
	cmd.SetOut(io.Discard)
	cmd.SetArgs([]string{"--workspace", ws, "--listen", "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(ctx)
		_ = pw.Close()
		done <- err
	}()
	logs := &lockedBuffer{}
	addr := waitListening(t, pr, logs)
	exerciseSandbox(t, addr, ws)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("command: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no return after cancel")
	}
	if strings.Contains(logs.String(), sandboxTestToken) {
		t.Errorf("logs carry the token:\n%s", logs.String())
	}
	for _, want := range []string{`msg="tool call" tool=file_write outcome=ok`, `msg="tool call" tool=bash outcome=ok`, "garra sandbox stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

func TestSandboxCommandRefusesToStart(t *testing.T) {
	ws := t.TempDir()
	file := filepath.Join(ws, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(sandboxTestToken+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(emptyFile, []byte("\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, ws, want string
		file, fileEnv         string
	}{
		{name: "no token", ws: ws, want: "GARRA_SANDBOX_TOKEN is not set (nor GARRA_SANDBOX_TOKEN_FILE)"},
		{name: "short token", token: "short", ws: ws, want: "GARRA_SANDBOX_TOKEN must be at least 16 characters"},
		{name: "missing workspace", token: sandboxTestToken, ws: filepath.Join(ws, "nope"), want: "does not exist"},
		{name: "file workspace", token: sandboxTestToken, ws: file, want: "not a directory"},
		{name: "token and --token-file", token: sandboxTestToken, ws: ws, file: tokenFile, want: "GARRA_SANDBOX_TOKEN and a token file are both set"},
		{name: "token and GARRA_SANDBOX_TOKEN_FILE", token: sandboxTestToken, ws: ws, fileEnv: tokenFile, want: "both set"},
		{name: "missing token file", ws: ws, file: filepath.Join(ws, "nope"), want: "token file: open"},
		{name: "empty token file", ws: ws, fileEnv: emptyFile, want: "is empty"},
		{name: "token file, bad workspace", ws: file, file: tokenFile, want: "not a directory"},
	} {
		env := map[string]string{sandbox.TokenEnv: tc.token, sandbox.TokenFileEnv: tc.fileEnv}
		cmd := newSandboxCommand(&rootOptions{getenv: func(k string) string { return env[k] }})
		cmd.SetErr(io.Discard)
		args := []string{"--workspace", tc.ws, "--listen", "127.0.0.1:0"}
		if tc.file != "" {
			args = append(args, "--token-file", tc.file)
		}
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(context.Background())
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(ee.msg, tc.want) {
			t.Errorf("%s: %v, want exit 2 with %q", tc.name, err, tc.want)
		}
	}
}

// sandboxRegistered reports whether the binary has the sandbox command
// (root.go registers it with newSandboxCommand(o)).
func sandboxRegistered(t *testing.T) bool {
	_, stderr, code := run(t, testEnv(t), "sandbox", "--help")
	return code == 0 || !strings.Contains(stderr, "unknown command")
}

func TestSandboxBinary(t *testing.T) {
	if !sandboxRegistered(t) {
		t.Skip("`garra sandbox` is not registered in root.go yet: add newSandboxCommand(o) to cmd.AddCommand")
	}
	ws := t.TempDir()
	cmd := exec.Command(garraBin, "sandbox", "--workspace", ws, "--listen", "127.0.0.1:0")
	cmd.Env = testEnv(t, sandbox.TokenEnv+"="+sandboxTestToken)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	logs := &lockedBuffer{}
	addr := waitListening(t, stderr, logs)
	exerciseSandbox(t, addr, ws)

	// SIGTERM while a call is in flight: the call finishes, the process
	// exits 0.
	r := tools.NewRemote(tools.RemoteOptions{URL: "http://" + addr + "/mcp", Token: sandboxTestToken})
	type outcome struct {
		res tools.Result
		err error
	}
	inflight := make(chan outcome, 1)
	go func() {
		res, err := r.Call(context.Background(), "bash", json.RawMessage(`{"command":"sleep 1; echo finished"}`))
		inflight <- outcome{res, err}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := <-inflight
	if o.err != nil || o.res.IsError || strings.TrimSpace(o.res.Output) != "finished" {
		t.Errorf("in-flight call across SIGTERM: %+v %v", o.res, o.err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		exited = true
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout not empty: %q", stdout.String())
	}
	if strings.Contains(logs.String(), sandboxTestToken) {
		t.Errorf("logs carry the token:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "garra sandbox stopped") {
		t.Errorf("no stopped line:\n%s", logs.String())
	}
}

func TestSandboxBinaryWithoutToken(t *testing.T) {
	if !sandboxRegistered(t) {
		t.Skip("`garra sandbox` is not registered in root.go yet: add newSandboxCommand(o) to cmd.AddCommand")
	}
	_, stderr, code := run(t, testEnv(t), "sandbox", "--workspace", t.TempDir(), "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "GARRA_SANDBOX_TOKEN") {
		t.Fatalf("exit %d, stderr %q; want non-zero naming GARRA_SANDBOX_TOKEN", code, stderr)
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

// TestSandboxCommandRequiredTools: --required-tools reaches the
// toolchain resource, and a name that is not a program is refused with
// exit 2 naming the flag.
func TestSandboxCommandRequiredTools(t *testing.T) {
	env := map[string]string{sandbox.TokenEnv: sandboxTestToken}
	bad := newSandboxCommand(&rootOptions{getenv: func(k string) string { return env[k] }})
	bad.SetErr(io.Discard)
	bad.SetArgs([]string{"--workspace", t.TempDir(), "--listen", "127.0.0.1:0", "--required-tools", "go,../sh"})
	var ee *exitError
	if err := bad.ExecuteContext(context.Background()); !errors.As(err, &ee) || ee.code != 2 ||
		!strings.Contains(ee.msg, `--required-tools: entry 2 ("../sh") is not a program name`) {
		t.Errorf("bad name: %v", err)
	}

	cmd := newSandboxCommand(&rootOptions{getenv: func(k string) string { return env[k] }})
	pr, pw := io.Pipe()
	cmd.SetErr(pw)
	cmd.SetArgs([]string{"--workspace", t.TempDir(), "--listen", "127.0.0.1:0", "--required-tools", "bash,garra-no-such-tool"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(ctx)
		_ = pw.Close()
		done <- err
	}()
	defer func() { cancel(); <-done }()
	addr := waitListening(t, pr, &lockedBuffer{})
	transport := &mcp.StreamableClientTransport{
		Endpoint:   "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerRoundTripper(sandboxTestToken)},
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: toolchain.URI})
	if err != nil {
		t.Fatal(err)
	}
	var rep toolchain.Report
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &rep); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Missing, []string{"garra-no-such-tool"}) || !slices.Equal(rep.Required, []string{"bash", "garra-no-such-tool"}) {
		t.Errorf("report = %+v", rep)
	}
	found := false
	for _, tl := range rep.Tools {
		found = found || (tl.Name == "bash" && tl.Required && strings.Contains(tl.Version, "bash"))
	}
	if !found {
		t.Errorf("bash not reported as a required tool with its version: %+v", rep.Tools)
	}
}

func bearerRoundTripper(token string) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultTransport.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
