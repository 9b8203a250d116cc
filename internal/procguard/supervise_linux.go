package procguard

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The supervisor and its limit stage take over before main: a test binary
// or garra itself, re-executed by Command, must not run its own main.
func init() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case supervisorArg0:
		os.Exit(supervise(os.Args[1:]))
	case limitStageArg0:
		os.Exit(limitAndExec(os.Args[1:]))
	}
}

// statusFD is the descriptor on which the supervisor tells its parent
// whether the command started: "ok", or "error: REASON". It is the first
// of exec.Cmd.ExtraFiles.
const statusFD = 3

// goAheadFD is where a limit stage in namespaces waits for its supervisor
// (see startCommand).
const goAheadFD = 4

// Exit statuses of a supervisor that could not run the command at all.
const (
	exitUsage    = 125
	exitNotStart = 126
)

// cleanupBound is how long the supervisor keeps killing and reaping
// descendants once the command has ended. Only a process stuck in the
// kernel (uninterruptible sleep) survives SIGKILL for longer; it is left
// to the subreaper above (see Sweep).
const cleanupBound = 3 * time.Second

// supervise is the supervisor's main: args are
// "-max-procs=N -- PROGRAM ARG...". It returns the exit status: the
// command's own, or 128+signal when a signal killed it.
func supervise(args []string) int {
	syscall.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")
	report := func(msg string) {
		if status != nil {
			_, _ = status.WriteString(msg)
			_ = status.Close()
			status = nil
		}
	}
	fail := func(code int, format string, a ...any) int {
		report("error: " + fmt.Sprintf(format, a...))
		return code
	}

	lim, argv, err := parseSupervisorArgs(args)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	// Nothing in here is secret (the parent passes only the allowlisted
	// environment), but a dumpable supervisor could be ptraced by the
	// command and told not to clean up.
	if err := Harden(); err != nil {
		return fail(exitNotStart, "%v", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(exitNotStart, "become a child subreaper: %v", err)
	}
	// The parent asks for the end with SIGTERM (cancellation, and its own
	// death through the parent-death signal); a terminal may send the
	// others. Each kills the whole tree; the loop below then sees the
	// command exit and cleans up.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)

	proc, err := startCommand(argv, lim)
	if err != nil {
		return fail(exitNotStart, "%v", err)
	}
	report("ok")
	self := os.Getpid()
	go func() {
		for range sigs {
			killTree(self)
		}
	}()

	// Reap until the command itself exits. Orphans reparented here that
	// end meanwhile are reaped too, so they do not pile up as zombies
	// (which would count against the process limit).
	var ws unix.WaitStatus
	for {
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid == proc.Pid {
			break
		}
	}
	cleanUp(self, time.Now().Add(cleanupBound))
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return exitNotStart
}

// startCommand starts argv, in its own process group, with SIGKILL as its
// parent-death signal (so it does not outlive a supervisor that dies without
// cleaning up). A command bound by a process limit or a Landlock domain goes
// through the limit stage (limitAndExec): both are set in the command's own
// process and never in this one. RLIMIT_NPROC is checked against the
// caller's limit whenever it creates a thread, and a supervisor bound by it
// could not start one once the command had used up the budget (the Go
// runtime then aborts with "newosproc", leaving the tree behind); and a
// supervisor in the command's domain would share its scope.
func startCommand(argv []string, lim Limits) (*os.Process, error) {
	attr := &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// Its own group, so a terminal's job control or a caller that
		// only knows the group (kill -PGID) still reaches the command.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if !lim.needsStage() {
		// Running what the parent (this same binary) names is the
		// supervisor's whole job; the parent is the one that decides.
		proc, err := os.StartProcess(argv[0], argv, attr) //nolint:gosec // G702: see above
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return proc, err
	}
	// The stage reports on the pipe only when it fails; a successful exec
	// closes its end (close-on-exec), so an empty read means the command runs.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	attr.Files = append(attr.Files, w)
	var goAhead *os.File
	if lim.Namespaces != nil {
		lim.Namespaces.sysProcAttr(attr.Sys)
		// This process writes the stage's uid and gid maps, under
		// /proc/PID of the stage, which a non-dumpable parent's clone
		// has as root's: this process is dumpable for the clone only,
		// and the stage waits (reading goAheadFD to its end) until it is
		// not again before it runs anything of the command's.
		var ahead *os.File
		ahead, goAhead, err = os.Pipe()
		if err != nil {
			_ = w.Close()
			return nil, err
		}
		defer func() { _ = goAhead.Close() }()
		attr.Files = append(attr.Files, ahead)
		defer func() { _ = ahead.Close() }()
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
			_ = w.Close()
			return nil, fmt.Errorf("make the supervisor dumpable: %w", err)
		}
	}
	stage := append(append(append([]string{limitStageArg0}, lim.flags()...), "--"), argv...)
	proc, err := os.StartProcess(selfExe, stage, attr) //nolint:gosec // G702: this binary, asked to run what the parent named (see above)
	_ = w.Close()
	if goAhead != nil {
		if herr := Harden(); herr != nil {
			if err == nil {
				_ = proc.Kill()
				_, _ = proc.Wait()
			}
			return nil, herr
		}
		_ = goAhead.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("start the limit stage: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	if len(msg) == 0 {
		return proc, nil
	}
	_, _ = proc.Wait()
	return nil, errors.New(strings.TrimPrefix(string(msg), "error: "))
}

