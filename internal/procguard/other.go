//go:build !linux

package procguard

import (
	"context"
	"errors"
	"os/exec"
	"time"
)

// Harden does nothing here: there is no dumpable flag to clear.
func Harden() error { return nil }

// Dumpable is always true here.
func Dumpable() (bool, error) { return true, nil }

// BecomeSubreaper does nothing here: there are no subreapers.
func BecomeSubreaper() error { return nil }

// Start starts cmd; release does nothing.
func Start(cmd *exec.Cmd) (release func(), err error) {
	return func() {}, cmd.Start()
}

// Sweep does nothing here.
func Sweep() {}

// groupWait is how long Wait waits for a killed group's pipes to close.
const groupWait = 2 * time.Second

// Cmd is one command in its own process group (see the package doc).
type Cmd struct {
	Cmd *exec.Cmd
}

// Command returns `name arg...` set up to run in its own process group,
// which is killed when ctx ends and when the command exits. Limits do not
// apply: there is no supervisor to set them.
func Command(ctx context.Context, _ Limits, name string, arg ...string) *Cmd {
	c := exec.CommandContext(ctx, name, arg...)
	c.WaitDelay = groupWait
	ownGroup(c)
	return &Cmd{Cmd: c}
}

// Start starts the command.
func (c *Cmd) Start() error { return c.Cmd.Start() }

// Wait waits for the command, then kills whatever it left in its group.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	killGroup(c.Cmd)
	return err
}

// LandlockABI is 0 here: there is no Landlock.
func LandlockABI() int { return 0 }

// NamespacesAvailable says there are none here.
func NamespacesAvailable() error { return errors.New("this system has no Linux namespaces") }
