//go:build unix

package tools

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd as the leader of a new process group and makes
// cancellation kill the whole group, so a command's children do not outlive
// a timeout.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		killProcessGroup(cmd)
		return nil
	}
}

// killProcessGroup sends SIGKILL to cmd's process group. A group that is
// already gone is not an error.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil || cmd.Process.Pid <= 0 {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// signalOf reports the signal that killed a child.
func signalOf(ps *os.ProcessState) (int, bool) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal()), true
	}
	return 0, false
}
