package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/filewatch/kubelet"
	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/internal/tools"
	"github.com/garraia/garra/test/proctest"
	"github.com/garraia/garra/test/testlog"
)

const testToken = "test-sandbox-token-0123456789abcdef"

type syncBuffer = testlog.Buffer

type fixture struct {
	parent string // holds ws and outside
	ws     string // the workspace (resolved)
	out    string // a sibling directory the tools must not reach
	srv    *sandbox.Server
	http   *httptest.Server
	logs   *syncBuffer
}

// newFixture serves a sandbox on a fresh workspace; opts adjust its
// options.
func newFixture(t *testing.T, opts ...func(*sandbox.Options)) *fixture {
	t.Helper()
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	out := filepath.Join(parent, "outside")
	for _, d := range []string{ws, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logs := &syncBuffer{}
	o := sandbox.Options{
		Workspace: ws,
		Token:     testToken,
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		Version:   "test",
	}
	for _, f := range opts {
		f(&o)
	}
	srv, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	resolved, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{parent: parent, ws: resolved, out: out, srv: srv, http: hs, logs: logs}
}

type bearerRT struct {
	token string
	inner http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.inner.RoundTrip(r)
}

// client connects the go-sdk client with the given bearer.
func (f *fixture) client(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	transport := &mcp.StreamableClientTransport{
		Endpoint:   f.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerRT{token: token, inner: http.DefaultTransport}},
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sandbox-test", Version: "0"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("call %s: %d content items, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("call %s: content is %T", name, res.Content[0])
	}
	return tc.Text, res.IsError
}

func TestListsExactlyTheLocalTools(t *testing.T) {
	f := newFixture(t)
	cs := f.client(t, testToken)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The pod's NetworkPolicy decides the network, so the gate's network
	// rules are off and the description says so.
	want, _ := tools.NewLocal(tools.LocalOptions{Bash: &tools.HostRunner{PodNetwork: true}}).Tools(context.Background())
	wantNames := []string{"bash", "file_read", "file_write", "git_diff", "web_fetch"}
	if got := tools.Names(want); !slices.Equal(got, wantNames) {
		t.Fatalf("tools.Local lists %v, want %v", got, wantNames)
	}
	var got []string
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
	}
	if !slices.Equal(got, wantNames) {
		t.Fatalf("sandbox lists %v, want %v", got, wantNames)
	}
	for i, tool := range res.Tools {
		if tool.Description != want[i].Description {
			t.Errorf("%s: description %q, want %q", tool.Name, tool.Description, want[i].Description)
		}
		gotSchema, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		// Both are maps marshalled by encoding/json (sorted keys), so the
		// bytes match exactly when the schema went out unchanged.
		if !bytes.Equal(gotSchema, want[i].InputSchema) {
			t.Errorf("%s: schema\n got %s\nwant %s", tool.Name, gotSchema, want[i].InputSchema)
		}
	}
	if srvTools := tools.Names(f.srv.Tools()); !slices.Equal(srvTools, wantNames) {
		t.Errorf("Server.Tools = %v", srvTools)
	}
}

