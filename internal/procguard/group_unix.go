//go:build unix && !linux

package procguard

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a new process group that cancellation
// kills as a whole.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		killGroup(cmd)
		return nil
	}
}

// killGroup sends SIGKILL to cmd's process group; a group already gone is
// not an error.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
