package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/filewatch/kubelet"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// live is a gateway built from a config file it re-reads, with its token
// files in a directory of their own, as the operator mounts them.
type live struct {
	t      *testing.T
	path   string // config.yml
	tokens string // token directory
	env    map[string]string
	logs   *syncBuffer
	gw     *gateway.Gateway
	url    string
}

func newLive(t *testing.T, env map[string]string) *live {
	t.Helper()
	dir := t.TempDir()
	l := &live{t: t, path: filepath.Join(dir, "config.yml"), tokens: filepath.Join(dir, "tokens"), env: env, logs: &syncBuffer{}}
	if err := os.Mkdir(l.tokens, 0o700); err != nil {
		t.Fatal(err)
	}
	return l
}

// writeConfig replaces config.yml the way an editor does (write, rename).
func (l *live) writeConfig(yaml string) {
	l.t.Helper()
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(yaml), 0o600); err != nil {
		l.t.Fatal(err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		l.t.Fatal(err)
	}
}

func (l *live) writeToken(name, lines string) {
	l.t.Helper()
	tmp := filepath.Join(l.tokens, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(lines), 0o600); err != nil {
		l.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(l.tokens, name)); err != nil {
		l.t.Fatal(err)
	}
}

func (l *live) options(opts ...func(*gateway.Options)) gateway.Options {
	l.t.Helper()
	data, err := os.ReadFile(l.path)
	if err != nil {
		l.t.Fatal(err)
	}
	getenv := func(k string) string { return l.env[k] }
	cfg, err := config.FromBytes(data, getenv)
	if err != nil {
		l.t.Fatal(err)
	}
	o := gateway.Options{Config: cfg, Getenv: getenv, Version: "test", Logger: slog.New(slog.NewTextHandler(l.logs, nil)),
		ConfigPath: l.path, ConfigBytes: data}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// serve builds the gateway and serves it on httptest (reloads by hand).
func (l *live) serve(opts ...func(*gateway.Options)) {
	l.t.Helper()
	g, err := gateway.New(l.options(opts...))
	if err != nil {
		l.t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	l.t.Cleanup(srv.Close)
	l.gw, l.url = g, srv.URL
}

// run builds the gateway and serves it with Run (watcher and drain) until
// the returned stop is called (SIGTERM); wait returns Run's error.
func (l *live) run(opts ...func(*gateway.Options)) (stop func(), wait func() error) {
	l.t.Helper()
	g, err := gateway.New(l.options(opts...))
	if err != nil {
		l.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() { errc <- g.Run(ctx, func(a net.Addr) { addr <- a }) }()
	select {
	case a := <-addr:
		l.gw, l.url = g, "http://"+a.String()
	case err := <-errc:
		l.t.Fatal(err)
	}
	var err2 error
	waited := false
	wait = func() error {
		if !waited {
			waited, err2 = true, <-errc
		}
		return err2
	}
	l.t.Cleanup(func() { cancel(); _ = wait() })
	return cancel, wait
}

func (l *live) keyFile(name string) string { return filepath.Join(l.tokens, name) }

// orchestratorsYAML lists orchestrators whose tokens are files in tokens.
func (l *live) orchestratorsYAML(tools string, names ...string) string {
	s := "    orchestrators:\n"
	for _, n := range names {
		s += "      - name: " + n + "\n        key_file: " + l.keyFile(n) + "\n        tools: " + tools + "\n"
	}
	return s
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// readyz asks /readyz, verbose with the owner's key.
func readyz(t *testing.T, url string, verbose bool) (*http.Response, string) {
	t.Helper()
	if verbose {
		return readyzAs(t, url+"/readyz?verbose=1", ownerKey)
	}
	return readyzAs(t, url+"/readyz", "")
}

func readyzAs(t *testing.T, u, bearer string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A new orchestrator is callable without a restart; a removed one is
// refused with unauthorized on its next request while the run it started
// before the reload completes under the policy it started with.
func TestReloadAddsAndRemovesOrchestrators(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "finished under the old policy", Delay: 1500 * time.Millisecond})
	l := newLive(t, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"})
	head := "gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n    allow_agent: true\n    allow_ask: true\n    agent_max_seconds: 60\n"
	llm := "llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	l.writeToken("alpha", "alpha-token-1234567-0123456789abcdef\n")
	l.writeConfig(head + l.orchestratorsYAML("[status, agent]", "alpha") + llm)
	l.serve()

	if code, _ := post(t, l.url, "beta-token-12345678-0123456789abcdef", toolsList, nil); code != http.StatusUnauthorized {
		t.Fatalf("beta before it exists: %d", code)
	}
	cs := client(t, l.url, "alpha-token-1234567-0123456789abcdef")
	type out struct {
		env   map[string]any
		isErr bool
	}
	done := make(chan out, 1)
	go func() {
		env, isErr := call(t, cs, "garra_agent", map[string]any{"message": "long task"})
		done <- out{env, isErr}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(double.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the agent run never reached the model")
		}
		time.Sleep(5 * time.Millisecond)
	}

	l.writeToken("beta", "beta-token-12345678-0123456789abcdef\n")
	l.writeConfig(head + l.orchestratorsYAML("[status, agent]", "beta") + llm)
	if got := l.gw.Reload(); got != gateway.ReloadApplied {
		t.Fatalf("Reload = %s; logs:\n%s", got, l.logs.String())
	}
	if code, body := post(t, l.url, "beta-token-12345678-0123456789abcdef", toolsList, nil); code != http.StatusOK || !strings.Contains(body, "garra_agent") {
		t.Fatalf("beta after the reload: %d %.200s", code, body)
	}
	code, body := post(t, l.url, "alpha-token-1234567-0123456789abcdef", toolsList, nil)
	if code != http.StatusUnauthorized || !strings.Contains(body, `"unauthorized"`) {
		t.Fatalf("alpha after its removal: %d %s", code, body)
	}
	select {
	case o := <-done:
		if o.isErr || o.env["ok"] != true || o.env["answer"] != "finished under the old policy" {
			t.Fatalf("alpha's run in flight: %v", o.env)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("alpha's run in flight never finished")
	}
}

// A budget's spending survives a reload that changes its limit.
func TestReloadKeepsBudgetSpending(t *testing.T) {
	double := llmdouble.New(t) // echo
	l := newLive(t, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"})
	cfg := func(budget string) string {
		return "gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n    allow_ask: true\n    ask_budget_per_minute: " + budget +
			"\nllm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	}
	l.writeConfig(cfg("3"))
	l.serve()
	cs := client(t, l.url, ownerKey)
	for i := range 2 {
		if env, _ := call(t, cs, "garra_ask", map[string]any{"message": "ping"}); env["ok"] != true {
			t.Fatalf("ask %d: %v", i, env)
		}
	}
	l.writeConfig(cfg("5"))
	if got := l.gw.Reload(); got != gateway.ReloadApplied {
		t.Fatalf("Reload = %s", got)
	}
	ok := 0
	for range 6 {
		env, _ := call(t, cs, "garra_ask", map[string]any{"message": "ping"})
		switch {
		case env["ok"] == true:
			ok++
		case kindOf(env) != "over_budget":
			t.Fatalf("ask: %v", env)
		}
	}
	if ok != 3 || len(double.Requests()) != 5 {
		t.Fatalf("%d asks answered after raising the budget from 3 (2 spent) to 5, want 3; provider saw %d", ok, len(double.Requests()))
	}
}

// A config that fails Check is not applied: the last good one keeps
// serving, the problem is logged once, /readyz and the metrics report it,
// and a fixed config is applied again.
func TestReloadRejectsConfigFailingCheck(t *testing.T) {
	l := newLive(t, nil)
	l.writeToken("alpha", "alpha-token-1234567-0123456789abcdef\n")
	good := "gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n" + l.orchestratorsYAML("[status]", "alpha") + "llm: {provider: ollama, model: llama3.2}\n"
	l.writeConfig(good)
	l.serve()
	goodHash := hashOf([]byte(good))
	resp, _ := readyz(t, l.url, false)
	if resp.StatusCode != 200 || resp.Header.Get(gateway.HeaderConfigHash) != goodHash || resp.Header.Get(gateway.HeaderConfigRejected) != "" {
		t.Fatalf("readyz at start: %d %v", resp.StatusCode, resp.Header)
	}

	bad := strings.Replace(good, "    enabled: true\n", "    enabled: true\n    agent_max_seconds: 4\n", 1) +
		"channels: {telegram: {proactive_chat_ids: [nope]}}\n"
	l.writeConfig(bad)
	if got := l.gw.Reload(); got != gateway.ReloadRejected {
		t.Fatalf("Reload of a bad config = %s", got)
	}
	if got := l.gw.Reload(); got != gateway.ReloadUnchanged {
		t.Fatalf("second Reload of the same bad config = %s", got)
	}
	if n := strings.Count(l.logs.String(), "agent_max_seconds: 4 is outside"); n != 1 {
		t.Fatalf("the problem was logged %d times, want once:\n%s", n, l.logs.String())
	}
	if code, _ := post(t, l.url, "alpha-token-1234567-0123456789abcdef", toolsList, nil); code != 200 {
		t.Fatalf("alpha under the last good config: %d", code)
	}
	resp, body := readyz(t, l.url, true)
	if resp.StatusCode != 200 || resp.Header.Get(gateway.HeaderConfigHash) != goodHash ||
		!strings.HasPrefix(resp.Header.Get(gateway.HeaderConfigRejected), "gateway.mcp_http.agent_max_seconds: 4 is outside") {
		t.Fatalf("readyz after the rejection: %d %v", resp.StatusCode, resp.Header)
	}
	var v struct {
		Hash   string `json:"config_hash"`
		Reload struct {
			OK       bool     `json:"ok"`
			Problems []string `json:"problems"`
		} `json:"reload"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Hash != goodHash || v.Reload.OK || len(v.Reload.Problems) != 2 ||
		!strings.HasPrefix(v.Reload.Problems[1], "channels.telegram.proactive_chat_ids[0]") {
		t.Fatalf("verbose readyz: %s (%v)", body, err)
	}
	// The config path and the problems are the owner's to read.
	for _, bearer := range []string{"", "alpha-token-1234567-0123456789abcdef", ownerKey + "x"} {
		if resp, body := readyzAs(t, l.url+"/readyz?verbose=1", bearer); resp.StatusCode != 200 || body != "ok\n" {
			t.Errorf("verbose readyz with bearer %q: %d %q, want the terse answer", bearer, resp.StatusCode, body)
		}
	}
	m := metricsText(t, l.url)
	if !strings.Contains(m, `garra_config_reload_total{result="rejected"} 1`) || !strings.Contains(m, `garra_config_info{hash="`+goodHash+`"} 1`) {
		t.Fatalf("metrics:\n%s", grep(m, "garra_config"))
	}

	l.writeConfig(good + "# fixed\n")
	if got := l.gw.Reload(); got != gateway.ReloadApplied {
		t.Fatalf("Reload of the fixed config = %s", got)
	}
	resp, body = readyz(t, l.url, true)
	if resp.Header.Get(gateway.HeaderConfigRejected) != "" || resp.Header.Get(gateway.HeaderConfigHash) != hashOf([]byte(good+"# fixed\n")) ||
		!strings.Contains(body, `"ok":true`) {
		t.Fatalf("readyz after the fix: %v %s", resp.Header, body)
	}
	if m := metricsText(t, l.url); strings.Contains(m, goodHash) {
		t.Fatalf("config_info still names the old hash:\n%s", grep(m, "garra_config_info"))
	}
}

// Every line of a token file authenticates; rewriting the file with the
// new token alone retires the old one, without a change of config.
func TestTokenFileLinesRotate(t *testing.T) {
	l := newLive(t, nil)
	l.writeToken("alpha", "alpha-new-token-1234-0123456789abcdef\n\n  alpha-old-token-1234-0123456789abcdef  \n")
	l.writeConfig("gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n" + l.orchestratorsYAML("[status]", "alpha") + "llm: {provider: ollama, model: llama3.2}\n")
	l.serve()
	for _, tok := range []string{"alpha-new-token-1234-0123456789abcdef", "alpha-old-token-1234-0123456789abcdef"} {
		if code, _ := post(t, l.url, tok, toolsList, nil); code != 200 {
			t.Fatalf("%s during the overlap: %d", tok, code)
		}
	}
	if got := l.gw.Reload(); got != gateway.ReloadUnchanged {
		t.Fatalf("Reload with nothing changed = %s", got)
	}
	l.writeToken("alpha", "alpha-new-token-1234-0123456789abcdef\n")
	if got := l.gw.Reload(); got != gateway.ReloadApplied {
		t.Fatalf("Reload after the rotation = %s", got)
	}
	if code, _ := post(t, l.url, "alpha-old-token-1234-0123456789abcdef", toolsList, nil); code != 401 {
		t.Fatalf("old token after the overlap: %d", code)
	}
	if code, _ := post(t, l.url, "alpha-new-token-1234-0123456789abcdef", toolsList, nil); code != 200 {
		t.Fatalf("new token after the overlap: %d", code)
	}
	if strings.Contains(l.logs.String(), "alpha-old-token") || strings.Contains(l.logs.String(), "alpha-new-token") {
		t.Fatal("a token reached the log")
	}
}

// The kubelet's ..data swap of the mounted ConfigMap and token Secret
// reaches a gateway served by Run through its file watcher alone.
func TestKubeletSwapReloadsThroughRun(t *testing.T) {
	dir := t.TempDir()
	cm := &kubelet.Volume{Dir: filepath.Join(dir, "config")}
	sec := &kubelet.Volume{Dir: filepath.Join(dir, "tokens")}
	for _, v := range []*kubelet.Volume{cm, sec} {
		if err := os.Mkdir(v.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	yaml := func(names ...string) string {
		s := "gateway:\n  listen: 127.0.0.1:0\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n    orchestrators:\n"
		for _, n := range names {
			s += "      - {name: " + n + ", key_file: " + filepath.Join(sec.Dir, n) + ", tools: [status]}\n"
		}
		return s + "llm: {provider: ollama, model: llama3.2}\n"
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(sec.Publish(map[string]string{"alpha": "alpha-token-1234567-0123456789abcdef"}))
	must(cm.Publish(map[string]string{"config.yml": yaml("alpha")}))
	l := &live{t: t, path: filepath.Join(cm.Dir, "config.yml"), tokens: sec.Dir, logs: &syncBuffer{}}
	_, _ = l.run(func(o *gateway.Options) { o.ReloadResync = -1 }) // the watch alone
	time.Sleep(100 * time.Millisecond)                             // let the watch be set up

	if code, _ := post(t, l.url, "beta-token-12345678-0123456789abcdef", toolsList, nil); code != 401 {
		t.Fatalf("beta before: %d", code)
	}
	// As the operator does it: the Secret gains beta, then the ConfigMap.
	start := time.Now()
	must(sec.Publish(map[string]string{"alpha": "alpha-token-1234567-0123456789abcdef", "beta": "beta-token-12345678-0123456789abcdef"}))
	must(cm.Publish(map[string]string{"config.yml": yaml("alpha", "beta")}))
	want := hashOf([]byte(yaml("alpha", "beta")))
	for {
		if code, _ := post(t, l.url, "beta-token-12345678-0123456789abcdef", toolsList, nil); code == 200 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("beta never became callable; logs:\n%s", l.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("reload latency, kubelet swap to the new policy serving: %v", time.Since(start).Round(time.Millisecond))
	if resp, _ := readyz(t, l.url, false); resp.Header.Get(gateway.HeaderConfigHash) != want {
		t.Fatalf("readyz hash %q, want %q", resp.Header.Get(gateway.HeaderConfigHash), want)
	}
	// A rotation in the Secret alone (the config is the same), once the
	// watch restarted on the new set of token files.
	time.Sleep(200 * time.Millisecond)
	start = time.Now()
	must(sec.Publish(map[string]string{"alpha": "alpha-token-rotated-0123456789abcdef", "beta": "beta-token-12345678-0123456789abcdef"}))
	for {
		if code, _ := post(t, l.url, "alpha-token-1234567-0123456789abcdef", toolsList, nil); code == 401 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the rotated-away token still works; logs:\n%s", l.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, _ := post(t, l.url, "alpha-token-rotated-0123456789abcdef", toolsList, nil); code != 200 {
		t.Fatalf("rotated token: %d", code)
	}
	t.Logf("rotation latency, Secret swap to the old token refused: %v", time.Since(start).Round(time.Millisecond))
}

// On SIGTERM the gateway turns unready and refuses new requests with 503
// draining, while a run in flight that finishes before drain_seconds
// completes normally; then Run returns.
func TestDrainLetsARunInFlightFinish(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "done while draining", Delay: time.Second})
	l := newLive(t, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"})
	l.writeToken("alpha", "alpha-token-1234567-0123456789abcdef\n")
	l.writeConfig("gateway:\n  listen: 127.0.0.1:0\n  drain_seconds: 5\n  api_key: " + ownerKey +
		"\n  mcp_http:\n    enabled: true\n    allow_agent: true\n" + l.orchestratorsYAML("[agent]", "alpha") +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n")
	stop, wait := l.run()
	env, elapsed := drainRun(t, l, double, stop)
	if env["ok"] != true || env["answer"] != "done while draining" {
		t.Fatalf("the run in flight: %v", env)
	}
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("drain: run finished %v after SIGTERM (model delay 1s, drain_seconds 5)", elapsed.Round(time.Millisecond))
}

// A run still going at the drain deadline is cut with the timeout kind,
// not left hanging, and Run returns shortly after the deadline.
func TestDrainDeadlineCutsARunWithItsKind(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "too late", Delay: time.Minute})
	l := newLive(t, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"})
	l.writeToken("alpha", "alpha-token-1234567-0123456789abcdef\n")
	l.writeConfig("gateway:\n  listen: 127.0.0.1:0\n  drain_seconds: 1\n  api_key: " + ownerKey +
		"\n  mcp_http:\n    enabled: true\n    allow_agent: true\n" + l.orchestratorsYAML("[agent]", "alpha") +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n")
	stop, wait := l.run()
	env, elapsed := drainRun(t, l, double, stop)
	if env["ok"] != false || kindOf(env) != "timeout" {
		t.Fatalf("the run cut by the drain deadline: %v", env)
	}
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if elapsed > 4*time.Second {
		t.Fatalf("the cut run answered %v after SIGTERM, drain_seconds is 1", elapsed)
	}
	t.Logf("drain: run cut and answered %v after SIGTERM (drain_seconds 1)", elapsed.Round(time.Millisecond))
}

// With handover_seconds, a stopping gateway goes unready at once but
// keeps answering new requests, each closing its connection so the
// caller's next one goes to another replica, for that long; then it
// drains as without.
func TestHandOverServesNewRequestsOnFreshConnectionsThenDrains(t *testing.T) {
	l := newLive(t, nil)
	l.writeToken("alpha", "alpha-token-1234567-0123456789abcdef\n")
	l.writeConfig("gateway:\n  listen: 127.0.0.1:0\n  drain_seconds: 1\n  handover_seconds: 1\n  api_key: " + ownerKey +
		"\n  mcp_http:\n    enabled: true\n" + l.orchestratorsYAML("[status]", "alpha") + "llm: {provider: ollama, model: llama3.2}\n")
	stop, wait := l.run()
	// A kept-alive connection before: no Connection: close.
	hc := &http.Client{Timeout: 5 * time.Second}
	do := func() (*http.Response, string, error) {
		req, _ := http.NewRequest(http.MethodPost, l.url+"/mcp", strings.NewReader(toolsList))
		req.Header.Set("Authorization", "Bearer "+ownerKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			return nil, "", err
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp, string(b), nil
	}
	if resp, _, err := do(); err != nil || resp.StatusCode != 200 || resp.Close {
		t.Fatalf("before stop: %v %v", resp, err)
	}
	start := time.Now()
	stop()
	for {
		if resp, _ := readyz(t, l.url, false); resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatal("readyz never went unready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Served, each on its own connection, until the drain refuses (503
	// draining, or the listener is closed once nothing is in flight).
	served := 0
	var refusedAt time.Duration
	for {
		resp, body, err := do()
		if err != nil || resp.StatusCode != 200 {
			refusedAt = time.Since(start)
			if err == nil && (resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"draining"`)) {
				t.Fatalf("after the handover: %d %s", resp.StatusCode, body)
			}
			break
		}
		if !resp.Close {
			t.Fatalf("%v into the handover: a response kept its connection", time.Since(start).Round(time.Millisecond))
		}
		served++
		if time.Since(start) > 3*time.Second {
			t.Fatal("still serving 3s after stop, handover_seconds is 1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if refusedAt < 950*time.Millisecond || served < 10 {
		t.Fatalf("refused %v after stop having served %d: the handover is 1s", refusedAt, served)
	}
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("handover: %d requests served on fresh connections, refused from %v after stop", served, refusedAt.Round(time.Millisecond))
}

// drainRun starts a garra_agent run, sends SIGTERM (stop) once the model
// has it, checks the draining answers, and returns the run's envelope and
// how long after stop it arrived.
func drainRun(t *testing.T, l *live, double *llmdouble.Server, stop func()) (map[string]any, time.Duration) {
	t.Helper()
	cs := client(t, l.url, "alpha-token-1234567-0123456789abcdef")
	done := make(chan map[string]any, 1)
	go func() {
		env, _ := call(t, cs, "garra_agent", map[string]any{"message": "work"})
		done <- env
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(double.Requests()) == 0 {
		select {
		case env := <-done:
			t.Fatalf("the run ended before reaching the model: %v", env)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never reached the model")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	stop()
	for {
		resp, _ := readyz(t, l.url, false)
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatal("readyz never went unready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	code, body := post(t, l.url, ownerKey, toolsList, nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"draining"`) {
		t.Fatalf("a new request while draining: %d %s", code, body)
	}
	select {
	case env := <-done:
		return env, time.Since(start)
	case <-time.After(15 * time.Second):
		t.Fatal("the run in flight never answered")
	}
	return nil, 0
}

// What only a new process can change is kept, with a warning naming the
// field, while the rest of the same edit is applied.
func TestReloadKeepsProcessSettings(t *testing.T) {
	l := newLive(t, nil)
	l.writeToken("alpha", "alpha-token-1234567-0123456789abcdef\n")
	body := func(listen, dataDir, names string) string {
		return "data_dir: " + dataDir + "\ngateway:\n  listen: " + listen + "\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n" +
			l.orchestratorsYAML("[status]", strings.Fields(names)...) + "llm: {provider: ollama, model: llama3.2}\n"
	}
	first := t.TempDir()
	l.writeConfig(body("127.0.0.1:3999", first, "alpha"))
	l.serve()
	l.writeToken("beta", "beta-token-12345678-0123456789abcdef\n")
	l.writeConfig(body("0.0.0.0:4000", t.TempDir(), "alpha beta"))
	if got := l.gw.Reload(); got != gateway.ReloadApplied {
		t.Fatalf("Reload = %s", got)
	}
	logs := l.logs.String()
	for _, field := range []string{"field=gateway.listen", "field=data_dir"} {
		if !strings.Contains(logs, "config change needs a restart") || !strings.Contains(logs, field) {
			t.Fatalf("no restart warning for %s:\n%s", field, logs)
		}
	}
	if code, _ := post(t, l.url, "beta-token-12345678-0123456789abcdef", toolsList, nil); code != 200 {
		t.Fatalf("the rest of the edit was not applied: beta %d", code)
	}
	// The onboarding prompt still names the address in force.
	text, err := getPrompt(client(t, l.url, ownerKey), "onboard_orchestrator", map[string]string{"name": "team-b", "tools": "status"})
	if err != nil || !strings.Contains(text, "127.0.0.1:3999/mcp") || strings.Contains(text, "4000") {
		t.Fatalf("the prompt's endpoint is not the listen address in force (%v):\n%s", err, text)
	}
}

// TestReloadAppliesAroundAMissingToken: one tenant's token that is not
// there yet (a bring-your-own Secret still to be created) disables that
// orchestrator alone; the rest of the change, another tenant's onboarding,
// applies.
func TestReloadAppliesAroundAMissingToken(t *testing.T) {
	l := newLive(t, nil)
	l.writeToken("alpha", "alpha-token-1234567-0123456789abcdef\n")
	l.writeConfig("gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n" + l.orchestratorsYAML("[status]", "alpha") + "llm: {provider: ollama, model: llama3.2}\n")
	l.serve()

	l.writeToken("beta", "beta-token-12345678-0123456789abcdef\n") // gamma's file never appears
	l.writeConfig("gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n" + l.orchestratorsYAML("[status]", "alpha", "beta", "gamma") + "llm: {provider: ollama, model: llama3.2}\n")
	if got := l.gw.Reload(); got != gateway.ReloadApplied {
		t.Fatalf("Reload with one token missing = %s, want applied", got)
	}
	for token, want := range map[string]int{"alpha-token-1234567-0123456789abcdef": 200, "beta-token-12345678-0123456789abcdef": 200, "": 401} {
		if code, _ := post(t, l.url, token, toolsList, nil); code != want {
			t.Errorf("token %q: %d, want %d", token, code, want)
		}
	}
	if !strings.Contains(l.logs.String(), "gamma") {
		t.Errorf("the disabled orchestrator is not named in the log:\n%s", l.logs.String())
	}
	if resp, _ := readyz(t, l.url, false); resp.Header.Get(gateway.HeaderConfigRejected) != "" {
		t.Errorf("readyz reports a rejection: %v", resp.Header)
	}
}

// A reload that gives a second orchestrator the first one's token is
// refused, as garra config check refuses the file: both keep working.
func TestReloadRejectsASharedToken(t *testing.T) {
	l := newLive(t, nil)
	l.writeToken("alpha", "alpha-token-1234567\n")
	l.writeToken("beta", "beta-token-12345678\n")
	cfg := func() string {
		return "gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n" + l.orchestratorsYAML("[status]", "alpha", "beta") + "llm: {provider: ollama, model: llama3.2}\n"
	}
	l.writeConfig(cfg())
	l.serve()
	l.writeToken("beta", "alpha-token-1234567\n")
	if got := l.gw.Reload(); got != gateway.ReloadRejected {
		t.Fatalf("Reload with a shared token = %s, want rejected", got)
	}
	if code, _ := post(t, l.url, "alpha-token-1234567", toolsList, nil); code != 200 {
		t.Errorf("alpha under the last good config: %d", code)
	}
	if !strings.Contains(l.logs.String(), `severity=error problem="gateway.mcp_http.orchestrators[beta].key_file: holds the same token as orchestrator \"alpha\"`) {
		t.Errorf("the rejection does not name beta's key_file:\n%s", l.logs.String())
	}
}
