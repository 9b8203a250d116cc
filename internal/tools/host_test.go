//go:build unix

package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/test/proctest"
)

func TestHostRunnerEnvAllowlist(t *testing.T) {
	t.Setenv("GARRA_TEST_SECRET_X", "hunter2")
	t.Setenv("OPENROUTER_API_KEY", "sk-or-v1-secret")
	t.Setenv("LANG", "C.UTF-8")
	r := &HostRunner{}
	out, code, err := r.Run(context.Background(), `echo "${GARRA_TEST_SECRET_X:-unset} ${OPENROUTER_API_KEY:-unset} $LANG"; compgen -e`, canonTempDir(t))
	if err != nil || code != 0 {
		t.Fatalf("Run = %q, %d, %v", out, code, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "unset unset C.UTF-8" {
		t.Fatalf("child saw %q", lines[0])
	}
	// Everything exported in the child is allowlisted, or set by bash itself.
	allowed := append(EnvAllowlist(), "PWD", "SHLVL", "OLDPWD", "_")
	for _, name := range lines[1:] {
		if !slices.Contains(allowed, name) {
			t.Errorf("child environment has %s", name)
		}
	}
}

func TestEnvAllowlistIsACopy(t *testing.T) {
	a := EnvAllowlist()
	want := []string{"PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER"}
	if !slices.Equal(a, want) {
		t.Fatalf("EnvAllowlist = %q", a)
	}
	a[0] = "SECRET"
	if EnvAllowlist()[0] != "PATH" {
		t.Fatal("EnvAllowlist returned shared state")
	}
}

func TestHostRunnerDirectory(t *testing.T) {
	work := canonTempDir(t)
	def := canonTempDir(t)
	r := &HostRunner{DefaultDir: def}

	out, _, err := r.Run(context.Background(), "pwd", work)
	if err != nil || strings.TrimSpace(out) != work {
		t.Fatalf("pwd with workDir = %q, %v; want %s", out, err, work)
	}
	out, _, err = r.Run(context.Background(), "pwd", "")
	if err != nil || strings.TrimSpace(out) != def {
		t.Fatalf("pwd without workDir = %q, %v; want DefaultDir %s", out, err, def)
	}
	if _, _, err := (&HostRunner{}).Run(context.Background(), "pwd", ""); !errors.Is(err, ErrNoWorkDir) {
		t.Fatalf("no directory at all: err = %v, want ErrNoWorkDir", err)
	}
}

func TestHostRunnerExitCodeAndStderr(t *testing.T) {
	out, code, err := (&HostRunner{}).Run(context.Background(), "echo out; echo err >&2; exit 7", canonTempDir(t))
	if err != nil || code != 7 || out != "out\nerr\n" {
		t.Fatalf("Run = %q, %d, %v", out, code, err)
	}
	_, code, err = (&HostRunner{}).Run(context.Background(), "kill -TERM $$", canonTempDir(t))
	if err != nil || code != 128+15 {
		t.Fatalf("killed shell: code %d, err %v; want 143", code, err)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestHostRunnerTimeoutKillsTheGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	work := canonTempDir(t)
	// Long enough for bash to start and write bg.pid on a loaded CI machine.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	// A child in the background and one in the foreground, both sleeping.
	_, _, err := (&HostRunner{}).Run(ctx, "sleep 30 & echo $! > bg.pid; sleep 30", work)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run returned %v after a 1.5s timeout", d)
	}
	proctest.WaitGone(t, readPid(t, filepath.Join(work, "bg.pid")), "background child")
}

// A job left in the background when the shell exits neither survives nor
// holds the result back.
func TestHostRunnerKillsLeftoversOnExit(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	work := canonTempDir(t)
	start := time.Now()
	out, code, err := (&HostRunner{}).Run(context.Background(), "sleep 30 & echo $! > bg.pid; echo done", work)
	if err != nil || code != 0 || out != "done\n" {
		t.Fatalf("Run = %q, %d, %v", out, code, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Run took %v: it waited for the background job", d)
	}
	proctest.WaitGone(t, readPid(t, filepath.Join(work, "bg.pid")), "background child")
}

func TestHostRunnerOutputCapped(t *testing.T) {
	r := &HostRunner{MaxOutputBytes: 1000}
	out, code, err := r.Run(context.Background(), "head -c 200000 /dev/zero | tr '\\0' a", canonTempDir(t))
	if err != nil || code != 0 {
		t.Fatalf("Run: %d, %v", code, err)
	}
	if !strings.HasPrefix(out, strings.Repeat("a", 1000)+"\n[output truncated: first 1000 of 200000 bytes shown]") || len(out) > 1100 {
		t.Fatalf("output not capped: %d bytes, tail %q", len(out), out[max(0, len(out)-80):])
	}
}
