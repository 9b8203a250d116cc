package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// canonTempDir is a fresh temporary directory with symlinks resolved.
func canonTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestContainerArgvExact(t *testing.T) {
	dir := canonTempDir(t)
	link := filepath.Join(canonTempDir(t), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	repo := canonTempDir(t)
	for _, d := range []string{".git/hooks", ".githooks", ".git/modules/lib/hooks"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An include and a hooks directory in the workspace, and an include
	// outside it (not mounted: the container cannot reach it anyway).
	if err := os.WriteFile(filepath.Join(repo, ".git", "config"),
		[]byte("[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../team.gitconfig\n\tpath = /etc/hostname\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "team.gitconfig"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	worktree := canonTempDir(t) // a linked worktree or submodule: .git is a file
	if err := os.WriteFile(filepath.Join(worktree, ".git"), []byte("gitdir: /elsewhere/.git/worktrees/w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inRepo := filepath.Join(repo, "sub") // its repository's .git is above it: not mounted at all
	if err := os.Mkdir(inRepo, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := `ls -la | grep "x y"`
	tests := []struct {
		name string
		r    ContainerRunner
		dir  string
		want []string
	}{
		{
			name: "docker",
			r:    ContainerRunner{Backend: "docker", Image: "example.org/img:1", PidsLimit: 64, UID: 1000, GID: 1001},
			dir:  dir,
			want: []string{"docker", "run", "--rm", "-i",
				"--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
				"--pids-limit", "64", "--user", "1000:1001",
				"-v", dir + ":/workspace:rw", "-w", "/workspace",
				"example.org/img:1", "bash", "-c", cmd},
		},
		{
			name: "podman",
			r:    ContainerRunner{Backend: "podman", Image: "example.org/img:1", PidsLimit: 64, UID: 1000, GID: 1001},
			dir:  dir,
			want: []string{"podman", "run", "--rm", "-i",
				"--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
				"--pids-limit", "64", "--user", "1000:1001",
				"--userns=keep-id", "--http-proxy=false",
				"-v", dir + ":/workspace:rw", "-w", "/workspace",
				"example.org/img:1", "bash", "-c", cmd},
		},
		{
			name: "docker defaults, symlinked dir mounted canonical",
			r:    ContainerRunner{Backend: "docker", UID: 0, GID: 0},
			dir:  link,
			want: []string{"docker", "run", "--rm", "-i",
				"--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
				"--pids-limit", "256", "--user", "0:0",
				"-v", dir + ":/workspace:rw", "-w", "/workspace",
				DefaultSandboxImage, "bash", "-c", cmd},
		},
		{
			name: "repository root: what git runs or reads as config read-only over the read-write mount",
			r:    ContainerRunner{Backend: "docker", Image: "img", PidsLimit: 64, UID: 1000, GID: 1001},
			dir:  repo,
			want: []string{"docker", "run", "--rm", "-i",
				"--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
				"--pids-limit", "64", "--user", "1000:1001",
				"-v", repo + ":/workspace:rw", "-v", repo + "/.git:/workspace/.git:rw",
				"-v", repo + "/.git/config:/workspace/.git/config:ro",
				"-v", repo + "/.git/hooks:/workspace/.git/hooks:ro",
				"-v", repo + "/.githooks:/workspace/.githooks:ro",
				"-v", repo + "/team.gitconfig:/workspace/team.gitconfig:ro",
				"-v", repo + "/.git/modules/lib/hooks:/workspace/.git/modules/lib/hooks:ro",
				"-w", "/workspace",
				"img", "bash", "-c", cmd},
		},
		{
			name: "podman, worktree whose .git is a file",
			r:    ContainerRunner{Backend: "podman", Image: "img", PidsLimit: 64, UID: 1000, GID: 1001},
			dir:  worktree,
			want: []string{"podman", "run", "--rm", "-i",
				"--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
				"--pids-limit", "64", "--user", "1000:1001",
				"--userns=keep-id", "--http-proxy=false",
				"-v", worktree + ":/workspace:rw", "-v", worktree + "/.git:/workspace/.git:ro", "-w", "/workspace",
				"img", "bash", "-c", cmd},
		},
		{
			name: "subdirectory of a repository",
			r:    ContainerRunner{Backend: "docker", Image: "img", PidsLimit: 64, UID: 1000, GID: 1001},
			dir:  inRepo,
			want: []string{"docker", "run", "--rm", "-i",
				"--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
				"--pids-limit", "64", "--user", "1000:1001",
				"-v", inRepo + ":/workspace:rw", "-w", "/workspace",
				"img", "bash", "-c", cmd},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.r.Argv(cmd, tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Argv =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestContainerArgvRefusals(t *testing.T) {
	home := canonTempDir(t)
	t.Setenv("HOME", home)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(canonTempDir(t), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	colon := filepath.Join(canonTempDir(t), "a:b")
	if err := os.Mkdir(colon, 0o700); err != nil {
		t.Fatal(err)
	}
	linkedGit := canonTempDir(t)
	if err := os.Symlink(canonTempDir(t), filepath.Join(linkedGit, ".git")); err != nil {
		t.Fatal(err)
	}
	fifoGit := canonTempDir(t) // a .git that is a fifo, where mkfifo(1) exists
	_ = exec.Command("mkfifo", filepath.Join(fifoGit, ".git")).Run()
	tests := []struct {
		name, backend, dir, want string
	}{
		{"no workDir", "docker", "", "no working directory"},
		{"relative", "docker", "rel/dir", "must be absolute"},
		{"root", "docker", "/", "refusing to mount /"},
		{"home", "docker", home, "home directory"},
		{"parent of home", "podman", filepath.Dir(home), "home directory"},
		{"server cwd", "docker", cwd, "current directory"},
		{"parent of server cwd", "docker", filepath.Dir(cwd), "current directory"},
		{"missing", "docker", filepath.Join(home, "nope"), "does not exist"},
		{"file", "docker", file, "not a directory"},
		{"colon", "docker", colon, "cannot be mounted"},
		{".git symlink", "docker", linkedGit, ".git is a symlink"},
		{".git fifo", "podman", fifoGit, ".git is neither a directory nor a file"},
		{"ssh backend", "ssh", canonTempDir(t), "cannot run bash"},
		{"empty backend", "", canonTempDir(t), "cannot run bash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dir == fifoGit {
				if _, err := os.Lstat(filepath.Join(fifoGit, ".git")); err != nil {
					t.Skip("no mkfifo here")
				}
			}
			r := ContainerRunner{Backend: tt.backend, UID: 1, GID: 1}
			argv, err := r.Argv("true", tt.dir)
			if err == nil {
				t.Fatalf("Argv accepted %q: %q", tt.dir, argv)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	// A subdirectory of $HOME is fine: only the home itself is refused.
	sub := filepath.Join(home, "project")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := (&ContainerRunner{Backend: "docker"}).Argv("true", sub); err != nil {
		t.Fatalf("subdirectory of home refused: %v", err)
	}
}

// standIn writes an executable named name into a new directory that is put
// first on PATH, and returns the directory. The script body gets $REC (a
// file path) substituted.
func standIn(t *testing.T, name, body string) (binDir, rec string) {
	t.Helper()
	binDir = canonTempDir(t)
	rec = filepath.Join(canonTempDir(t), "args")
	script := "#!/bin/sh\n" + strings.ReplaceAll(body, "$REC", rec) + "\n"
	if err := os.WriteFile(filepath.Join(binDir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return binDir, rec
}

// recordArgs is the stand-in line that saves its arguments, NUL-separated.
const recordArgs = `for a in "$@"; do printf '%s\0' "$a"; done >> $REC`

func readRecorded(t *testing.T, rec string) [][]string {
	t.Helper()
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatalf("stand-in was not run: %v", err)
	}
	// Each invocation starts with its subcommand; split on those.
	var calls [][]string
	for _, a := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		if a == "run" || a == "rm" {
			calls = append(calls, nil)
		}
		if len(calls) == 0 {
			t.Fatalf("recorded args do not start with a subcommand: %q", data)
		}
		calls[len(calls)-1] = append(calls[len(calls)-1], a)
	}
	return calls
}

var containerNameRE = regexp.MustCompile(`^garra-bash-[0-9a-f]{16}$`)

func TestContainerRunnerThroughStandIn(t *testing.T) {
	for _, backend := range []string{"docker", "podman"} {
		t.Run(backend, func(t *testing.T) {
			_, rec := standIn(t, backend, recordArgs+"\necho \"hello from the $1 stand-in\"\necho oops >&2\nexit 3")
			work := canonTempDir(t)
			r := &ContainerRunner{Backend: backend, Image: "img", PidsLimit: 10, UID: 1000, GID: 1000}
			out, code, err := r.Run(context.Background(), "echo hi", work)
			if err != nil {
				t.Fatal(err)
			}
			if code != 3 || out != "hello from the run stand-in\noops\n" {
				t.Fatalf("Run = %q, %d", out, code)
			}
			calls := readRecorded(t, rec)
			if len(calls) != 1 {
				t.Fatalf("stand-in called %d times: %q", len(calls), calls)
			}
			got := calls[0]
			// The recorded argv is Argv's, with the container's --name
			// inserted after "run --rm -i".
			want, err := r.Argv("echo hi", work)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want)+1 || got[3] != "--name" || !containerNameRE.MatchString(got[4]) {
				t.Fatalf("recorded %q, want Argv plus --name", got)
			}
			if !slices.Equal(append(got[:3:3], got[5:]...), want[1:]) {
				t.Fatalf("recorded %q\nwant (after the binary) %q", got, want)
			}
		})
	}
}

// The stand-in's environment is the allowlist plus the client's own
// variables: a secret in the server's environment does not reach it.
func TestContainerRunnerClientEnv(t *testing.T) {
	standIn(t, "docker", `echo "${GARRA_TEST_SECRET:-unset} ${DOCKER_HOST:-nohost}"`)
	t.Setenv("GARRA_TEST_SECRET", "hunter2")
	t.Setenv("DOCKER_HOST", "unix:///run/test.sock")
	out, _, err := (&ContainerRunner{Backend: "docker"}).Run(context.Background(), "true", canonTempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if out != "unset unix:///run/test.sock\n" {
		t.Fatalf("client saw %q", out)
	}
}

// A backend that cannot start the container (daemon down: exit 125) gives a
// refused command. Nothing runs on the host instead.
func TestContainerRunnerFailureIsRefusedNotHostFallback(t *testing.T) {
	standIn(t, "docker", recordArgs+"\necho 'docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 125")
	work := canonTempDir(t)
	marker := filepath.Join(work, "ran-on-host")

	r := &ContainerRunner{Backend: "docker"}
	out, _, err := r.Run(context.Background(), "touch ran-on-host", work)
	if !errors.Is(err, ErrSandboxUnavailable) || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
		t.Fatalf("Run = %q, %v; want ErrSandboxUnavailable naming the cause", out, err)
	}

	// Through the bash tool: a refused command, as a tool error.
	l := NewLocal(LocalOptions{WorkingDir: work, Bash: r})
	res, err := l.Call(context.Background(), ToolBash, json.RawMessage(`{"command":"touch ran-on-host"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.HasPrefix(res.Output, "refused: ") || !strings.Contains(res.Output, "sandbox unavailable") {
		t.Fatalf("bash tool = %+v, want a refused command", res)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command ran on the host: %v", err)
	}
}

func TestContainerRunnerMissingBinaryRefused(t *testing.T) {
	t.Setenv("PATH", canonTempDir(t)) // nothing in it
	_, _, err := NewContainerRunner("podman", "").Run(context.Background(), "true", canonTempDir(t))
	if !errors.Is(err, ErrSandboxUnavailable) || !strings.Contains(err.Error(), "podman is not installed") {
		t.Fatalf("err = %v", err)
	}
}

func TestContainerRunnerNoWorkDirRefused(t *testing.T) {
	_, rec := standIn(t, "docker", recordArgs)
	_, _, err := NewContainerRunner("docker", "").Run(context.Background(), "true", "")
	if !errors.Is(err, ErrNoWorkDir) {
		t.Fatalf("err = %v, want ErrNoWorkDir", err)
	}
	if _, err := os.Stat(rec); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the backend was invoked without a working directory")
	}

	// The bash tool passes "" when the call had no working_dir, even when
	// the jail has roots: the container never gets a default mount.
	l := NewLocal(LocalOptions{Jail: newJail(t, canonTempDir(t)), Bash: NewContainerRunner("docker", "")})
	res, err := l.Call(context.Background(), ToolBash, json.RawMessage(`{"command":"ls"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Output, "no working directory") {
		t.Fatalf("bash without working_dir = %+v", res)
	}
}

// On timeout the client is killed and the container removed by name.
func TestContainerRunnerTimeoutRemovesContainer(t *testing.T) {
	_, rec := standIn(t, "docker", recordArgs+"\n[ \"$1\" = rm ] && exit 0\nexec sleep 30")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := (&ContainerRunner{Backend: "docker"}).Run(ctx, "sleep 100", canonTempDir(t))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run took %v after a 300ms timeout", d)
	}
	calls := readRecorded(t, rec)
	if len(calls) != 2 || calls[1][0] != "rm" || calls[1][1] != "-f" || calls[1][2] != calls[0][4] {
		t.Fatalf("calls = %q, want run then rm -f <name>", calls)
	}
}

// miniDocker is a stand-in docker that honours the -v mounts of its argv:
// in a private mount namespace it bind-mounts every source after the first
// onto itself, read-only where the mount says ":ro", in order, and runs
// the command with bash in the first source (which the container sees as
// /workspace). It needs root and unshare.
const miniDocker = recordArgs + `
[ "$1" = run ] || exit 0
ws= mounts= cmd=
while [ $# -gt 0 ]; do
	case "$1" in
	-v) src=${2%%:*}; if [ -z "$ws" ]; then ws=$src; else mounts="$mounts $src:${2##*:}"; fi; shift 2;;
	-c) cmd=$2; shift 2;;
	*) shift;;
	esac
done
exec unshare -m sh -c 'ws=$1 cmd=$2; shift 2
for m do d=${m%:*}; mount --bind "$d" "$d" || exit 125
	[ "${m##*:}" = ro ] && { mount -o remount,bind,ro "$d" || exit 125; }; done
cd "$ws" && exec bash -c "$cmd"' sh "$ws" "$cmd" $mounts`

// Through the container runner, a command can write the working directory
// and commit, but not change what git runs or reads as config: no hook,
// no config, no .git put in the place of this one.
func TestContainerRunnerGitIsReadOnly(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the mount-honouring stand-in needs root")
	}
	if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
		t.Skipf("unshare -m: %v", err)
	}
	_, rec := standIn(t, "docker", miniDocker)
	work := canonTempDir(t)
	if out, err := exec.Command("git", "init", "-q", work).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	r := &ContainerRunner{Backend: "docker", UID: 0, GID: 0}
	const readOnly, busy = "Read-only file system", "Device or resource busy" // busy: a mount point does not move
	out, code, err := r.Run(context.Background(), "echo ok > made.txt && cat made.txt && "+
		"git add made.txt && git -c user.name=T -c user.email=t@example.invalid commit -qm made && git log --format=%s", work)
	if err != nil || code != 0 || out != "ok\nmade\n" {
		t.Fatalf("write and commit in the working directory: %q, %d, %v", out, code, err)
	}
	for _, plant := range []struct{ cmd, refusal string }{
		{`printf '#!/bin/sh\ntouch pwned\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, readOnly},
		{`printf '[core]\n\tfsmonitor = touch pwned\n' >> .git/config`, readOnly},
		{`printf '[alias]\n\tst = !touch pwned\n' >> .git/config`, readOnly},
		{`git config --local core.fsmonitor 'touch pwned'`, busy},
		{`cp /etc/hostname .git/info/attributes`, readOnly},
		{`rm -rf .git`, readOnly},
		{`mv .git gone`, busy},
	} {
		out, code, err = r.Run(context.Background(), plant.cmd, work)
		if err != nil || code == 0 || !strings.Contains(out, plant.refusal) {
			t.Errorf("%s: Run = %q, %d, %v; want %q", plant.cmd, out, code, err, plant.refusal)
		}
	}
	if _, err := os.Stat(filepath.Join(work, ".git", "hooks", "pre-commit")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a hook was planted: %v", err)
	}
	if cfg, _ := os.ReadFile(filepath.Join(work, ".git", "config")); strings.Contains(string(cfg), "pwned") {
		t.Errorf(".git/config was changed:\n%s", cfg)
	}
	// The stand-in ran exactly what Argv builds (plus --name).
	calls := readRecorded(t, rec)
	if got := calls[len(calls)-1]; !slices.Contains(got, work+"/.git:/workspace/.git:rw") || !slices.Contains(got, work+"/.git/config:/workspace/.git/config:ro") {
		t.Fatalf("recorded argv lacks the .git mounts: %q", got)
	}
}
