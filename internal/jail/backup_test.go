package jail

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileBackup(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root)
	on := WriteOptions{Backup: true}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(f.root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	exists := func(p string) bool {
		_, err := os.Lstat(filepath.Join(f.root, p))
		return err == nil
	}

	// A new file gets no backup.
	if err := j.WriteFileWith("notes.txt", []byte("v1"), on); err != nil {
		t.Fatal(err)
	}
	if exists("notes.txt.bak") {
		t.Fatal("a new file got a backup")
	}
	// Replacing keeps the previous contents, with the old mode.
	if err := os.Chmod(filepath.Join(f.root, "notes.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := j.WriteFileWith("notes.txt", []byte("v2"), on); err != nil {
		t.Fatal(err)
	}
	if read("notes.txt") != "v2" || read("notes.txt.bak") != "v1" {
		t.Fatalf("after v2: file %q, backup %q", read("notes.txt"), read("notes.txt.bak"))
	}
	if fi, _ := os.Stat(filepath.Join(f.root, "notes.txt.bak")); fi.Mode().Perm() != 0o640 {
		t.Errorf("backup mode %v, want the replaced file's 0640", fi.Mode().Perm())
	}
	// The next replace moves the backup along: one generation is kept.
	if err := j.WriteFileWith("notes.txt", []byte("v3"), on); err != nil {
		t.Fatal(err)
	}
	if read("notes.txt") != "v3" || read("notes.txt.bak") != "v2" {
		t.Fatalf("after v3: file %q, backup %q", read("notes.txt"), read("notes.txt.bak"))
	}
	// Through a symlink, the backup is of the target, beside the target.
	if err := j.WriteFileWith("link-in", []byte("via link"), on); err != nil {
		t.Fatal(err)
	}
	if !exists("hello.txt.bak") || exists("link-in.bak") {
		t.Fatal("the backup of a write through a link must sit beside its target")
	}
	// Off (the default), nothing is kept.
	if err := j.WriteFile("plain.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := j.WriteFile("plain.txt", []byte("b")); err != nil || exists("plain.txt.bak") {
		t.Fatalf("backup without the option: %v", err)
	}
	// A backup that cannot be made fails the write and changes nothing.
	if err := os.Mkdir(filepath.Join(f.root, "blocked.txt.bak"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.root, "blocked.txt"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := j.WriteFileWith("blocked.txt", []byte("lost?"), on)
	var pe *fs.PathError
	if err == nil || !errors.As(err, &pe) || pe.Op != "backup" || pe.Path != "blocked.txt" || strings.Contains(err.Error(), f.base) {
		t.Fatalf("write with an impossible backup = %v", err)
	}
	if read("blocked.txt") != "keep me" {
		t.Fatal("a failed backup still replaced the file")
	}
	if tmp := tempFiles(t, f.base); len(tmp) != 0 {
		t.Errorf("temporary files left behind: %v", tmp)
	}
	// Refusals are unchanged by the option.
	if err := j.WriteFileWith("../outside.txt", []byte("x"), on); !errors.Is(err, ErrDenied) {
		t.Fatalf("escape with backup on = %v", err)
	}
}
