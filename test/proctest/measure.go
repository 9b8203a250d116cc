package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// WaitPids waits up to 15 seconds for path to hold n pids (a command that
// writes its own, and its children's) and returns them; logs is shown if
// they never come.
func WaitPids(t testing.TB, path string, n int, logs fmt.Stringer) []int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.Fields(string(b))) >= n {
			return PidsIn(t, path)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never wrote %s; log:\n%s", filepath.Base(path), logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// GoneWithin returns how long after since the last of pids was gone. Past
// bound it kills every one still running, so that a failing test leaves
// nothing behind, and fails the test.
func GoneWithin(t testing.TB, pids []int, since time.Time, bound time.Duration) time.Duration {
	t.Helper()
	for slices.ContainsFunc(pids, Alive) {
		if time.Since(since) > bound {
			for _, p := range pids {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes %v outlived their cancelled call by %v", pids, time.Since(since))
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(since)
}

// Spread is "p50 X, max Y over N runs" of measured durations.
func Spread(d []time.Duration) string {
	if len(d) == 0 {
		return "no runs"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return fmt.Sprintf("p50 %v, max %v over %d runs", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}
