// Package proctest is for tests that start processes meant to die with a
// call (a setsid child, an orphan of a killed supervisor): it tells when
// such a process is really gone and reads the pids a script wrote down. It
// also copies the test binary for helpers run as another uid.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Alive reports whether pid is a live process: it exists in /proc and is
// not a zombie waiting to be reaped.
func Alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself
	// hold spaces and parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// WaitGone fails the test unless pid is gone within 5 seconds; a process
// still running then is killed so that a failing test leaves nothing
// behind.
func WaitGone(t testing.TB, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for Alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PidsIn reads the whitespace-separated pids a script wrote to path, as
// this process sees them. A script may run in a PID namespace of its own,
// where its $$ and $! are not pids here: each is matched to the live
// process whose innermost pid it is and whose working directory is the
// script's (path's directory). A pid that matches no live process comes
// back as 0, which is never alive.
func PidsIn(t testing.TB, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q is not a pid", path, f)
		}
		pids = append(pids, hostPid(p, filepath.Dir(path)))
	}
	return pids
}

// hostPid is the pid here of the live process that calls itself inner and
// works in dir, or 0.
func hostPid(inner int, dir string) int {
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return 0
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !Alive(pid) {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		ns := ""
		for line := range strings.SplitSeq(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				ns = v
			}
		}
		levels := strings.Fields(ns)
		if len(levels) == 0 || levels[len(levels)-1] != strconv.Itoa(inner) {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == want {
			return pid
		}
	}
	return 0
}

// ExecutableCopy copies the running test binary into dir, executable by
// everyone, and returns its path: a helper run as another uid cannot
// execute the original, which go test builds in a private directory.
func ExecutableCopy(t testing.TB, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "helper")
	if err := os.WriteFile(exe, data, 0o755); err != nil { //nolint:gosec // G306: the other uid must execute it
		t.Fatal(err)
	}
	return exe
}
