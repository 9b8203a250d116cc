package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/mcphttp"
)

// End to end through real processes on loopback: an orchestrator POSTs
// garra_agent to `garra gateway`; the gateway runs the agent loop against
// the scripted LLM double and the tools in that orchestrator's own
// `garra sandbox` process.

var gatewayListeningLine = regexp.MustCompile(`msg="garra gateway listening" addr=(\S+)`)

// watchedLog keeps a child's stderr and signals the first match of re.
// It is the child's Stderr (exec copies into it), so Wait never races a
// reader of ours.
type watchedLog struct {
	lockedBuffer
	pid   int // the child's
	re    *regexp.Regexp
	once  sync.Once
	seen  atomic.Bool
	found chan string
}

func newWatchedLog(re *regexp.Regexp) *watchedLog {
	return &watchedLog{re: re, found: make(chan string, 1)}
}

func (w *watchedLog) Write(p []byte) (int, error) {
	n, err := w.lockedBuffer.Write(p)
	if w.seen.Load() {
		return n, err
	}
	if m := w.re.FindStringSubmatch(w.String()); m != nil {
		w.once.Do(func() { w.seen.Store(true); w.found <- m[1] })
	}
	return n, err
}

// startChild starts garraBin with args and env, waits for the line log
// matches, and returns its first submatch. The child is stopped on cleanup:
// SIGTERM, then SIGKILL after 20 s.
func startChild(t testing.TB, dir string, env []string, re *regexp.Regexp, args ...string) (string, *watchedLog) {
	t.Helper()
	cmd := exec.Command(garraBin, args...)
	cmd.Env = env
	cmd.Dir = dir
	logs := newWatchedLog(re)
	cmd.Stderr = logs
	cmd.Stdout = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs.pid = cmd.Process.Pid
	exited := stopAtCleanup(t, cmd, "garra "+args[0])
	select {
	case v := <-logs.found:
		return v, logs
	case err := <-exited:
		t.Fatalf("garra %s exited before listening (%v):\n%s", args[0], err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("garra %s: no listening line after 60 s:\n%s", args[0], logs.String())
	}
	return "", nil
}

// stopAtCleanup waits for the started cmd and stops it on cleanup:
// SIGTERM, then SIGKILL after 20 s, which fails the test. The channel
// gives what Wait returned.
func stopAtCleanup(t testing.TB, cmd *exec.Cmd, name string) <-chan error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("%s ignored SIGTERM for 20 s; killed", name)
		}
	})
	return exited
}

// e2eSandbox is one orchestrator's `garra sandbox` process.
type e2eSandbox struct {
	url, ws, token string
	logs           *watchedLog
}

// startE2ESandbox starts a sandbox holding token in $GARRA_SANDBOX_TOKEN,
// or, with fromFile, in a file named by --token-file.
func startE2ESandbox(t *testing.T, token string, fromFile bool) e2eSandbox {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env, args := testEnv(t, sandbox.TokenEnv+"="+token), []string{"sandbox", "--workspace", ws, "--listen", "127.0.0.1:0"}
	if fromFile {
		env, args = testEnv(t), append(args, "--token-file", secretFile(t, token))
	}
	addr, logs := startChild(t, t.TempDir(), env, listeningLine, args...)
	return e2eSandbox{url: "http://" + addr + "/mcp", ws: ws, token: token, logs: logs}
}

