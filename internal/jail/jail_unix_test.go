//go:build unix

package jail

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFONeverBlocks: a FIFO where a file was expected is refused at once
// instead of hanging the read until a writer appears.
func TestFIFONeverBlocks(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root)
	if err := syscall.Mkfifo(filepath.Join(f.root, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	symlink(t, "fifo", filepath.Join(f.root, "fifo-link"))
	for _, p := range []string{"fifo", "fifo-link"} {
		done := make(chan error, 1)
		go func() {
			_, err := j.ReadFile(p, 0)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || err.Error() != "read "+p+": not a regular file" {
				t.Errorf("ReadFile(%s) = %v; want ErrNotRegular", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) blocked", p)
		}
		if err := j.WriteFile(p, []byte("x")); !errors.Is(err, ErrNotRegular) {
			t.Errorf("WriteFile(%s) = %v; want ErrNotRegular", p, err)
		}
	}
	if fi, err := j.Stat("fifo"); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("Stat(fifo) = %v, %v", fi, err)
	}
}
