package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/readmeblocks"
)

// The README's blocks are run as their markers say (test/readmeblocks):
// this file runs those of the laptop and the gateway (sh, serve, file,
// config, mcp-json) against the binary under test, in README order, in one
// scratch directory, with bin/garra that binary, a provider key set and
// every provider the LLM double on loopback. The README's loopback ports
// are swapped for free ones (tests running at once must not collide), and
// so is Ollama's, for the double. Nothing leaves loopback.

// readmeEnv is the machine a README reader has, made of loopback parts.
type readmeEnv struct {
	dir, home string
	env       []string
	ports     *strings.Replacer
}

func newReadmeEnv(t *testing.T) *readmeEnv {
	t.Helper()
	double := llmdouble.New(t) // echo mode: it answers every question
	e := &readmeEnv{dir: t.TempDir(), home: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(e.dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(garraBin, filepath.Join(e.dir, "bin", "garra")); err != nil {
		t.Fatal(err)
	}
	// The default provider, openrouter, is the double.
	cfg := filepath.Join(e.home, ".garraia", "config.yml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("llm:\n  base_url: "+double.OpenAIBaseURL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = []string{"HOME=" + e.home, "PATH=" + filepath.Dir(garraBin) + ":" + os.Getenv("PATH"),
		"OPENROUTER_API_KEY=sk-or-v1-readme-test-key"}
	e.ports = strings.NewReplacer("127.0.0.1:3888", freeAddr(t), "127.0.0.1:8080", freeAddr(t),
		"localhost:11434", strings.TrimPrefix(double.URL(), "http://"))
	return e
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// laptopRunners are the runners of this file.
var laptopRunners = map[string]func(*readmeEnv, *testing.T, readmeblocks.Block) error{
	"sh":       (*readmeEnv).runSh,
	"serve":    (*readmeEnv).runServe,
	"file":     (*readmeEnv).runFile,
	"config":   (*readmeEnv).runConfig,
	"mcp-json": (*readmeEnv).runMCPJSON,
}

// runBlocks runs every block of readme that a runner of this file owns, in
// order, and returns one error per failed block.
func runBlocks(t *testing.T, readme string) (ran int, failed []error) {
	t.Helper()
	e := newReadmeEnv(t)
	for _, b := range readmeblocks.Parse(readme) {
		run, ok := laptopRunners[b.Runner]
		if !ok {
			continue
		}
		ran++
		if err := run(e, t, b); err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", b.Where(), err))
		}
	}
	return ran, failed
}

// Every block of the README carries a marker naming a runner.
func TestReadmeBlocksAreMarked(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeblocks.Parse(string(raw))
	if len(blocks) < 30 {
		t.Fatalf("only %d blocks found: the parser is broken", len(blocks))
	}
	for _, p := range readmeblocks.Problems(blocks) {
		t.Error(p)
	}
	for name, r := range readmeblocks.Runners {
		if strings.HasPrefix(r.By, "cmd/garra") && laptopRunners[name] == nil {
			t.Errorf("runner %s says cmd/garra runs it, and nothing here does", name)
		}
	}
	for _, b := range readmeblocks.Of(blocks, "by") {
		if !testExists(t, b.Argument) {
			t.Errorf("%s: no test %s runs it", b.Where(), b.Argument)
		}
	}
}

// testExists reports whether a _test.go file of the repository declares
// the test function name.
func testExists(t *testing.T, name string) bool {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "grep", "-l", "-F", "func "+name+"(t *testing.T)", "--", "*_test.go").Output()
	return err == nil && len(bytes.TrimSpace(out)) > 0
}

// Every laptop and gateway block of the README, as written.
func TestReadmeBlocksRun(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ran, failed := runBlocks(t, string(raw))
	for _, err := range failed {
		t.Error(err)
	}
	if ran < 10 {
		t.Fatalf("only %d blocks ran", ran)
	}
	t.Logf("%d README blocks ran", ran)
}

// sh: sh -e in the scratch directory; "expect TEXT" wants TEXT in stdout.
func (e *readmeEnv) runSh(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	out, err := e.sh(b.Body, 90*time.Second)
	if err != nil {
		return err
	}
	if want, ok := strings.CutPrefix(b.Argument, "expect "); ok && !strings.Contains(out, want) {
		return fmt.Errorf("stdout has no %q:\n%s", want, out)
	}
	return nil
}

// sh runs a script as the README reader would, then stops whatever it
// left in the background (SIGTERM, as Ctrl-C in that shell would).
func (e *readmeEnv) sh(script string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", e.ports.Replace(script))
	cmd.Dir, cmd.Env = e.dir, e.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second // a background job keeps the pipes open after sh exits
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	err := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // sh itself exited 0
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("sh: %w\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

var listenRe = regexp.MustCompile(`--listen (127\.0\.0\.1:\d+)`)

// serve: a server started in the foreground must listen on its --listen
// address; then it gets SIGTERM.
func (e *readmeEnv) runServe(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	script := e.ports.Replace(b.Body)
	m := listenRe.FindStringSubmatch(script)
	if m == nil {
		return fmt.Errorf("a serve block names no --listen 127.0.0.1:PORT")
	}
	cmd := exec.Command("sh", "-e", "-c", script)
	cmd.Dir, cmd.Env = e.dir, e.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("exited before listening on %s: %w\nstderr:\n%s", m[1], err, stderr.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", m[1], time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on %s after 20 s\nstderr:\n%s", m[1], stderr.String())
}

// blockPath is where a file block goes: its first line is `# NAME`.
func (e *readmeEnv) blockPath(b readmeblocks.Block) (string, error) {
	first, _, _ := strings.Cut(b.Body, "\n")
	name, ok := strings.CutPrefix(strings.TrimSpace(first), "# ")
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return "", fmt.Errorf("a file block's first line must be `# NAME`, not %q", first)
	}
	if rest, ok := strings.CutPrefix(name, "~/"); ok {
		return filepath.Join(e.home, rest), nil
	}
	if filepath.IsAbs(name) || strings.Contains(name, "..") {
		return "", fmt.Errorf("file %q is outside the reader's directory and HOME", name)
	}
	return filepath.Join(e.dir, name), nil
}

// file: written for the blocks after it, and run by config check with
// exit 0 (with the variables it names set, as the README's shell has
// them by then).
func (e *readmeEnv) runFile(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	p, err := e.blockPath(b)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(e.ports.Replace(b.Body)), 0o600); err != nil {
		return err
	}
	code, out := e.configCheck(p, b.Body)
	if code != 0 {
		return fmt.Errorf("garra config check --config %s exits %d, not 0:\n%s", filepath.Base(p), code, out)
	}
	return nil
}

// config: a part of config.yml that config check runs (exit 0, or 3
// for what the part leaves off); an unknown field is exit 2, a refusal 1.
func (e *readmeEnv) runConfig(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(p, []byte(e.ports.Replace(b.Body)), 0o600); err != nil {
		return err
	}
	if code, out := e.configCheck(p, b.Body); code != 0 && code != 3 {
		return fmt.Errorf("garra config check exits %d:\n%s", code, out)
	}
	return nil
}

var envNameRe = regexp.MustCompile(`\b\w*_env: *([A-Z][A-Z0-9_]*)`)

// configCheck runs garra config check on path with every variable body
// names (key_env: X and the like), and the gateway key, set to a fresh
// 32-byte value.
func (e *readmeEnv) configCheck(path, body string) (int, string) {
	env := append([]string{}, e.env...)
	names := []string{"GARRAIA_GATEWAY_API_KEY"}
	for _, m := range envNameRe.FindAllStringSubmatch(body, -1) {
		names = append(names, m[1])
	}
	for i, n := range names {
		env = append(env, fmt.Sprintf("%s=%064x", n, i+1))
	}
	cmd := exec.Command(garraBin, "config", "check", "--config", path)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, string(out)
}

// mcp-json: the host's config parses strictly, and the garra command each
// entry starts (garra itself, or what its npx or docker entry runs) answers
// initialize with garra's serverInfo.
func (e *readmeEnv) runMCPJSON(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(b.Body))
	dec.DisallowUnknownFields()
	var cfg mcpServersBlock
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("does not parse: %w", err)
	}
	if len(cfg.MCPServers) == 0 {
		return fmt.Errorf("no mcpServers entry")
	}
	for name, srv := range cfg.MCPServers {
		args, problems := garraArgs(t, srv.Command, srv.Args)
		if len(problems) > 0 {
			return fmt.Errorf("%s: %s", name, strings.Join(problems, "; "))
		}
		env := append([]string{}, e.env...)
		for k, v := range srv.Env {
			env = append(env, k+"="+v)
		}
		if err := initializes(args, env); err != nil {
			return fmt.Errorf("%s: garra %s: %w", name, strings.Join(args, " "), err)
		}
	}
	return nil
}