// files lists every regular file under dir, relative, slash-separated.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFileWriteStaysInTheWorkspace(t *testing.T) {
	f := newFixture(t)
	cs := f.client(t, testToken)

	out, isErr := call(t, cs, "file_write", map[string]any{"path": "notes/a.txt", "content": "hello"})
	if isErr {
		t.Fatalf("file_write: %s", out)
	}
	data, err := os.ReadFile(filepath.Join(f.ws, "notes", "a.txt"))
	if err != nil || string(data) != "hello" {
		t.Fatalf("workspace file: %q, %v", data, err)
	}
	abs := filepath.Join(f.ws, "abs.txt")
	if out, isErr := call(t, cs, "file_write", map[string]any{"path": abs, "content": "x"}); isErr {
		t.Fatalf("absolute path inside the workspace: %s", out)
	}

	for _, p := range []string{
		"../outside/escape.txt",
		filepath.Join(f.out, "escape.txt"),
		"/tmp/garra-sandbox-escape.txt",
		"notes/../../outside/escape.txt",
	} {
		out, isErr := call(t, cs, "file_write", map[string]any{"path": p, "content": "pwned"})
		if !isErr || out != jail.ErrDenied.Error() {
			t.Errorf("file_write %q: isError=%v %q, want the jail refusal", p, isErr, out)
		}
		out, isErr = call(t, cs, "file_read", map[string]any{"path": p})
		if !isErr || out != jail.ErrDenied.Error() {
			t.Errorf("file_read %q: isError=%v %q, want the jail refusal", p, isErr, out)
		}
	}
	if _, err := os.Stat("/tmp/garra-sandbox-escape.txt"); err == nil {
		t.Error("a file was written to /tmp")
	}
	if got, want := files(t, f.parent), []string{"ws/abs.txt", "ws/notes/a.txt"}; !slices.Equal(got, want) {
		t.Errorf("files under the test dir: %v, want %v", got, want)
	}

	out, isErr = call(t, cs, "file_read", map[string]any{"path": "notes/a.txt"})
	if isErr || out != "hello" {
		t.Errorf("file_read: %v %q", isErr, out)
	}
}

func TestBashRunsInTheWorkspaceBehindTheGate(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	f := newFixture(t)
	cs := f.client(t, testToken)

	out, isErr := call(t, cs, "bash", map[string]any{"command": "pwd"})
	if isErr || strings.TrimSpace(out) != f.ws {
		t.Fatalf("pwd: isError=%v %q, want %q", isErr, out, f.ws)
	}
	out, isErr = call(t, cs, "bash", map[string]any{"command": "echo hi > made.txt && cat made.txt"})
	if isErr || strings.TrimSpace(out) != "hi" {
		t.Fatalf("echo: %v %q", isErr, out)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "made.txt")); err != nil {
		t.Fatalf("bash did not write in the workspace: %v", err)
	}
	for _, cmd := range []string{"printenv", "rm -rf /", "python3 -c 'print(1)'", "git push --receive-pack='rm -rf /' origin main"} {
		out, isErr = call(t, cs, "bash", map[string]any{"command": cmd})
		if !isErr || !strings.HasPrefix(out, "blocked: ") {
			t.Errorf("%q: isError=%v %q, want blocked", cmd, isErr, out)
		}
	}
	// The network is the pod's NetworkPolicy's to decide: a network
	// program reaches bash (here a refused loopback port), and so does
	// git push, which fails on its own for want of a repository.
	for cmd, want := range map[string]string{
		"curl -sS --max-time 5 http://127.0.0.1:1/": "[exit code 7]",
		"git push origin main":                      "[exit code 128]",
	} {
		if _, err := exec.LookPath(strings.Fields(cmd)[0]); err != nil {
			continue
		}
		out, _ = call(t, cs, "bash", map[string]any{"command": cmd})
		if strings.HasPrefix(out, "blocked: ") || !strings.Contains(out, want) {
			t.Errorf("%q: %q, want it run by bash (%s)", cmd, out, want)
		}
	}
	out, isErr = call(t, cs, "bash", map[string]any{"command": "exit 3"})
	if !isErr || !strings.Contains(out, "[exit code 3]") {
		t.Errorf("exit 3: %v %q", isErr, out)
	}
	// Bad arguments are a tool error from tools.Local, not a protocol error.
	out, isErr = call(t, cs, "bash", map[string]any{"command": "pwd", "extra": 1})
	if !isErr || !strings.Contains(out, "extra: unknown field") {
		t.Errorf("extra field: %v %q", isErr, out)
	}
}

