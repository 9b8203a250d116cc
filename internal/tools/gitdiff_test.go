package tools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
}

// gitCmd runs git in dir for test setup, isolated from the machine's
// configuration, and returns its combined output.
func gitCmd(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := gitCmd(t, dir, args...); err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository with a.txt and b.txt committed ("old"), and
// HOME pointed at an empty directory so no global config interferes.
func newRepo(t *testing.T) string {
	t.Helper()
	requireGit(t)
	t.Setenv("HOME", canonTempDir(t))
	repo := canonTempDir(t)
	mustGit(t, repo, "init", "-q")
	mustGit(t, repo, "config", "user.name", "Garra Test")
	mustGit(t, repo, "config", "user.email", "test@garra.invalid")
	writeFile(t, filepath.Join(repo, "a.txt"), "old\n")
	writeFile(t, filepath.Join(repo, "b.txt"), "old\n")
	writeFile(t, filepath.Join(repo, "sub", "c.txt"), "old\n")
	mustGit(t, repo, "add", ".")
	mustGit(t, repo, "commit", "-q", "-m", "init")
	return repo
}

func gitDiffLocal(t *testing.T, dir string) *Local {
	t.Helper()
	return NewLocal(LocalOptions{Jail: newJail(t, dir), WorkingDir: dir})
}

func TestGitDiffShowsChanges(t *testing.T) {
	repo := newRepo(t)
	l := gitDiffLocal(t, repo)

	res := call(t, l, ToolGitDiff, map[string]any{})
	if res.IsError || res.Output != "no changes" {
		t.Fatalf("clean tree: %+v", res)
	}

	writeFile(t, filepath.Join(repo, "a.txt"), "staged\n")
	mustGit(t, repo, "add", "a.txt")
	writeFile(t, filepath.Join(repo, "a.txt"), "unstaged\n")
	writeFile(t, filepath.Join(repo, "sub", "c.txt"), "new c\n")

	tests := []struct {
		name      string
		args      map[string]any
		has, hasn []string
	}{
		{"unstaged", map[string]any{}, []string{"-staged\n+unstaged", "+new c"}, []string{"-old\n+staged"}},
		{"staged", map[string]any{"staged": true}, []string{"-old\n+staged"}, []string{"unstaged", "new c"}},
		{"base", map[string]any{"base": "HEAD"}, []string{"-old\n+unstaged", "+new c"}, nil},
		{"path", map[string]any{"path": "sub"}, []string{"+new c"}, []string{"a.txt"}},
		{"absolute path", map[string]any{"path": filepath.Join(repo, "sub", "c.txt")}, []string{"+new c"}, []string{"a.txt"}},
		{"staged against base", map[string]any{"staged": true, "base": "HEAD"}, []string{"+staged"}, []string{"unstaged"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, l, ToolGitDiff, tt.args)
			if res.IsError {
				t.Fatalf("error: %s", res.Output)
			}
			for _, s := range tt.has {
				if !strings.Contains(res.Output, s) {
					t.Errorf("output lacks %q:\n%s", s, res.Output)
				}
			}
			for _, s := range tt.hasn {
				if strings.Contains(res.Output, s) {
					t.Errorf("output has %q:\n%s", s, res.Output)
				}
			}
		})
	}
}

// The diff is limited to the working directory, even when the repository
// is larger.
func TestGitDiffStaysInWorkingDir(t *testing.T) {
	repo := newRepo(t)
	writeFile(t, filepath.Join(repo, "a.txt"), "outside the working dir\n")
	writeFile(t, filepath.Join(repo, "sub", "c.txt"), "inside\n")
	sub := filepath.Join(repo, "sub")
	l := NewLocal(LocalOptions{Jail: newJail(t, sub), WorkingDir: sub})
	res := call(t, l, ToolGitDiff, map[string]any{})
	if res.IsError || !strings.Contains(res.Output, "+inside") || strings.Contains(res.Output, "outside the working dir") {
		t.Fatalf("result %+v", res)
	}
}

