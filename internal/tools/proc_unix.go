//go:build unix

package tools

import (
	"os"
	"syscall"
)

// signalOf reports the signal that killed a child.
func signalOf(ps *os.ProcessState) (int, bool) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal()), true
	}
	return 0, false
}
