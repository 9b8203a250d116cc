// Package jail confines the agent's file tools (file_read, file_write) to a
// set of directories chosen by the operator.
//
// # Why it exists
//
// The garra_agent MCP tool lets a model pick file paths. The model's input may
// carry text an attacker controls (a fetched web page, a file in the repository,
// a tool result). Without a boundary, file_read returns ~/.ssh/id_ed25519 and
// file_write overwrites ~/.bashrc or a planted .git/config. Since #1244 the file
// tools are confined to the roots in GARRAIA_MCP_ALLOWED_DIRS (or, without it,
// agent.file_roots plus the server's working directory). This package is that
// boundary. It does not confine the process: bash is a separate question (see
// the mcp-server spec).
//
// # How it works
//
// Each root is resolved once (absolute, symlinks evaluated) and opened as an
// [os.Root] directory handle. Every operation chooses a root by a lexical
// check on the cleaned path and then opens the rest of the path relative to
// that handle. os.Root walks the path one component at a time without
// following a symlink blindly, so a symlink that leaves the root — whether it
// was there before the call or swapped in while the call runs — makes the
// operation fail. No path is ever checked by name and then opened by name.
//
// # Policy
//
//   - Fail-closed: roots that do not resolve to an existing directory are
//     dropped; a Jail with no roots denies every path. A nil *Jail denies too.
//   - Absolute paths go to the root whose name is the longest lexical prefix
//     of the cleaned path (a root is known by its resolved path and by its
//     absolute path as configured). The comparison is byte for byte, so on a
//     case-insensitive filesystem a differently cased spelling of a root is
//     denied. Relative paths go to the first root, or, after [Jail.Narrow],
//     to the working directory, which then is the only root.
//   - A path may reach another part of its own root through a symlink, but a
//     symlink never leads out of the root the path started in, not even into
//     another root. Absolute symlinks are refused (os.Root semantics), even
//     when they point back inside the root.
//   - Every refusal is the single value [ErrDenied]: same sentence, no path,
//     no root. A missing file outside the roots and an existing one give
//     byte-identical errors, and so do symlinks that point at either.
//   - Inside a root, ordinary failures are reported as *fs.PathError values
//     whose Path is the path relative to the root (never the host path), for
//     example "open notes/todo.txt: file does not exist". They match
//     fs.ErrNotExist, fs.ErrPermission, [ErrIsDir], [ErrNotDir],
//     [ErrNotRegular] and [ErrTooLarge] with errors.Is. Any failure that is
//     not one of those while resolving a path (including a symlink loop, an
//     over-long path or a closed Jail) is reported as ErrDenied.
//   - Paths that are empty or contain NUL are denied.
//   - file_write refuses any path with a .git component, anywhere: in the
//     path as given, in the target of any symlink it follows, and in the root
//     itself (a working_dir inside a .git directory cannot be written to).
//     The comparison is deliberately wider than ".git": it ignores case and
//     the code points HFS+ ignores, strips trailing dots and spaces, and
//     refuses "git~1" and ".git:stream", which all name the .git directory on
//     macOS or Windows filesystems. Refusing ".GIT" on Linux costs nothing.
//     Reads of .git are allowed.
//   - Writes are atomic: a temporary file is created beside the target (same
//     directory handle), written, fsynced, closed and renamed over the target,
//     and removed if any step fails (only a crash of the process can leave a
//     ".garra-write-*.tmp" file behind, never a half-written target).
//     Missing parent directories are created (and stay if the write fails).
//     An existing file keeps its permission bits; owner, ACLs, extended
//     attributes and hard links are not carried over. Writing to a symlink
//     writes to the file it points at (inside the root), and the link stays.
//     On request ([WriteOptions].Backup) the replaced contents are first
//     copied, just as atomically, to "<name>.bak" beside the file.
//   - Reads refuse anything that is not a regular file (FIFOs, devices) and
//     open with O_NONBLOCK on Unix, so a FIFO cannot hang the call.
//
// A Jail is safe for concurrent use. It holds directory handles; call
// [Jail.Close] when done (a Jail from Narrow in particular is per call).
package jail

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// EnvAllowedDirs names the environment variable holding the comma-separated
// roots for the file tools.
const EnvAllowedDirs = "GARRAIA_MCP_ALLOWED_DIRS"

// DefaultMaxReadBytes is the read limit ReadFile applies when given a
// maxBytes that is not positive.
const DefaultMaxReadBytes int64 = 1 << 20

