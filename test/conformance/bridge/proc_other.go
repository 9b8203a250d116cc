//go:build !linux

package main

import (
	"os"
	"syscall"
)

func childProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(p *os.Process, sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = p.Kill()
		return
	}
	_ = p.Signal(sig)
}
