package hands

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/procguard"
	"github.com/garraia/garra/internal/tools"
)

// ErrUnconfined is bash's refusal under agent.confinement: required on a
// kernel that offers no Landlock. It starts with its stable kind.
var ErrUnconfined = errors.New(string(errkinds.ConfinementUnavailable) +
	": agent.confinement is required and this kernel offers no Landlock (too old, or not enabled at boot: add landlock to the lsm= boot parameter), so bash does not run")

// Role is the process whose bash is confined: it picks the default of
// agent.confinement.
type Role int

// Roles.
const (
	// RoleLaptop is `garra mcp-server`: best-effort by default, with a
	// warning when bash would run unconfined.
	RoleLaptop Role = iota
	// RoleGateway is the gateway's local workspaces: required by default
	// as soon as more than one orchestrator has one, since one tenant's
	// bash then shares the host with another's files.
	RoleGateway
	// RoleSandbox is the sandbox pod, where the pod is the boundary and
	// Landlock a second layer: best-effort by default.
	RoleSandbox
)

// ConfineOptions say where the process stands.
type ConfineOptions struct {
	Role Role
	// ConfigPath is the file the configuration was read from ("": none);
	// it and its directory are hidden.
	ConfigPath string
	// Hide are more paths no call may reach (the sandbox's token file).
	Hide []string
	// Read and Write are more paths every call may read, and write (the
	// sandbox pod's own home, where toolchains are installed).
	Read, Write []string
	// ABI is the kernel's Landlock ABI; nil asks the kernel
	// (procguard.LandlockABI). Tests force one.
	ABI func() int
	// Home is the user's home directory; "" asks the OS.
	Home string
	// TempDir is where each call's private temporary directory is made;
	// "" is os.TempDir().
	TempDir string
	// Namespaces says whether calls can have namespaces of their own (nil)
	// or why not; nil asks the kernel (procguard.NamespacesAvailable).
	// Tests force an answer.
	Namespaces func() error
}

// systemRead are the paths every call may read and execute: the programs,
// their libraries and configuration, and the kernel's views of the process.
// None holds a user's files; a path of garra's beneath one (a config under
// /etc) is cut out of it (see grants).
var systemRead = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
	"/proc", "/sys", "/dev/random", "/dev/urandom", "/run/systemd/resolve",
}

// systemWrite are the device files every call may write.
var systemWrite = []string{"/dev/null", "/dev/zero", "/dev/full"}

// homeRead are files under the home directory that tools read on every run
// and hold no credential: without git's own configuration every git
// command fails, since git treats an unreadable one as fatal.
var homeRead = []string{".gitconfig", ".config/git"}

// credentialStores are the user's credential stores under the home
// directory. The home is never granted as such, so they matter where a
// granted path covers them (a workspace that is the home): they are cut
// out of it unless agent.expose names them.
var credentialStores = []string{
	".ssh", ".aws", ".config/gcloud", ".kube", ".docker", ".netrc", ".git-credentials",
	".config/git/credentials", ".config/gh", ".gnupg", ".password-store", ".azure",
	".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
	".config/hub", ".terraform.d", ".local/share/keyrings",
}

// Confinement is the kernel confinement of host bash: a tools.Confiner
// that puts each call in a Landlock domain of its own, which may write only
// the call's workspace and a private temporary directory, read the system
// paths, and reach nothing of garra's (its config, data and credential
// files), no other workspace and none of the user's credential stores.
type Confinement struct {
	mode, modeWhy string
	abi           int
	noConnect     bool
	read, write   []string
	hidden        []string
	// configDir is hidden too, except from a call whose workspace it is
	// (a config file kept in the project): then the file alone is.
	configDir string
	tempDir   string
	// nsOff is why calls get no namespaces of their own; "" when they do.
	nsOff string
}

var _ tools.Confiner = (*Confinement)(nil)

