//go:build linux

package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/test/proctest"
)

// git runs git in dir for the test itself (as a user would, on the host).
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// In a pod the workspace's .git may stay writable to bash: the read-only
// bind of its config and hooks needs a user namespace, which a pod's
// seccomp profile usually refuses. What makes that harmless: what bash
// plants there runs only if something runs git on the volume, and the only
// thing that does is the sandbox's own git_diff, which runs none of it.
// The plant script is run here, as bash without namespaces would run it
// (where namespaces are on, they stop it first); plain git on the same
// repository shows it would run.
func TestPlantedGitConfigDoesNotRunThroughGitDiff(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	f := newFixture(t)
	git(t, f.ws, "init", "-q")
	git(t, f.ws, "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
	if err := os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, f.ws, "add", "a.txt")
	cs := f.client(t, testToken)

	marker := func(name string) string { return filepath.Join(f.out, name) }
	plant := strings.Join([]string{
		"set -e",
		"mkdir -p .git/hooks",
		"for h in pre-commit post-checkout post-index-change reference-transaction; do",
		"  printf '#!/bin/sh\\ntouch " + marker("hook") + "\\n' > .git/hooks/$h; chmod +x .git/hooks/$h",
		"done",
		"cat >> .git/config <<'EOF'",
		"[core]",
		"\tfsmonitor = touch " + marker("fsmonitor") + "; echo",
		"\tpager = touch " + marker("pager") + "; cat",
		"[alias]",
		"\tdiff = !touch " + marker("alias"), // git never lets an alias shadow a builtin, which is all git_diff runs
		"[diff]",
		"\texternal = touch " + marker("external"),
		"[filter \"evil\"]",
		"\tclean = touch " + marker("filter") + "; cat",
		"\trequired = true",
		"EOF",
		"echo 'a.txt filter=evil' > .gitattributes",
		"echo two >> a.txt",
		"echo planted",
	}, "\n") + "\n"
	if out, isErr := call(t, cs, "file_write", map[string]any{"path": "plant.sh", "content": plant}); isErr {
		t.Fatalf("file_write: %s", out)
	}
	planted := exec.Command("bash", "plant.sh")
	planted.Dir = f.ws
	if out, err := planted.CombinedOutput(); err != nil || !strings.Contains(string(out), "planted") {
		t.Fatalf("the plant did not land (%v): %s", err, out)
	}

	markers := []string{"hook", "fsmonitor", "pager", "alias", "external", "filter"}
	ran := func() []string {
		var got []string
		for _, m := range markers {
			if _, err := os.Stat(marker(m)); err == nil {
				got = append(got, m)
				_ = os.Remove(marker(m))
			}
		}
		return got
	}
	for _, args := range []map[string]any{{}, {"staged": true}, {"base": "HEAD"}, {"path": "a.txt"}} {
		out, isErr := call(t, cs, "git_diff", args)
		if isErr || !strings.Contains(out, "a.txt") {
			t.Errorf("git_diff %v: %v %s", args, isErr, out)
		}
		if got := ran(); len(got) > 0 {
			t.Fatalf("git_diff %v ran what bash planted: %v", args, got)
		}
	}

	// Control: git as a user would run it does run the plant.
	cmd := exec.Command("git", "-C", f.ws, "diff")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	_ = cmd.Run() // its exit status does not matter
	if got := ran(); len(got) == 0 {
		t.Fatal("control: plain git ran nothing that was planted; the test cannot tell")
	} else {
		t.Logf("control: plain git diff ran %v", got)
	}
}

// A process a bash call detaches from its group is gone when the call
// returns: nothing the sandbox ran outlives the call.
func TestBashLeavesNothingBehind(t *testing.T) {
	f := newFixture(t)
	cs := f.client(t, testToken)
	out, isErr := call(t, cs, "bash", map[string]any{"command": "setsid sleep 300 > /dev/null 2>&1 & echo $! > pid.txt; sleep 0.2; echo started"})
	if isErr || strings.TrimSpace(out) != "started" {
		t.Fatalf("bash: %v %q", isErr, out)
	}
	// PidsIn finds the child by its own pid and directory: the call may run
	// in a PID namespace, where $! is not this process's view.
	for _, pid := range proctest.PidsIn(t, filepath.Join(f.ws, "pid.txt")) {
		proctest.WaitGone(t, pid, "the setsid child of the call")
	}
}