var (
	// ErrDenied is the one refusal. It names neither the path nor the root,
	// so refusals cannot be used to probe the host filesystem.
	ErrDenied = errors.New("path is outside the allowed directories")

	// ErrInvalidWorkingDir is returned by Narrow for any working_dir that is
	// not an existing directory inside the roots. Callers map it to
	// JSON-RPC invalid_params.
	ErrInvalidWorkingDir = errors.New("working_dir must be an existing directory inside the allowed directories")

	// ErrTooLarge is wrapped by ReadFile when the file exceeds the limit.
	ErrTooLarge = errors.New("file exceeds the read size limit")

	// ErrIsDir is wrapped when a file operation names a directory.
	ErrIsDir = errors.New("is a directory")

	// ErrNotDir is wrapped when a path goes through a file as if it were a
	// directory.
	ErrNotDir = errors.New("not a directory")

	// ErrNotRegular is wrapped when a path names something other than a
	// regular file or directory (a FIFO, socket or device).
	ErrNotRegular = errors.New("not a regular file")
)

// Jail confines file operations to a set of root directories.
// The zero value and a nil *Jail deny every path.
type Jail struct {
	roots []*root
}

type root struct {
	h *os.Root
	// path is the resolved absolute path, as reported by Roots.
	path string
	// names are the absolute spellings accepted for this root when
	// matching absolute paths: path first, then the spelling as configured.
	names []string
	// noWrite is set when the root itself lies inside a .git directory.
	noWrite bool
}

