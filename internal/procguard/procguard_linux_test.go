package procguard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/garraia/garra/internal/procguard"

	"github.com/garraia/garra/test/proctest"
)

// A child running as the server's own (non-root) uid, or as another
// unprivileged uid, can neither read a hardened server's environment nor
// write onto its stdout nor open its memory. The unhardened control shows
// that the same-uid child could, so the test can fail.
func TestHardenShutsOutChildren(t *testing.T) {
	exe, cred, _ := unprivileged(t)
	attackers := []struct {
		name string
		cred *syscall.Credential
	}{{"same uid", cred}}
	if cred != nil {
		attackers = append(attackers, struct {
			name string
			cred *syscall.Credential
		}{"other uid", &syscall.Credential{Uid: otherUID, Gid: otherUID}})
	}
	for _, hardened := range []bool{true, false} {
		for _, a := range attackers {
			name := a.name + "/hardened"
			if !hardened {
				name = a.name + "/control"
			}
			t.Run(name, func(t *testing.T) {
				const canary = "GARRA_TEST_CANARY=canary-5f1d0c2e"
				harden := "HARDEN=0"
				if hardened {
					harden = "HARDEN=1"
				}
				v := helper(exe, "victim", cred, harden, canary)
				stdin, err := v.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				stdout, w := pipeOwnedBy(t, cred)
				v.Stdout = w
				err = v.Start()
				_ = w.Close()
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = v.Process.Kill(); _ = v.Wait() }()
				br := bufio.NewReader(stdout)
				if line, err := br.ReadString('\n'); err != nil || line != "ready\n" {
					t.Fatalf("victim: %q %v", line, err)
				}

				var out bytes.Buffer
				atk := helper(exe, "attack", a.cred, "TARGET_PID="+strconv.Itoa(v.Process.Pid), "CANARY="+canary)
				atk.Stdout = &out
				atk.Stderr = &out
				if err := atk.Run(); err != nil {
					t.Fatalf("attacker: %v\n%s", err, out.String())
				}
				var r attackReport
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					t.Fatalf("attacker report %q: %v", out.String(), err)
				}
				_ = stdin.Close()
				rest, _ := io.ReadAll(br)

				if hardened || a.name == "other uid" {
					if r.Environ == "ok" || r.Canary || r.Stdout == "ok" || r.Mem == "ok" {
						t.Errorf("the child got in: %+v", r)
					}
					for _, e := range []string{r.Environ, r.Stdout, r.Mem} {
						if !strings.Contains(e, "permission denied") {
							t.Errorf("refusal %q is not permission denied", e)
						}
					}
					if len(rest) != 0 {
						t.Errorf("victim's stdout got %q after ready", rest)
					}
					return
				}
				// Control: without Harden a same-uid child reads the secret
				// and forges a line on the victim's stdout.
				if r.Environ != "ok" || !r.Canary || r.Stdout != "ok" {
					t.Fatalf("control: the unhardened victim was not reachable (%+v): the test cannot tell", r)
				}
				if !strings.Contains(string(rest), `"forged":true`) {
					t.Fatalf("control: forged line missing from the victim's stdout: %q", rest)
				}
			})
		}
	}
}

// supervised runs CMD through the "run" role and returns its report.
func supervised(t *testing.T, exe string, cred *syscall.Credential, env ...string) runReport {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := helper(exe, "run", cred, env...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("run helper: %v\n%s", err, errb.String())
	}
	var r runReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("run report %q: %v\nstderr: %s", out.String(), err, errb.String())
	}
	return r
}

// Every way out of a process group is still a descendant of the
// supervisor: once the command ends, on its own or by timeout, none is left.
func TestSupervisorLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	exe, _ := os.Executable()
	escapes := map[string]string{
		"setsid":               `setsid sleep 300 & echo $! >> pids`,
		"double fork":          `(sleep 300 & echo $! >> pids) &`,
		"setsid in a subshell": `(setsid sh -c 'sleep 300 & echo $! >> pids' &)`,
		"nohup":                `nohup sleep 300 >/dev/null 2>&1 & echo $! >> pids`,
	}
	for name, script := range escapes {
		for _, timeout := range []bool{false, true} {
			label := name + "/exits"
			cmd := script + "\nsleep 0.2\necho done"
			env := []string{"DIR=" + dir}
			if timeout {
				label = name + "/times out"
				cmd += "\nsleep 300"
				env = append(env, "TIMEOUT_MS=1500")
			}
			t.Run(label, func(t *testing.T) {
				_ = os.Remove(filepath.Join(dir, "pids"))
				start := time.Now()
				r := supervised(t, exe, nil, append(env, "CMD="+cmd)...)
				if timeout != (r.Err != "") || !strings.Contains(r.Output, "done") {
					t.Fatalf("report %+v", r)
				}
				if d := time.Since(start); d > 8*time.Second {
					t.Fatalf("took %v", d)
				}
				pids := proctest.PidsIn(t, filepath.Join(dir, "pids"))
				if len(pids) == 0 {
					t.Fatal("the escape did not run")
				}
				for _, p := range pids {
					proctest.WaitGone(t, p, "escaped process")
				}
			})
		}
	}
}

