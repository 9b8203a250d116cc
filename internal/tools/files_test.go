package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/jail"
)

func newJail(t *testing.T, roots ...string) *jail.Jail {
	t.Helper()
	j := jail.New(roots)
	t.Cleanup(func() { j.Close() })
	return j
}

// workspace is a jail over a temp root, narrowed to root/wd, and a Local
// over it.
func workspace(t *testing.T) (l *Local, root, wd string) {
	t.Helper()
	root = canonTempDir(t)
	wd = filepath.Join(root, "wd")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	narrowed, err := newJail(t, root).Narrow(wd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { narrowed.Close() })
	return NewLocal(LocalOptions{Jail: narrowed, WorkingDir: wd}), root, wd
}

func call(t *testing.T, l *Local, tool string, args any) Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Call(context.Background(), tool, raw)
	if err != nil {
		t.Fatalf("Call(%s): %v", tool, err)
	}
	return res
}

// noHostPath fails when out names the temp root: messages are relative.
func noHostPath(t *testing.T, out, root string) {
	t.Helper()
	if strings.Contains(out, root) {
		t.Fatalf("output leaks the host path %s: %q", root, out)
	}
}

func TestFileWriteReadRoundTrip(t *testing.T) {
	l, root, wd := workspace(t)
	res := call(t, l, ToolFileWrite, map[string]string{"path": "notes/todo.txt", "content": "olá\n"})
	if res.IsError || res.Output != "wrote 5 bytes to notes/todo.txt" {
		t.Fatalf("write: %+v", res)
	}
	// Relative paths resolve against working_dir.
	data, err := os.ReadFile(filepath.Join(wd, "notes", "todo.txt"))
	if err != nil || string(data) != "olá\n" {
		t.Fatalf("on disk: %q, %v", data, err)
	}
	res = call(t, l, ToolFileRead, map[string]string{"path": "notes/todo.txt"})
	if res.IsError || res.Output != "olá\n" {
		t.Fatalf("read: %+v", res)
	}
	// An absolute path inside the working_dir works, and is named back
	// relative.
	res = call(t, l, ToolFileWrite, map[string]string{"path": filepath.Join(wd, "abs.txt"), "content": "x"})
	if res.IsError || res.Output != "wrote 1 bytes to abs.txt" {
		t.Fatalf("absolute write: %+v", res)
	}
	noHostPath(t, res.Output, root)
}

func TestFileToolsRefusalIsJailSentence(t *testing.T) {
	l, root, wd := workspace(t)
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := canonTempDir(t)
	if err := os.WriteFile(filepath.Join(outside, "exists"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "exists"), filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	want := jail.ErrDenied.Error()
	cases := []struct {
		tool string
		args map[string]string
	}{
		{ToolFileRead, map[string]string{"path": "../secret.txt"}},                   // in the root, outside working_dir
		{ToolFileRead, map[string]string{"path": filepath.Join(root, "secret.txt")}}, // same, absolute
		{ToolFileRead, map[string]string{"path": filepath.Join(outside, "exists")}},
		{ToolFileRead, map[string]string{"path": filepath.Join(outside, "missing")}},
		{ToolFileRead, map[string]string{"path": "link"}},
		{ToolFileRead, map[string]string{"path": "/etc/passwd"}},
		{ToolFileWrite, map[string]string{"path": "../x.txt", "content": "x"}},
		{ToolFileWrite, map[string]string{"path": filepath.Join(outside, "new"), "content": "x"}},
		{ToolFileWrite, map[string]string{"path": ".git/config", "content": "[core]\n"}},
		{ToolFileWrite, map[string]string{"path": "sub/.git/hooks/pre-commit", "content": "#!/bin/sh\n"}},
		{ToolFileWrite, map[string]string{"path": ".GIT/config", "content": "x"}},
	}
	for _, c := range cases {
		res := call(t, l, c.tool, c.args)
		if !res.IsError || res.Output != want {
			t.Errorf("%s %q = %+v, want exactly %q", c.tool, c.args["path"], res, want)
		}
	}
	for _, p := range []string{filepath.Join(outside, "new"), filepath.Join(wd, ".git"), filepath.Join(wd, "sub")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created", p)
		}
	}
}

func TestFileToolsErrorsAreRelative(t *testing.T) {
	l, root, wd := workspace(t)
	if err := os.Mkdir(filepath.Join(wd, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "big"), make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "bin"), []byte{0xff, 0xfe, 0}, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool string
		args any
		want string
	}{
		{ToolFileRead, map[string]string{"path": "missing.txt"}, "missing.txt"},
		{ToolFileRead, map[string]string{"path": filepath.Join(wd, "missing.txt")}, "missing.txt"},
		{ToolFileRead, map[string]string{"path": "dir"}, "dir"},
		{ToolFileRead, map[string]any{"path": "big", "max_bytes": 10}, "exceeds"},
		{ToolFileRead, map[string]string{"path": "bin"}, "not UTF-8"},
		{ToolFileWrite, map[string]string{"path": "dir", "content": "x"}, "dir"},
	}
	for _, tt := range tests {
		res := call(t, l, tt.tool, tt.args)
		if !res.IsError || !strings.Contains(res.Output, tt.want) {
			t.Errorf("%s %v = %+v, want an error containing %q", tt.tool, tt.args, res, tt.want)
		}
		noHostPath(t, res.Output, root)
	}
}

func TestFileToolsWithoutJailDenyEverything(t *testing.T) {
	l := NewLocal(LocalOptions{})
	res := call(t, l, ToolFileRead, map[string]string{"path": "x"})
	if !res.IsError || res.Output != jail.ErrDenied.Error() {
		t.Fatalf("nil jail read: %+v", res)
	}
}

func TestFileReadOutputCapped(t *testing.T) {
	root := canonTempDir(t)
	if err := os.WriteFile(filepath.Join(root, "long.txt"), []byte(strings.Repeat("é", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	l := NewLocal(LocalOptions{Jail: newJail(t, root), MaxOutputBytes: 101})
	res := call(t, l, ToolFileRead, map[string]string{"path": "long.txt"})
	if res.IsError || !strings.HasPrefix(res.Output, strings.Repeat("é", 50)+"\n[output truncated: first 100 of 2000 bytes shown]") {
		t.Fatalf("result %+v", res)
	}
}

func TestFileWriteBackup(t *testing.T) {
	for _, on := range []bool{false, true} {
		root := canonTempDir(t)
		l := NewLocal(LocalOptions{Jail: newJail(t, root), WorkingDir: root, FileWriteBackup: on})
		for _, content := range []string{"first", "second"} {
			if res := call(t, l, ToolFileWrite, map[string]string{"path": "doc.md", "content": content}); res.IsError {
				t.Fatalf("write %q: %s", content, res.Output)
			}
		}
		b, err := os.ReadFile(filepath.Join(root, "doc.md.bak"))
		switch {
		case on && (err != nil || string(b) != "first"):
			t.Errorf("backup on: doc.md.bak = %q, %v; want the replaced contents", b, err)
		case !on && !errors.Is(err, os.ErrNotExist):
			t.Errorf("backup off (the default) left doc.md.bak: %v", err)
		}
	}
}
