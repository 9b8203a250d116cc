package procguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsProbeArg0 is the command NamespacesAvailable runs: a limit stage
// asked for it sets up the namespaces a command would get and exits 0
// instead of running anything.
const nsProbeArg0 = "garra-ns-probe"

// cloneFlags are the namespaces the limit stage is born in. The user
// namespace is what lets an unprivileged caller create the others; it maps
// the caller's uid and gid to themselves, so files keep their owner. The
// stage is created in them (clone) rather than entering them itself
// (unshare): a Go process has threads, and unshare(CLONE_NEWUSER) refuses
// a threaded caller; and the first process of a new PID namespace must be
// born there.
func (n *Namespaces) cloneFlags() uintptr {
	f := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID)
	if n.Net {
		f |= unix.CLONE_NEWNET
	}
	return f
}

// sysProcAttr sets up attr so that the stage is born in n's namespaces.
// The parent-death signal moves into the stage (see limitAndExec): the Go
// runtime checks it by comparing the child's parent pid with its own, and
// in a new PID namespace the child's parent pid reads 0, so the runtime
// would kill the child at once.
func (n *Namespaces) sysProcAttr(attr *syscall.SysProcAttr) {
	attr.Cloneflags = n.cloneFlags()
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.Pdeathsig = 0
	// The stage keeps what it needs to set up the mounts and the
	// loopback across its exec (a non-root exec drops every other
	// capability); it drops these too before the command runs.
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
}

// dropCaps clears every capability of the calling thread, which execs the
// command next: ambient ones would survive the exec, inheritable ones could
// come back through a program's file capabilities.
func dropCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("drop the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop the capabilities: %w", err)
	}
	return nil
}

// enter sets up the stage's mount and network namespaces: nothing it
// mounts propagates back to the host, Pin and ReadOnly are bound over
// themselves (ReadOnly then made read-only), /proc shows the new PID
// namespace, and the loopback interface of a new network namespace is up
// (a server the command starts for itself stays reachable). A path that
// is gone since the caller listed it is skipped.
func (n *Namespaces) enter() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	for _, p := range n.Pin {
		if err := bindSelf(p, false); err != nil {
			return err
		}
	}
	for _, p := range n.ReadOnly {
		if err := bindSelf(p, true); err != nil {
			return err
		}
	}
	// Without a /proc of its own the command would see every process of
	// the host by pids that mean nothing in its namespace.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if n.Net {
		return loopbackUp()
	}
	return nil
}

// bindSelf bind-mounts p over itself: it can then be neither renamed nor
// removed (a mount point is busy), and, read-only, not written either.
// The remount keeps the flags the kernel locks on a mount inherited from
// a more privileged namespace (nosuid, nodev, noexec, atime), or it fails.
func bindSelf(p string, readOnly bool) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("bind a .git path: %w", err)
	}
	if !readOnly {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return fmt.Errorf("read a .git path's mount flags: %w", err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for st0, ms := range map[int64]uintptr{
		unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if st.Flags&st0 != 0 {
			flags |= ms
		}
	}
	if err := unix.Mount("", p, "", flags, ""); err != nil {
		return fmt.Errorf("make a .git path read-only: %w", err)
	}
	return nil
}

// loopbackUp brings up lo, which a new network namespace starts with down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// NamespacesAvailable says whether commands can be given namespaces here
// (nil) or why not: unprivileged user namespaces disabled (a sysctl, an
// AppArmor policy, a container runtime's seccomp profile), or a /proc that
// cannot be mounted in them (one partly covered by the runtime). It asks
// the kernel once, by starting a probe in them, and remembers the answer.
func NamespacesAvailable() error { return probeOnce() }

var probeOnce = sync.OnceValue(func() error {
	c := Command(context.Background(), Limits{MaxProcs: -1, Namespaces: &Namespaces{Net: true}}, nsProbeArg0)
	c.Cmd.Env = []string{}
	if err := c.Start(); err != nil {
		return err
	}
	if err := c.Wait(); err != nil {
		return fmt.Errorf("namespace probe: %w", err)
	}
	return nil
})