func TestGitDiffRefusals(t *testing.T) {
	repo := newRepo(t)
	l := gitDiffLocal(t, repo)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "../x"}, "path: must be inside the working directory"},
		{map[string]any{"path": "/etc/passwd"}, "path: must be inside the working directory"},
		{map[string]any{"base": "--output=/tmp/pwned"}, "base: must be a revision"},
		{map[string]any{"base": "-p"}, "base: must be a revision"},
		{map[string]any{"base": "/etc/passwd"}, "base: must be a revision"},
		{map[string]any{"base": "HEAD/../../etc"}, "base: must be a revision"},
		{map[string]any{"base": "HEAD; rm -rf /"}, "base: must be a revision"},
		{map[string]any{"base": "nope-no-such-rev"}, "git_diff: "},
	}
	for _, tt := range tests {
		res := call(t, l, ToolGitDiff, tt.args)
		if !res.IsError || !strings.Contains(res.Output, tt.want) {
			t.Errorf("%v = %+v, want error containing %q", tt.args, res, tt.want)
		}
		noHostPath(t, res.Output, repo)
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Fatal("git wrote /tmp/pwned")
	}
}

func TestGitDiffOutsideARepository(t *testing.T) {
	requireGit(t)
	t.Setenv("HOME", canonTempDir(t))
	dir := canonTempDir(t)
	writeFile(t, filepath.Join(dir, "x"), "x\n")
	res := call(t, gitDiffLocal(t, dir), ToolGitDiff, map[string]any{"path": "x"})
	if !res.IsError || !strings.Contains(res.Output, "not inside a git work tree") {
		t.Fatalf("result %+v", res)
	}
	noHostPath(t, res.Output, dir)

	res = call(t, NewLocal(LocalOptions{}), ToolGitDiff, map[string]any{})
	if !res.IsError || !strings.Contains(res.Output, "no workspace directory") {
		t.Fatalf("no dir at all: %+v", res)
	}
}

