package jail

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const secretContent = "TOP-SECRET"

// fixture is a base directory holding two roots, a sibling whose name
// extends the first root's name, and an outside directory with a secret.
//
//	base/root/hello.txt, sub/inner.txt and the symlinks below
//	base/root2/other.txt
//	base/rootx/file.txt          (lexical prefix trap)
//	base/outside/secret.txt
type fixture struct {
	base, root, root2, rootx, outside, secret string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		base:    base,
		root:    filepath.Join(base, "root"),
		root2:   filepath.Join(base, "root2"),
		rootx:   filepath.Join(base, "rootx"),
		outside: filepath.Join(base, "outside"),
	}
	f.secret = filepath.Join(f.outside, "secret.txt")
	mkdirs(t, filepath.Join(f.root, "sub"), f.root2, f.rootx, f.outside)
	writeFiles(t, map[string]string{
		filepath.Join(f.root, "hello.txt"):        "hello",
		filepath.Join(f.root, "sub", "inner.txt"): "inner",
		filepath.Join(f.root2, "other.txt"):       "other",
		filepath.Join(f.rootx, "file.txt"):        "prefix trap",
		f.secret:                                  secretContent,
	})
	links := map[string]string{
		"link-out":             f.secret,
		"link-out-rel":         "../outside/secret.txt",
		"link-out-missing":     filepath.Join(f.outside, "missing.txt"),
		"link-out-missing-rel": "../outside/missing.txt",
		"dirlink-out":          f.outside,
		"dirlink-out-rel":      "../outside",
		"link-to-root2":        "../root2/other.txt",
		"link-in":              "hello.txt",
		"dirlink-in":           "sub",
		"link-in-abs":          filepath.Join(f.root, "hello.txt"),
		"link-loop":            "link-loop",
	}
	for name, target := range links {
		symlink(t, target, filepath.Join(f.root, name))
	}
	return f
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

func newJail(t *testing.T, roots ...string) *Jail {
	t.Helper()
	j := New(roots)
	t.Cleanup(func() { j.Close() })
	return j
}

// snapshot lists every entry under dir with its content (files) or target
// (symlinks), to prove a tree was not touched.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[p] = "link:" + target
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = "file:" + string(b)
		default:
			out[p] = "dir"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if before[p] != v {
			t.Errorf("%s changed: %s = %q, was %q", what, p, v, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s changed: %s removed", what, p)
		}
	}
}

// escapePaths are refused by ReadFile, Stat and WriteFile of a Jail on
// f.root and f.root2.
func escapePaths(f *fixture) []string {
	return []string{
		"../outside/secret.txt",
		"a/../../outside/secret.txt",
		"sub/../../outside/secret.txt",
		"../outside/missing.txt",
		"..",
		"../",
		"../root2/other.txt",
		f.secret,
		filepath.Join(f.outside, "missing.txt"),
		filepath.Join(f.outside, "missing-dir", "x"),
		f.root + "/../outside/secret.txt",
		filepath.Join(f.rootx, "file.txt"),
		f.base,
		"/",
		"/etc/passwd",
		"link-out",
		"link-out-rel",
		"link-out-missing",
		"link-out-missing-rel",
		"dirlink-out/secret.txt",
		"dirlink-out-rel/secret.txt",
		"dirlink-out/missing.txt",
		"dirlink-out-rel/missing.txt",
		"link-to-root2",
		"link-in-abs",
		"link-loop",
		filepath.Join(f.root, "link-out"),
		filepath.Join(f.root, "dirlink-out", "secret.txt"),
		"hello.txt\x00",
		"\x00",
		"",
	}
}

