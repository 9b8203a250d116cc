// Package procguard is the process boundary between a garra process and the
// programs its tools start (bash and what bash starts, git, the container
// client).
//
// Three things hold by construction on Linux, whatever the command does:
//
//   - A child cannot read the parent's secrets or write onto its stdout.
//     Harden makes the calling process non-dumpable (prctl PR_SET_DUMPABLE 0,
//     as ssh-agent does). The kernel then owns /proc/<pid>/{environ,fd,mem,
//     maps,...} as root and refuses them to any process without
//     CAP_SYS_PTRACE, so a child running as the same non-root uid can read
//     neither the provider keys and tokens in the environment nor open
//     /proc/<pid>/fd/1 to forge JSON-RPC on the stdio server's stdout, and
//     cannot ptrace it. A root child (or one with CAP_SYS_PTRACE) still can:
//     garra is not meant to run tools as root, and the operator's pods never
//     do. The flag is reset when a program is exec'd, so the children
//     themselves stay ordinary processes.
//
//   - Nothing a call started outlives it. Command runs each command under its
//     own supervisor: this same binary re-executed (/proc/self/exe with a
//     marker argv[0] that this package's init recognises before main runs).
//     The supervisor is a child subreaper, so every orphan of the command —
//     a setsid daemon, a job-control job, a nohup'd or disowned process —
//     is reparented to it rather than to init; when the command exits, or
//     the call is cancelled, or the garra process dies (parent-death
//     signal), it kills every remaining descendant and reaps them before it
//     exits. A process-group kill cannot do this: setsid and set -m leave
//     the group.
//
//   - The number of processes a call may start is bounded (RLIMIT_NPROC, see
//     Limits).
//
//   - Where the caller asks (Limits.Landlock) and the kernel offers it, the
//     command runs in a Landlock domain of its own: it may read and write
//     only the paths the caller granted, and the domain outlives every exec
//     the command makes. Only the command is confined, never the supervisor
//     or this process.
//
// A command that kills its own supervisor (it runs as the same uid, so it
// can) orphans its descendants to the next subreaper up. BecomeSubreaper
// makes the long-running garra process that one, and every child it starts
// through Start is tracked, so whatever else shows up as its child is such
// an orphan and is killed when the next tracked child ends (Sweep).
//
// Elsewhere (macOS, BSD) there is no subreaper and no dumpable flag: Harden
// and BecomeSubreaper do nothing, and Command starts the command in its own
// process group, which is killed when the call ends.
package procguard

// DefaultMaxProcs is the number of processes (threads count too) one command
// may have running at once, beyond what its user already runs.
const DefaultMaxProcs = 256

// Limits bounds one supervised command.
type Limits struct {
	// MaxProcs is how many more tasks the command's uid may have than it
	// had when the command started (RLIMIT_NPROC is per real uid, counting
	// every process and thread of that uid, so the supervisor sets it to
	// the uid's current count plus MaxProcs). 0 means DefaultMaxProcs;
	// negative means no limit. The kernel ignores the limit for root and
	// for CAP_SYS_RESOURCE/CAP_SYS_ADMIN, so it binds only a non-root
	// command.
	MaxProcs int
	// Landlock, when set, is the domain the command runs in (see
	// Landlock). Nil runs it unconfined.
	Landlock *Landlock
	// Namespaces, when set, are the command's own namespaces (see
	// Namespaces). Nil runs it in the caller's.
	Namespaces *Namespaces
}

// Namespaces are what the command sees of the host's mounts and network.
// The command always gets a user, a mount and a PID namespace (with a
// /proc of its own); the rest is per field. A command can undo nothing
// here unless it holds capabilities in its user namespace, which a command
// of a non-root caller loses at its exec, and which Landlock, once entered,
// stops from changing mounts whatever the caller.
type Namespaces struct {
	// Pin are paths bound over themselves, still writable: they can be
	// neither removed nor renamed (a repository's .git, so that the
	// command cannot set another one in its place).
	Pin []string `json:"pin,omitempty"`
	// ReadOnly are paths bound over themselves read-only (after Pin, so
	// they may lie beneath one).
	ReadOnly []string `json:"ro,omitempty"`
	// Net gives the command an empty network namespace: only its own
	// loopback, nothing of the host's interfaces or abstract sockets.
	Net bool `json:"net,omitempty"`
}

// Landlock is a Landlock domain for one command: what it may read and
// write beneath which paths, and whether it may open TCP connections.
// Landlock grants, it cannot subtract: whatever no path below covers is
// denied, so the caller leaves out what must stay hidden rather than
// listing it.
type Landlock struct {
	// ABI is the Landlock ABI the domain is built for (1 or more, at most
	// the kernel's, see LandlockABI): the rights newer ABIs add are left
	// out below it.
	ABI int `json:"abi"`
	// Read are files and directories the command may read and execute
	// (a directory: everything beneath it).
	Read []string `json:"read,omitempty"`
	// Write are files and directories it may also write, create, remove
	// and rename within.
	Write []string `json:"write,omitempty"`
	// NoConnect denies every TCP connect (ABI 4 and later), and UDP sends
	// too where the ABI covers them (10 and later).
	NoConnect bool `json:"no_connect,omitempty"`
}

func (l Limits) maxProcs() int {
	if l.MaxProcs == 0 {
		return DefaultMaxProcs
	}
	return l.MaxProcs
}

// supervisorArg0 is the argv[0] that turns this binary into a supervisor.
// Any program named so by its parent is one; nothing else is (a command
// that executes garra this way gains nothing: the supervisor runs with its
// caller's uid whatever it is asked to run).
const supervisorArg0 = "garra-call-supervisor"

// limitStageArg0 is the argv[0] of the short-lived process between a
// supervisor and its command: it sets the command's process limit on itself,
// enters its Landlock domain, and execs the command (see startCommand).
const limitStageArg0 = "garra-call-limit"
