package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/garraia/garra/internal/procguard"
	"github.com/garraia/garra/internal/shellgate"
	"github.com/garraia/garra/internal/strictargs"
)

// BashRunner runs one shell command line that already passed the gate.
//
// workDir is the call's working_dir, absolute, or "" when the call gave
// none; what "" means is the runner's choice (HostRunner falls back to its
// DefaultDir, ContainerRunner refuses). output is the combined stdout and
// stderr, capped by the runner. exitCode is the command's exit status. err
// is non-nil when the command did not run to completion: the context ended
// (err wraps ctx.Err()) or the runner refused or could not start it (the
// message is safe to show to the model). There is never a fallback to
// another place of execution.
type BashRunner interface {
	Run(ctx context.Context, command, workDir string) (output string, exitCode int, err error)
}

// Bash tool limits.
const (
	maxCommandLen         = 64 << 10
	defaultBashTimeoutSec = 120
	maxBashTimeoutSec     = 600
)

// killGrace is how long a runner waits for a killed child's pipes to close
// before giving up on them (a grandchild that escaped the process group may
// hold them open).
const killGrace = 2 * time.Second

// ErrNoWorkDir is returned by runners that need a directory and got none.
var ErrNoWorkDir = errors.New("no working directory: pass working_dir to run bash")

// envAllowlist is the only parent environment a child process sees: API keys, tokens and dotenv values in the server's environment do
// not reach bash or git.
var envAllowlist = [...]string{"PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER"}

// EnvAllowlist returns the names of the environment variables passed from
// the server to the bash and git children. The slice is a copy.
func EnvAllowlist() []string {
	return append([]string(nil), envAllowlist[:]...)
}

// allowlistedEnv returns NAME=value for each allowlisted variable set in
// the server's environment.
func allowlistedEnv() []string {
	env := []string{}
	for _, k := range envAllowlist {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func bashTool(gate shellgate.Policy) Tool {
	blocked := "destructive, network-capable and inline-code commands are blocked. "
	if gate.NetworkBounded {
		blocked = "destructive and inline-code commands are blocked; the network is what the sandbox bash runs in allows. "
	}
	return Tool{
		Name: ToolBash,
		Description: "Run a bash command line in the working directory and return its combined stdout and stderr. " +
			"There is no confirmation channel: " + blocked +
			"Output is truncated when long.",
		InputSchema: objectSchema(map[string]prop{
			"command":      stringProp("The bash command line to run.", maxCommandLen),
			"timeout_secs": intProp("Kill the command (and everything it started) after this many seconds.", 1, maxBashTimeoutSec, defaultBashTimeoutSec),
		}, "command"),
	}
}

type bashArgs struct {
	Command     *string `json:"command"`
	TimeoutSecs *int    `json:"timeout_secs"`
}

func (l *Local) callBash(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a bashArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return argsError(ToolBash, err), nil
	}
	command, err := requiredString("command", a.Command, maxCommandLen)
	if err == nil && command == "" {
		err = errors.New("command: must not be empty")
	}
	if err != nil {
		return argsError(ToolBash, err), nil
	}
	secs, err := intInRange("timeout_secs", a.TimeoutSecs, defaultBashTimeoutSec, 1, maxBashTimeoutSec)
	if err != nil {
		return argsError(ToolBash, err), nil
	}
	if d := shellgate.Check(command, l.gate); !d.Allowed {
		return Result{Output: "blocked: " + d.Reason, IsError: true}, nil
	}
	runCtx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second)
	defer cancel()
	out, code, err := l.bash.Run(runCtx, command, l.workDir)
	switch {
	case ctx.Err() != nil:
		// The caller's context ended: the executor failed, not the tool.
		return Result{}, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return Result{
			Output:  withNote(out, fmt.Sprintf("[timed out after %ds; the command and its children were killed]", secs)),
			IsError: true,
		}, nil
	case err != nil:
		return Result{Output: withNote(out, "refused: "+err.Error()), IsError: true}, nil
	case code != 0:
		return Result{Output: withNote(out, fmt.Sprintf("[exit code %d]", code)), IsError: true}, nil
	}
	return Result{Output: out}, nil
}

// withNote appends a bracketed note on its own line.
func withNote(out, note string) string {
	if out == "" {
		return note
	}
	if out[len(out)-1] != '\n' {
		out += "\n"
	}
	return out + note
}

// HostRunner runs commands on this machine with /bin/bash. It is meant for
// the isolated-pod profile (the pod is the boundary) and for the sandbox
// server inside the orchestrator's pod, never for a developer's laptop.
//
// The child gets only the allowlisted environment (EnvAllowlist), reads
// /dev/null as stdin, and its combined output is capped. On Linux each
// command runs under its own procguard supervisor: when the shell exits,
// the call times out or is cancelled, or this process dies, every process
// the command started is killed, including those that left its process
// group (setsid, set -m, nohup, disown), and the number of processes it
// may run is bounded (MaxProcs). Elsewhere the command's process group is
// killed instead.
type HostRunner struct {
	// Shell is the shell binary, absolute. Default /bin/bash, run as
	// `bash --noprofile --norc -c COMMAND`.
	Shell string
	// DefaultDir is the directory used when Run gets workDir "" (the
	// wiring passes the jail's first root). Both empty: refused.
	DefaultDir string
	// MaxOutputBytes caps the combined output (DefaultMaxOutputBytes when
	// not positive).
	MaxOutputBytes int
	// MaxProcs is how many processes (and threads) one command may run at
	// once beyond what this user already runs: RLIMIT_NPROC, which binds
	// only a non-root user (procguard.Limits). 0 means
	// procguard.DefaultMaxProcs; negative means no limit. The kernel counts
	// every task of the uid in the user namespace, including ones this
	// process cannot see (other containers running as the same uid): where
	// those exist the bound is tighter than asked, down to none left.
	MaxProcs int
	// Confiner, when set, makes each command's kernel confinement; a
	// call it refuses does not run.
	Confiner Confiner
	// ExtraEnv, when set, is asked at each call for variables added to
	// the allowlisted environment (the sandbox's egress proxy settings,
	// whose token follows a rotation).
	ExtraEnv func() []string
	// PodNetwork says the commands run in a pod whose NetworkPolicy
	// decides what they reach.
	PodNetwork bool
}

