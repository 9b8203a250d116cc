package hands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/procguard"
	"github.com/garraia/garra/internal/tools"

	"github.com/garraia/garra/test/proctest"
)

// helperEnv makes the test binary, re-executed, play garra: load the
// config in GARRA_TEST_CONFIG, build host bash on the workspace
// GARRA_TEST_WS the way the gateway does (confined unless
// GARRA_TEST_CONFINE=off) and run each command of GARRA_TEST_CMDS (a JSON
// list), printing one report per command.
const helperEnv = "GARRA_HANDS_TEST_HELPER"

// testUID runs the helper where the test runs as root: unprivileged, and
// neither nobody nor procguard's test uids, which other packages' tests
// use at the same time (the process limit counts the uid's tasks).
const testUID = 65531

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelper())
	}
	os.Exit(m.Run())
}

type report struct {
	Output string `json:"output"`
	Code   int    `json:"code"`
	Err    string `json:"err,omitempty"`
}

func runHelper() int {
	cfg, _, err := config.Load(os.Getenv("GARRA_TEST_CONFIG"), os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if e := os.Getenv("GARRA_TEST_EGRESS"); e != "" {
		cfg.Agent.Egress = e
	}
	ws := os.Getenv("GARRA_TEST_WS")
	var conf tools.Confiner
	if os.Getenv("GARRA_TEST_CONFINE") != "off" {
		o := hands.ConfineOptions{Role: hands.RoleGateway, ConfigPath: os.Getenv("GARRA_TEST_CONFIG")}
		if os.Getenv("GARRA_TEST_NS") == "off" {
			o.Namespaces = func() error { return errors.New("off for the test") }
		}
		if a := os.Getenv("GARRA_TEST_ABI"); a != "" {
			n, _ := strconv.Atoi(a)
			o.ABI = func() int { return n }
		}
		conf = hands.NewConfinement(cfg, o)
		fmt.Fprintln(os.Stderr, conf)
	}
	bash := hands.Bash(cfg, tools.BashExposure{Where: tools.BashHost}, ws, conf)
	var cmds []string
	if err := json.Unmarshal([]byte(os.Getenv("GARRA_TEST_CMDS")), &cmds); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// GARRA_TEST_GATE=on sends each command through the bash tool, shell
	// gate first, as garra_agent's model would.
	run := bash.Run
	if os.Getenv("GARRA_TEST_GATE") == "on" {
		local := hands.Local(cfg, jail.New([]string{ws}), ws, bash, nil)
		run = func(ctx context.Context, c, _ string) (string, int, error) {
			args, _ := json.Marshal(map[string]any{"command": c})
			r, err := local.Call(ctx, tools.ToolBash, args)
			return r.Output, 0, err
		}
	}
	var out []report
	for _, c := range cmds {
		c = strings.ReplaceAll(c, "GARRA_PID", strconv.Itoa(os.Getpid()))
		o, code, err := run(context.Background(), c, "")
		r := report{Output: o, Code: code}
		if err != nil {
			r.Err = err.Error()
		}
		out = append(out, r)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

// world is a host as a gateway with local workspaces sees it: garra's
// config, owner key and data directory under the home of its user, two
// orchestrators' workspaces in it, the user's SSH key, all readable and
// writable by that user.
type world struct {
	exe, home, config, ownerKey, sshKey, ws, otherSecret, outside string
	cred                                                          *syscall.Credential
}

const (
	canaryConfig = "config-canary-8d1f"
	canaryOwner  = "owner-canary-77a2"
	canarySSH    = "ssh-canary-c4e0"
	canaryOther  = "other-ws-canary-19bb"
)

func newWorld(t testing.TB) *world { t.Helper(); return newWorldAs(t, testUID) }

// newWorldAs is newWorld for uid (where the test runs as root).
func newWorldAs(t testing.TB, uid int) *world {
	t.Helper()
	base, err := os.MkdirTemp("", "hands-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	w := &world{home: filepath.Join(base, "home")}
	garra := filepath.Join(w.home, ".garraia")
	data := filepath.Join(garra, "data")
	w.config = filepath.Join(garra, "config.yml")
	w.ownerKey = filepath.Join(garra, "owner.key")
	w.sshKey = filepath.Join(w.home, ".ssh", "id_ed25519")
	w.ws = filepath.Join(data, "workspace", "a")
	w.otherSecret = filepath.Join(data, "workspace", "b", "secret.txt")
	w.outside = filepath.Join(w.home, "outside")
	for _, d := range []string{w.ws, filepath.Dir(w.otherSecret), filepath.Dir(w.sshKey), w.outside, filepath.Join(w.home, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		w.config:                            "# " + canaryConfig + "\ndata_dir: " + data + "\ngateway:\n  api_key_file: " + w.ownerKey + "\n",
		w.ownerKey:                          canaryOwner + "\n",
		w.sshKey:                            canarySSH + "\n",
		w.otherSecret:                       canaryOther + "\n",
		filepath.Join(w.home, ".gitconfig"): "[user]\n\tname = Test\n\temail = test@example.invalid\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.exe, err = os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		// A copy the uid may execute, and everything under the home its
		// own.
		w.exe = proctest.ExecutableCopy(t, base)
		_ = os.Chmod(base, 0o755)
		err = filepath.Walk(w.home, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, uid)
		})
		if err != nil {
			t.Fatal(err)
		}
		w.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}
	}
	return w
}

// run runs cmds through the helper, confined or not, with extra env.
func (w *world) run(t testing.TB, confine bool, cmds []string, env ...string) []report {
	t.Helper()
	data, _ := json.Marshal(cmds)
	c := exec.Command(w.exe, "-test.run=^$")
	c.Env = append([]string{helperEnv + "=1", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + w.home,
		"TMPDIR=" + filepath.Join(w.home, "tmp"), "GARRA_TEST_CONFIG=" + w.config, "GARRA_TEST_WS=" + w.ws,
		"GARRA_TEST_CMDS=" + string(data)}, env...)
	if !confine {
		c.Env = append(c.Env, "GARRA_TEST_CONFINE=off")
	}
	c.Dir = "/"
	if w.cred != nil {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: w.cred}
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("helper: %v\n%s", err, errb.String())
	}
	var rs []report
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil || len(rs) != len(cmds) {
		t.Fatalf("helper report %q: %v", out.String(), err)
	}
	return rs
}

func needLandlock(t *testing.T) {
	t.Helper()
	if procguard.LandlockABI() < 6 {
		t.Skip("this kernel offers no Landlock ABI 6")
	}
}

// readSpellings are ways a command reads path: directly, through a
// variable, through two other interpreters, and through a script the call
// writes and runs.
func readSpellings(path string) map[string]string {
	return map[string]string{
		"direct":   "cat " + path,
		"variable": "d=" + filepath.Dir(path) + "; f=" + filepath.Base(path) + "; cat \"$d/$f\"",
		"python":   "/usr/bin/python3 -c 'import sys; sys.stdout.write(open(sys.argv[1]).read())' " + path,
		"perl":     "perl -e 'open(F, \"<\", $ARGV[0]) or die \"$!\\n\"; print <F>' " + path,
		"script":   "printf '#!/bin/sh\\nexec cat \"$1\"\\n' > r.sh && chmod +x r.sh && ./r.sh " + path,
	}
}

// Confined bash reads none of garra's config, its owner key, the user's
// SSH key or another orchestrator's workspace, however it spells the
// read; unconfined, every spelling reads each, so the test can fail.
func TestConfinedBashCannotRead(t *testing.T) {
	needLandlock(t)
	w := newWorld(t)
	rel, err := filepath.Rel(w.ws, w.config)
	if err != nil {
		t.Fatal(err)
	}
	targets := []struct{ name, path, canary string }{
		{"config", w.config, canaryConfig},
		{"config relative", rel, canaryConfig},
		{"owner key", w.ownerKey, canaryOwner},
		{"ssh key", w.sshKey, canarySSH},
		{"other workspace", w.otherSecret, canaryOther},
	}
	var cmds, names, canaries []string
	for _, tg := range targets {
		for sp, cmd := range readSpellings(tg.path) {
			cmds, names, canaries = append(cmds, cmd), append(names, tg.name+"/"+sp), append(canaries, tg.canary)
		}
	}
	for _, confine := range []bool{true, false} {
		rs := w.run(t, confine, cmds)
		for i, r := range rs {
			leaked := strings.Contains(r.Output, canaries[i])
			if confine && leaked {
				t.Errorf("confined %s read the secret: %+v", names[i], r)
			}
			if !confine && !leaked {
				t.Errorf("control %s did not read the secret, so the test cannot tell: %+v", names[i], r)
			}
		}
	}
}

// Confined bash writes nowhere outside its workspace and TMPDIR: not the
// user's other directories, not garra's config (which a live reload would
// apply), not another workspace.
func TestConfinedBashCannotWriteOutside(t *testing.T) {
	needLandlock(t)
	w := newWorld(t)
	target := filepath.Join(w.outside, "f")
	other := filepath.Join(filepath.Dir(w.otherSecret), "planted")
	cmds := []string{
		"echo x > " + target,
		"t=" + target + "; /usr/bin/python3 -c 'import sys; open(sys.argv[1], \"w\").write(\"x\")' \"$t\"",
		"perl -e 'open(F, \">\", $ARGV[0]) or die; print F \"x\"' " + other,
		"echo 'agent: {confinement: best-effort}' >> " + w.config,
		"printf '#!/bin/sh\\ncp /etc/hostname \"$1\"\\n' > w.sh && sh w.sh " + filepath.Join(w.home, ".gitconfig"),
	}
	for _, confine := range []bool{true, false} {
		w.run(t, confine, cmds)
		cfgData, _ := os.ReadFile(w.config)
		gc, _ := os.ReadFile(filepath.Join(w.home, ".gitconfig"))
		written := map[string]bool{
			"outside":         exists(target),
			"other workspace": exists(other),
			"config":          strings.Contains(string(cfgData), "best-effort"),
			"gitconfig":       !strings.Contains(string(gc), "[user]"),
		}
		for what, ok := range written {
			if confine && ok {
				t.Errorf("confined bash wrote %s", what)
			}
			if !confine && !ok {
				t.Errorf("control did not write %s, so the test cannot tell", what)
			}
		}
		_ = os.Remove(target)
		_ = os.Remove(other)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// listenLoopback accepts connections on the host's loopback until the
// test ends, and returns its port.
func listenLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// With egress none, confined bash opens no TCP connection, however it
// tries; unconfined, each try connects.
func TestConfinedBashEgressNone(t *testing.T) {
	needLandlock(t)
	w := newWorld(t)
	port := listenLoopback(t)
	cmds := []string{
		"exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo CONNECTED",
		"p=" + port + "; /usr/bin/python3 -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1]))); print(\"CONNECTED\")' $p",
		"perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => \"127.0.0.1:" + port + "\") or die \"$!\\n\"; print \"CONNECTED\\n\"'",
	}
	for _, confine := range []bool{true, false} {
		rs := w.run(t, confine, cmds, "GARRA_TEST_EGRESS=none")
		for i, r := range rs {
			connected := strings.Contains(r.Output, "CONNECTED")
			if confine && connected {
				t.Errorf("confined command %d connected: %+v", i, r)
			}
			if !confine && !connected {
				t.Errorf("control command %d did not connect, so the test cannot tell: %+v", i, r)
			}
		}
	}
}

// With egress none, where the kernel alone keeps the call off the network
// (Landlock's TCP rule and the call's own network namespace), the shell
// gate lets curl and git push through and the kernel refuses their
// connections; where UDP would stay open (no namespace, ABI below 10) the
// gate's network rules are back.
func TestEgressNoneLeavesTheNetworkToTheKernel(t *testing.T) {
	needLandlock(t)
	w := newWorld(t)
	needNamespaces(t, w)
	port := listenLoopback(t)
	// curl's exit 7 is "could not connect", 28 a timeout.
	cmds := []string{
		"curl -s -m 3 -o /dev/null http://127.0.0.1:" + port + "/; rc=$?; [ $rc -ne 7 ] && [ $rc -ne 28 ] && echo CONNECTED",
		"/usr/bin/curl -s -m 3 -o /dev/null http://127.0.0.1:" + port + "/; rc=$?; [ $rc -ne 7 ] && [ $rc -ne 28 ] && echo CONNECTED",
		"cd \"$(mktemp -d)\" && git init -q && git -c user.name=t -c user.email=t@t.test commit -q --allow-empty -m x && " +
			"git push http://127.0.0.1:" + port + "/repo.git HEAD 2>&1; echo pushed",
	}
	rs := w.run(t, true, cmds, "GARRA_TEST_EGRESS=none", "GARRA_TEST_GATE=on")
	for i, r := range rs {
		if strings.HasPrefix(r.Output, "blocked: ") {
			t.Errorf("command %d was stopped by the gate, not the kernel: %+v", i, r)
		}
		if strings.Contains(r.Output, "CONNECTED") {
			t.Errorf("command %d connected with egress none: %+v", i, r)
		}
	}
	if r := rs[2]; !strings.Contains(r.Output, "Failed to connect") || !strings.Contains(r.Output, "pushed") {
		t.Errorf("git push reached the server, or never tried: %+v", r)
	}
	rs = w.run(t, true, cmds, "GARRA_TEST_EGRESS=none", "GARRA_TEST_GATE=on", "GARRA_TEST_NS=off")
	for i, r := range rs {
		if !strings.HasPrefix(r.Output, "blocked: ") {
			t.Errorf("without a network namespace (UDP open), command %d passed the gate: %+v", i, r)
		}
	}
	// The control: unconfined, the same curl reaches the server.
	if r := w.run(t, false, cmds[:1])[0]; !strings.Contains(r.Output, "CONNECTED") {
		t.Errorf("control: curl did not connect, so the test cannot tell: %+v", r)
	}
}

// Confined bash cannot signal garra (the process that runs it);
// unconfined it can.
func TestConfinedBashCannotSignalGarra(t *testing.T) {
	needLandlock(t)
	w := newWorld(t)
	// The helper's pid is the shell's grandparent's parent: walk up from
	// the shell past the supervisor to the helper.
	cmd := "sup=$(ps -o ppid= -p $$ | tr -d ' '); garra=$(ps -o ppid= -p $sup | tr -d ' '); " +
		"kill -0 $garra && echo SIGNALLED; p=$garra; /usr/bin/python3 -c 'import os,sys; os.kill(int(sys.argv[1]), 0); print(\"SIGNALLED\")' $p"
	for _, confine := range []bool{true, false} {
		r := w.run(t, confine, []string{cmd})[0]
		n := strings.Count(r.Output, "SIGNALLED")
		if confine && n != 0 {
			t.Errorf("confined bash signalled garra: %+v", r)
		}
		if !confine && n != 2 {
			t.Errorf("control did not signal garra both ways, so the test cannot tell: %+v", r)
		}
	}
}

// Ordinary work runs confined: a C build, a Python script, git commit in
// the workspace with the user's git identity, reading /usr/share, a
// temporary file.
func TestConfinedBashDoesOrdinaryWork(t *testing.T) {
	needLandlock(t)
	for _, p := range []string{"/usr/bin/gcc", "/usr/bin/git", "/usr/bin/python3"} {
		if !exists(p) {
			t.Skip(p + " is not installed")
		}
	}
	w := newWorld(t)
	cmds := []string{
		"printf '#include <stdio.h>\\nint main(void){puts(\"built\");return 0;}\\n' > hello.c && gcc -o hello hello.c && ./hello",
		"printf 'print(6 * 7)\\n' > s.py && /usr/bin/python3 s.py",
		"git init -q && git add hello.c s.py && git commit -qm first && git log --format=%an:%s",
		"ls /usr/share | grep -c . >/dev/null && head -c 0 /etc/hostname && echo read",
		"f=$(mktemp) && echo t > \"$f\" && cat \"$f\" && mkdir -p a b && echo m > a/x && mv a/x b/x && cat b/x",
	}
	want := []string{"built", "42", "Test:first", "read", "t\nm"}
	rs := w.run(t, true, cmds)
	for i, r := range rs {
		if r.Code != 0 || r.Err != "" || !strings.Contains(r.Output, want[i]) {
			t.Errorf("confined %q: %+v, want %q", cmds[i], r, want[i])
		}
	}
}

// What confinement adds to one bash call (`true`), side by side with the
// same call unconfined, as an unprivileged user would run it (all through
// the limit stage, which the process limit already needs): making the
// call's TMPDIR, the ruleset, and entering it; then the namespaces on top
// (user, mount with the .git split of a repository, PID with its /proc),
// and with egress none a network namespace too.
func BenchmarkConfinedBash(b *testing.B) {
	if procguard.LandlockABI() == 0 {
		b.Skip("this kernel offers no Landlock")
	}
	w := newWorldAs(b, nsUID)
	if r := w.run(b, true, []string{"git init -q && echo ok"})[0]; r.Output != "ok\n" {
		b.Fatalf("git init: %+v", r)
	}
	for _, bc := range []struct {
		name    string
		confine bool
		env     []string
	}{
		{"unconfined", false, nil},
		{"landlock", true, []string{"GARRA_TEST_NS=off"}},
		{"landlock+namespaces", true, nil},
		{"landlock+namespaces+net", true, []string{"GARRA_TEST_EGRESS=none"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cmds := make([]string, b.N)
			for i := range cmds {
				cmds[i] = "true"
			}
			b.ResetTimer()
			rs := w.run(b, bc.confine, cmds, bc.env...)
			if rs[0].Code != 0 || rs[0].Err != "" {
				b.Fatalf("%+v", rs[0])
			}
		})
	}
}

// nsUID is the uid of the namespace tests: none of the other tests' (the
// process limit counts the uid's tasks).
const nsUID = 65530

// needNamespaces skips where an unprivileged user cannot have namespaces.
func needNamespaces(t *testing.T, w *world) {
	t.Helper()
	r := w.run(t, true, []string{"echo \"pid=$$\""}, "GARRA_TEST_ABI=0")[0]
	if r.Output != "pid=1\n" {
		t.Skipf("no namespaces for an unprivileged user here: %+v", r)
	}
}

// gitState is what of .git git runs or reads as config: each file's
// content under config, hooks/ and info/, and whether .git is there.
func gitState(t *testing.T, ws string) string {
	t.Helper()
	var b strings.Builder
	for _, root := range []string{"config", "hooks", "info"} {
		_ = filepath.Walk(filepath.Join(ws, ".git", root), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				data, _ := os.ReadFile(p)
				fmt.Fprintf(&b, "%s %x\n", p, data)
			}
			return nil
		})
	}
	return b.String()
}

// In its namespaces, bash in a workspace cannot change .git's config,
// hooks or info, however it spells the write, nor put another .git in the
// place of this one; it still commits. With namespaces off (Landlock on in
// both runs) each write gets through, so the test can fail.
func TestConfinedBashCannotChangeGit(t *testing.T) {
	needLandlock(t)
	if !exists("/usr/bin/git") || !exists("/usr/bin/python3") {
		t.Skip("needs git and python3")
	}
	w := newWorldAs(t, nsUID)
	needNamespaces(t, w)
	init := w.run(t, true, []string{"git init -q && echo a > a && git add a && git commit -qm first && echo inited"})[0]
	if !strings.Contains(init.Output, "inited") {
		t.Fatalf("git init: %+v", init)
	}
	writes := map[string]string{
		"config append":        `printf '[alias]\n\tst = !touch pwned\n' >> .git/config`,
		"config via variables": `d=.git; f=config; printf '[core]\n\tfsmonitor = touch pwned\n' >> "$d/$f"`,
		"git config --local":   `git config --local core.fsmonitor 'touch pwned'`,
		"config via python":    `/usr/bin/python3 -c 'open(".git/config", "a").write("[core]\n\tpager = touch pwned\n")'`,
		"config replaced":      `cp .git/config c && echo '[core] hooksPath = /tmp' >> c && mv c .git/config`,
		"new hook via cp":      `printf '#!/bin/sh\ntouch pwned\n' > h && chmod +x h && cp h .git/hooks/pre-commit`,
		"sample hook modified": `echo 'touch pwned' >> .git/hooks/pre-push.sample`,
		"hook via python":      `/usr/bin/python3 -c 'import os; open(".git/hooks/post-commit", "w").write("#!/bin/sh\ntouch pwned\n")'`,
		"hook via a script":    `printf 'echo touch pwned > .git/hooks/pre-rebase\n' > s.sh && sh s.sh`,
		"info attributes":      `echo '* filter=pwn' > .git/info/attributes`,
		"info exclude":         `echo pwned >> .git/info/exclude`,
	}
	var names, cmds []string
	for name, cmd := range writes {
		names, cmds = append(names, name), append(cmds, cmd+" && echo CHANGED")
	}
	// Last: it takes the repository away from the control.
	names, cmds = append(names, "another .git in its place"), append(cmds, "mv .git old && mkdir .git && echo CHANGED")
	commit := "echo b > b && git add b && git commit -qm second && git log -1 --format=%s"
	before := gitState(t, w.ws)
	rs := w.run(t, true, append(cmds, commit))
	for i, r := range rs[:len(cmds)] {
		if strings.Contains(r.Output, "CHANGED") {
			t.Errorf("in namespaces, %s got through: %+v", names[i], r)
		}
	}
	if after := gitState(t, w.ws); after != before {
		t.Errorf(".git changed in namespaces:\nbefore %s\nafter %s", before, after)
	}
	if r := rs[len(cmds)]; r.Code != 0 || r.Output != "second\n" {
		t.Errorf("git commit in namespaces: %+v", r)
	}
	rs = w.run(t, true, cmds, "GARRA_TEST_NS=off")
	for i, r := range rs {
		if !strings.Contains(r.Output, "CHANGED") {
			t.Errorf("control: %s did not get through, so the test cannot tell: %+v", names[i], r)
		}
	}
}

// With egress none, the call's network namespace alone (Landlock off)
// keeps it from the host's loopback; without it the same connect gets
// through, so the test can fail. A server the call starts for itself
// stays reachable.
func TestNetworkNamespaceEgressNone(t *testing.T) {
	w := newWorldAs(t, nsUID)
	needNamespaces(t, w)
	port := listenLoopback(t)
	cmds := []string{
		"exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo CONNECTED",
		"/usr/bin/python3 -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1]))); print(\"CONNECTED\")' " + port,
	}
	own := "/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); " +
		"socket.create_connection(s.getsockname()); print(\"OWN\")'"
	for _, ns := range []bool{true, false} {
		env := []string{"GARRA_TEST_EGRESS=none", "GARRA_TEST_ABI=0"}
		if !ns {
			env = append(env, "GARRA_TEST_NS=off")
		}
		rs := w.run(t, true, append(cmds, own), env...)
		for i, r := range rs[:len(cmds)] {
			connected := strings.Contains(r.Output, "CONNECTED")
			if ns && connected {
				t.Errorf("in a network namespace, command %d connected: %+v", i, r)
			}
			if !ns && !connected {
				t.Errorf("control command %d did not connect, so the test cannot tell: %+v", i, r)
			}
		}
		if r := rs[len(cmds)]; !strings.Contains(r.Output, "OWN") {
			t.Errorf("namespaces %v: the call's own server was unreachable: %+v", ns, r)
		}
	}
}

// In its PID namespace (Landlock off, whose signal scope would hide the
// difference), bash sees only its own processes and cannot signal garra
// by its pid; without it, it can, so the test can fail.
func TestPIDNamespace(t *testing.T) {
	w := newWorldAs(t, nsUID)
	needNamespaces(t, w)
	cmd := "echo procs=$(ps -e -o pid= | wc -l); kill -0 GARRA_PID && echo SIGNALLED"
	for _, ns := range []bool{true, false} {
		env := []string{"GARRA_TEST_ABI=0"}
		if !ns {
			env = append(env, "GARRA_TEST_NS=off")
		}
		r := w.run(t, true, []string{cmd}, env...)[0]
		signalled := strings.Contains(r.Output, "SIGNALLED")
		if ns && (signalled || !strings.Contains(r.Output, "procs=4\n")) {
			t.Errorf("in a PID namespace: %+v (want procs=4: bash, the substitution, ps, wc)", r)
		}
		if !ns && (!signalled || strings.Contains(r.Output, "procs=4\n")) {
			t.Errorf("control: %+v, so the test cannot tell", r)
		}
	}
}
