package procguard

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// selfExe is this program, whatever its path on disk (and even when that
// path has been replaced by an upgrade since it started).
const selfExe = "/proc/self/exe"

// supervisorWait is how long Wait gives a cancelled supervisor to kill and
// reap its tree before SIGKILLing it: a little more than its own bound.
const supervisorWait = cleanupBound + 2*time.Second

// Cmd is one command run under its own supervisor (see the package doc).
// Set Dir, Env, Stdin, Stdout and Stderr on Cmd before Start; they are the
// command's (the supervisor passes them on). Env should already be the
// command's whole environment: nothing else is added.
type Cmd struct {
	Cmd     *exec.Cmd
	release func()
}

// Command returns the supervised form of `name arg...`. When ctx ends the
// supervisor is asked (SIGTERM) to kill the command and everything it
// started, and is killed itself if it has not exited after a grace period.
func Command(ctx context.Context, lim Limits, name string, arg ...string) *Cmd {
	args := append(append(lim.flags(), "--", name), arg...)
	c := exec.CommandContext(ctx, selfExe, args...)
	c.Args[0] = supervisorArg0
	// SIGTERM when this process dies, so that the supervisor cleans up
	// even then. (The kernel sends it when the forking thread exits; Go
	// keeps its threads for the life of the process, except for locked
	// ones, and no goroutine that starts commands locks its thread.)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = supervisorWait
	return &Cmd{Cmd: c}
}

// Start starts the supervisor and waits until it has started the command.
// An error means the command did not run; its message names the reason
// (never a path).
func (c *Cmd) Start() error {
	if len(c.Cmd.ExtraFiles) != 0 {
		return errors.New("procguard: a supervised command cannot take extra files")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	c.Cmd.ExtraFiles = []*os.File{w}
	release, err := Start(c.Cmd)
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	_ = r.Close()
	if string(msg) == "ok" {
		c.release = release
		return nil
	}
	_ = c.Cmd.Wait()
	release()
	if reason, ok := strings.CutPrefix(string(msg), "error: "); ok {
		return errors.New(reason)
	}
	return errors.New("the supervisor exited before starting the command")
}

// Wait waits for the supervisor, which exits with the command's status
// once the command and every process it started are gone.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	if c.release != nil {
		c.release()
		c.release = nil
	}
	return err
}
