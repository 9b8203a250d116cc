//go:build !unix

package tools

import (
	"os"
	"os/exec"
)

// ownProcessGroup is a no-op where process groups do not exist; the
// context still kills the shell itself.
func ownProcessGroup(*exec.Cmd) {}

func killProcessGroup(*exec.Cmd) {}

func signalOf(*os.ProcessState) (int, bool) { return 0, false }
