package sandbox_test

import (
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
)

// git clones and pushes a private repository over HTTPS from bash, with
// the credential injected by the gateway: neither bash's environment, nor
// /proc, nor any file it can write, nor any output holds it.
func TestGitCloneAndPushWithoutTheCredential(t *testing.T) {
	f := newEgressFixture(t)
	out := f.bash(t, "git clone -q "+f.repo+" repo 2>&1 && cd repo && git log --format=%s")
	if strings.TrimSpace(out) != "seed" {
		t.Fatalf("clone: %s", out)
	}
	out = f.bash(t, "cd repo && echo hi > file && git add file && git -c user.name=agent -c user.email=agent@example.invalid commit -qm 'from the sandbox' && git push -q origin main 2>&1 && echo pushed")
	if !strings.Contains(out, "pushed") {
		t.Fatalf("push: %s", out)
	}
	got, err := exec.Command("git", "-C", filepath.Join(f.git.Root, "private.git"), "log", "--format=%s", "main").Output()
	if err != nil || !strings.Contains(string(got), "from the sandbox") {
		t.Fatalf("the push did not land: %s %v", got, err)
	}
	// Without the proxy git is refused by the server itself.
	if out := f.bash(t, "GIT_SSL_NO_VERIFY=1 git -c http.proxy= -c credential.helper= ls-remote "+f.repo+" </dev/null 2>&1; echo exit=$?"); !strings.Contains(out, "exit=128") {
		t.Fatalf("direct git: %s", out)
	}
	if f.git.Unauthorized.Load() == 0 {
		t.Fatal("the direct attempt never reached the server")
	}

	// What bash can see: its environment, /proc/self/environ, its private
	// TMPDIR (copied out, it is removed after the call) and the workspace.
	out = f.bash(t, `env > env.txt; tr '\0' '\n' < /proc/self/environ > environ.txt; cp -a "$TMPDIR" tmpdir-copy; cat env.txt`)
	assertNoSecret(t, "bash's env", out)
	for _, want := range []string{"HTTPS_PROXY=http://garra:", "NO_PROXY=localhost,127.0.0.1,::1", "GIT_SSL_CAINFO=", "SSL_CERT_FILE=", "CURL_CA_BUNDLE=", "REQUESTS_CA_BUNDLE=", "NODE_EXTRA_CA_CERTS="} {
		if !strings.Contains(out, want) {
			t.Errorf("bash's env lacks %s:\n%s", want, out)
		}
	}
	var bundle string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "SSL_CERT_FILE="); ok {
			bundle = v
		}
		if v, ok := strings.CutPrefix(l, "HTTPS_PROXY="); ok {
			u, err := url.Parse(v)
			if err != nil {
				t.Fatal(err)
			}
			if pw, _ := u.User.Password(); pw != config.EgressToken(testToken) {
				t.Errorf("HTTPS_PROXY's token is not the derived egress token")
			}
		}
	}
	scanned := 0
	for _, root := range []string{f.ws, filepath.Dir(bundle)} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil // sockets and the like
			}
			scanned++
			assertNoSecret(t, p, string(b))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if scanned < 10 {
		t.Fatalf("scanned %d files only", scanned)
	}
	assertNoSecret(t, "the sandbox's log", f.logs.String())
}
