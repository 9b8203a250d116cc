//go:build linux

package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/garraia/garra/test/fakes/llmdouble"

	"github.com/garraia/garra/test/proctest"
)

// The boundary between `garra mcp-server` and the bash its agent runs, end
// to end: the server runs as an unprivileged user (uid 65534 where the
// test runs as root, else the test's own), bash as the same user, and its
// stdout is a pipe that user owns, as with a real MCP host. A script the
// agent writes and runs (the gate does not look into script files) walks
// up its ancestors to the server and tries to read its environment and to
// forge a JSON-RPC response on its stdout; then a setsid child it starts
// must be gone once the call returns.
func TestStdioServerChildCannotReachTheServer(t *testing.T) {
	base := sharedTempDir(t)
	repo := filepath.Join(base, "repo")
	home := filepath.Join(base, "home")
	for _, d := range []string{repo, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const script = `# walk up to the stdio server; try its environment and its stdout
p=$$
[ "$p" = 1 ] && echo "own pid namespace: no parent to walk to"
while [ "$p" -gt 1 ]; do
	if cat /proc/$p/environ > /dev/null 2>&1; then echo "environ $p readable"; else echo "environ $p denied"; fi
	if { echo '{"jsonrpc":"2.0","id":999,"result":{"forged":true}}' > /proc/$p/fd/1; } 2> /dev/null; then echo "stdout $p written"; else echo "stdout $p denied"; fi
	case "$(tr '\0' ' ' < /proc/$p/cmdline)" in *mcp-server*) break;; esac
	read -r _ _ _ p _ < /proc/$p/stat
done
`
	writeArgs, _ := json.Marshal(map[string]string{"path": "walk.sh", "content": script})
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_write", Args: string(writeArgs)}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"bash walk.sh"}`}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"setsid sleep 300 > /dev/null 2>&1 & echo $! > escaped.pid; sleep 0.3; echo started"}`}}},
		llmdouble.Step{Text: "done"},
	)
	cfg := filepath.Join(base, "config.yml")
	if err := os.WriteFile(cfg, []byte("llm:\n  provider: openrouter\n  base_url: "+double.OpenAIBaseURL()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const canary = "canary-secret-6e0f3a9d1b2c"
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "OPENROUTER_API_KEY=" + fakeKey, "GARRA_TEST_CANARY=" + canary,
		"GARRAIA_MCP_ENABLE_TOOLS=yes", "GARRAIA_MCP_ALLOWED_DIRS=" + repo, "GARRAIA_EXECUTION_PROFILE=isolated-pod"}
	cred := chownForChild(t, base)

	cmd := exec.Command(garraBin, "mcp-server", "--config", cfg)
	cmd.Env = env
	cmd.Dir = base
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, w := pipeOwnedBy(t, cred)
	cmd.Stdout = w
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	raw := &lockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "boundary-test", Version: "0"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: teeReadCloser{io.TeeReader(stdout, raw), stdout}, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}

	env0, isErr := callAgent(t, cs, map[string]any{"message": "walk", "working_dir": repo})
	if isErr || !env0.OK || len(env0.ToolCalls) != 3 {
		t.Fatalf("envelope %+v\nstderr: %s", env0, stderr.String())
	}
	reqs := double.Requests()
	walk := string(reqs[2].RawBody) // the request after the walk carries its output
	server := strconv.Itoa(cmd.Process.Pid)
	// In a PID namespace of its own the shell is pid 1 and the server is
	// not there to walk to at all, which is the stronger boundary.
	ownNS := strings.Contains(walk, "own pid namespace")
	for _, want := range []string{"environ " + server + " denied", "stdout " + server + " denied"} {
		if !ownNS && !strings.Contains(walk, want) {
			t.Errorf("the walk's output lacks %q: %s", want, env0.ToolCalls[1].Summary)
		}
	}
	// Control: the same script reads and writes its own shell's, so the
	// denials are the server's doing, not a /proc that hides everything.
	if ownNS {
		t.Log("bash runs in its own PID namespace: the server is not even visible to it")
	} else if !strings.Contains(walk, "readable") || !strings.Contains(walk, "written") {
		t.Errorf("the walk could not even reach its own shell, the test cannot tell: %s", env0.ToolCalls[1].Summary)
	}
	if strings.Contains(walk, server+" readable") || strings.Contains(walk, server+" written") {
		t.Errorf("bash reached the server: %s", env0.ToolCalls[1].Summary)
	}
	for _, r := range reqs {
		if strings.Contains(string(r.RawBody), canary) {
			t.Error("the server's environment reached the model")
		}
	}
	// The setsid child of the last call is gone.
	// (PidsIn finds it by its own pid and its directory: the call may run
	// in a PID namespace, where $! is not this process's view.)
	for _, pid := range proctest.PidsIn(t, filepath.Join(repo, "escaped.pid")) {
		proctest.WaitGone(t, pid, "the setsid child of the last call")
	}

	_ = cs.Close()
	_ = cmd.Wait()
	out := raw.String()
	assertJSONRPCOnly(t, out)
	// Every line answers one of the client's requests (ids 1 and 2; the
	// forged text may appear inside a tool summary, escaped, not as a line).
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || (string(msg.ID) != "1" && string(msg.ID) != "2") {
			t.Errorf("a line the client did not ask for reached the host: %s", line)
		}
	}
}

// sharedTempDir is a temporary directory an unprivileged child may use.
func sharedTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "garra-boundary-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	d, err = filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// chownForChild hands dir (recursively, as it is when called) to uid/gid
// 65534 and returns that credential where the test runs as root; nil, the
// test's own user, otherwise. The binary's directory must be open to it.
func chownForChild(t *testing.T, dir string) *syscall.Credential {
	t.Helper()
	if os.Getuid() != 0 {
		return nil
	}
	const nobody = 65534
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
	return &syscall.Credential{Uid: nobody, Gid: nobody}
}

// pipeOwnedBy returns a pipe whose inode belongs to cred's uid, as the pipe
// an MCP host running as that user gives its server: only /proc's own
// checks then stand between a child and the write end (a root-made pipe,
// mode 0600, would turn the child away by itself). It switches this
// thread's fsuid while it makes the pipe.
func pipeOwnedBy(t *testing.T, cred *syscall.Credential) (r, w *os.File) {
	t.Helper()
	if cred != nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_ = unix.Setfsuid(int(cred.Uid))
		defer unix.Setfsuid(0)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}