// needsStage says whether the command must go through the limit stage: a
// process limit binds only a non-root uid (the kernel does not apply it to
// root), a Landlock domain and namespaces bind everyone.
func (l Limits) needsStage() bool {
	return (l.maxProcs() > 0 && os.Getuid() != 0) || l.Landlock != nil || l.Namespaces != nil
}

// limitAndExec is the limit stage's main: args are those of the
// supervisor. It sets the process limit on itself, enters the Landlock
// domain, and becomes the command; it returns only when that fails, after
// writing the reason on statusFD.
func limitAndExec(args []string) int {
	syscall.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")
	fail := func(err error) int {
		_, _ = status.WriteString("error: " + err.Error())
		return exitNotStart
	}
	lim, argv, err := parseSupervisorArgs(args)
	if err != nil {
		return fail(err)
	}
	if lim.Namespaces != nil {
		// Nothing of the command's runs before the supervisor is
		// non-dumpable again (see startCommand).
		_, _ = io.Copy(io.Discard, os.NewFile(goAheadFD, "go-ahead"))
		// The supervisor could not ask for this at the clone (see
		// Namespaces.sysProcAttr). Set before the namespaces are: a
		// stage orphaned meanwhile dies here rather than run the command.
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
			return fail(fmt.Errorf("set the parent-death signal: %w", err))
		}
		// Before the process limit, which counts the uid's tasks in
		// /proc: the new /proc shows the new user namespace's, which is
		// what the kernel counts the limit against there.
		// The capabilities are dropped by this thread, which then
		// execs: they are per thread.
		runtime.LockOSThread()
		if err := lim.Namespaces.enter(); err != nil {
			return fail(err)
		}
		if err := dropCaps(); err != nil {
			return fail(err)
		}
		if argv[0] == nsProbeArg0 {
			return 0
		}
	}
	if lim.maxProcs() > 0 && os.Getuid() != 0 {
		if err := limitProcs(lim.maxProcs()); err != nil {
			return fail(err)
		}
	}
	if lim.Landlock != nil {
		// The domain is entered by this thread alone, and the exec
		// below must happen on it: the other threads end at the exec,
		// so the command is wholly inside.
		runtime.LockOSThread()
		if err := lim.Landlock.enter(); err != nil {
			return fail(err)
		}
	}
	// argv is what the supervisor was given by its parent (see above).
	return fail(unix.Exec(argv[0], argv, os.Environ()))
}

