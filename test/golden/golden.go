// Package golden compares a test's output with a file checked in beside
// it, byte for byte, so that a change to a wire format shows in review.
// UPDATE_GOLDEN=1 rewrites the files from the code under test.
package golden

import (
	"bytes"
	"os"
	"testing"
)

// Compare fails t unless got equals the file at path exactly.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from this build's output (UPDATE_GOLDEN=1 rewrites it if the change is meant):\n got: %s\nwant: %s", path, got, want)
	}
}
