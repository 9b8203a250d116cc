package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/garraia/garra/internal/procguard"
)

// Container defaults.
const (
	// DefaultSandboxImage has bash and coreutils and is fully qualified,
	// as podman requires without a short-name alias table.
	DefaultSandboxImage = "docker.io/library/debian:bookworm-slim"
	// DefaultPidsLimit bounds the processes of one command (fork bombs).
	DefaultPidsLimit = 256
	// ContainerWorkDir is where the working_dir is mounted in the
	// container and where the command starts. A fixed path keeps the host
	// layout out of the model's view (pwd prints /workspace), as in the
	// orchestrator's sandbox pod.
	ContainerWorkDir = "/workspace"
)

// sandboxFailureExit is the exit status docker and podman use when `run`
// itself failed (daemon down, image missing, bad flag), as opposed to the
// command inside the container.
const sandboxFailureExit = 125

// ErrSandboxUnavailable is wrapped by ContainerRunner.Run when the
// container could not be started: the command is refused, never run on
// the host instead.
var ErrSandboxUnavailable = errors.New("sandbox unavailable; the command was not run")

// cliEnv is what the docker/podman client itself may see besides the
// EnvAllowlist: how to reach the daemon or the rootless runtime. The
// container gets none of it (no -e flags are ever passed).
var cliEnv = [...]string{
	"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
	"CONTAINER_HOST", "CONTAINER_CONNECTION", "CONTAINERS_CONF", "CONTAINERS_REGISTRIES_CONF", "CONTAINERS_STORAGE_CONF",
	"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "DBUS_SESSION_BUS_ADDRESS",
}

// ContainerRunner runs each command in a fresh, throw-away docker or
// podman container: no network, all capabilities dropped, no privilege
// escalation, a process limit, the server's (or the given) uid:gid, and
// only the call's working_dir mounted (read-write, at /workspace), with
// what of its .git git reads as code or configuration read-only over it
// (see SplitGit). It refuses to run without a working_dir, and
// refuses a working_dir that is / or contains $HOME or the server's current
// directory. When the container cannot be started the command is refused
// with ErrSandboxUnavailable; there is no host fallback.
//
// Nothing the command starts outlives the container: the command is the
// container's first process, and when it exits the kernel kills the rest of
// its pid namespace; on timeout the container is removed (rm -f).
//
// Why part of .git is read-only: the container's files are the user's
// files, and git on the host runs what a repository's .git says (hooks,
// core.fsmonitor, aliases, filters) at the user's next git command, outside
// the container. The rest of it (objects, refs, the index) stays writable,
// so that `git commit` works in the container; the .git directory is a
// mount point of its own, so it can be neither removed nor renamed for
// another. The repository git uses for a directory is the nearest .git at
// or above it; one above the working directory is not mounted at all, so
// the working directory's own .git (a directory, or a worktree's or
// submodule's .git file, read-only whole) is the only one the container
// could change. A .git the command creates where there was none (a new
// nested repository) is not prevented: git on the host reads it only when
// run inside that directory.
//
// The command runs as `bash -c COMMAND` (not sh): the gate parses bash,
// and the tool is advertised as bash, so the image must provide bash.
type ContainerRunner struct {
	// Backend is "docker" or "podman".
	Backend string
	// Image is the container image (DefaultSandboxImage when "").
	Image string
	// PidsLimit is passed as --pids-limit (DefaultPidsLimit when not
	// positive).
	PidsLimit int
	// UID and GID are passed as --user UID:GID. NewContainerRunner sets
	// them to the server's own ids, so files written in the mount belong
	// to the server's user.
	UID, GID int
	// LookPath finds the backend binary (exec.LookPath when nil).
	LookPath func(string) (string, error)
	// MaxOutputBytes caps the combined output (DefaultMaxOutputBytes when
	// not positive).
	MaxOutputBytes int
}

// NetworkBounded is true: the container runs with --network none.
func (r *ContainerRunner) NetworkBounded() bool { return true }