// A planted .git/config and .gitattributes name a program for every hook
// git diff could run. None of them may run; the same repository proves,
// with plain git, that each one would have.
func TestGitDiffPlantedConfigRunsNothing(t *testing.T) {
	repo := newRepo(t)
	writeFile(t, filepath.Join(repo, "a.txt"), "staged\n")
	mustGit(t, repo, "add", "a.txt")

	m := canonTempDir(t) // markers and scripts, outside the repository
	script := func(name, body string) string {
		p := filepath.Join(m, name+".sh")
		writeFile(t, p, "#!/bin/sh\ntouch "+filepath.Join(m, name)+"\n"+body+"\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hooks := filepath.Join(m, "hooks")
	for _, h := range []string{"pre-commit", "post-checkout", "post-index-change", "fsmonitor-watchman", "reference-transaction"} {
		writeFile(t, filepath.Join(hooks, h), "#!/bin/sh\ntouch "+filepath.Join(m, "hook")+"\n")
		if err := os.Chmod(filepath.Join(hooks, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `[core]
	fsmonitor = %s
	hooksPath = %s
	pager = %s
[filter "evil"]
	clean = %s
	smudge = %s
	required = true
[filter "evil.dotted"]
	process = %s
[diff "x"]
	textconv = %s
	command = %s
[diff]
	external = %s
`, script("fsmonitor", "exit 0"), hooks, script("pager", "cat"),
		script("clean", "cat"), script("smudge", "cat"), script("process", "exit 0"),
		script("textconv", `cat "$1"`), script("diffcommand", "exit 0"), script("external", "exit 0"))
	f.Close()
	writeFile(t, filepath.Join(repo, ".gitattributes"), "a.txt filter=evil diff=x\nb.txt filter=evil.dotted\n")
	writeFile(t, filepath.Join(repo, "a.txt"), "unstaged\n")
	writeFile(t, filepath.Join(repo, "b.txt"), "new b\n")

	markers := []string{"fsmonitor", "hook", "pager", "clean", "smudge", "process", "textconv", "diffcommand", "external"}
	ran := func() []string {
		var out []string
		for _, n := range markers {
			if _, err := os.Stat(filepath.Join(m, n)); err == nil {
				out = append(out, n)
				os.Remove(filepath.Join(m, n))
			}
		}
		return out
	}

	l := gitDiffLocal(t, repo)
	for _, args := range []map[string]any{{}, {"staged": true}, {"base": "HEAD"}, {"path": "a.txt"}, {"path": "b.txt", "base": "HEAD"}} {
		res := call(t, l, ToolGitDiff, args)
		if res.IsError {
			t.Fatalf("%v: %s", args, res.Output)
		}
		if got := ran(); len(got) > 0 {
			t.Fatalf("%v: git_diff ran planted programs: %v", args, got)
		}
		if args["staged"] == nil && !strings.Contains(res.Output, "+unstaged") && !strings.Contains(res.Output, "+new b") {
			t.Errorf("%v: change not shown:\n%s", args, res.Output)
		}
	}

	// Controls: plain git does run them, so the plant is effective.
	controls := []struct {
		args []string
		want []string
	}{
		{[]string{"-c", "filter.evil.dotted.process=", "diff"}, []string{"fsmonitor", "clean", "external"}},
		{[]string{"-c", "filter.evil.dotted.process=", "diff", "--no-ext-diff"}, []string{"textconv"}},
		{[]string{"diff"}, []string{"process"}},
	}
	for _, c := range controls {
		gitCmd(t, repo, c.args...) // the exit status does not matter
		got := ran()
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("control git %q did not run %s (ran %v): the test plant is broken", c.args, w, got)
			}
		}
	}
}

func TestParseFilterDrivers(t *testing.T) {
	out := "filter.lfs.clean\ngit-lfs clean -- %f\x00filter.lfs.smudge\ngit-lfs smudge\x00filter.a.b.c.process\nx\x00filter.required\ntrue\x00"
	got := parseFilterDrivers(out)
	if want := []string{"lfs", "a.b.c"}; !slices.Equal(got, want) {
		t.Fatalf("drivers = %q, want %q", got, want)
	}
	cs := blankFilters([]string{"x.y"})
	want := []string{"filter.x.y.clean=", "filter.x.y.smudge=", "filter.x.y.process=", "filter.x.y.required=false"}
	if !slices.Equal(cs, want) {
		t.Fatalf("blankFilters = %q", cs)
	}
}

func TestGitEnvIsAllowlisted(t *testing.T) {
	t.Setenv("GIT_DIR", "/somewhere/else")
	t.Setenv("GIT_EXTERNAL_DIFF", "/bin/evil")
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	allowed := append(EnvAllowlist(), "GIT_CONFIG_NOSYSTEM", "GIT_TERMINAL_PROMPT", "GIT_NO_LAZY_FETCH", "GIT_OPTIONAL_LOCKS")
	env := gitEnv()
	if !slices.Contains(env, "GIT_CONFIG_NOSYSTEM=1") {
		t.Error("GIT_CONFIG_NOSYSTEM=1 missing")
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(allowed, name) {
			t.Errorf("git child env has %s", name)
		}
	}
}

func TestGitDiffOutputCapped(t *testing.T) {
	repo := newRepo(t)
	writeFile(t, filepath.Join(repo, "a.txt"), strings.Repeat("line\n", 10000))
	l := NewLocal(LocalOptions{Jail: newJail(t, repo), WorkingDir: repo, MaxOutputBytes: 500})
	res := call(t, l, ToolGitDiff, map[string]any{})
	if res.IsError || !strings.Contains(res.Output, "[output truncated: first 500 of ") || len(res.Output) > 600 {
		t.Fatalf("result (%d bytes) %q", len(res.Output), res.Output[max(0, len(res.Output)-100):])
	}
}