// The command's exit status comes through the supervisor; a command that
// cannot start is reported as such.
func TestSupervisorStatus(t *testing.T) {
	exe, _ := os.Executable()
	for _, tt := range []struct {
		cmd  string
		code int
		out  string
	}{
		{"echo out; echo err >&2; exit 7", 7, "out\nerr\n"},
		{"kill -TERM $$", 128 + 15, ""},
		{"true", 0, ""},
	} {
		r := supervised(t, exe, nil, "CMD="+tt.cmd)
		if r.Code != tt.code || r.Output != tt.out {
			t.Errorf("%q: %+v, want code %d output %q", tt.cmd, r, tt.code, tt.out)
		}
	}

	c := procguard.Command(context.Background(), procguard.Limits{}, "/nonexistent/shell", "-c", "true")
	err := c.Start()
	if err == nil || !strings.Contains(err.Error(), "no such file or directory") || strings.Contains(err.Error(), "/nonexistent") {
		t.Fatalf("Start of a missing program: %v", err)
	}
}

// When the garra process dies, its supervisors take their commands with
// them (parent-death signal).
func TestSupervisorFollowsItsParent(t *testing.T) {
	exe, _ := os.Executable()
	dir := t.TempDir()
	cmd := helper(exe, "run", nil, "DIR="+dir, "CMD=setsid sleep 300 & echo $! >> pids; sleep 300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if data, _ := os.ReadFile(filepath.Join(dir, "pids")); len(data) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for _, p := range proctest.PidsIn(t, filepath.Join(dir, "pids")) {
		proctest.WaitGone(t, p, "the command of a dead parent")
	}
}

// A command that kills its own supervisor orphans what it started; a
// subreaper parent kills those orphans as soon as the call is over. The
// control (no subreaper) shows the orphan would otherwise survive.
func TestSubreaperSweepsOrphansOfAKilledSupervisor(t *testing.T) {
	exe, _ := os.Executable()
	for _, sub := range []bool{true, false} {
		t.Run("subreaper="+strconv.FormatBool(sub), func(t *testing.T) {
			dir := t.TempDir()
			env := []string{"DIR=" + dir, "CMD=setsid sleep 300 & echo $! >> pids; sleep 0.2; kill -KILL $PPID"}
			if sub {
				env = append(env, "SUBREAPER=1")
			}
			r := supervised(t, exe, nil, env...)
			if r.Code != 128+9 && r.Code != -1 {
				t.Logf("report %+v", r)
			}
			pids := proctest.PidsIn(t, filepath.Join(dir, "pids"))
			if len(pids) != 1 {
				t.Fatalf("pids %v", pids)
			}
			if sub {
				proctest.WaitGone(t, pids[0], "orphan of a killed supervisor")
				return
			}
			time.Sleep(300 * time.Millisecond)
			if !proctest.Alive(pids[0]) {
				t.Fatal("control: the orphan died without a subreaper; the test cannot tell")
			}
			_ = syscall.Kill(pids[0], syscall.SIGKILL)
		})
	}
}

