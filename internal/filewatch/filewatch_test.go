package filewatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// atomicWriter lays files out as the kubelet does for a ConfigMap or
// Secret volume: each visible name is a symlink through ..data, which
// points at a timestamped directory holding the real files.
type atomicWriter struct {
	t   *testing.T
	dir string
	gen int
}

// write publishes files as one update, exactly in the kubelet's order:
// new timestamped directory, ..data_tmp symlink to it, rename over
// ..data, user-visible symlinks for new names, removal of the old
// directory.
func (a *atomicWriter) write(files map[string]string) {
	a.t.Helper()
	a.gen++
	ts := fmt.Sprintf("..2026_12_04_00_00_%02d.%09d", a.gen, a.gen)
	must(a.t, os.Mkdir(filepath.Join(a.dir, ts), 0o755))
	for name, body := range files {
		must(a.t, os.WriteFile(filepath.Join(a.dir, ts, name), []byte(body), 0o644))
	}
	old, _ := os.Readlink(filepath.Join(a.dir, "..data"))
	must(a.t, os.Symlink(ts, filepath.Join(a.dir, "..data_tmp")))
	must(a.t, os.Rename(filepath.Join(a.dir, "..data_tmp"), filepath.Join(a.dir, "..data")))
	for name := range files {
		link := filepath.Join(a.dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			must(a.t, os.Symlink(filepath.Join("..data", name), link))
		}
	}
	if old != "" {
		must(a.t, os.RemoveAll(filepath.Join(a.dir, old)))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// start runs the watcher until the test ends and counts its calls.
func start(t *testing.T, o Options) *atomic.Int32 {
	t.Helper()
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Run(ctx, o, func() { calls.Add(1) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	time.Sleep(50 * time.Millisecond) // let the watch be set up
	return &calls
}

func waitCalls(t *testing.T, calls *atomic.Int32, atLeast int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < atLeast {
		if time.Now().After(deadline) {
			t.Fatalf("onChange ran %d times, want at least %d", calls.Load(), atLeast)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKubeletSymlinkSwapTriggersOneCall(t *testing.T) {
	dir := t.TempDir()
	kw := &atomicWriter{t: t, dir: dir}
	kw.write(map[string]string{"config.yml": "budget: 3\n"})
	cfg := filepath.Join(dir, "config.yml")

	calls := start(t, Options{Paths: []string{cfg}, Debounce: 50 * time.Millisecond, Resync: -1})
	kw.write(map[string]string{"config.yml": "budget: 5\n"})
	waitCalls(t, calls, 1)

	got, err := os.ReadFile(cfg)
	must(t, err)
	if string(got) != "budget: 5\n" {
		t.Fatalf("after the swap the file reads %q", got)
	}
	time.Sleep(200 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Errorf("one kubelet update gave %d calls, want 1 (debounced)", n)
	}
}

func TestTokenDirectoryEntriesTriggerCalls(t *testing.T) {
	dir := t.TempDir()
	kw := &atomicWriter{t: t, dir: dir}
	kw.write(map[string]string{"alpha": "token-a"})

	calls := start(t, Options{Paths: []string{dir}, Debounce: 20 * time.Millisecond, Resync: -1})
	kw.write(map[string]string{"alpha": "token-a", "beta": "token-b"}) // a new caller
	waitCalls(t, calls, 1)
	if _, err := os.ReadFile(filepath.Join(dir, "beta")); err != nil {
		t.Fatalf("new token not readable: %v", err)
	}
	must(t, os.Remove(filepath.Join(dir, "beta"))) // a caller removed
	waitCalls(t, calls, 2)
}

func TestPlainEditTriggersCall(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yml")
	must(t, os.WriteFile(cfg, []byte("a: 1\n"), 0o600))
	calls := start(t, Options{Paths: []string{cfg}, Debounce: 20 * time.Millisecond, Resync: -1})
	must(t, os.WriteFile(cfg, []byte("a: 2\n"), 0o600))
	waitCalls(t, calls, 1)
}

func TestResyncWithoutEvents(t *testing.T) {
	// A path whose directory does not exist cannot be watched: the
	// periodic re-read carries on alone.
	missing := filepath.Join(t.TempDir(), "nope", "config.yml")
	calls := start(t, Options{Paths: []string{missing}, Resync: 30 * time.Millisecond})
	waitCalls(t, calls, 2)
}

func TestNoCallsWithoutChange(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yml")
	must(t, os.WriteFile(cfg, []byte("a: 1\n"), 0o600))
	calls := start(t, Options{Paths: []string{cfg}, Debounce: 20 * time.Millisecond, Resync: -1})
	time.Sleep(200 * time.Millisecond)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls with nothing changed", n)
	}
}

// Immediate looks once as soon as the watch is set up, with no event.
func TestImmediateRunsOnceAtStart(t *testing.T) {
	dir := t.TempDir()
	calls := start(t, Options{Paths: []string{dir}, Resync: -1, Immediate: true})
	waitCalls(t, calls, 1)
	time.Sleep(200 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("onChange ran %d times without a change, want once", n)
	}
	quiet := start(t, Options{Paths: []string{dir}, Resync: -1})
	time.Sleep(200 * time.Millisecond)
	if n := quiet.Load(); n != 0 {
		t.Fatalf("without Immediate, onChange ran %d times without a change", n)
	}
}