// NewConfinement is the confinement cfg asks for in o's role.
func NewConfinement(cfg *config.Config, o ConfineOptions) *Confinement {
	c := &Confinement{tempDir: o.TempDir, noConnect: cfg.Agent.Egress == config.EgressNone}
	c.mode, c.modeWhy = mode(cfg, o.Role)
	if o.ABI == nil {
		o.ABI = procguard.LandlockABI
	}
	c.abi = o.ABI()
	if o.Namespaces == nil {
		o.Namespaces = procguard.NamespacesAvailable
	}
	switch err := o.Namespaces(); {
	case err != nil:
		c.nsOff = "unprivileged user namespaces unavailable: " + err.Error()
	case c.abi == 0 && os.Getuid() == 0:
		// Root keeps its capabilities in its own namespaces and, with
		// no Landlock to forbid mount changes, could undo them.
		c.nsOff = "running as root without Landlock"
	}
	if c.tempDir == "" {
		c.tempDir = os.TempDir()
	}
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	exposed := cfg.ExposedPaths()
	c.read = append(append(append([]string{}, systemRead...), exposed...), o.Read...)
	c.write = append(append([]string{}, systemWrite...), o.Write...)
	var hidden []string
	if o.ConfigPath != "" {
		hidden = append(hidden, o.ConfigPath)
		c.configDir = absClean(filepath.Dir(o.ConfigPath))
	}
	hidden = append(append(hidden, cfg.PrivatePaths()...), o.Hide...)
	if home != "" {
		for _, p := range homeRead {
			c.read = append(c.read, filepath.Join(home, p))
		}
		for _, p := range credentialStores {
			hidden = append(hidden, filepath.Join(home, p))
		}
	}
	for _, h := range hidden {
		h = absClean(h)
		if h == "" || slices.Contains(exposed, h) {
			continue
		}
		c.hidden = append(c.hidden, h)
		// Landlock grants what a path resolves to: a hidden symlink
		// (a Secret volume's file) is hidden where it points, too.
		if r, err := filepath.EvalSymlinks(h); err == nil && r != h {
			c.hidden = append(c.hidden, r)
		}
	}
	return c
}

// mode is agent.confinement, or the role's default, with why.
func mode(cfg *config.Config, role Role) (string, string) {
	if m := cfg.Agent.Confinement; m != "" {
		return m, "agent.confinement"
	}
	if role == RoleGateway && cfg.LocalWorkspaces() > 1 {
		return config.ConfinementRequired, "default: local workspaces of more than one orchestrator"
	}
	return config.ConfinementBestEffort, "default"
}

// Required says whether bash is refused where it cannot be confined.
func (c *Confinement) Required() bool { return c.mode == config.ConfinementRequired }

// Refuses says whether every host bash call is refused: required, and no
// Landlock here.
func (c *Confinement) Refuses() bool { return c.abi == 0 && c.Required() }

// String names the confinement in force, for the startup log and
// `garra config check`.
func (c *Confinement) String() string {
	if c.abi == 0 {
		if c.Required() {
			return fmt.Sprintf("none: this kernel offers no Landlock, so host bash is refused (%s, %s)", c.mode, c.modeWhy)
		}
		return fmt.Sprintf("no Landlock on this kernel, so host bash runs without file confinement; %s (%s, %s)", c.namespaces(), c.mode, c.modeWhy)
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("landlock ABI %d: files", c.abi))
	switch {
	case !c.noConnect:
		parts = append(parts, "egress internet")
	case c.abi >= 4:
		parts = append(parts, "egress none (TCP connect denied)")
	default:
		parts = append(parts, "egress none NOT enforced (TCP needs ABI 4)")
	}
	if c.abi >= 6 {
		parts = append(parts, "signals and abstract sockets scoped")
	} else {
		parts = append(parts, "signals and abstract sockets NOT scoped (ABI 6)")
	}
	parts = append(parts, c.namespaces())
	return fmt.Sprintf("%s (%s, %s)", strings.Join(parts, ", "), c.mode, c.modeWhy)
}

// namespaces names the namespaces each call gets, or why none.
func (c *Confinement) namespaces() string {
	if c.nsOff != "" {
		return "no namespaces (" + c.nsOff + "; .git config and hooks stay writable)"
	}
	ns := "namespaces: user, mount (.git config, hooks and info read-only), pid"
	if c.noConnect {
		ns += ", net (egress none)"
	}
	return ns
}

// NetworkBounded implements tools.NetworkBounder: with egress none, each
// call is kept off the network by the kernel where no rule of the shell
// gate is needed for it. That takes Landlock denying TCP connects (ABI 4)
// and either the call's own empty network namespace or Landlock denying
// UDP sends too (ABI 10), and Landlock's file rules, which keep a push to
// a path outside the workspace from writing there.
func (c *Confinement) NetworkBounded() bool {
	return c.noConnect && c.abi >= 4 && (c.nsOff == "" || c.abi >= 10)
}