// RLIMIT_NPROC caps a non-root command's processes: a fork loop stops near
// the budget, and runs to the end without one.
func TestMaxProcsBitesANonRootCommand(t *testing.T) {
	if _, err := os.Stat("/bin/dash"); err != nil {
		// bash retries a failed fork for 15 s; dash gives up at once.
		t.Skip("needs /bin/dash")
	}
	exe, cred, dir := unprivileged(t)
	loop := `i=0; while [ $i -lt 100 ]; do /bin/sleep 30 & echo $! >> pids; i=$((i+1)); done; echo looped`
	for _, tt := range []struct {
		maxProcs string
		capped   bool
	}{{"10", true}, {"-1", false}} {
		_ = os.Remove(filepath.Join(dir, "pids"))
		r := supervised(t, exe, cred, "DIR="+dir, "MAX_PROCS="+tt.maxProcs, "CMD=exec /bin/dash -c '"+loop+"'")
		n := len(proctest.PidsIn(t, filepath.Join(dir, "pids")))
		if tt.capped && (n == 0 || n >= 10 || strings.Contains(r.Output, "looped") || !strings.Contains(r.Output, "fork")) {
			t.Errorf("MAX_PROCS=%s: %d processes started, report %+v", tt.maxProcs, n, r)
		}
		if !tt.capped && (n != 100 || !strings.Contains(r.Output, "looped")) {
			t.Errorf("no limit: %d processes started, report %+v", n, r)
		}
	}
}

// A command that has used up its process budget and then times out still
// ends cleanly: the limit binds the command, not its supervisor, which may
// still start the threads it needs to kill and reap the tree.
func TestSupervisorAtTheLimitStillCleansUp(t *testing.T) {
	exe, cred, dir := unprivileged(t)
	start := time.Now()
	// bash, unlike dash, retries a failed fork: it is still running,
	// at the limit, when the call times out.
	r := supervised(t, exe, cred, "DIR="+dir, "MAX_PROCS=10", "TIMEOUT_MS=1500",
		"CMD=exec /bin/bash -c 'for i in $(seq 100); do sleep 30 & echo $! >> pids; done; wait'")
	if r.Err == "" || !strings.Contains(r.Output, "fork: retry") || strings.Contains(r.Output, "fatal error") || strings.Contains(r.Output, "runtime:") {
		t.Fatalf("report %+v", r)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("took %v", d)
	}
	pids := proctest.PidsIn(t, filepath.Join(dir, "pids"))
	if len(pids) == 0 || len(pids) >= 10 {
		t.Fatalf("%d processes started under a budget of 10", len(pids))
	}
	for _, p := range pids {
		proctest.WaitGone(t, p, "process of a command at its limit")
	}
}

// A command in a Landlock domain writes where it was granted and nowhere
// else, even where its uid may write, and so does what it execs; root is
// bound too. The control runs the same command with no domain, so the
// test can fail.
func TestLandlockBindsTheCommand(t *testing.T) {
	if procguard.LandlockABI() == 0 {
		t.Skip("this kernel offers no Landlock")
	}
	for _, asRoot := range []bool{false, true} {
		for _, confined := range []bool{true, false} {
			name := map[bool]string{true: "confined", false: "control"}[confined]
			if asRoot {
				name = "root/" + name
			}
			t.Run(name, func(t *testing.T) {
				exe, cred, dir := unprivileged(t)
				if asRoot {
					cred = nil
				}
				granted := filepath.Join(dir, "granted")
				if err := os.Mkdir(granted, 0o777); err != nil {
					t.Fatal(err)
				}
				_ = os.Chmod(granted, 0o777)
				env := []string{"DIR=" + granted, "MAX_PROCS=-1",
					"CMD=echo in > in; echo out > ../out; /bin/sh -c 'echo deeper > ../deeper'; cat in; true"}
				if confined {
					env = append(env, "LANDLOCK_WRITE="+granted, "LANDLOCK_READ=/usr:/bin:/lib:/lib64:/etc:/dev/null")
				}
				r := supervised(t, exe, cred, env...)
				if r.Err != "" || !strings.Contains(r.Output, "in\n") {
					t.Fatalf("the granted write failed: %+v", r)
				}
				for _, f := range []string{"out", "deeper"} {
					_, err := os.Stat(filepath.Join(dir, f))
					if confined && err == nil {
						t.Errorf("%s was written outside the domain: %+v", f, r)
					}
					if !confined && err != nil {
						t.Errorf("control: %s not written (%v), so the test cannot tell: %+v", f, err, r)
					}
				}
			})
		}
	}
}

func TestExtraFilesRefused(t *testing.T) {
	c := procguard.Command(context.Background(), procguard.Limits{}, "/bin/true")
	c.Cmd.ExtraFiles = []*os.File{os.Stdin}
	if err := c.Start(); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Start = %v", err)
	}
}

