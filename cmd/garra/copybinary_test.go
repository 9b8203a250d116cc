package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/sandbox"
)

// TestCopyBinaryThenServe is the init container's job and the sandbox
// container's start, in one: copy-binary puts an identical, executable
// garra in the directory, and that copy, run from a directory with no
// garra on PATH, serves the sandbox's tools (bash included, whose
// supervisor is the same binary re-executed).
func TestCopyBinaryThenServe(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := run(t, testEnv(t), "copy-binary", dir)
	if code != 0 {
		t.Fatalf("copy-binary exit %d: %s", code, stderr)
	}
	copied := filepath.Join(dir, "garra")
	want, err := os.ReadFile(garraBin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(copied)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("copy is %d bytes, not the %d of the binary", len(got), len(want))
	}
	if fi, _ := os.Stat(copied); fi.Mode().Perm() != 0o755 {
		t.Errorf("copy mode = %v, want 0755", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".garra-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Again over the existing copy (an init container that runs twice).
	if _, stderr, code := run(t, testEnv(t), "copy-binary", dir); code != 0 {
		t.Fatalf("second copy-binary exit %d: %s", code, stderr)
	}

	ws := t.TempDir()
	cmd := exec.Command(copied, "sandbox", "--workspace", ws, "--listen", "127.0.0.1:0")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), sandbox.TokenEnv + "=" + sandboxTestToken}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := waitListening(t, errPipe, &lockedBuffer{})
	exerciseSandbox(t, addr, ws)
}

func TestCopyBinaryRefusesABadDestination(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{filepath.Join(t.TempDir(), "absent"), file} {
		_, stderr, code := run(t, testEnv(t), "copy-binary", dst)
		if code == 0 || !strings.Contains(stderr, "copy-binary: destination") {
			t.Errorf("copy-binary %s: exit %d, stderr %q", dst, code, stderr)
		}
	}
	if _, stderr, code := run(t, testEnv(t), "copy-binary"); code == 0 || !strings.Contains(stderr, "accepts 1 arg") {
		t.Errorf("no argument: exit %d, stderr %q", code, stderr)
	}
}
