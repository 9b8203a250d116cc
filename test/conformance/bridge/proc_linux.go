//go:build linux

package main

import (
	"os"
	"syscall"
)

// childProcAttr puts the child in a process group of its own, so that
// killGroup also reaches anything it spawned, and has the kernel kill it if
// the bridge dies without cleaning up.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(p *os.Process, sig syscall.Signal) {
	_ = syscall.Kill(-p.Pid, sig)
}