// What a process limit costs a non-root command: with one, the supervisor
// starts the command through the limit stage (one more exec of this binary);
// without, directly. And what namespaces add to the stage: user, mount and
// PID (with its /proc), then a network namespace too. Side by side in one
// run.
func BenchmarkSupervisedCommand(b *testing.B) {
	exe, cred, _ := unprivileged(b)
	for _, bc := range []struct{ name, maxProcs, ns string }{
		{"no_limit", "-1", ""}, {"limit", "256", ""},
		{"limit+namespaces", "256", "NS=1"}, {"limit+namespaces+net", "256", "NS_NET=1"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			env := []string{"N=" + strconv.Itoa(b.N), "MAX_PROCS=" + bc.maxProcs}
			if bc.ns != "" {
				env = append(env, "NS=1", bc.ns)
			}
			cmd := helper(exe, "repeat", cred, env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		})
	}
}

func needNamespaces(t *testing.T, exe string, cred *syscall.Credential) {
	t.Helper()
	r := supervised(t, exe, cred, "NS=1", "MAX_PROCS=-1", "CMD=true")
	if r.Err != "" {
		t.Skipf("no namespaces for an unprivileged user here: %s", r.Err)
	}
}

// In its namespaces a command cannot write, remove or rename a read-only
// path, nor rename a pinned one, while it still writes beneath the pinned
// one; it is PID 1 and sees only its own processes (the shell, the
// command substitution, ls and grep); it has only its own loopback.
// The control runs the same command without namespaces, so the test can
// fail.
func TestNamespacesBindTheCommand(t *testing.T) {
	exe, cred, dir := unprivileged(t)
	needNamespaces(t, exe, cred)
	for _, ns := range []bool{true, false} {
		t.Run(map[bool]string{true: "namespaces", false: "control"}[ns], func(t *testing.T) {
			work := filepath.Join(dir, map[bool]string{true: "ns", false: "control"}[ns])
			pin := filepath.Join(work, "pin")
			ro := filepath.Join(pin, "ro")
			if err := os.MkdirAll(ro, 0o777); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{work, pin, ro} {
				_ = os.Chmod(d, 0o777)
			}
			cmd := `echo x > pin/ro/planted; echo y > pin/written; mv pin/ro pin/ro2; mv pin pin2; ` +
				`echo "pid=$$"; echo "procs=$(ls /proc | grep -c '^[0-9]')"; ` +
				`echo "ifaces=$(grep -c : /proc/net/dev)"`
			env := []string{"DIR=" + work, "MAX_PROCS=-1", "CMD=" + cmd}
			if ns {
				env = append(env, "NS=1", "NS_NET=1", "NS_PIN="+pin, "NS_RO="+ro)
			}
			r := supervised(t, exe, cred, env...)
			planted := exists(filepath.Join(ro, "planted")) || exists(filepath.Join(pin, "ro2", "planted")) || exists(filepath.Join(work, "pin2", "ro2", "planted"))
			moved := !exists(ro)
			if ns && (planted || moved || !exists(filepath.Join(pin, "written")) || !strings.Contains(r.Output, "pid=1\n") || !strings.Contains(r.Output, "procs=4\n") || !strings.Contains(r.Output, "ifaces=1\n")) {
				t.Errorf("in namespaces: planted %v, moved %v, report %+v", planted, moved, r)
			}
			if !ns && (!planted || !moved || strings.Contains(r.Output, "pid=1\n")) {
				t.Errorf("control: planted %v, moved %v, so the test cannot tell: %+v", planted, moved, r)
			}
		})
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// The process limit still binds a command in its own user namespace,
// where the kernel counts the uid's tasks afresh.
func TestMaxProcsBitesInNamespaces(t *testing.T) {
	if _, err := os.Stat("/bin/dash"); err != nil {
		t.Skip("needs /bin/dash")
	}
	exe, cred, dir := unprivileged(t)
	needNamespaces(t, exe, cred)
	loop := `i=0; while [ $i -lt 100 ]; do /bin/sleep 30 & echo $! >> pids; i=$((i+1)); done; echo looped`
	r := supervised(t, exe, cred, "DIR="+dir, "MAX_PROCS=10", "NS=1", "CMD=exec /bin/dash -c '"+loop+"'")
	// The pids are the namespace's: only their number means anything here.
	n := len(proctest.PidsIn(t, filepath.Join(dir, "pids")))
	if n == 0 || n >= 10 || strings.Contains(r.Output, "looped") || !strings.Contains(r.Output, "fork") {
		t.Errorf("%d processes started, report %+v", n, r)
	}
}