// New resolves each root (absolute, then symlinks evaluated) and opens it.
// Empty entries, entries containing NUL and entries that do not resolve to
// an existing directory are dropped; duplicates are merged. A Jail built from
// no usable root denies every path. Relative roots resolve against the
// process working directory.
func New(roots []string) *Jail {
	j := &Jail{}
	for _, p := range roots {
		p = strings.TrimSpace(p)
		if p == "" || strings.IndexByte(p, 0) >= 0 {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		resolved, err := filepath.EvalSymlinks(abs)
		if err != nil {
			continue
		}
		if i := slices.IndexFunc(j.roots, func(r *root) bool { return r.path == resolved }); i >= 0 {
			r := j.roots[i]
			if !slices.Contains(r.names, abs) {
				r.names = append(r.names, abs)
			}
			r.noWrite = r.noWrite || pathHasGit(abs)
			continue
		}
		h, err := os.OpenRoot(resolved)
		if err != nil {
			continue
		}
		names := []string{resolved}
		if abs != resolved {
			names = append(names, abs)
		}
		j.roots = append(j.roots, &root{
			h:       h,
			path:    resolved,
			names:   names,
			noWrite: pathHasGit(resolved) || pathHasGit(abs),
		})
	}
	return j
}

// RootsFromEnv returns the configured roots: the comma-separated entries of
// GARRAIA_MCP_ALLOWED_DIRS when it is set and not blank, otherwise fileRoots
// followed by cwd. Entries are trimmed and empty entries skipped; relative
// entries are joined to cwd when cwd is absolute. When the variable is set
// but holds no entry (", ,") the result is empty, which denies everything:
// an operator who set the variable meant to restrict, so there is no fallback
// to the wider default. "~" is not expanded.
func RootsFromEnv(getenv func(string) string, fileRoots []string, cwd string) []string {
	cwd = strings.TrimSpace(cwd)
	var out []string
	add := func(e string) {
		e = strings.TrimSpace(e)
		if e == "" {
			return
		}
		if !filepath.IsAbs(e) && filepath.IsAbs(cwd) {
			e = filepath.Join(cwd, e)
		}
		out = append(out, e)
	}
	if getenv != nil {
		if v := getenv(EnvAllowedDirs); strings.TrimSpace(v) != "" {
			for e := range strings.SplitSeq(v, ",") {
				add(e)
			}
			return out
		}
	}
	for _, e := range fileRoots {
		add(e)
	}
	add(cwd)
	return out
}

// Roots returns the resolved absolute paths of the roots, in order.
func (j *Jail) Roots() []string {
	if j == nil {
		return nil
	}
	out := make([]string, len(j.roots))
	for i, r := range j.roots {
		out[i] = r.path
	}
	return out
}

// Close releases the directory handles. Operations on a closed Jail are
// denied.
func (j *Jail) Close() error {
	if j == nil {
		return nil
	}
	var errs []error
	for _, r := range j.roots {
		errs = append(errs, r.h.Close())
	}
	return errors.Join(errs...)
}

// Narrow returns a Jail whose only root is workingDir, which must be an
// existing directory inside j (a relative workingDir resolves like any
// relative path: against j's first root). Relative paths given to the
// returned Jail resolve against workingDir, and paths elsewhere in j — or in
// j's other roots — are denied. Every failure is ErrInvalidWorkingDir. The
// returned Jail has its own handle; the caller closes it.
func (j *Jail) Narrow(workingDir string) (*Jail, error) {
	r, rel, ok := j.locate(workingDir)
	if !ok {
		return nil, ErrInvalidWorkingDir
	}
	sub, err := r.h.OpenRoot(rel)
	if err != nil {
		return nil, ErrInvalidWorkingDir
	}
	nr, err := narrowRoot(r, rel, sub)
	if err != nil {
		_ = sub.Close()
		return nil, ErrInvalidWorkingDir
	}
	return &Jail{roots: []*root{nr}}, nil
}

// narrowRoot names the directory behind sub. The handle is authoritative;
// the name is computed by path and accepted only if it still denotes the
// same directory, inside r.
func narrowRoot(r *root, rel string, sub *os.Root) (*root, error) {
	sfi, err := sub.Stat(".")
	if err != nil || !sfi.IsDir() {
		return nil, ErrInvalidWorkingDir
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(r.path, rel))
	if err != nil {
		return nil, err
	}
	if _, ok := within(r.path, resolved); !ok {
		return nil, ErrInvalidWorkingDir
	}
	rfi, err := os.Stat(resolved)
	if err != nil || !os.SameFile(rfi, sfi) {
		return nil, ErrInvalidWorkingDir
	}
	names := []string{resolved}
	for _, n := range r.names {
		if a := filepath.Join(n, rel); !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	noWrite := r.noWrite || hasGitComponent(rel)
	for _, n := range names {
		noWrite = noWrite || pathHasGit(n)
	}
	return &root{h: sub, path: resolved, names: names, noWrite: noWrite}, nil
}

// locate picks the root for p and returns p relative to it, cleaned. The
// relative path never starts with "..". It touches no filesystem.
func (j *Jail) locate(p string) (*root, string, bool) {
	if j == nil || len(j.roots) == 0 || p == "" || strings.IndexByte(p, 0) >= 0 {
		return nil, "", false
	}
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		var best *root
		var bestRel string
		bestLen := -1
		for _, r := range j.roots {
			for _, n := range r.names {
				if rel, ok := within(n, c); ok && len(n) > bestLen {
					best, bestRel, bestLen = r, rel, len(n)
				}
			}
		}
		return best, bestRel, best != nil
	}
	// Volume-relative ("C:x") and rooted ("\x") paths on Windows are neither
	// absolute nor relative to the root.
	if filepath.VolumeName(p) != "" || os.IsPathSeparator(p[0]) {
		return nil, "", false
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return nil, "", false
	}
	return j.roots[0], c, true
}

// within reports whether the clean absolute path p is dir or below it, and
// returns p relative to dir.
func within(dir, p string) (string, bool) {
	if p == dir {
		return ".", true
	}
	prefix := dir
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if strings.HasPrefix(p, prefix) {
		return p[len(prefix):], true
	}
	return "", false
}

// display is the root-relative path used in error messages.
func display(rel string) string {
	return filepath.ToSlash(rel)
}

// cause strips the wrappers the os package puts around an errno, including
// the host path they carry.
func cause(err error) error {
	for {
		var pe *fs.PathError
		var le *os.LinkError
		var se *os.SyscallError
		switch {
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		case errors.As(err, &se):
			err = se.Err
		default:
			return err
		}
	}
}

// resolveErr reports a failure met while resolving a path in a root. Only
// failures known to be ordinary inside the root are reported as such;
// everything else (an escape, a loop, a closed handle) is ErrDenied.
func resolveErr(op, disp string, err error) error {
	e := cause(err)
	var kind error
	switch {
	case errors.Is(e, fs.ErrNotExist):
		kind = fs.ErrNotExist
	case errors.Is(e, fs.ErrPermission):
		kind = fs.ErrPermission
	case errors.Is(e, syscall.ENOTDIR):
		kind = ErrNotDir
	case errors.Is(e, syscall.EISDIR):
		kind = ErrIsDir
	default:
		return ErrDenied
	}
	return &fs.PathError{Op: op, Path: disp, Err: kind}
}

// ioErr reports a failure on an already opened file or directory handle.
// The errno is kept; the host path the os package attached is not.
func ioErr(op, disp string, err error) error {
	return &fs.PathError{Op: op, Path: disp, Err: cause(err)}
}
