package jail

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// raceFor runs op over and over for about d while another goroutine keeps
// replacing target with each of states in turn. It returns how often op
// succeeded, was denied, or failed otherwise (a missing entry mid-swap).
type raceResult struct {
	ok, denied, other int
	flips             int64
	errs              map[string]int // the "other" errors, by message
}

func raceFor(t *testing.T, d time.Duration, target string, states []func(stage string) error, op func() error) (r raceResult) {
	t.Helper()
	stage := filepath.Join(filepath.Dir(target), ".stage-"+filepath.Base(target))
	var n atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.RemoveAll(stage)
			if err := states[i%len(states)](stage); err != nil {
				t.Error(err)
				return
			}
			// rename replaces files and symlinks atomically; a directory
			// and a non-directory cannot replace each other, so those
			// swaps go through a brief absence. RemoveAll on a symlink
			// removes the link, never what it points at.
			if os.Rename(stage, target) != nil {
				os.RemoveAll(target)
				if err := os.Rename(stage, target); err != nil {
					continue
				}
			}
			n.Add(1)
		}
	}()
	// Run for at least d, and on a slow machine longer, until both outcomes
	// have been seen a few times (bounded by 10*d).
	start := time.Now()
	for {
		if el := time.Since(start); el > 10*d || el > d && r.ok >= 5 && r.denied >= 5 {
			break
		}
		switch err := op(); {
		case err == nil:
			r.ok++
		case errors.Is(err, ErrDenied):
			r.denied++
		default:
			r.other++
			if r.errs == nil {
				r.errs = map[string]int{}
			}
			r.errs[err.Error()]++
		}
	}
	close(stop)
	wg.Wait()
	r.flips = n.Load()
	return r
}

func fileState(content string) func(string) error {
	return func(stage string) error { return os.WriteFile(stage, []byte(content), 0o644) }
}

func linkState(target string) func(string) error {
	return func(stage string) error { return os.Symlink(target, stage) }
}

func dirState(file, content string) func(string) error {
	return func(stage string) error {
		if err := os.Mkdir(stage, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(stage, file), []byte(content), 0o644)
	}
}

const raceDuration = 300 * time.Millisecond

func checkRace(t *testing.T, name string, r raceResult) {
	t.Helper()
	t.Logf("%s: %d ok, %d denied, %d swaps, other (mid-swap): %v", name, r.ok, r.denied, r.flips, r.errs)
	if r.ok == 0 || r.denied == 0 || r.flips < 10 {
		t.Errorf("%s: the race was not exercised: %+v", name, r)
	}
}

// TestSymlinkSwapRace flips paths between something inside the root and a
// symlink to a secret outside it while reads and writes run. The secret
// must never be returned, and nothing outside may change.
func TestSymlinkSwapRace(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root)
	realdir := filepath.Join(f.root, "realdir")
	mkdirs(t, realdir)
	writeFiles(t, map[string]string{filepath.Join(realdir, "secret.txt"): "inside"})
	outsideBefore := snapshot(t, f.outside)

	t.Run("read file", func(t *testing.T) {
		target := filepath.Join(f.root, "target")
		states := []func(string) error{
			fileState("inside"), linkState(f.secret),
			fileState("inside"), linkState("../outside/secret.txt"),
		}
		checkRace(t, "ReadFile", raceFor(t, raceDuration, target, states, func() error {
			b, err := j.ReadFile("target", 0)
			if err == nil && string(b) != "inside" {
				t.Errorf("read returned %q", b)
			}
			return err
		}))
		checkRace(t, "Stat", raceFor(t, raceDuration, target, states, func() error {
			fi, err := j.Stat("target")
			if err == nil && fi.Size() != int64(len("inside")) {
				t.Errorf("stat saw the secret (%d bytes)", fi.Size())
			}
			return err
		}))
	})

	t.Run("read through directory", func(t *testing.T) {
		states := []func(string) error{
			linkState("realdir"), linkState(f.outside),
			dirState("secret.txt", "inside"), linkState("../outside"),
		}
		checkRace(t, "ReadFile(d/secret.txt)", raceFor(t, raceDuration, filepath.Join(f.root, "d"), states, func() error {
			b, err := j.ReadFile("d/secret.txt", 0)
			if err == nil && string(b) != "inside" {
				t.Errorf("read returned %q", b)
			}
			return err
		}))
	})

	t.Run("write file", func(t *testing.T) {
		states := []func(string) error{
			fileState("inside"), linkState(f.secret),
			fileState("inside"), linkState("../outside/secret.txt"),
		}
		checkRace(t, "WriteFile", raceFor(t, raceDuration, filepath.Join(f.root, "wtarget"), states, func() error {
			return j.WriteFile("wtarget", []byte("written"))
		}))
	})

	t.Run("write through directory", func(t *testing.T) {
		states := []func(string) error{
			dirState("x", "x"), linkState(f.outside),
			linkState("realdir"), linkState("../outside"),
		}
		i := 0
		checkRace(t, "WriteFile(wd/...)", raceFor(t, raceDuration, filepath.Join(f.root, "wd"), states, func() error {
			i++
			if i%2 == 0 {
				return j.WriteFile("wd/deeper/new.txt", []byte("written"))
			}
			return j.WriteFile("wd/new.txt", []byte("written"))
		}))
	})

	t.Run("write through directory into .git", func(t *testing.T) {
		gitDir := filepath.Join(f.root, ".git")
		mkdirs(t, gitDir)
		writeFiles(t, map[string]string{filepath.Join(gitDir, "config"): "[core]"})
		states := []func(string) error{dirState("x", "x"), linkState(".git"), dirState("x", "x"), linkState("sub/../.git")}
		checkRace(t, "WriteFile(gd/config)", raceFor(t, raceDuration, filepath.Join(f.root, "gd"), states, func() error {
			return j.WriteFile("gd/config", []byte("[core]\n\tfsmonitor = evil"))
		}))
		if b, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(b) != "[core]" {
			t.Errorf(".git/config changed: %q", b)
		}
	})

	sameSnapshot(t, "outside", outsideBefore, snapshot(t, f.outside))
	if b, _ := os.ReadFile(f.secret); string(b) != secretContent {
		t.Errorf("secret changed: %q", b)
	}
}

// TestWriteDirSwapAfterCheck swaps a checked directory component for a
// symlink into .git before it is opened, deterministically: the handle is
// not the directory that was checked, so the write is refused.
func TestWriteDirSwapAfterCheck(t *testing.T) {
	f := newFixture(t)
	gitDir := addGitDir(t, f)
	j := newJail(t, f.root)
	gd := filepath.Join(f.root, "gd")
	for _, link := range []string{".git", "sub/../.git", "realdir"} {
		mkdirs(t, gd, filepath.Join(f.root, "realdir"))
		testHookBeforeOpenDir = func(name string) {
			if name != "gd" {
				return
			}
			if err := os.RemoveAll(gd); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(link, gd); err != nil {
				t.Error(err)
			}
		}
		err := j.WriteFile("gd/config", []byte("evil"))
		testHookBeforeOpenDir = nil
		if !errors.Is(err, ErrDenied) {
			t.Errorf("swap to %q: WriteFile = %v; want ErrDenied", link, err)
		}
		os.Remove(gd)
	}
	if b, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(b) != "[core]" {
		t.Errorf(".git/config changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.root, "realdir", "config")); err == nil {
		t.Errorf("write followed the swapped-in symlink")
	}
}
