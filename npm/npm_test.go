//go:build linux

// Package npm_test packs the npm packages the way `make npm` does (for this
// machine's platform only), installs them from the tarballs into a fresh
// directory with npm, and runs what an MCP host runs: `npx -y
// @garraia/garra-mcp`.
package npm_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/proctest"
)

const (
	repoRoot = ".."
	mainName = "@garraia/garra-mcp"
)

// manifest is the part of a package.json the test checks.
type manifest struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	MCPName              string            `json:"mcpName"`
	Bin                  map[string]string `json:"bin"`
	OS                   []string          `json:"os"`
	CPU                  []string          `json:"cpu"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
}

// packed is one tarball: its package.json and the mode of each file.
type packed struct {
	Path     string
	Manifest manifest
	Modes    map[string]os.FileMode
}

func TestNpxStartsTheStdioServer(t *testing.T) {
	for _, tool := range []string{"node", "npm", "npx"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the npm package's test needs npm and node", tool)
		}
	}
	work := t.TempDir()
	platform := "linux-" + map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	platformName := mainName + "-" + platform

	// Pack: the main package and this platform's, through hack/npm.sh; or
	// take them from GARRA_NPM_TARBALLS, a directory of packed tarballs
	// (hack/release.sh points it at the release's, built from its
	// checksummed binaries).
	var paths []string
	if dir := os.Getenv("GARRA_NPM_TARBALLS"); dir != "" {
		for _, n := range []string{mainName, platformName} {
			p := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(n, "@"), "/", "-")+"-[0-9]*.tgz") // the version follows the name
			m, err := filepath.Glob(p)
			if err != nil || len(m) != 1 {
				t.Fatalf("GARRA_NPM_TARBALLS: %s matches %v, want one tarball", p, m)
			}
			paths = append(paths, m[0])
		}
	} else {
		start := time.Now()
		pack := exec.Command("hack/npm.sh")
		pack.Dir = repoRoot
		pack.Env = append(os.Environ(), "NPM_DIR="+filepath.Join(work, "packs"), "NPM_PLATFORMS=host",
			"npm_config_cache="+filepath.Join(work, "npm-cache"), "npm_config_update_notifier=false")
		pack.Stderr = os.Stderr
		out, err := pack.Output()
		if err != nil {
			t.Fatalf("hack/npm.sh: %v", err)
		}
		t.Logf("hack/npm.sh (host only) took %v", time.Since(start))
		if paths = strings.Fields(string(out)); len(paths) != 2 {
			t.Fatalf("hack/npm.sh printed %q, want the main and the %s tarball", out, platform)
		}
	}
	mainPkg, plat := readTarball(t, paths[0]), readTarball(t, paths[1])
	for _, p := range []packed{mainPkg, plat} {
		t.Logf("%s: %d bytes", filepath.Base(p.Path), fileSize(t, p.Path))
	}
	version := checkManifests(t, mainPkg, plat, platformName, platform)

	// Install from the local tarballs only: --offline, so a package npm
	// would have to fetch fails the install instead.
	inst := filepath.Join(work, "project")
	if err := os.MkdirAll(inst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inst, "package.json"), []byte(`{"name":"install-test","private":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(work, "home"),
		"npm_config_cache=" + filepath.Join(work, "npm-cache"), "npm_config_update_notifier=false"}
	start := time.Now()
	install := exec.Command("npm", "install", "--no-audit", "--no-fund", "--offline", mainPkg.Path, plat.Path)
	install.Dir, install.Env = inst, env
	if b, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, b)
	}
	t.Logf("npm install --offline took %v", time.Since(start))
	shim := filepath.Join(inst, "node_modules", ".bin", "garra-mcp")
	garra := filepath.Join(inst, "node_modules", platformName, "bin", "garra")

	t.Run("npx -y starts the stdio MCP server", func(t *testing.T) {
		cmd := exec.Command("npx", "--offline", "-y", mainName)
		cmd.Dir, cmd.Env = inst, env
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "npm-test", Version: "0"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("initialize through npx: %v", err)
		}
		t.Logf("npx answered initialize in %v", time.Since(start))
		defer func() { _ = cs.Close() }()
		if ir := cs.InitializeResult(); ir.ServerInfo == nil || ir.ServerInfo.Name != "garra" || ir.ServerInfo.Version != "v"+version {
			t.Errorf("serverInfo %+v, want garra v%s", ir.ServerInfo, version)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "garra_ask" }) {
			t.Errorf("tools/list has no garra_ask: %d tools", len(tools.Tools))
		}
	})

	t.Run("arguments and exit code pass through", func(t *testing.T) {
		stdout, code := runCode(t, env, shim, "version")
		if code != 0 || !strings.Contains(stdout, "v"+version) {
			t.Errorf("garra-mcp version: exit %d, %q; want 0 and v%s", code, stdout, version)
		}
		_, want := runCode(t, env, garra, "no-such-command")
		_, got := runCode(t, env, shim, "no-such-command")
		if want == 0 || got != want {
			t.Errorf("garra-mcp no-such-command exits %d, garra itself %d", got, want)
		}
	})

	t.Run("the platform package missing: the shim names it and the ways out", func(t *testing.T) {
		bare := filepath.Join(work, "bare", "node_modules", mainName)
		if err := os.CopyFS(bare, os.DirFS(filepath.Join(inst, "node_modules", mainName))); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("node", filepath.Join(bare, "bin", "garra-mcp.js"), "version")
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		out, code := string(b), exitCode(t, err)
		for _, want := range []string{platformName + "@" + version + ", is not installed", "not published for this version",
			"--omit=optional", "npm install " + platformName + "@" + version, "make build"} {
			if code != 1 || !strings.Contains(out, want) {
				t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
			}
		}
	})

	t.Run("SIGTERM reaches garra", func(t *testing.T) {
		// What garra does with SIGTERM once serving, run directly...
		direct := startServing(t, env, garra)
		_ = direct.cmd.Process.Signal(syscall.SIGTERM)
		want := exitCode(t, direct.cmd.Wait())
		// ...is what the shim's host sees, and garra is gone with it.
		s := startServing(t, env, shim)
		child := childOf(t, s.cmd.Process.Pid)
		start := time.Now()
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		got := exitCode(t, s.cmd.Wait())
		t.Logf("the shim exited %v after SIGTERM", time.Since(start))
		proctest.WaitGone(t, child, "garra under the shim")
		if got != want {
			t.Errorf("after SIGTERM the shim exits %d, garra itself %d", got, want)
		}
	})

	t.Run("garra killed by a signal: the shim dies of it too", func(t *testing.T) {
		s := startServing(t, env, shim)
		_ = syscall.Kill(childOf(t, s.cmd.Process.Pid), syscall.SIGKILL)
		err := s.cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("shim: %v, want death by SIGKILL", err)
		}
		if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("shim ended with %v, want killed by SIGKILL", ee)
		}
	})
}

