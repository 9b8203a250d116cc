package procguard

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The supervisor takes over before main: a test binary or garra itself,
// re-executed by Command, must not run its own main.
func init() {
	if len(os.Args) > 0 && os.Args[0] == supervisorArg0 {
		os.Exit(supervise(os.Args[1:]))
	}
}

// statusFD is the descriptor on which the supervisor tells its parent
// whether the command started: "ok", or "error: REASON". It is the first
// of exec.Cmd.ExtraFiles.
const statusFD = 3

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

	maxProcs, argv, err := parseSupervisorArgs(args)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	// Once the command has used up the process limit, which binds this
	// process too, the runtime could not start another thread; the
	// supervisor allocates next to nothing, so a collector (whose workers
	// might want one) is not worth that risk.
	debug.SetGCPercent(-1)
	// Nothing in here is secret (the parent passes only the allowlisted
	// environment), but a dumpable supervisor could be ptraced by the
	// command and told not to clean up.
	if err := Harden(); err != nil {
		return fail(exitNotStart, "%v", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(exitNotStart, "become a child subreaper: %v", err)
	}
	if maxProcs > 0 && os.Getuid() != 0 {
		if err := limitProcs(maxProcs); err != nil {
			return fail(exitNotStart, "%v", err)
		}
	}
	// The parent asks for the end with SIGTERM (cancellation, and its own
	// death through the parent-death signal); a terminal may send the
	// others. Each kills the whole tree; the loop below then sees the
	// command exit and cleans up.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)

	// Running what the parent (this same binary) names is the
	// supervisor's whole job; the parent is the one that decides.
	proc, err := os.StartProcess(argv[0], argv, &os.ProcAttr{ //nolint:gosec // G702: see above
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// Its own group, so a terminal's job control or a caller that
		// only knows the group (kill -PGID) still reaches the command;
		// SIGKILL if this supervisor dies without cleaning up.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
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

// parseSupervisorArgs reads the arguments Command builds.
func parseSupervisorArgs(args []string) (int, []string, error) {
	if len(args) < 3 || args[1] != "--" {
		return 0, nil, errors.New("usage: -max-procs=N -- PROGRAM [ARG...]")
	}
	v, ok := strings.CutPrefix(args[0], "-max-procs=")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		return 0, nil, fmt.Errorf("bad %q", args[0])
	}
	return n, args[2:], nil
}

// limitProcs sets RLIMIT_NPROC to the uid's visible task count plus n.
// The limit counts every task of the real uid, so an absolute number
// would either starve a user who already runs many processes or not bind
// at all; the count is taken now, once. The hard limit goes down too, so
// the command cannot raise it again.
func limitProcs(n int) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &cur); err != nil {
		return fmt.Errorf("read the process limit: %w", err)
	}
	want := uint64(userTasks(os.Getuid()) + n) //nolint:gosec // G115: a count plus a positive budget, never negative
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