// flags are the arguments that carry l to the supervisor and its stage.
func (l Limits) flags() []string {
	out := []string{"-max-procs=" + strconv.Itoa(l.maxProcs())}
	if l.Landlock != nil {
		// The paths are the caller's own choice and not secret; base64
		// keeps them one argument whatever they hold.
		data, _ := json.Marshal(l.Landlock)
		out = append(out, "-landlock="+base64.RawURLEncoding.EncodeToString(data))
	}
	if l.Namespaces != nil {
		data, _ := json.Marshal(l.Namespaces)
		out = append(out, "-ns="+base64.RawURLEncoding.EncodeToString(data))
	}
	return out
}

// parseSupervisorArgs reads the arguments Command builds: the flags of
// Limits.flags, "--", then the command.
func parseSupervisorArgs(args []string) (Limits, []string, error) {
	var lim Limits
	sep := slices.Index(args, "--")
	if sep < 1 || sep == len(args)-1 {
		return lim, nil, errors.New("usage: -max-procs=N [-landlock=SPEC] [-ns=SPEC] -- PROGRAM [ARG...]")
	}
	seen := false
	for _, a := range args[:sep] {
		switch {
		case strings.HasPrefix(a, "-max-procs="):
			n, err := strconv.Atoi(strings.TrimPrefix(a, "-max-procs="))
			if err != nil {
				return lim, nil, fmt.Errorf("bad %q", a)
			}
			lim.MaxProcs, seen = n, true
		case strings.HasPrefix(a, "-landlock="):
			data, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a, "-landlock="))
			ll := &Landlock{}
			if err == nil {
				err = json.Unmarshal(data, ll)
			}
			if err != nil || ll.ABI < 1 {
				return lim, nil, errors.New("bad -landlock")
			}
			lim.Landlock = ll
		case strings.HasPrefix(a, "-ns="):
			data, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a, "-ns="))
			ns := &Namespaces{}
			if err == nil {
				err = json.Unmarshal(data, ns)
			}
			if err != nil {
				return lim, nil, errors.New("bad -ns")
			}
			lim.Namespaces = ns
		default:
			return lim, nil, fmt.Errorf("bad %q", a)
		}
	}
	if !seen {
		return lim, nil, errors.New("usage: -max-procs=N [-landlock=SPEC] [-ns=SPEC] -- PROGRAM [ARG...]")
	}
	return lim, args[sep+1:], nil
}

// limitProcs sets RLIMIT_NPROC to the uid's visible task count, less
// this process's own threads, plus n. The limit counts every task of the real uid, so an absolute number
// would either starve a user who already runs many processes or not bind
// at all; the count is taken now, once. The hard limit goes down too, so
// the command cannot raise it again.
func limitProcs(n int) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &cur); err != nil {
		return fmt.Errorf("read the process limit: %w", err)
	}
	// This process is about to become the command: its own threads end at
	// the exec, and the command itself is the first of its n tasks.
	uid := os.Getuid()
	others := max(userTasks(uid)-tasksOf("self", uid), 0)
	want := uint64(others + n) //nolint:gosec // G115: a count plus a positive budget, never negative
	if cur.Max != unix.RLIM_INFINITY && cur.Max < want {
		want = cur.Max
	}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: want, Max: want}); err != nil {
		return fmt.Errorf("set the process limit: %w", err)
	}
	return nil
}

// killTree sends SIGKILL to every process below self.
func killTree(self int) int {
	table, err := parents()
	if err != nil {
		return 0
	}
	ds := descendants(table, self)
	for _, p := range ds {
		_ = unix.Kill(p, unix.SIGKILL)
	}
	return len(ds)
}

// cleanUp kills and reaps every descendant until none is left or the
// deadline passes. Each round kills the whole visible tree at once; a
// process forked meanwhile is a descendant too and goes in the next round.
// A killed parent's children are reparented here (this is a subreaper), so
// having no child left means having no descendant left.
func cleanUp(self int, deadline time.Time) {
	for {
		killTree(self)
		for {
			pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if errors.Is(err, unix.ECHILD) {
				return
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || pid == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}
