package gitdouble

import (
	"encoding/base64"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// git itself clones the double over TLS with the credential, and is
// refused without it.
func TestGitClones(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	repo, err := NewRepo(map[string]string{"README.md": "private readme\n", "b.txt": "bee\n"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Repo: repo, Prefix: "/repo.git/", User: "x-access-token", Token: "s3cret-token"}
	ts := httptest.NewTLSServer(s)
	defer ts.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	clone := func(dest string, extra ...string) (string, error) {
		args := append(extra, "clone", "--quiet", ts.URL+"/repo.git", filepath.Join(dir, dest))
		cmd := exec.Command(git, args...)
		// The variable, not http.sslCAInfo: it wins over the config, and
		// the environment may hold one already (exec keeps the last).
		cmd.Env = append(os.Environ(), "GIT_SSL_CAINFO="+ca, "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	if out, err := clone("refused"); err == nil || !strings.Contains(out, "Authentication failed") && !strings.Contains(out, "could not read Username") {
		t.Fatalf("clone without the credential: err %v, output %s", err, out)
	}
	if s.Refused.Load() == 0 || s.Served.Load() != 0 {
		t.Errorf("refused %d served %d", s.Refused.Load(), s.Served.Load())
	}

	auth := "http.extraHeader=Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:s3cret-token"))
	if out, err := clone("ok", "-c", auth); err != nil {
		t.Fatalf("clone with the credential: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "ok", "README.md"))
	if err != nil || string(got) != "private readme\n" {
		t.Fatalf("README.md = %q, %v", got, err)
	}
	head, err := exec.Command(git, "-C", filepath.Join(dir, "ok"), "rev-parse", "HEAD").Output()
	if err != nil || strings.TrimSpace(string(head)) != repo.Commit() {
		t.Errorf("HEAD = %q (%v), want %s", head, err, repo.Commit())
	}
	if out, err := exec.Command(git, "-C", filepath.Join(dir, "ok"), "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}

func TestNewRepoRefusesDirectories(t *testing.T) {
	if _, err := NewRepo(map[string]string{"a/b": "x"}); err == nil {
		t.Error("a nested name was accepted")
	}
}