// Warning is what the startup log warns about: bash running where the
// kernel cannot confine it; "" when nothing is amiss.
func (c *Confinement) Warning() string {
	if c.abi == 0 && !c.Required() {
		return "host bash runs unconfined: this kernel offers no Landlock (agent.confinement: best-effort); its children may read and write whatever garra's user may"
	}
	return ""
}

// Confine implements tools.Confiner: the domain of one call in dir, with
// its private TMPDIR, or ErrUnconfined.
func (c *Confinement) Confine(dir string) (tools.Confinement, error) {
	if c.abi == 0 && c.Required() {
		return tools.Confinement{}, ErrUnconfined
	}
	var ns *procguard.Namespaces
	if c.nsOff == "" {
		split, err := tools.SplitGit(dir)
		if err != nil {
			return tools.Confinement{}, err
		}
		ns = &procguard.Namespaces{ReadOnly: split.ReadOnly, Net: c.noConnect}
		if split.Pin != "" {
			ns.Pin = []string{split.Pin}
		}
	}
	if c.abi == 0 {
		return tools.Confinement{Namespaces: ns}, nil
	}
	tmp, err := os.MkdirTemp(c.tempDir, "garra-bash-")
	if err != nil {
		return tools.Confinement{}, fmt.Errorf("cannot make the call's temporary directory: %w", errors.Unwrap(err))
	}
	release := func() { _ = os.RemoveAll(tmp) }
	dir = absClean(dir)
	hidden := c.hidden
	if c.configDir != "" && c.configDir != dir {
		hidden = append(slices.Clip(hidden), c.configDir)
	}
	write := grants(append(append([]string{}, c.write...), dir), hidden)
	return tools.Confinement{
		Landlock: &procguard.Landlock{
			ABI:       c.abi,
			Read:      grants(c.read, hidden),
			Write:     append(write, tmp),
			NoConnect: c.noConnect,
		},
		Namespaces: ns,
		Env:        []string{"TMPDIR=" + tmp},
		Release:    release,
	}, nil
}

// grants are roots less hidden: a root with a hidden path beneath it is
// replaced by its entries, except the one on the way to the hidden path,
// which is split in turn; a root that is itself hidden is dropped. A split
// directory has no rule of its own, so nothing new can be made in it, and
// an entry that is a symbolic link into hidden ground is left out (Landlock
// would grant its target).
func grants(roots, hidden []string) []string {
	var out []string
	for _, r := range roots {
		out = append(out, grantBelow(r, hidden, 0)...)
	}
	return out
}

// maxSplitDepth bounds how deep grants descends; below it a root with a
// hidden path beneath is dropped whole.
const maxSplitDepth = 16

func grantBelow(root string, hidden []string, depth int) []string {
	if root == "" || slices.Contains(hidden, root) {
		return nil
	}
	if r, err := filepath.EvalSymlinks(root); err == nil && r != root {
		if slices.ContainsFunc(hidden, func(h string) bool { return r == h || within(r, h) || within(h, r) }) {
			return nil
		}
	}
	if !slices.ContainsFunc(hidden, func(h string) bool { return within(h, root) }) {
		return []string{root}
	}
	entries, err := os.ReadDir(root)
	if err != nil || depth >= maxSplitDepth {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, grantBelow(filepath.Join(root, e.Name()), hidden, depth+1)...)
	}
	return out
}

// within says whether p is strictly beneath dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// absClean is p made absolute and clean; "" when it cannot be.
func absClean(p string) string {
	if p == "" {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return a
}

// LogConfinement says in log which confinement host bash runs under, and
// warns where it runs unconfined. Bash elsewhere (a container, nowhere) is
// named as such: Landlock applies to host bash only.
func LogConfinement(log *slog.Logger, exposure tools.BashExposure, c *Confinement) {
	if exposure.Where != tools.BashHost {
		log.Info("bash confinement", "bash", exposure.Where.String(), "confinement", "not host bash: Landlock does not apply")
		return
	}
	log.Info("bash confinement", "bash", "host", "confinement", c.String())
	if w := c.Warning(); w != "" {
		log.Warn("bash confinement", "warning", w, "fix", "run on a kernel with Landlock, or set agent.confinement: required to refuse bash instead")
	}
}
