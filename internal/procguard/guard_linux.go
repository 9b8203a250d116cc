package procguard

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Harden makes this process non-dumpable: /proc/<pid>/environ, fd/, mem and
// the rest become root's, and no process without CAP_SYS_PTRACE may read
// them or ptrace this one. Call it first thing in every process that holds
// a secret or runs tools. The flag belongs to the whole process (all its
// threads), so it does not matter which goroutine calls it.
func Harden() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the process non-dumpable: %w", err)
	}
	return nil
}

// Dumpable reports the process's dumpable flag (true unless Harden ran).
func Dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		return false, fmt.Errorf("read the dumpable flag: %w", err)
	}
	return v != 0, nil
}

// subreaper is set once this process has become a child subreaper: from
// then on orphans may be reparented to it, and Sweep kills them.
var subreaper atomic.Bool

// BecomeSubreaper makes this process the child subreaper for everything it
// starts: a descendant orphaned by the death of its parent (a supervisor
// killed by the command it runs) is reparented here instead of to init, and
// Sweep kills it once the next tracked child ends. Every child of a
// subreaper must be started with Start (or Command), or Sweep would take it
// for an orphan.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a child subreaper: %w", err)
	}
	subreaper.Store(true)
	return nil
}
