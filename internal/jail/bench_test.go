package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func reportPerSecond(b *testing.B, n int, unit string) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), unit)
}

// BenchmarkCheck measures one confinement decision: choosing the root and
// resolving the path through the root handle (Stat), for a path that is
// allowed, one refused lexically without touching the filesystem, and one
// refused while resolving (a symlink out of the root).
func BenchmarkCheck(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b", "c", "d")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "f.txt"), []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "out")); err != nil {
		b.Skip(err)
	}
	j := New([]string{root})
	defer j.Close()
	// Reference point: the same stat by name, with no confinement at all.
	b.Run("reference-unconfined-os.Stat", func(b *testing.B) {
		n := 0
		for b.Loop() {
			if _, err := os.Stat(filepath.Join(deep, "f.txt")); err != nil {
				b.Fatal(err)
			}
			n++
		}
		reportPerSecond(b, n, "checks/s")
	})
	for _, c := range []struct {
		name, path string
		denied     bool
	}{
		{"allowed-relative-depth5", "a/b/c/d/f.txt", false},
		{"allowed-absolute-depth5", filepath.Join(deep, "f.txt"), false},
		{"denied-absolute-outside", "/etc/passwd", true},
		{"denied-dotdot", "a/../../etc/passwd", true},
		{"denied-symlink-out", "out", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				_, err := j.Stat(c.path)
				if errors.Is(err, ErrDenied) != c.denied {
					b.Fatalf("Stat(%q) = %v", c.path, err)
				}
				n++
			}
			reportPerSecond(b, n, "checks/s")
		})
	}
}

// BenchmarkReadFile measures a confined read of a small and a 64 KiB file.
func BenchmarkReadFile(b *testing.B) {
	root := b.TempDir()
	for _, size := range []int{1 << 10, 64 << 10} {
		name := filepath.Join("src", "pkg", "file.go")
		if err := os.MkdirAll(filepath.Join(root, "src", "pkg"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(strings.Repeat("x", size)), 0o644); err != nil {
			b.Fatal(err)
		}
		j := New([]string{root})
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			n := 0
			for b.Loop() {
				if _, err := j.ReadFile(name, 0); err != nil {
					b.Fatal(err)
				}
				n++
			}
			reportPerSecond(b, n, "reads/s")
		})
		j.Close()
	}
}

// BenchmarkWriteFile measures a confined atomic write (temp file, fsync,
// rename, directory fsync) of 4 KiB.
func BenchmarkWriteFile(b *testing.B) {
	j := New([]string{b.TempDir()})
	defer j.Close()
	data := []byte(strings.Repeat("x", 4<<10))
	n := 0
	for b.Loop() {
		if err := j.WriteFile("src/pkg/out.txt", data); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportPerSecond(b, n, "writes/s")
}
