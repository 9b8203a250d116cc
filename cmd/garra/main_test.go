package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/garraia/garra/test/pgtest"
)

// garraBin is the binary built once for the child-process tests.
var garraBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "garra-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Open to every user: some tests run the binary as an unprivileged uid.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	garraBin = filepath.Join(dir, "garra")
	build := exec.Command("go", "build", "-o", garraBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build garra:", err)
		os.Exit(1)
	}
	code := pgtest.Main(m) // stops the PostgreSQL server tests started, if any
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// testEnv is a minimal environment for a child: no inherited secrets, a
// throwaway HOME, plus extra.
func testEnv(t testing.TB, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, extra...)
}

// writeConfig writes a config.yml pointing the given provider at baseURL.
func writeConfig(t testing.TB, provider, baseURL string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yml")
	body := fmt.Sprintf("llm:\n  provider: %s\n  base_url: %s\n", provider, baseURL)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// run executes the binary and returns stdout, stderr and the exit code.
func run(t testing.TB, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(garraBin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}