// secretFile writes value (with a trailing newline, as a Secret volume or
// an editor leaves it) to a new 0400 file and returns its path.
func secretFile(t testing.TB, value string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(value+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	return p
}

// e2eGateway is a `garra gateway` process and the directories it was given.
type e2eGateway struct {
	base               string
	dataDir, home, cwd string
	logs               *watchedLog
	alphaKey, betaKey  string
}

const (
	e2eOwnerKey = "e2e-owner-key-5f0d1c2b3a4e5f60718293a4b5c6d7e8"
	e2eAlphaKey = "e2e-alpha-orchestrator-key-0a1b2c3d4e5f60718293"
	e2eBetaKey  = "e2e-beta-orchestrator-key-9f8e7d6c5b4a39281706f"
	e2eSbxAlpha = "e2e-sandbox-alpha-token-3c4d5e6f708192a3b4c5"
	e2eSbxBeta  = "e2e-sandbox-beta-token-d5e6f708192a3b4c5d6e7f8"
)

// startE2EGateway runs `garra gateway --config` with orchestrators alpha
// and beta, each pointed at its sandbox, the LLM at double, and
// sbxAlphaToken as what the gateway holds for alpha's sandbox. The owner's
// key and alpha's tokens come from files (as the operator mounts them),
// beta's from the environment.
func startE2EGateway(t *testing.T, double *llmdouble.Server, alpha, beta e2eSandbox, sbxAlphaToken string) *e2eGateway {
	t.Helper()
	g := &e2eGateway{dataDir: t.TempDir(), cwd: t.TempDir(), alphaKey: e2eAlphaKey, betaKey: e2eBetaKey}
	cfg := fmt.Sprintf(`data_dir: %s
llm:
  provider: openrouter
  base_url: %s
gateway:
  listen: 127.0.0.1:0
  api_key_file: %s
  rate_limit:
    requests_per_minute: 1000
  mcp_http:
    enabled: true
    allow_agent: true
    agent_budget_per_minute: 10
    agent_max_seconds: 60
    orchestrators:
      - name: alpha
        key_file: %s
        tools: [status, agent]
        sandbox: {url: %q, token_file: %s}
      - name: beta
        key_env: BETA_MCP_KEY
        tools: [status, agent]
        sandbox: {url: %q, token_env: SBX_BETA}
`, g.dataDir, double.OpenAIBaseURL(), secretFile(t, e2eOwnerKey), secretFile(t, e2eAlphaKey), alpha.url, secretFile(t, sbxAlphaToken), beta.url)
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := testEnv(t,
		"OPENROUTER_API_KEY="+fakeKey,
		"BETA_MCP_KEY="+e2eBetaKey,
		"SBX_BETA="+beta.token,
	)
	for _, kv := range env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			g.home = h
		}
	}
	addr, logs := startChild(t, g.cwd, env, gatewayListeningLine, "gateway", "--config", path)
	g.base, g.logs = "http://"+addr, logs
	return g
}

// rpc POSTs one JSON-RPC request to /mcp the way curl does and returns
// the result object.
func (g *e2eGateway) rpc(t *testing.T, token, method string, params any) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := mcphttp.Client{Base: g.base}.Result(ctx, token, method, params)
	if err != nil {
		t.Fatalf("%v\ngateway log:\n%s", err, g.logs.String())
	}
	return res
}

// agent calls garra_agent as the holder of token and returns the envelope,
// its raw text and the result's isError.
func (g *e2eGateway) agent(t *testing.T, token, message string) (agentEnvelope, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	env, raw, isErr, err := mcphttp.Client{Base: g.base}.Agent(ctx, token, message)
	if err != nil {
		t.Fatalf("%v\ngateway log:\n%s", err, g.logs.String())
	}
	return env, raw, isErr
}

