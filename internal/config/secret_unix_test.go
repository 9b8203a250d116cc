//go:build unix

package config

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO at a credential path is refused at once, by every secret reader:
// opening it for reading would wait for a writer that never comes, and
// the reload and readiness answer that read it would wait with it.
func TestSecretReadersRefuseAFIFOAtOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(string) error{
		"ReadSecretFile":  func(p string) error { _, err := ReadSecretFile(p); return err },
		"ReadSecretLines": func(p string) error { _, err := ReadSecretLines(p); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- read(p) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s(FIFO) = %v, want the not-a-regular-file refusal", name, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s blocked on a FIFO", name)
		}
	}
}