var _ BashRunner = (*ContainerRunner)(nil)

// NewContainerRunner returns a runner for backend with the defaults and
// the server's uid and gid.
func NewContainerRunner(backend, image string) *ContainerRunner {
	return &ContainerRunner{
		Backend:   backend,
		Image:     image,
		PidsLimit: DefaultPidsLimit,
		UID:       os.Getuid(),
		GID:       os.Getgid(),
		LookPath:  exec.LookPath,
	}
}

// Argv returns the full command line that runs command in a container
// with workDir mounted, without running anything:
//
//	<backend> run --rm -i --network none --cap-drop ALL
//	  --security-opt no-new-privileges --pids-limit N --user UID:GID
//	  [podman: --userns=keep-id --http-proxy=false]
//	  -v <canonical workDir>:/workspace:rw
//	  [-v <canonical workDir>/.git:/workspace/.git:rw
//	   -v <canonical workDir>/.git/config:/workspace/.git/config:ro ...]
//	  -w /workspace <image> bash -c <command>
//
// (a .git file: -v <canonical workDir>/.git:/workspace/.git:ro alone).
//
// It resolves workDir (symlinks evaluated) and refuses: no workDir, a
// relative one, one that is not a directory, "/", one that is or contains
// $HOME or the server's current directory, one whose path cannot be
// expressed in -v syntax (':' or ','), and one whose .git is a symlink or
// neither a directory nor a file (it could not be mounted read-only in
// place: a bind mount follows the link), and a read-only piece of .git
// whose path cannot be expressed in -v syntax.
func (r *ContainerRunner) Argv(command, workDir string) ([]string, error) {
	return r.argv(command, workDir, "")
}

func (r *ContainerRunner) argv(command, workDir, name string) ([]string, error) {
	switch r.Backend {
	case "docker", "podman":
	default:
		return nil, fmt.Errorf("sandbox backend %q cannot run bash (want docker or podman)", r.Backend)
	}
	if r.UID < 0 || r.GID < 0 {
		return nil, fmt.Errorf("sandbox user %d:%d is invalid", r.UID, r.GID)
	}
	mount, err := mountableDir(workDir)
	if err != nil {
		return nil, err
	}
	split, err := SplitGit(mount)
	if err != nil {
		return nil, err
	}
	image := r.Image
	if image == "" {
		image = DefaultSandboxImage
	}
	pids := r.PidsLimit
	if pids <= 0 {
		pids = DefaultPidsLimit
	}
	argv := []string{r.Backend, "run", "--rm", "-i"}
	if name != "" {
		argv = append(argv, "--name", name)
	}
	argv = append(argv,
		"--network", "none",
		"--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"--pids-limit", strconv.Itoa(pids),
		"--user", strconv.Itoa(r.UID)+":"+strconv.Itoa(r.GID),
	)
	if r.Backend == "podman" {
		// keep-id maps the user to itself inside a rootless user
		// namespace; http-proxy=false stops podman copying the host's
		// proxy variables (which may hold credentials) into the container.
		argv = append(argv, "--userns=keep-id", "--http-proxy=false")
	}
	argv = append(argv, "-v", mount+":"+ContainerWorkDir+":rw")
	// Mounted after (and so over) the read-write mount; both runtimes
	// order nested mounts by destination.
	if split.Pin != "" {
		argv = append(argv, "-v", split.Pin+":"+ContainerWorkDir+"/.git:rw")
	}
	for _, p := range split.ReadOnly {
		rel, err := filepath.Rel(mount, p)
		if err != nil || strings.ContainsAny(p, ":,\n") {
			return nil, errors.New("a path in the working directory's .git contains ':', ',' or a newline and cannot be mounted read-only")
		}
		argv = append(argv, "-v", p+":"+ContainerWorkDir+"/"+filepath.ToSlash(rel)+":ro")
	}
	argv = append(argv,
		"-w", ContainerWorkDir,
		image,
		"bash", "-c", command,
	)
	return argv, nil
}