// Confiner makes the kernel confinement of one bash call on the host: what
// its command may read, write and connect to, made for the call's
// directory. The hands package makes the one in use (Landlock on Linux); a
// mechanism of another kernel (macOS Seatbelt) would be another Confiner.
type Confiner interface {
	// Confine prepares one call in dir. An error refuses the call; its
	// message is shown to the model and names no path.
	Confine(dir string) (Confinement, error)
}

// NetworkBounder is a bash runner, or a Confiner, that knows whether every
// command it runs reaches only the network a boundary outside the shell
// gate decides: none at all (a network namespace of the call's own, a
// container without a network), or whatever a pod's NetworkPolicy allows.
// Then the gate's network rules step aside (shellgate.Policy): the kernel
// answers that question, and the gate would only answer it again, worse.
type NetworkBounder interface {
	NetworkBounded() bool
}

// NetworkBounded reports whether a boundary outside the gate decides the
// network of every command: the pod's NetworkPolicy, or r's Confiner.
func (r *HostRunner) NetworkBounded() bool {
	nb, ok := r.Confiner.(NetworkBounder)
	return r.PodNetwork || ok && nb.NetworkBounded()
}

// Confinement is one call's confinement.
type Confinement struct {
	// Landlock is the domain the command runs in; nil runs it unconfined
	// (the confiner has decided that this is allowed).
	Landlock *procguard.Landlock
	// Namespaces are the command's own namespaces; nil runs it in the
	// host's.
	Namespaces *procguard.Namespaces
	// Env is added to the command's environment (its private TMPDIR).
	Env []string
	// Release undoes what Confine made once the call is over; nil when
	// there is nothing to undo.
	Release func()
}

var _ BashRunner = (*HostRunner)(nil)

// Run implements BashRunner.
func (r *HostRunner) Run(ctx context.Context, command, workDir string) (string, int, error) {
	dir := workDir
	if dir == "" {
		dir = r.DefaultDir
	}
	if dir == "" {
		return "", -1, ErrNoWorkDir
	}
	shell := r.Shell
	if shell == "" {
		shell = "/bin/bash"
	}
	// The output pipe is ours, not exec's: Wait returns once the command
	// and everything it started are gone (killed if need be), and only
	// then is the pipe drained, so a backgrounded job holding it open
	// neither survives nor delays the result.
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", -1, fmt.Errorf("cannot create the output pipe: %w", cause(err))
	}
	defer func() { _ = pr.Close() }()
	lim := procguard.Limits{MaxProcs: r.MaxProcs}
	env := allowlistedEnv()
	if r.ExtraEnv != nil {
		env = append(env, r.ExtraEnv()...)
	}
	if r.Confiner != nil {
		conf, err := r.Confiner.Confine(dir)
		if err != nil {
			return "", -1, err
		}
		if conf.Release != nil {
			defer conf.Release()
		}
		lim.Landlock = conf.Landlock
		lim.Namespaces = conf.Namespaces
		env = append(env, conf.Env...)
	}
	c := procguard.Command(ctx, lim, shell, "--noprofile", "--norc", "-c", command)
	c.Cmd.Dir = dir
	c.Cmd.Env = env
	c.Cmd.Stdout = pw
	c.Cmd.Stderr = pw
	err = c.Start()
	_ = pw.Close() // the child has its copy; EOF comes when the last writer exits
	if err != nil {
		return "", -1, fmt.Errorf("cannot start the shell: %w", cause(err))
	}
	out := newCapWriter(r.MaxOutputBytes)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(out, pr)
	}()
	err = c.Wait()
	select {
	case <-drained:
	case <-time.After(killGrace):
		// A process the kill could not reach (stuck in the kernel, or
		// outside the group where there is no supervisor) holds the pipe.
		_ = pr.Close()
		<-drained
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return out.String(), -1, ctxErr
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0, nil
	case errors.As(err, &exitErr):
		return out.String(), exitCode(exitErr), nil
	}
	return out.String(), -1, fmt.Errorf("shell failed: %w", err)
}

// exitCode is the status of an exited child, or 128+signal for one killed
// by a signal, as a shell reports it.
func exitCode(e *exec.ExitError) int {
	if code := e.ExitCode(); code >= 0 {
		return code
	}
	if sig, ok := signalOf(e.ProcessState); ok {
		return 128 + sig
	}
	return -1
}

// cause unwraps an *os.PathError / *exec.Error to its reason, so messages
// do not carry host paths.
func cause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// runTracked is cmd.Run with the child tracked by procguard: in a process
// that is a subreaper every child must be, or the orphan sweep would take
// it for one (see procguard.BecomeSubreaper).
func runTracked(cmd *exec.Cmd) error {
	release, err := procguard.Start(cmd)
	if err != nil {
		return err
	}
	defer release()
	return cmd.Wait()
}
