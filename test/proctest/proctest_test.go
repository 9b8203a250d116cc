//go:build linux

package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
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