// initializes starts garra with args and checks its answer to initialize.
func initializes(args, env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, garraBin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%w\nstderr:\n%s", err, stderr.String())
	}
	line, _ := bufio.NewReader(bytes.NewReader(out)).ReadString('\n')
	var r struct {
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return fmt.Errorf("the answer to initialize is not JSON (%w): %q\nstderr:\n%s", err, line, stderr.String())
	}
	if r.Result.ServerInfo.Name != "garra" {
		return fmt.Errorf("no initialize result from garra: %q\nstderr:\n%s", line, stderr.String())
	}
	return nil
}

// brokenReadme holds one broken example per runner and one unmarked
// block; each must fail, or the tests above prove nothing.
const brokenReadme = "# Broken\n\n" +
	// The quick start as the README once had it: agent listed while
	// allow_agent is false, and the tokens set for the gateway alone, so
	// curl sends an empty bearer and gets 401.
	"<!-- test: file -->\n```yaml\n# gateway.yml\ngateway:\n  listen: 127.0.0.1:3888\n  mcp_http:\n    enabled: true\n" +
	"    orchestrators:\n      - {name: n8n, key_env: N8N_MCP_KEY, tools: [status, agent]}\n```\n\n" +
	"<!-- test: sh expect garra_status -->\n```sh\nGARRAIA_GATEWAY_API_KEY=$(openssl rand -hex 32) N8N_MCP_KEY=$(openssl rand -hex 32) \\\n" +
	"  bin/garra gateway --config gateway.yml &\nuntil curl -sf http://127.0.0.1:3888/readyz >/dev/null; do sleep 0.2; done\n" +
	"curl -s http://127.0.0.1:3888/mcp -H \"Authorization: Bearer $N8N_MCP_KEY\" \\\n" +
	"  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n" +
	"  -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}'\n```\n\n" +
	// A command that no longer exists.
	"<!-- test: sh -->\n```sh\nbin/garra mcp --stdio </dev/null\n```\n\n" +
	// A config key that does not exist.
	"<!-- test: config -->\n```yaml\nllm:\n  providr: ollama\n```\n\n" +
	// A sandbox on a workspace that is not there.
	"<!-- test: serve -->\n```sh\nGARRA_SANDBOX_TOKEN=$(openssl rand -hex 32) bin/garra sandbox --workspace /no/such/ws --listen 127.0.0.1:8080\n```\n\n" +
	// A host config whose command is garra with a subcommand it lacks.
	"<!-- test: mcp-json -->\n```json\n{\"mcpServers\": {\"garra\": {\"command\": \"garra\", \"args\": [\"stdio\"]}}}\n```\n\n" +
	// A block nobody runs.
	"```sh\nbin/garra version\n```\n"

func TestReadmeRunnerCatchesBrokenExamples(t *testing.T) {
	blocks := readmeblocks.Parse(brokenReadme)
	if p := readmeblocks.Problems(blocks); len(p) != 1 || !strings.Contains(p[0], "no <!-- test: RUNNER --> marker") {
		t.Errorf("the unmarked block: problems %q", p)
	}
	ran, failed := runBlocks(t, brokenReadme)
	if ran != 6 || len(failed) != ran {
		t.Fatalf("%d of %d broken blocks failed:\n%v", len(failed), ran, failed)
	}
	for _, err := range failed {
		t.Logf("refused as it should be: %.300s", err)
	}
}