func TestUnknownToolIsAProtocolError(t *testing.T) {
	f := newFixture(t)
	cs := f.client(t, testToken)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "x"}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "web_search"`) {
		t.Fatalf("web_search: %v", err)
	}
}

// post sends one JSON-RPC request to /mcp with the given Authorization.
func post(t *testing.T, url, authz string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestBearerRequired(t *testing.T) {
	f := newFixture(t)
	u := f.http.URL + "/mcp"
	for _, tc := range []struct{ name, authz string }{
		{"none", ""},
		{"wrong", "Bearer wrong-token-0123456789abcdef"},
		{"prefix", "Bearer " + testToken[:len(testToken)-1]},
		{"longer", "Bearer " + testToken + "x"},
		{"basic", "Basic " + testToken},
		{"bare", testToken},
	} {
		code, body := post(t, u, tc.authz)
		if code != http.StatusUnauthorized {
			t.Errorf("%s: %d %q, want 401", tc.name, code, body)
		}
		if strings.Contains(body, testToken) {
			t.Errorf("%s: body echoes the token", tc.name)
		}
	}
	if code, body := post(t, u, "Bearer "+testToken); code != http.StatusOK || !strings.Contains(body, `"serverInfo"`) {
		t.Errorf("right token: %d %q", code, body)
	}
	// Other methods on /mcp are behind auth too.
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /mcp without a token: %d, want 401", resp.StatusCode)
	}
	// The go-sdk client with a wrong bearer cannot connect.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	transport := &mcp.StreamableClientTransport{
		Endpoint:   u,
		HTTPClient: &http.Client{Transport: bearerRT{token: "wrong-token-0123456789abcdef", inner: http.DefaultTransport}},
	}
	if cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(ctx, transport, nil); err == nil {
		_ = cs.Close()
		t.Error("connect with a wrong token succeeded")
	}
}

func TestHealthAndReadiness(t *testing.T) {
	f := newFixture(t)
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get(f.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/healthz"); c != http.StatusOK {
		t.Errorf("healthz %d", c)
	}
	if c := get("/readyz"); c != http.StatusOK {
		t.Errorf("readyz %d", c)
	}
	if c := get("/nope"); c != http.StatusNotFound {
		t.Errorf("/nope %d", c)
	}

	// Workspace replaced by a new directory of the same name: not ready
	// (the jail still holds the old one).
	if err := os.Rename(f.ws, f.ws+".old"); err != nil {
		t.Fatal(err)
	}
	if c := get("/readyz"); c != http.StatusServiceUnavailable {
		t.Errorf("readyz with the workspace gone: %d", c)
	}
	if err := os.Mkdir(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if c := get("/readyz"); c != http.StatusServiceUnavailable {
		t.Errorf("readyz with the workspace replaced: %d", c)
	}
	if c := get("/healthz"); c != http.StatusOK {
		t.Errorf("healthz with the workspace gone: %d", c)
	}
	if err := os.Remove(f.ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.ws+".old", f.ws); err != nil {
		t.Fatal(err)
	}
	if c := get("/readyz"); c != http.StatusOK {
		t.Errorf("readyz with the workspace back: %d", c)
	}
}

func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		ws, token string
		want      error
		text      string
	}{
		{"no token", dir, "", sandbox.ErrNoToken, "GARRA_SANDBOX_TOKEN"},
		{"short token", dir, "short", sandbox.ErrWeakToken, "GARRA_SANDBOX_TOKEN"},
		{"token with space", dir, "0123456789 abcdefgh", sandbox.ErrWeakToken, "GARRA_SANDBOX_TOKEN"},
		{"token with newline", dir, testToken + "\n", sandbox.ErrWeakToken, "GARRA_SANDBOX_TOKEN"},
		{"no workspace", "", testToken, sandbox.ErrWorkspace, "no workspace"},
		{"missing", filepath.Join(dir, "missing"), testToken, sandbox.ErrWorkspace, "does not exist"},
		{"file", file, testToken, sandbox.ErrWorkspace, "not a directory"},
		{"symlink", link, testToken, sandbox.ErrWorkspace, "symlink"},
	} {
		srv, err := sandbox.New(sandbox.Options{Workspace: tc.ws, Token: tc.token})
		if err == nil {
			_ = srv.Close()
			t.Errorf("%s: New succeeded", tc.name)
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.want, tc.text)
		}
		if tc.token != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.token)) {
			t.Errorf("%s: error carries the token", tc.name)
		}
	}
}

func TestLogsOneLinePerCallWithoutArgumentsOrOutput(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	f := newFixture(t)
	cs := f.client(t, testToken)
	call(t, cs, "bash", map[string]any{"command": "echo SECRET-ARG-MARKER; echo OUTPUT-$((6*7))"})
	call(t, cs, "file_read", map[string]any{"path": "missing-MARKER.txt"})
	logs := f.logs.String()
	var lines []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `msg="tool call"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || strings.Count(logs, "\n") != 2 {
		t.Fatalf("want exactly 2 lines, both tool calls, got:\n%s", logs)
	}
	if !strings.Contains(lines[0], "tool=bash outcome=ok duration_ms=") {
		t.Errorf("bash line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "tool=file_read outcome=tool_error duration_ms=") {
		t.Errorf("file_read line: %s", lines[1])
	}
	for _, leak := range []string{"MARKER", "OUTPUT-42", testToken} {
		if strings.Contains(logs, leak) {
			t.Errorf("logs contain %q:\n%s", leak, logs)
		}
	}
}