func TestEscapesDenied(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root, f.root2)
	outsideBefore := snapshot(t, f.outside)
	rootxBefore := snapshot(t, f.rootx)

	for _, p := range escapePaths(f) {
		if b, err := j.ReadFile(p, 0); !errors.Is(err, ErrDenied) {
			t.Errorf("ReadFile(%q) = %q, %v; want ErrDenied", p, b, err)
		}
		if fi, err := j.Stat(p); !errors.Is(err, ErrDenied) {
			t.Errorf("Stat(%q) = %v, %v; want ErrDenied", p, fi, err)
		}
		if err := j.WriteFile(p, []byte("pwned")); !errors.Is(err, ErrDenied) {
			t.Errorf("WriteFile(%q) = %v; want ErrDenied", p, err)
		}
	}
	for _, p := range []string{"dirlink-out/new.txt", "dirlink-out-rel/new.txt", "dirlink-out/newdir/new.txt"} {
		if err := j.WriteFile(p, []byte("pwned")); !errors.Is(err, ErrDenied) {
			t.Errorf("WriteFile(%q) = %v; want ErrDenied", p, err)
		}
	}
	sameSnapshot(t, "outside", outsideBefore, snapshot(t, f.outside))
	sameSnapshot(t, "rootx", rootxBefore, snapshot(t, f.rootx))
}

func TestReadInside(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root, f.root2)
	cases := map[string]string{
		"hello.txt":                         "hello",
		"./hello.txt":                       "hello",
		"sub/../hello.txt":                  "hello",
		"sub//inner.txt":                    "inner",
		filepath.Join(f.root, "hello.txt"):  "hello",
		f.root + "/sub/../hello.txt":        "hello",
		"link-in":                           "hello",
		"dirlink-in/inner.txt":              "inner",
		filepath.Join(f.root2, "other.txt"): "other",
		filepath.Join(f.root, "dirlink-in"): "",
		filepath.Join(f.root, "sub") + "/.": "",
	}
	for p, want := range cases {
		if want == "" {
			if fi, err := j.Stat(p); err != nil || !fi.IsDir() {
				t.Errorf("Stat(%q) = %v, %v; want a directory", p, fi, err)
			}
			continue
		}
		got, err := j.ReadFile(p, 0)
		if err != nil || string(got) != want {
			t.Errorf("ReadFile(%q) = %q, %v; want %q", p, got, err, want)
		}
		fi, err := j.Stat(p)
		if err != nil || fi.Size() != int64(len(want)) {
			t.Errorf("Stat(%q) = %v, %v", p, fi, err)
		}
	}
}

func TestErrorsInsideRootsNameRelativePaths(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root, f.root2)
	cases := []struct {
		path, msg string
		is        error
	}{
		{"missing.txt", "open missing.txt: file does not exist", fs.ErrNotExist},
		{"nope/missing.txt", "open nope/missing.txt: file does not exist", fs.ErrNotExist},
		{filepath.Join(f.root, "nope", "missing.txt"), "open nope/missing.txt: file does not exist", fs.ErrNotExist},
		{filepath.Join(f.root2, "missing.txt"), "open missing.txt: file does not exist", fs.ErrNotExist},
		{"hello.txt/x", "open hello.txt/x: not a directory", ErrNotDir},
		{"sub", "read sub: is a directory", ErrIsDir},
	}
	for _, c := range cases {
		_, err := j.ReadFile(c.path, 0)
		if err == nil || err.Error() != c.msg || !errors.Is(err, c.is) || errors.Is(err, ErrDenied) {
			t.Errorf("ReadFile(%q) = %v; want %q", c.path, err, c.msg)
		}
		if err != nil && strings.Contains(err.Error(), f.base) {
			t.Errorf("ReadFile(%q) leaks the host path: %v", c.path, err)
		}
	}
	_, err := j.Stat("nope/missing.txt")
	if err == nil || err.Error() != "stat nope/missing.txt: file does not exist" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(missing) = %v", err)
	}
}

