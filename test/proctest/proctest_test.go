//go:build linux

package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAliveAndWaitGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) {
		t.Fatal("a running sleep is not alive")
	}
	_ = cmd.Process.Kill()
	WaitGone(t, pid, "killed sleep") // a zombie until Wait: not alive
	_ = cmd.Wait()
	if Alive(pid) {
		t.Fatal("a reaped process is alive")
	}
}

func TestPidsIn(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pids")
	if err := os.WriteFile(p, []byte("12\n 34\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := PidsIn(t, p); len(got) != 2 || got[0] != 12 || got[1] != 34 {
		t.Fatalf("PidsIn = %v", got)
	}
	if Alive(1 << 30) {
		t.Fatal("pid " + strconv.Itoa(1<<30) + " cannot exist")
	}
}

func TestWaitPidsAndGoneWithin(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("sh", "-c", `echo $$ > "$0"; sleep 0.2`, p)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	pids := WaitPids(t, p, 1, &strings.Builder{})
	if len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("pids %v, want [%d]", pids, cmd.Process.Pid)
	}
	start := time.Now()
	if d := GoneWithin(t, pids, start, 5*time.Second); d < 100*time.Millisecond {
		t.Fatalf("gone after %v, but the command sleeps 200 ms", d)
	}
	<-done
}

func TestSpread(t *testing.T) {
	got := Spread([]time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond})
	if got != "p50 20ms, max 30ms over 3 runs" {
		t.Fatalf("Spread = %q", got)
	}
}
