//go:build linux

package proctest

import (
	"fmt"
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
	dir := t.TempDir()
	p := filepath.Join(dir, "pids")
	// A live process working in the file's directory comes back as
	// itself; one working elsewhere, and a pid nothing has, as 0.
	here := exec.Command("sleep", "5")
	here.Dir = dir
	elsewhere := exec.Command("sleep", "5")
	elsewhere.Dir = t.TempDir()
	for _, c := range []*exec.Cmd{here, elsewhere} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	text := fmt.Sprintf("%d\n %d %d\n", here.Process.Pid, elsewhere.Process.Pid, 1<<30)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := PidsIn(t, p); len(got) != 3 || got[0] != here.Process.Pid || got[1] != 0 || got[2] != 0 {
		t.Fatalf("PidsIn(%q) = %v", text, got)
	}
	if Alive(1 << 30) {
		t.Fatal("pid " + strconv.Itoa(1<<30) + " cannot exist")
	}
}

func TestWaitPidsAndGoneWithin(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pids")
	cmd := exec.Command("sh", "-c", `echo $$ > "$0"; sleep 0.2`, p)
	cmd.Dir = dir
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
