package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/garraia/garra/test/proctest"
)

// hostHelperEnv makes the test binary, re-executed, run one HostRunner
// command (CMD, in DIR, MAX_PROCS) and print a hostReport, instead of
// running the tests.
const hostHelperEnv = "GARRA_TOOLS_TEST_HOST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(hostHelperEnv) == "1" {
		os.Exit(hostHelper())
	}
	os.Exit(m.Run())
}

type hostReport struct {
	Output string `json:"output"`
	Code   int    `json:"code"`
	Err    string `json:"err,omitempty"`
}

func hostHelper() int {
	maxProcs, _ := strconv.Atoi(os.Getenv("MAX_PROCS"))
	out, code, err := (&HostRunner{MaxProcs: maxProcs}).Run(context.Background(), os.Getenv("CMD"), os.Getenv("DIR"))
	r := hostReport{Output: out, Code: code}
	if err != nil {
		r.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

// asNobody runs the host helper as uid/gid 65534 from a copy of the test
// binary that user may execute, in a directory it may write. Root only.
func asNobody(t *testing.T, env ...string) hostReport {
	t.Helper()
	base, err := os.MkdirTemp("", "tools-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	exe := proctest.ExecutableCopy(t, base)
	work := filepath.Join(base, "work")
	for _, err := range []error{os.Chmod(base, 0o755), os.Mkdir(work, 0o777), os.Chmod(work, 0o777)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append([]string{hostHelperEnv + "=1", "PATH=" + os.Getenv("PATH"), "DIR=" + work}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v\n%s", err, errb.String())
	}
	var r hostReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("helper report %q: %v", out.String(), err)
	}
	return r
}

// Every way a command can leave bash's process group (or its life) still
// ends with the call, whether the shell exits or the call times out.
func TestHostRunnerLeavesNothingBehind(t *testing.T) {
	escapes := []struct{ name, cmd string }{
		{"setsid", `setsid sleep 300 & echo $! >> pids`},
		{"setsid --fork", `setsid -f sh -c 'echo $$ >> pids; exec sleep 300'`},
		{"job control", `set -m; sleep 300 & echo $! >> pids`},
		{"nohup", `nohup sleep 300 >/dev/null 2>&1 & echo $! >> pids`},
		{"disown", `sleep 300 & echo $! >> pids; disown`},
		{"subshell", `(sleep 300 & echo $! >> pids)`},
		{"setsid subshell", `(set -m; (sleep 300 & echo $! >> pids) &)`},
	}
	for _, e := range escapes {
		for _, timeout := range []bool{false, true} {
			name := e.name + "/exits"
			if timeout {
				name = e.name + "/times out"
			}
			t.Run(name, func(t *testing.T) {
				work := canonTempDir(t)
				ctx := context.Background()
				cmd := e.cmd + "\nsleep 0.2; echo done"
				if timeout {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 1500*time.Millisecond)
					defer cancel()
					cmd += "; sleep 300"
				}
				start := time.Now()
				out, code, err := (&HostRunner{}).Run(ctx, cmd, work)
				if timeout != errors.Is(err, context.DeadlineExceeded) || !strings.Contains(out, "done") || (!timeout && code != 0) {
					t.Fatalf("Run = %q, %d, %v", out, code, err)
				}
				if d := time.Since(start); d > 6*time.Second {
					t.Fatalf("Run took %v", d)
				}
				pids := proctest.PidsIn(t, filepath.Join(work, "pids"))
				if len(pids) == 0 {
					t.Fatal("the command did not start its process")
				}
				for _, p := range pids {
					proctest.WaitGone(t, p, "escaped process")
				}
			})
		}
	}
}

// The same through the bash tool: the gate lets setsid through (it is an
// ordinary program), and the runner, not the gate, makes it end.
func TestBashToolSetsidChildEndsWithTheCall(t *testing.T) {
	work := canonTempDir(t)
	l := NewLocal(LocalOptions{WorkingDir: work, Bash: &HostRunner{}})
	res := callBashTool(t, l, `{"command":"setsid sleep 300 > /dev/null 2>&1 & echo $! > pid.txt; sleep 0.2; echo started"}`)
	if res.IsError || res.Output != "started\n" {
		t.Fatalf("result %+v", res)
	}
	proctest.WaitGone(t, readPid(t, filepath.Join(work, "pid.txt")), "setsid child")
}

// A non-root command gets RLIMIT_NPROC from MaxProcs: its uid's task count
// plus the budget, far below the limit it would otherwise inherit.
func TestHostRunnerBoundsProcesses(t *testing.T) {
	run := func(maxProcs int) (int, string) {
		var r hostReport
		if os.Getuid() == 0 {
			r = asNobody(t, "CMD=ulimit -u", "MAX_PROCS="+strconv.Itoa(maxProcs))
		} else {
			out, code, err := (&HostRunner{MaxProcs: maxProcs}).Run(context.Background(), "ulimit -u", canonTempDir(t))
			r = hostReport{Output: out, Code: code}
			if err != nil {
				r.Err = err.Error()
			}
		}
		if r.Code != 0 || r.Err != "" {
			t.Fatalf("MaxProcs %d: %+v", maxProcs, r)
		}
		n, err := strconv.Atoi(strings.TrimSpace(r.Output))
		if err != nil {
			return -1, r.Output // "unlimited"
		}
		return n, r.Output
	}
	limited, out := run(10)
	if limited < 10 {
		t.Fatalf("ulimit -u with MaxProcs 10 = %q, want the uid's tasks plus 10", out)
	}
	free, out := run(-1)
	if free != -1 && free <= limited {
		t.Fatalf("ulimit -u without a limit = %q, not above the limited %d", out, limited)
	}
	// The uid's task count moves a little between runs (threads come and go).
	if def, _ := run(0); def-limited < 246-40 || def-limited > 246+40 {
		t.Fatalf("default MaxProcs: ulimit -u = %d, want about %d", def, limited+246)
	}
}

// BenchmarkHostRunner is the cost of one trivial command through the
// supervisor (one more exec of the test binary per call).
func BenchmarkHostRunner(b *testing.B) {
	dir := b.TempDir()
	r := &HostRunner{}
	for b.Loop() {
		if _, code, err := r.Run(context.Background(), "true", dir); err != nil || code != 0 {
			b.Fatal(code, err)
		}
	}
}