// mountableDir canonicalises workDir and checks it may be mounted.
func mountableDir(workDir string) (string, error) {
	if workDir == "" {
		return "", ErrNoWorkDir
	}
	if !filepath.IsAbs(workDir) {
		return "", errors.New("working directory must be absolute")
	}
	canon, err := filepath.EvalSymlinks(workDir)
	if err != nil {
		return "", errors.New("working directory does not exist")
	}
	if fi, err := os.Stat(canon); err != nil || !fi.IsDir() {
		return "", errors.New("working directory is not a directory")
	}
	if strings.ContainsAny(canon, ":,\n") {
		return "", errors.New("working directory path contains ':', ',' or a newline and cannot be mounted")
	}
	if canon == string(filepath.Separator) {
		return "", errors.New("refusing to mount / into the sandbox")
	}
	if home, err := os.UserHomeDir(); err == nil && containsDir(canon, home) {
		return "", errors.New("refusing to mount the home directory (or a directory containing it) into the sandbox; pass a project subdirectory as working_dir")
	}
	if cwd, err := os.Getwd(); err == nil && containsDir(canon, cwd) {
		return "", errors.New("refusing to mount the server's current directory (or a directory containing it) into the sandbox; pass a subdirectory as working_dir")
	}
	return canon, nil
}

// containsDir reports whether the canonical directory dir is other or one
// of its ancestors. other is canonicalised first when it exists.
func containsDir(dir, other string) bool {
	if other == "" {
		return false
	}
	if c, err := filepath.EvalSymlinks(other); err == nil {
		other = c
	}
	rel, err := filepath.Rel(dir, other)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Run implements BashRunner. The container gets a unique --name so that,
// when ctx ends, it can be removed (`<backend> rm -f NAME`): killing the
// client alone would leave the container running.
func (r *ContainerRunner) Run(ctx context.Context, command, workDir string) (string, int, error) {
	name, err := containerName()
	if err != nil {
		return "", -1, fmt.Errorf("%w: %w", ErrSandboxUnavailable, err)
	}
	argv, err := r.argv(command, workDir, name)
	if err != nil {
		return "", -1, err
	}
	lookPath := r.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	bin, err := lookPath(r.Backend)
	if err != nil {
		return "", -1, fmt.Errorf("%w: %s is not installed or not on PATH", ErrSandboxUnavailable, r.Backend)
	}
	out := newCapWriter(r.MaxOutputBytes)
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	cmd.Env = cliEnvironment()
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = killGrace
	release, err := procguard.Start(cmd)
	if err != nil {
		return "", -1, fmt.Errorf("%w: cannot start %s: %w", ErrSandboxUnavailable, r.Backend, cause(err))
	}
	err = cmd.Wait()
	release()
	if ctxErr := ctx.Err(); ctxErr != nil {
		r.remove(bin, name)
		return out.String(), -1, ctxErr
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == sandboxFailureExit:
		return "", -1, fmt.Errorf("%w: %s run failed: %s", ErrSandboxUnavailable, r.Backend, firstLine(out.String()))
	case errors.As(err, &exitErr):
		return out.String(), exitCode(exitErr), nil
	}
	return out.String(), -1, fmt.Errorf("%w: %s: %w", ErrSandboxUnavailable, r.Backend, err)
}

// remove force-removes a container whose client was killed. It runs on
// its own short deadline because the call's context is already over.
func (r *ContainerRunner) remove(bin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "rm", "-f", name)
	cmd.Env = cliEnvironment()
	_ = runTracked(cmd)
}

func containerName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "garra-bash-" + hex.EncodeToString(b[:]), nil
}

// cliEnvironment is the allowlisted environment plus what the container
// client needs to find its daemon or runtime.
func cliEnvironment() []string {
	env := allowlistedEnv()
	for _, k := range cliEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// firstLine returns the first non-empty line of s, trimmed and clipped.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return capOutput(line, 300)
		}
	}
	return "no error message"
}
