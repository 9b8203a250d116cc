package procguard_test

import (
	"context"
	"encoding/json"
	"fmt"
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

	"golang.org/x/sys/unix"

	"github.com/garraia/garra/internal/procguard"
)

// helperEnv makes the test binary, re-executed, play a role instead of
// running the tests: "victim", "attack" or "run" (see runHelper).
const helperEnv = "GARRA_PROCGUARD_TEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role))
	}
	os.Exit(m.Run())
}

// Unprivileged uids for tests that run as root: the server under test and,
// for the other-uid case, the attacker. Neither is nobody (65534), which
// other packages' tests run as at the same time: the process limit starts
// from the uid's task count, and another package's helper ending mid-test
// would give a command more room than the test allows it.
const (
	serverUID = 65532
	otherUID  = 65533
)

// unprivileged says how to run a helper as a non-root user: where the test
// runs as root, as serverUID from a copy of the test binary that uid
// may read and execute (the go test build directory is private); otherwise
// as the test's own user from the test binary itself. dir is a directory
// that user may write.
func unprivileged(t testing.TB) (exe string, cred *syscall.Credential, dir string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		return self, nil, t.TempDir()
	}
	base, err := os.MkdirTemp("", "procguard-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(base, "helper")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(base, "work")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	return exe, &syscall.Credential{Uid: serverUID, Gid: serverUID}, dir
}

// pipeOwnedBy returns a pipe whose inode belongs to cred's uid, as the
// pipe an MCP host running as that user hands its server would: then only
// /proc's own checks stand between a child and the write end (a pipe made
// by root, mode 0600, would turn any other uid away by itself). It makes
// the pipe with this thread's fsuid switched to that uid.
func pipeOwnedBy(t *testing.T, cred *syscall.Credential) (r, w *os.File) {
	t.Helper()
	if cred == nil {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return r, w
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Setfsuid(int(cred.Uid))
	r, w, err := os.Pipe()
	_ = unix.Setfsuid(0)
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// helper returns a command running the test binary exe in role, as cred
// (nil: as the test itself), with extra environment.
func helper(exe, role string, cred *syscall.Credential, env ...string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append([]string{helperEnv + "=" + role, "PATH=" + os.Getenv("PATH")}, env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd
}

// attackReport is what the "attack" role found.
type attackReport struct {
	Environ    string `json:"environ"` // "ok" or the error
	EnvironLen int    `json:"environ_len"`
	Canary     bool   `json:"canary"` // the victim's secret was in what it read
	Stdout     string `json:"stdout"` // opening /proc/PID/fd/1 for writing
	Mem        string `json:"mem"`
}

func runHelper(role string) int {
	switch role {
	case "victim":
		return victim()
	case "attack":
		return attack(os.Getenv("TARGET_PID"), os.Getenv("CANARY"))
	case "run":
		return runSupervised()
	case "repeat":
		return repeatSupervised()
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}

// victim stands for a garra server: a secret in its environment, its
// stdout a pipe to its host. It hardens itself when HARDEN=1, says
// "ready" and stays until stdin closes.
func victim() int {
	if os.Getenv("HARDEN") == "1" {
		if err := procguard.Harden(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if d, err := procguard.Dumpable(); d || err != nil {
			fmt.Fprintln(os.Stderr, "still dumpable after Harden", err)
			return 1
		}
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// attack tries what a tool child would: read the target's environment,
// open its stdout for writing (and write a forged line), open its memory.
func attack(pid, canary string) int {
	var r attackReport
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	r.Environ, r.EnvironLen = outcome(err), len(env)
	r.Canary = canary != "" && strings.Contains(string(env), canary)
	f, err := os.OpenFile("/proc/"+pid+"/fd/1", os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"forged":true}}` + "\n")
		_ = f.Close()
	}
	r.Stdout = outcome(err)
	m, err := os.Open("/proc/" + pid + "/mem")
	if err == nil {
		_ = m.Close()
	}
	r.Mem = outcome(err)
	_ = json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// runReport is what the "run" role saw of its supervised command.
type runReport struct {
	Output string `json:"output"`
	Code   int    `json:"code"`
	Err    string `json:"err,omitempty"`
}

// runSupervised runs CMD with /bin/sh under a supervisor (MAX_PROCS, and
// TIMEOUT_MS when set; in a Landlock domain granting LANDLOCK_WRITE and
// LANDLOCK_READ, colon-separated, when the first is set), as a subreaper when SUBREAPER=1, and prints a
// runReport.
func runSupervised() int {
	if os.Getenv("SUBREAPER") == "1" {
		if err := procguard.BecomeSubreaper(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	maxProcs, _ := strconv.Atoi(os.Getenv("MAX_PROCS"))
	ctx := context.Background()
	if ms, _ := strconv.Atoi(os.Getenv("TIMEOUT_MS")); ms > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	// A file, not a pipe: an orphan holding it open must not hold up Wait.
	out, err := os.CreateTemp("", "procguard-run-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.Remove(out.Name()) }()
	lim := procguard.Limits{MaxProcs: maxProcs}
	if w := os.Getenv("LANDLOCK_WRITE"); w != "" {
		lim.Landlock = &procguard.Landlock{ABI: procguard.LandlockABI(), Write: strings.Split(w, ":"),
			Read: strings.Split(os.Getenv("LANDLOCK_READ"), ":")}
	}
	if os.Getenv("NS") == "1" {
		lim.Namespaces = &procguard.Namespaces{Net: os.Getenv("NS_NET") == "1"}
		if ro := os.Getenv("NS_RO"); ro != "" {
			lim.Namespaces.ReadOnly = strings.Split(ro, ":")
		}
		if pin := os.Getenv("NS_PIN"); pin != "" {
			lim.Namespaces.Pin = strings.Split(pin, ":")
		}
	}
	c := procguard.Command(ctx, lim, "/bin/sh", "-c", os.Getenv("CMD"))
	c.Cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	c.Cmd.Dir = os.Getenv("DIR")
	c.Cmd.Stdout, c.Cmd.Stderr = out, out
	var r runReport
	err = c.Start()
	if err == nil {
		err = c.Wait()
	}
	data, _ := os.ReadFile(out.Name())
	r.Output, r.Code = string(data), c.Cmd.ProcessState.ExitCode()
	if err != nil {
		r.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

// repeatSupervised runs /bin/true under a supervisor N times in a row
// (MAX_PROCS as for "run"), for the benchmark: one helper start for many
// supervised commands.
func repeatSupervised() int {
	n, _ := strconv.Atoi(os.Getenv("N"))
	maxProcs, _ := strconv.Atoi(os.Getenv("MAX_PROCS"))
	for range n {
		lim := procguard.Limits{MaxProcs: maxProcs}
		if os.Getenv("NS") == "1" {
			lim.Namespaces = &procguard.Namespaces{Net: os.Getenv("NS_NET") == "1"}
		}
		c := procguard.Command(context.Background(), lim, "/bin/true")
		c.Cmd.Env = []string{}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := c.Wait(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}