// checkManifests checks the two package.json files against each other and
// server.json, and returns the version they share.
func checkManifests(t *testing.T, main, plat packed, platformName, platform string) string {
	t.Helper()
	m, p := main.Manifest, plat.Manifest
	var server struct {
		Name string `json:"name"`
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &server); err != nil {
		t.Fatal(err)
	}
	if m.Name != mainName || m.MCPName != server.Name || m.Bin["garra-mcp"] == "" {
		t.Errorf("main package %s, mcpName %q (server.json: %q), bin %v", m.Name, m.MCPName, server.Name, m.Bin)
	}
	if m.OptionalDependencies[platformName] == "" {
		t.Errorf("main package's optionalDependencies %v lack %s", m.OptionalDependencies, platformName)
	}
	for dep, v := range m.OptionalDependencies {
		if v != m.Version {
			t.Errorf("optional dependency %s@%s, the main package %s", dep, v, m.Version)
		}
	}
	wantOS, wantCPU, _ := strings.Cut(platform, "-")
	if p.Name != platformName || p.Version != m.Version || !slices.Equal(p.OS, []string{wantOS}) || !slices.Equal(p.CPU, []string{wantCPU}) {
		t.Errorf("platform package %s@%s os %v cpu %v, want %s@%s on %s", p.Name, p.Version, p.OS, p.CPU, platformName, m.Version, platform)
	}
	if mode, ok := plat.Modes["bin/garra"]; !ok || mode&0o111 == 0 {
		t.Errorf("platform package: bin/garra mode %v (present %v), want executable", mode, ok)
	}
	for f := range main.Modes {
		if strings.HasPrefix(f, "bin/garra") && f != "bin/garra-mcp.js" {
			t.Errorf("main package carries %s: binaries belong in the platform packages", f)
		}
	}
	if mode := main.Modes["bin/garra-mcp.js"]; mode&0o111 == 0 {
		t.Errorf("bin/garra-mcp.js mode %v, want executable", mode)
	}
	return m.Version
}

func readTarball(t *testing.T, path string) packed {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	p := packed{Path: path, Modes: map[string]os.FileMode{}}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		name := strings.TrimPrefix(h.Name, "package/")
		p.Modes[name] = os.FileMode(h.Mode).Perm()
		if name == "package.json" {
			if err := json.NewDecoder(tr).Decode(&p.Manifest); err != nil {
				t.Fatalf("%s: package.json: %v", path, err)
			}
		}
	}
	if p.Manifest.Name == "" {
		t.Fatalf("%s has no package.json", path)
	}
	return p
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func runCode(t *testing.T, env []string, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	code := exitCode(t, cmd.Run())
	return out.String(), code
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode()
	default:
		t.Fatalf("not an exit: %v", err)
		return -1
	}
}

// serving is a stdio server that has answered initialize, its stdin still
// open.
type serving struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startServing starts bin with no arguments (the shim then runs
// mcp-server) or with mcp-server (garra itself), and waits for its answer to
// initialize, so its signal handling is in place.
func startServing(t *testing.T, env []string, bin string) serving {
	t.Helper()
	var cmd *exec.Cmd
	if filepath.Base(bin) == "garra" {
		cmd = exec.Command(bin, "mcp-server")
	} else {
		cmd = exec.Command(bin)
	}
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = stdin.Close() })
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"npm-test","version":"0"}}}` + "\n"
	if _, err := io.WriteString(stdin, initialize); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, `"serverInfo"`) {
		t.Fatalf("%s: initialize answered %q, %v", bin, line, err)
	}
	return serving{cmd: cmd, stdin: stdin}
}

// childOf is the one child process of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the parenthesised command: state, then ppid.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, c)
		}
	}
	if len(kids) != 1 {
		t.Fatalf("pid %d has children %v, want the one garra", pid, kids)
	}
	return kids[0]
}
