package procguard

import (
	"errors"
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// abiConfigs are the library's full configurations, ABI n at index n-1.
var abiConfigs = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// errataSignalScope is the kernel's erratum bit saying the signal scope of
// ABI 6 works; without it the scope is unsound and ABI 5 is what holds.
const errataSignalScope = 0x2

// LandlockABI is the Landlock ABI this kernel offers (0: none, or Landlock
// disabled at boot), capped at the newest this build knows. A kernel whose
// signal scoping has the known fault reports 5, the last ABI it fully
// honours.
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 1 {
		return 0
	}
	if v >= 6 {
		if e, err := llsys.LandlockGetErrata(); err != nil || e&errataSignalScope == 0 {
			v = 5
		}
	}
	return min(v, len(abiConfigs))
}

// config is the ruleset's handled rights: every file right of the ABI (so
// all of them are denied unless a rule grants them), the IPC scopes (the
// command can neither signal nor reach abstract sockets outside its
// domain), and TCP connect only when it is to be denied: binding a local
// port stays ordinary work.
func (l *Landlock) config() (landlock.Config, error) {
	if l.ABI < 1 || l.ABI > len(abiConfigs) {
		return landlock.Config{}, fmt.Errorf("landlock ABI %d is not one this build knows", l.ABI)
	}
	c := abiConfigs[l.ABI-1]
	c.HandledAccessNet = 0
	if l.NoConnect && l.ABI >= 4 {
		c.HandledAccessNet = llsys.AccessNetConnectTCP
		if l.ABI >= 10 {
			c.HandledAccessNet |= llsys.AccessNetConnectSendUDP
		}
	}
	return c, nil
}

// rules are the grants of l. A path that does not exist is skipped (the
// command could not reach it anyway); a file gets the file rights, a
// directory everything beneath it.
func (l *Landlock) rules() []landlock.Rule {
	var out []landlock.Rule
	add := func(paths []string, write bool) {
		for _, p := range paths {
			fi, err := os.Stat(p)
			switch {
			case err != nil:
				continue
			case !fi.IsDir() && write:
				out = append(out, landlock.RWFiles(p).IgnoreIfMissing())
			case !fi.IsDir():
				out = append(out, landlock.ROFiles(p).IgnoreIfMissing())
			case write && l.ABI >= 2:
				// Refer: a rename or link between two directories of
				// the workspace (mv a/x b/) is ordinary work.
				out = append(out, landlock.RWDirs(p).WithRefer().IgnoreIfMissing())
			case write:
				out = append(out, landlock.RWDirs(p).IgnoreIfMissing())
			default:
				out = append(out, landlock.RODirs(p).IgnoreIfMissing())
			}
		}
	}
	add(l.Read, false)
	add(l.Write, true)
	return out
}

// enter puts the calling thread (locked to its goroutine by the caller) in
// the domain: no_new_privs first, as the kernel requires of an unprivileged
// process, then the ruleset. The caller execs on this thread next.
func (l *Landlock) enter() error {
	c, err := l.config()
	if err != nil {
		return err
	}
	fd, flags, err := c.NewRulesetFD(l.rules()...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("landlock ruleset: nothing to restrict")
	}
	defer func() { _ = unix.Close(fd) }()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock restrict: %w", err)
	}
	return nil
}
