package procguard

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The children of a process are one set per process, so their registry is
// too. starting is held for reading while a child is forked and recorded,
// and for writing by Sweep: a child between fork and record is never
// mistaken for an orphan.
var (
	starting sync.RWMutex
	mu       sync.Mutex
	tracked  = map[int]int{} // pid → number of live Start records
)

// Start starts cmd as a tracked child. Call release once cmd.Wait has
// returned: it forgets the child and sweeps orphans.
func Start(cmd *exec.Cmd) (release func(), err error) {
	starting.RLock()
	err = cmd.Start()
	var pid int
	if err == nil {
		pid = cmd.Process.Pid
		mu.Lock()
		tracked[pid]++
		mu.Unlock()
	}
	starting.RUnlock()
	if err != nil {
		return func() {}, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			if tracked[pid]--; tracked[pid] <= 0 {
				delete(tracked, pid)
			}
			mu.Unlock()
			Sweep()
		})
	}, nil
}

// sweepRounds bounds one Sweep: each round kills the orphans found, whose
// own children then become orphans of this process for the next round.
const sweepRounds = 16

// Sweep kills and reaps every child of this process that Start did not
// start: orphans reparented here because this process is a subreaper. It
// does nothing unless BecomeSubreaper was called. Only this process's own
// children are waited for, by pid, so exec.Cmd.Wait of tracked children is
// never disturbed.
func Sweep() {
	if !subreaper.Load() {
		return
	}
	starting.Lock()
	defer starting.Unlock()
	self := os.Getpid()
	for range sweepRounds {
		table, err := parents()
		if err != nil {
			return
		}
		var orphans []int
		mu.Lock()
		for pid, ppid := range table {
			if ppid == self && tracked[pid] == 0 {
				orphans = append(orphans, pid)
			}
		}
		mu.Unlock()
		if len(orphans) == 0 {
			return
		}
		for _, p := range orphans {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		reap(orphans, time.Now().Add(time.Second))
	}
}

// reap waits for each of pids (children of this process, already killed)
// until the deadline; any still running is left for the next Sweep.
func reap(pids []int, deadline time.Time) {
	for _, p := range pids {
		for {
			got, err := unix.Wait4(p, nil, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if got != 0 || err != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}