func TestCancelledCallKillsTheCommand(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("protocol="+version, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			transport := &mcp.StreamableClientTransport{
				Endpoint:   f.http.URL + "/mcp",
				HTTPClient: &http.Client{Transport: bearerRT{token: testToken, inner: http.DefaultTransport}},
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			callCtx, callCancel := context.WithCancel(ctx)
			defer callCancel()
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo $$ > pid.txt; sleep 30"}})
				errc <- err
			}()
			pid := proctest.WaitPids(t, filepath.Join(f.ws, "pid.txt"), 1, f.logs)[0]
			callCancel()
			if err := <-errc; err == nil {
				t.Fatal("a cancelled call succeeded")
			}
			// The server side ends too, and the command's process group
			// is gone, long before the 30 s sleep would finish.
			for !strings.Contains(f.logs.String(), "tool=bash outcome=error") || syscall.Kill(-pid, 0) == nil {
				if ctx.Err() != nil {
					t.Fatalf("the server did not cancel the call (group alive: %v):\n%s", syscall.Kill(-pid, 0) == nil, f.logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func TestServeShutsDownGracefully(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	ws := t.TempDir()
	logs := &syncBuffer{}
	srv, err := sandbox.New(sandbox.Options{Workspace: ws, Token: testToken, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	transport := &mcp.StreamableClientTransport{
		Endpoint:   "http://" + ln.Addr().String() + "/mcp",
		HTTPClient: &http.Client{Transport: bearerRT{token: testToken, inner: &http.Transport{}}},
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// A call in flight when shutdown starts still completes.
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "sleep 1; echo finished"}})
		done <- result{res, err}
	}()
	for !strings.Contains(logs.String(), "listening") {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	r := <-done
	if r.err != nil {
		t.Fatalf("in-flight call: %v", r.err)
	}
	if txt := r.res.Content[0].(*mcp.TextContent).Text; strings.TrimSpace(txt) != "finished" {
		t.Errorf("in-flight call output %q", txt)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if !strings.Contains(logs.String(), `msg="garra sandbox listening" addr=`+ln.Addr().String()) {
		t.Errorf("no parseable listening line:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "garra sandbox stopped") {
		t.Errorf("no stopped line:\n%s", logs.String())
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("still accepting after shutdown")
	}
}

// serveOn runs srv.Serve on a loopback port until the test ends; stop
// begins the shutdown and served reports Serve's result.
func serveOn(t *testing.T, srv *sandbox.Server) (url string, stop func(), served <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, ln) }()
	t.Cleanup(cancel)
	return "http://" + ln.Addr().String(), cancel, errc
}

func connect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	transport := &mcp.StreamableClientTransport{
		Endpoint:   url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerRT{token: token, inner: &http.Transport{}}},
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(), transport, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// authStatus is the status of an authenticated tools/list with token.
func authStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// Every line of the token file is accepted, and an update of the mounted
// Secret (the kubelet's ..data swap) is picked up without a restart: the
// new token works, the old one while it is still in the file.
func TestTokenFileLinesAreReReadLive(t *testing.T) {
	const tokA, tokB = "sandbox-token-aaaaaaaaaaaa", "sandbox-token-bbbbbbbbbbbb"
	vol := &kubelet.Volume{Dir: t.TempDir()}
	if err := vol.Publish(map[string]string{"sandbox-token": tokA + "\n"}); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	srv, err := sandbox.New(sandbox.Options{Workspace: t.TempDir(), TokenFile: filepath.Join(vol.Dir, "sandbox-token"),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url, _, _ := serveOn(t, srv)
	waitFor := func(what string, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s never happened; logs:\n%s", what, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitFor("listening", func() bool { return strings.Contains(logs.String(), "listening") })
	time.Sleep(100 * time.Millisecond) // the watch is set up
	if authStatus(t, url, tokA) != 200 || authStatus(t, url, tokB) != 401 {
		t.Fatal("before the rotation: A must pass, B must not")
	}
	// The overlap: new first, old second.
	if err := vol.Publish(map[string]string{"sandbox-token": tokB + "\n" + tokA + "\n"}); err != nil {
		t.Fatal(err)
	}
	d := waitFor("the new token accepted", func() bool { return authStatus(t, url, tokB) == 200 })
	t.Logf("sandbox token re-read latency: %v", d.Round(time.Millisecond))
	if authStatus(t, url, tokA) != 200 {
		t.Fatal("the old token was refused during the overlap")
	}
	// A bad update (a line too short) is not applied.
	if err := vol.Publish(map[string]string{"sandbox-token": "short\n"}); err != nil {
		t.Fatal(err)
	}
	waitFor("the bad file reported", func() bool { return strings.Contains(logs.String(), "token file not re-read") })
	if authStatus(t, url, tokB) != 200 {
		t.Fatal("a bad file locked the caller out")
	}
	if err := vol.Publish(map[string]string{"sandbox-token": tokB + "\n"}); err != nil {
		t.Fatal(err)
	}
	waitFor("the old token retired", func() bool { return authStatus(t, url, tokA) == 401 })
	if authStatus(t, url, tokB) != 200 {
		t.Fatal("the new token was refused after the overlap")
	}
	if strings.Contains(logs.String(), tokA) || strings.Contains(logs.String(), tokB) {
		t.Fatal("a token reached the log")
	}
}

// A call still running at the shutdown deadline is cancelled: its bash
// process is killed, the call answers, and Serve returns soon after.
func TestShutdownDeadlineKillsARunningCommand(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	ws := t.TempDir()
	logs := &syncBuffer{}
	srv, err := sandbox.New(sandbox.Options{Workspace: ws, Token: testToken, ShutdownTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url, stop, served := serveOn(t, srv)
	for !strings.Contains(logs.String(), "listening") {
		time.Sleep(10 * time.Millisecond)
	}
	cs, err := connect(t, url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo $$ > pid; sleep 60"}})
		if err == nil && !res.IsError {
			err = errors.New("the call succeeded")
		}
		done <- err
	}()
	pid := proctest.WaitPids(t, filepath.Join(ws, "pid"), 1, logs)[0]
	start := time.Now()
	stop()
	select {
	case err := <-done:
		if err != nil && strings.Contains(err.Error(), "succeeded") {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call cut at the deadline never answered")
	}
	answered := time.Since(start)
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	for deadline := time.Now().Add(3 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) outlived the shutdown", pid)
		}
	}
	if answered < time.Second || answered > 4*time.Second {
		t.Fatalf("the call answered %v after SIGTERM, the deadline is 1s", answered)
	}
	t.Logf("sandbox drain: sleep 60 cut, call answered %v after SIGTERM (deadline 1s), Serve returned %v after", answered.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