func uuidSession(orchestrator string) *regexp.Regexp {
	return regexp.MustCompile(`^mcp-http-` + orchestrator + `-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
}

// filesUnder lists every regular file under dir, relative, and fails if any
// holds needle (when needle is not empty).
func filesUnder(t *testing.T, dir, needle string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
			if b, err := os.ReadFile(p); needle != "" && err == nil && bytes.Contains(b, []byte(needle)) {
				t.Errorf("%s holds the plan text", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const planText = "ALPHA-PLAN-7c1e: ship the gateway on Friday\n"

func TestGatewayAgentEndToEndThroughSandboxes(t *testing.T) {
	alpha := startE2ESandbox(t, e2eSbxAlpha, true)
	beta := startE2ESandbox(t, e2eSbxBeta, false)
	alphaPlan := filepath.Join(alpha.ws, "notes", "plan.md")
	writeArgs, _ := json.Marshal(map[string]string{"path": "notes/plan.md", "content": planText})
	readAbs, _ := json.Marshal(map[string]string{"path": alphaPlan})
	double := llmdouble.New(t,
		// alpha: write, read back with bash, answer.
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_write", Args: string(writeArgs)}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"cat notes/plan.md"}`}}},
		llmdouble.Step{Text: "Plan written to notes/plan.md and checked."},
		// beta: try alpha's file by its relative and its absolute path.
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"notes/plan.md"}`}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: string(readAbs)}}},
		llmdouble.Step{Text: "There is no plan in my workspace."},
	)
	gw := startE2EGateway(t, double, alpha, beta, e2eSbxAlpha)

	// Each orchestrator sees its grants and nothing else.
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(gw.rpc(t, gw.alphaKey, "tools/list", map[string]any{}), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "garra_agent,garra_status" {
		t.Fatalf("alpha's tools/list: %v", names)
	}

	// alpha: file_write then bash, both in alpha's sandbox.
	env, rawAlpha, isErr := gw.agent(t, gw.alphaKey, "Write the plan to notes/plan.md and show it.")
	if isErr || !env.OK || env.Schema != "garra.agent.v1" || env.Error != nil ||
		env.Answer != "Plan written to notes/plan.md and checked." || env.Provider != "openrouter" || env.Model != "z-ai/glm-5.3-flash" {
		t.Fatalf("alpha envelope: %s\ngateway log:\n%s", rawAlpha, gw.logs.String())
	}
	t.Logf("alpha: %s", rawAlpha)
	if !uuidSession("alpha").MatchString(env.SessionID) {
		t.Errorf("alpha session_id %q", env.SessionID)
	}
	var calls []string
	for _, c := range env.ToolCalls {
		calls = append(calls, c.Name)
		if !c.Success || c.DurationMS == nil {
			t.Errorf("alpha tool call %+v", c)
		}
	}
	if strings.Join(calls, ",") != "file_write,bash" {
		t.Fatalf("alpha tool_calls %v", calls)
	}
	if !strings.Contains(env.ToolCalls[1].Summary, "ALPHA-PLAN-7c1e") {
		t.Errorf("bash did not read the file back: %q", env.ToolCalls[1].Summary)
	}
	reqs := double.Requests()
	if len(reqs) != 3 {
		t.Fatalf("alpha made %d model requests, want 3", len(reqs))
	}
	// The model was offered the sandbox's tools (bash exists only there:
	// the gateway itself runs the standard profile with no container).
	if got := strings.Join(reqs[0].ToolNames, ","); got != "bash,file_read,file_write,git_diff,web_fetch" {
		t.Errorf("tools offered to the model: %s", got)
	}
	for i, r := range reqs {
		if r.APIKey() != fakeKey {
			t.Errorf("request %d carried key %q", i, r.APIKey())
		}
	}
	if !strings.Contains(string(reqs[2].RawBody), "ALPHA-PLAN-7c1e") {
		t.Error("the bash output never reached the model")
	}

	// The file is in alpha's workspace and nowhere else.
	if b, err := os.ReadFile(alphaPlan); err != nil || string(b) != planText {
		t.Fatalf("alpha's workspace: %q %v", b, err)
	}
	if got := filesUnder(t, alpha.ws, ""); strings.Join(got, ",") != filepath.Join("notes", "plan.md") {
		t.Errorf("alpha's workspace holds %v", got)
	}
	for what, dir := range map[string]string{"beta's workspace": beta.ws, "gateway data_dir": gw.dataDir,
		"gateway HOME": gw.home, "gateway cwd": gw.cwd} {
		// Other files may live there (the audit file in data_dir); none
		// is the plan or holds its text.
		for _, f := range filesUnder(t, dir, "ALPHA-PLAN-7c1e") {
			if filepath.Base(f) == "plan.md" || strings.HasPrefix(f, "notes"+string(filepath.Separator)) {
				t.Errorf("%s holds %s", what, f)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(gw.dataDir, "workspace")); err == nil {
		t.Error("the gateway made a local workspace although both orchestrators have a sandbox")
	}

	// beta: cannot read alpha's file, by either path.
	env, rawBeta, isErr := gw.agent(t, gw.betaKey, "Read notes/plan.md.")
	if isErr || !env.OK || env.Answer != "There is no plan in my workspace." {
		t.Fatalf("beta envelope: %s", rawBeta)
	}
	t.Logf("beta: %s", rawBeta)
	if !uuidSession("beta").MatchString(env.SessionID) {
		t.Errorf("beta session_id %q", env.SessionID)
	}
	if len(env.ToolCalls) != 2 {
		t.Fatalf("beta tool_calls %+v", env.ToolCalls)
	}
	for _, c := range env.ToolCalls {
		if c.Name != "file_read" || c.Success {
			t.Errorf("beta tool call %+v, want a failed file_read", c)
		}
	}
	if strings.Contains(rawBeta, "ALPHA-PLAN-7c1e") {
		t.Errorf("beta's envelope carries alpha's text: %s", rawBeta)
	}
	reqs = double.Requests()
	if len(reqs) != 6 || double.Remaining() != 0 {
		t.Fatalf("%d model requests, %d steps left; want 6, 0", len(reqs), double.Remaining())
	}
	for i, r := range reqs[3:] {
		if bytes.Contains(r.RawBody, []byte("ALPHA-PLAN-7c1e")) {
			t.Errorf("beta's model request %d carries alpha's text", i)
		}
	}
	if entries, err := os.ReadDir(beta.ws); err != nil || len(entries) != 0 {
		t.Errorf("beta's workspace: %v %v", entries, err)
	}

	// Each sandbox logged its own calls, and no secret went anywhere.
	for _, want := range []string{`tool=file_write outcome=ok`, `tool=bash outcome=ok`} {
		if !strings.Contains(alpha.logs.String(), want) {
			t.Errorf("alpha's sandbox log lacks %q:\n%s", want, alpha.logs.String())
		}
	}
	if !strings.Contains(beta.logs.String(), `tool=file_read outcome=tool_error`) || strings.Contains(beta.logs.String(), "tool=file_write") {
		t.Errorf("beta's sandbox log:\n%s", beta.logs.String())
	}
	secrets := []string{e2eOwnerKey, e2eAlphaKey, e2eBetaKey, e2eSbxAlpha, e2eSbxBeta, fakeKey}
	for _, s := range secrets {
		for what, text := range map[string]string{"gateway log": gw.logs.String(), "alpha envelope": rawAlpha,
			"beta envelope": rawBeta, "alpha sandbox log": alpha.logs.String(), "beta sandbox log": beta.logs.String()} {
			if strings.Contains(text, s) {
				t.Errorf("%s carries a secret (%s…)", what, s[:12])
			}
		}
	}
	for _, r := range reqs {
		for _, s := range secrets[:5] {
			if bytes.Contains(r.RawBody, []byte(s)) || strings.Contains(fmt.Sprint(r.Header), s) {
				t.Errorf("a model request carries a gateway or sandbox secret (%s…)", s[:12])
			}
		}
	}
	// What came from files is not in the gateway's environment (readable
	// here only to root: the gateway is non-dumpable); beta's tokens, from
	// the environment, show the read works.
	if environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", gw.logs.pid)); err == nil {
		for _, s := range []string{e2eOwnerKey, e2eAlphaKey, e2eSbxAlpha} {
			if bytes.Contains(environ, []byte(s)) {
				t.Errorf("the gateway's environment holds a secret read from a file (%s…)", s[:12])
			}
		}
		if !bytes.Contains(environ, []byte(e2eBetaKey)) {
			t.Error("the gateway's environment lacks beta's key: the check above cannot tell")
		}
	} else if os.Getuid() == 0 {
		t.Errorf("root cannot read the gateway's environment: %v", err)
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", gw.logs.String())
	}

	// A gateway holding the wrong token for alpha's sandbox: the run fails
	// closed as an executor error before any model call, and the wrong
	// token is printed nowhere.
	t.Run("wrong sandbox token", func(t *testing.T) {
		const wrong = "e2e-WRONG-sandbox-token-77aa88bb99cc00dd"
		quiet := llmdouble.New(t) // echo mode: any model call would show up
		bad := startE2EGateway(t, quiet, alpha, beta, wrong)
		env, raw, isErr := bad.agent(t, bad.alphaKey, "Write the plan again.")
		t.Logf("alpha, wrong sandbox token: %s", raw)
		if !isErr || env.OK || env.Error == nil || env.Error.Kind != "provider_error" ||
			!strings.Contains(env.Error.Message, "the sandbox refused the bearer token") {
			t.Fatalf("envelope with a wrong sandbox token: %s", raw)
		}
		if !uuidSession("alpha").MatchString(env.SessionID) || len(env.ToolCalls) != 0 {
			t.Errorf("session_id %q, tool_calls %+v", env.SessionID, env.ToolCalls)
		}
		if n := len(quiet.Requests()); n != 0 {
			t.Errorf("%d model requests although the executor failed first", n)
		}
		// Give the gateway a moment to write its call line.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(bad.logs.String(), `msg="mcp call" caller=alpha tool=garra_agent outcome=error`) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		for what, text := range map[string]string{"envelope": raw, "gateway log": bad.logs.String(), "alpha sandbox log": alpha.logs.String()} {
			if strings.Contains(text, wrong) {
				t.Errorf("%s carries the wrong token:\n%s", what, text)
			}
			if strings.Contains(text, e2eSbxAlpha) {
				t.Errorf("%s carries alpha's sandbox token", what)
			}
		}
		if !strings.Contains(bad.logs.String(), `msg="mcp call" caller=alpha tool=garra_agent outcome=error`) {
			t.Errorf("no error call line in the gateway log:\n%s", bad.logs.String())
		}
		if b, err := os.ReadFile(alphaPlan); err != nil || string(b) != planText {
			t.Errorf("alpha's file changed: %q %v", b, err)
		}
	})
}