// TestRefusalsByteIdentical collects every refusal the package can produce
// and requires one sentence, with neither path nor root in it.
func TestRefusalsByteIdentical(t *testing.T) {
	f := newFixture(t)
	addGitDir(t, f)
	j := newJail(t, f.root, f.root2)
	n, err := j.Narrow(filepath.Join(f.root, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	var errs []error
	for _, p := range escapePaths(f) {
		_, err := j.ReadFile(p, 0)
		errs = append(errs, err)
		_, err = j.Stat(p)
		errs = append(errs, err)
		errs = append(errs, j.WriteFile(p, nil))
	}
	for _, p := range gitWritePaths {
		errs = append(errs, j.WriteFile(p, nil))
	}
	for _, p := range []string{"../hello.txt", filepath.Join(f.root, "hello.txt"), filepath.Join(f.root2, "other.txt")} {
		_, err := n.ReadFile(p, 0)
		errs = append(errs, err)
	}
	for _, e := range []*Jail{nil, {}, New(nil), New([]string{filepath.Join(f.base, "missing")})} {
		_, err := e.ReadFile(filepath.Join(f.root, "hello.txt"), 0)
		errs = append(errs, err)
		_, err = e.Stat("hello.txt")
		errs = append(errs, err)
		errs = append(errs, e.WriteFile("x.txt", nil))
	}
	// The existence-oracle pair, spelled out.
	_, missing := j.ReadFile(filepath.Join(f.outside, "missing.txt"), 0)
	_, existing := j.ReadFile(f.secret, 0)
	_, viaLinkMissing := j.ReadFile("link-out-missing", 0)
	_, viaLinkExisting := j.ReadFile("link-out", 0)
	errs = append(errs, missing, existing, viaLinkMissing, viaLinkExisting)

	msgs := map[string]int{}
	for i, err := range errs {
		if !errors.Is(err, ErrDenied) {
			t.Errorf("refusal %d: %v is not ErrDenied", i, err)
			continue
		}
		msgs[err.Error()]++
	}
	if len(msgs) != 1 {
		t.Errorf("refusals use %d different messages: %v", len(msgs), msgs)
	}
	if missing.Error() != existing.Error() || viaLinkMissing.Error() != viaLinkExisting.Error() {
		t.Errorf("missing and existing outside files are distinguishable")
	}
	for m := range msgs {
		if strings.Contains(m, f.base) || strings.Contains(m, "secret") || strings.Contains(m, "/") {
			t.Errorf("refusal message carries a path: %q", m)
		}
	}
}

var gitWritePaths = []string{
	".git/config",
	".git",
	"a/.git/hooks/x",
	"sub/.git",
	"sub/.git/",
	".GIT/config",
	".Git/HEAD",
	".git./config",
	".git /config",
	".git::$INDEX_ALLOCATION/config",
	"GIT~1/config",
	".g\u200cit/config",
	"\ufeff.git/config",
	"x/../.git/config",
	"sub/deep/.git",
	"gitlink/config",
	"gitchain/config",
	"cfg",
	"sneaky/config",
}

// addGitDir creates root/.git/config and symlinks that lead into .git.
func addGitDir(t *testing.T, f *fixture) string {
	t.Helper()
	gitDir := filepath.Join(f.root, ".git")
	mkdirs(t, gitDir)
	writeFiles(t, map[string]string{filepath.Join(gitDir, "config"): "[core]"})
	symlink(t, ".git", filepath.Join(f.root, "gitlink"))
	symlink(t, "chain2", filepath.Join(f.root, "gitchain"))
	symlink(t, ".git", filepath.Join(f.root, "chain2"))
	symlink(t, ".git/config", filepath.Join(f.root, "cfg"))
	symlink(t, "sub/../.git", filepath.Join(f.root, "sneaky"))
	return gitDir
}

func TestGitWritesRefused(t *testing.T) {
	f := newFixture(t)
	gitDir := addGitDir(t, f)
	j := newJail(t, f.root)
	before := snapshot(t, f.root)

	for _, p := range append(gitWritePaths, filepath.Join(f.root, ".git", "config")) {
		if err := j.WriteFile(p, []byte("[core]\n\tfsmonitor = evil")); !errors.Is(err, ErrDenied) {
			t.Errorf("WriteFile(%q) = %v; want ErrDenied", p, err)
		}
	}
	sameSnapshot(t, "root", before, snapshot(t, f.root))

	// Reading .git is allowed.
	if b, err := j.ReadFile(".git/config", 0); err != nil || string(b) != "[core]" {
		t.Errorf("ReadFile(.git/config) = %q, %v", b, err)
	}
	// Names that only look like .git are writable.
	for _, p := range []string{".github/workflows/ci.yml", ".gitignore", "x.git/y", "git/x", "my.git.txt", ".gitx/y", "g"} {
		if err := j.WriteFile(p, []byte("ok")); err != nil {
			t.Errorf("WriteFile(%q) = %v; want success", p, err)
		}
	}

	// A root or working_dir inside .git is read-only.
	for _, jl := range []*Jail{newJail(t, gitDir), narrow(t, j, ".git"), narrow(t, j, "gitlink"), narrow(t, j, filepath.Join(f.root, "gitchain"))} {
		if err := jl.WriteFile("config", []byte("x")); !errors.Is(err, ErrDenied) {
			t.Errorf("write inside .git root %v = %v; want ErrDenied", jl.Roots(), err)
		}
		if err := jl.WriteFile("hooks/pre-commit", []byte("x")); !errors.Is(err, ErrDenied) {
			t.Errorf("write inside .git root %v = %v; want ErrDenied", jl.Roots(), err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(b) != "[core]" {
		t.Errorf(".git/config changed: %q", b)
	}
}

func narrow(t *testing.T, j *Jail, wd string) *Jail {
	t.Helper()
	n, err := j.Narrow(wd)
	if err != nil {
		t.Fatalf("Narrow(%q) = %v", wd, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func TestIsGitName(t *testing.T) {
	for name, want := range map[string]bool{
		".git": true, ".GIT": true, ".gIt": true, ".git.": true, ".git ..": true,
		"git~1": true, "GIT~1": true, ".git:foo": true, ".g\u200dit": true, "\u206a.git\ufeff": true,
		"git": false, ".gitignore": false, ".github": false, "x.git": false, "..git": false,
		"git~2": false, ".gi": false, "": false, ".": false, "..": false, ". git": false,
	} {
		if got := isGitName(name); got != want {
			t.Errorf("isGitName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestWorkingDir(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root, f.root2)

	invalid := []string{
		"", "\x00", "sub\x00",
		f.outside, f.base, "/", "/nonexistent/dir",
		filepath.Join(f.root, "missing"), "missing",
		filepath.Join(f.root, "hello.txt"), "hello.txt", "link-in",
		"dirlink-out", "dirlink-out-rel", "../outside", "sub/../../outside",
		f.rootx, "link-loop",
	}
	for _, wd := range invalid {
		n, err := j.Narrow(wd)
		if !errors.Is(err, ErrInvalidWorkingDir) || n != nil {
			t.Errorf("Narrow(%q) = %v, %v; want ErrInvalidWorkingDir", wd, n, err)
		}
	}
	if _, err := New(nil).Narrow(f.root); !errors.Is(err, ErrInvalidWorkingDir) {
		t.Errorf("Narrow on an empty jail = %v", err)
	}

	sub := filepath.Join(f.root, "sub")
	for _, wd := range []string{sub, "sub", "./sub/", "dirlink-in", filepath.Join(f.root, "dirlink-in")} {
		n := narrow(t, j, wd)
		if got := n.Roots(); !slices.Equal(got, []string{sub}) {
			t.Errorf("Narrow(%q).Roots() = %v", wd, got)
		}
		if b, err := n.ReadFile("inner.txt", 0); err != nil || string(b) != "inner" {
			t.Errorf("Narrow(%q).ReadFile(inner.txt) = %q, %v", wd, b, err)
		}
		if b, err := n.ReadFile(filepath.Join(sub, "inner.txt"), 0); err != nil || string(b) != "inner" {
			t.Errorf("Narrow(%q).ReadFile(abs) = %q, %v", wd, b, err)
		}
		for _, p := range []string{"../hello.txt", filepath.Join(f.root, "hello.txt"), filepath.Join(f.root2, "other.txt"), "../../outside/secret.txt"} {
			if _, err := n.ReadFile(p, 0); !errors.Is(err, ErrDenied) {
				t.Errorf("Narrow(%q).ReadFile(%q) = %v; want ErrDenied", wd, p, err)
			}
		}
		if _, err := n.Narrow(f.root); !errors.Is(err, ErrInvalidWorkingDir) {
			t.Errorf("narrowed jail widened back to the root: %v", err)
		}
	}
	// The spelling through the symlink is accepted for absolute paths.
	n := narrow(t, j, filepath.Join(f.root, "dirlink-in"))
	if b, err := n.ReadFile(filepath.Join(f.root, "dirlink-in", "inner.txt"), 0); err != nil || string(b) != "inner" {
		t.Errorf("ReadFile via working_dir alias = %q, %v", b, err)
	}

	// Writes land in the working directory.
	n = narrow(t, j, "sub")
	if err := n.WriteFile("made.txt", []byte("made")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(sub, "made.txt")); err != nil || string(b) != "made" {
		t.Errorf("narrowed write went elsewhere: %q, %v", b, err)
	}

	// The second root can be a working directory too; relative paths follow it.
	n = narrow(t, j, f.root2)
	if b, err := n.ReadFile("other.txt", 0); err != nil || string(b) != "other" {
		t.Errorf("Narrow(root2).ReadFile = %q, %v", b, err)
	}
	// And the root itself.
	n = narrow(t, j, f.root)
	if _, err := n.ReadFile(filepath.Join(f.root2, "other.txt"), 0); !errors.Is(err, ErrDenied) {
		t.Errorf("Narrow(root) still reaches root2: %v", err)
	}
}

func TestNoRoots(t *testing.T) {
	f := newFixture(t)
	before := snapshot(t, f.base)
	for i, j := range []*Jail{
		nil,
		{},
		New(nil),
		New([]string{}),
		New([]string{"", "  ", "\x00", filepath.Join(f.base, "missing"), filepath.Join(f.root, "hello.txt"), filepath.Join(f.root, "link-loop")}),
	} {
		if len(j.Roots()) != 0 {
			t.Errorf("jail %d has roots %v", i, j.Roots())
		}
		for _, p := range []string{"hello.txt", filepath.Join(f.root, "hello.txt"), f.secret, "x.txt"} {
			if _, err := j.ReadFile(p, 0); !errors.Is(err, ErrDenied) {
				t.Errorf("jail %d ReadFile(%q) = %v", i, p, err)
			}
			if _, err := j.Stat(p); !errors.Is(err, ErrDenied) {
				t.Errorf("jail %d Stat(%q) = %v", i, p, err)
			}
			if err := j.WriteFile(p, []byte("x")); !errors.Is(err, ErrDenied) {
				t.Errorf("jail %d WriteFile(%q) = %v", i, p, err)
			}
		}
		if _, err := j.Narrow(f.root); !errors.Is(err, ErrInvalidWorkingDir) {
			t.Errorf("jail %d Narrow = %v", i, err)
		}
		if err := j.Close(); err != nil {
			t.Errorf("jail %d Close = %v", i, err)
		}
	}
	sameSnapshot(t, "base", before, snapshot(t, f.base))
}

func TestClosedJailDenies(t *testing.T) {
	f := newFixture(t)
	j := New([]string{f.root})
	j.Close()
	if _, err := j.ReadFile("hello.txt", 0); !errors.Is(err, ErrDenied) {
		t.Errorf("ReadFile after Close = %v", err)
	}
	if err := j.WriteFile("new.txt", nil); !errors.Is(err, ErrDenied) {
		t.Errorf("WriteFile after Close = %v", err)
	}
}

func TestNewDropsUnresolvableRoots(t *testing.T) {
	f := newFixture(t)
	alias := filepath.Join(f.base, "alias")
	symlink(t, f.root, alias)
	j := newJail(t,
		filepath.Join(f.base, "missing"),
		filepath.Join(f.root, "hello.txt"),
		filepath.Join(f.root, "link-loop"),
		"",
		f.root,
		" "+f.root2+" ",
		alias,
		f.root+"/",
	)
	if got, want := j.Roots(), []string{f.root, f.root2}; !slices.Equal(got, want) {
		t.Fatalf("Roots() = %v, want %v", got, want)
	}
	if b, err := j.ReadFile(filepath.Join(alias, "hello.txt"), 0); err != nil || string(b) != "hello" {
		t.Errorf("read through the configured alias = %q, %v", b, err)
	}
}

// TestLongestRootWins: with a root and a symlinked root inside it, an
// absolute path below the inner spelling goes to the inner root.
func TestLongestRootWins(t *testing.T) {
	f := newFixture(t)
	parent := filepath.Join(f.base, "parent")
	mkdirs(t, parent)
	inner := filepath.Join(parent, "inner")
	symlink(t, f.root2, inner)
	j := newJail(t, parent, inner)
	if b, err := j.ReadFile(filepath.Join(inner, "other.txt"), 0); err != nil || string(b) != "other" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
}

func TestRootsFromEnv(t *testing.T) {
	env := func(v string, set bool) func(string) string {
		return func(k string) string {
			if set && k == EnvAllowedDirs {
				return v
			}
			return ""
		}
	}
	fileRoots := []string{" /srv/a ", "", "rel"}
	cases := []struct {
		name   string
		getenv func(string) string
		cwd    string
		want   []string
	}{
		{"unset", env("", false), "/cwd", []string{"/srv/a", "/cwd/rel", "/cwd"}},
		{"nil getenv", nil, "/cwd", []string{"/srv/a", "/cwd/rel", "/cwd"}},
		{"blank", env("   ", true), "/cwd", []string{"/srv/a", "/cwd/rel", "/cwd"}},
		{"empty", env("", true), "/cwd", []string{"/srv/a", "/cwd/rel", "/cwd"}},
		{"no cwd", env("", false), "", []string{"/srv/a", "rel"}},
		{"one", env("/x", true), "/cwd", []string{"/x"}},
		{"spaces and empties", env(" /x , /y ,,  ,/z,", true), "/cwd", []string{"/x", "/y", "/z"}},
		{"relative entry", env("rel, /abs", true), "/cwd", []string{"/cwd/rel", "/abs"}},
		{"only separators", env(", ,", true), "/cwd", nil},
		{"path with spaces", env("/my dir/x", true), "/cwd", []string{"/my dir/x"}},
	}
	for _, c := range cases {
		got := RootsFromEnv(c.getenv, fileRoots, c.cwd)
		want := make([]string, len(c.want))
		for i, w := range c.want {
			want[i] = filepath.FromSlash(w)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: RootsFromEnv = %q, want %q", c.name, got, want)
		}
	}
	// ", ," must not fall back to the wider default.
	if j := New(RootsFromEnv(env(", ,", true), []string{t.TempDir()}, t.TempDir())); len(j.Roots()) != 0 {
		t.Errorf("blank entries fell back to defaults: %v", j.Roots())
	}
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".garra-write-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root, f.root2)
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(f.root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// New file, missing parents created.
	if err := j.WriteFile("new/deeper/file.txt", []byte("fresh")); err != nil {
		t.Fatal(err)
	}
	if got := read("new/deeper/file.txt"); got != "fresh" {
		t.Errorf("new file = %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(f.root, "new/deeper/file.txt")); fi.Mode().Perm()&0o600 != 0o600 {
		t.Errorf("new file mode %v", fi.Mode())
	}

	// Replacing a longer file with a shorter one leaves exactly the new bytes,
	// and the old permission bits stay.
	target := filepath.Join(f.root, "hello.txt")
	if err := os.WriteFile(target, bytes.Repeat([]byte("long line\n"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := j.WriteFile(target, []byte("short")); err != nil {
		t.Fatal(err)
	}
	if got := read("hello.txt"); got != "short" {
		t.Errorf("replaced file = %q", got)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode not preserved: %v", fi.Mode())
	}
	if err := j.WriteFile("empty.txt", nil); err != nil || read("empty.txt") != "" {
		t.Errorf("empty write: %v", err)
	}

	// Writing through a symlink inside the root updates its target and keeps the link.
	if err := j.WriteFile("link-in", []byte("via link")); err != nil {
		t.Fatal(err)
	}
	if got := read("hello.txt"); got != "via link" {
		t.Errorf("target through link = %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(f.root, "link-in")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link-in replaced: %v, %v", fi, err)
	}
	if err := j.WriteFile("dirlink-in/via-dir.txt", []byte("d")); err != nil || read("sub/via-dir.txt") != "d" {
		t.Errorf("write through dir link: %v", err)
	}
	// Second root by absolute path.
	if err := j.WriteFile(filepath.Join(f.root2, "n.txt"), []byte("two")); err != nil {
		t.Fatal(err)
	}

	// Targets that cannot be files.
	for p, want := range map[string]error{
		"sub":              ErrIsDir,
		".":                ErrIsDir,
		f.root:             ErrIsDir,
		"dirlink-in":       ErrIsDir,
		"hello.txt/x":      ErrNotDir,
		"hello.txt/x/y":    ErrNotDir,
		"link-in/x":        ErrNotDir,
		"missing/../x.txt": nil, // cleaned lexically to x.txt
	} {
		err := j.WriteFile(p, []byte("x"))
		if !errors.Is(err, want) || (want != nil && errors.Is(err, ErrDenied)) {
			t.Errorf("WriteFile(%q) = %v, want %v", p, err, want)
		}
		if err != nil && strings.Contains(err.Error(), f.base) {
			t.Errorf("WriteFile(%q) leaks the host path: %v", p, err)
		}
	}

	// A write that fails after the temporary file exists leaves the old
	// file and no temporary file.
	before := read("hello.txt")
	testHookBeforeRename = func() error { return errors.New("injected failure") }
	err := j.WriteFile("hello.txt", []byte("never visible"))
	testHookBeforeRename = nil
	if err == nil || err.Error() != "rename hello.txt: injected failure" {
		t.Errorf("failing write = %v", err)
	}
	if got := read("hello.txt"); got != before {
		t.Errorf("failed write changed the file: %q", got)
	}
	if tmp := tempFiles(t, f.base); len(tmp) != 0 {
		t.Errorf("temporary files left behind: %v", tmp)
	}
}

// TestWriteIsAtomic: a reader racing two writers sees one whole version or
// the other, never a mix, a truncated file or a missing file.
func TestWriteIsAtomic(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root)
	a := bytes.Repeat([]byte("A"), 256<<10)
	b := bytes.Repeat([]byte("B"), 128<<10)
	if err := j.WriteFile("doc.txt", a); err != nil {
		t.Fatal(err)
	}
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
			data := a
			if i%2 == 1 {
				data = b
			}
			if err := j.WriteFile("doc.txt", data); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 300 {
		got, err := j.ReadFile("doc.txt", 1<<20)
		if err != nil {
			t.Errorf("read during write: %v", err)
			break
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Errorf("torn read: %d bytes", len(got))
			break
		}
	}
	close(stop)
	wg.Wait()
	if tmp := tempFiles(t, f.base); len(tmp) != 0 {
		t.Errorf("temporary files left behind: %v", tmp)
	}
}

func TestReadLimits(t *testing.T) {
	f := newFixture(t)
	j := newJail(t, f.root)
	writeFiles(t, map[string]string{filepath.Join(f.root, "hundred.txt"): strings.Repeat("x", 100)})
	if b, err := j.ReadFile("hundred.txt", 100); err != nil || len(b) != 100 {
		t.Errorf("read at the limit = %d, %v", len(b), err)
	}
	_, err := j.ReadFile("hundred.txt", 99)
	if !errors.Is(err, ErrTooLarge) || err.Error() != "read hundred.txt: file exceeds the read size limit of 99 bytes" {
		t.Errorf("read over the limit = %v", err)
	}
	if b, err := j.ReadFile("hundred.txt", 0); err != nil || len(b) != 100 {
		t.Errorf("default limit = %d, %v", len(b), err)
	}
	if b, err := j.ReadFile("hundred.txt", -1); err != nil || len(b) != 100 {
		t.Errorf("negative limit = %d, %v", len(b), err)
	}
	big := filepath.Join(f.root, "big.bin")
	if err := os.WriteFile(big, make([]byte, DefaultMaxReadBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := j.ReadFile("big.bin", 0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("default limit not applied: %v", err)
	}
}
