package jail

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// maxSymlinkHops bounds the symlinks WriteFile follows (Linux MAXSYMLINKS).
const maxSymlinkHops = 40

// testHookBeforeRename, when set by a test, runs after the temporary file is
// written and closed and before it is renamed over the target. An error
// from it fails the write.
var testHookBeforeRename func() error

// testHookBeforeOpenDir, when set by a test, runs in WriteFile's walk after a
// directory component was checked with Lstat and before it is opened.
var testHookBeforeOpenDir func(name string)

// Stat returns the FileInfo for path, following symlinks inside the root.
func (j *Jail) Stat(path string) (fs.FileInfo, error) {
	r, rel, ok := j.locate(path)
	if !ok {
		return nil, ErrDenied
	}
	fi, err := r.h.Stat(rel)
	if err != nil {
		return nil, resolveErr("stat", display(rel), err)
	}
	return fi, nil
}

// ReadFile returns the contents of the regular file at path. A file larger
// than maxBytes is refused with an error wrapping ErrTooLarge; a maxBytes
// that is not positive means DefaultMaxReadBytes.
func (j *Jail) ReadFile(path string, maxBytes int64) ([]byte, error) {
	r, rel, ok := j.locate(path)
	if !ok {
		return nil, ErrDenied
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxReadBytes
	}
	disp := display(rel)
	f, err := r.h.OpenFile(rel, readFlags, 0)
	if err != nil {
		return nil, resolveErr("open", disp, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, ioErr("stat", disp, err)
	}
	switch {
	case fi.IsDir():
		return nil, &fs.PathError{Op: "read", Path: disp, Err: ErrIsDir}
	case !fi.Mode().IsRegular():
		return nil, &fs.PathError{Op: "read", Path: disp, Err: ErrNotRegular}
	case fi.Size() > maxBytes:
		return nil, tooLarge(disp, maxBytes)
	}
	// The size may change under us; read at most one byte past the limit.
	var b bytes.Buffer
	b.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := b.ReadFrom(io.LimitReader(f, maxBytes+1)); err != nil {
		return nil, ioErr("read", disp, err)
	}
	if int64(b.Len()) > maxBytes {
		return nil, tooLarge(disp, maxBytes)
	}
	return b.Bytes(), nil
}

func tooLarge(disp string, maxBytes int64) error {
	return &fs.PathError{Op: "read", Path: disp, Err: fmt.Errorf("%w of %d bytes", ErrTooLarge, maxBytes)}
}

// WriteFile replaces the file at path with data, atomically: readers see
// the old contents or the new ones, never a mix, and a failed or interrupted
// write leaves the old file (and no temporary file) behind. Missing parent
// directories are created inside the root. Any path with a .git component,
// before or after following symlinks, is refused with ErrDenied.
func (j *Jail) WriteFile(path string, data []byte) error {
	return j.WriteFileWith(path, data, WriteOptions{})
}

// WriteOptions changes how WriteFileWith replaces an existing file.
type WriteOptions struct {
	// Backup keeps the contents of a file being replaced as "<name>.bak"
	// beside it. The backup is an independent copy, itself written to a
	// temporary file and renamed into place, so a reader of the .bak sees
	// the previous backup or the new one, never a mix. A new file gets no
	// backup; a backup that cannot be made fails the write (the caller
	// asked not to lose the old contents).
	Backup bool
}

// BackupSuffix is appended to a replaced file's name for its backup.
const BackupSuffix = ".bak"

// WriteFileWith is WriteFile with options.
func (j *Jail) WriteFileWith(path string, data []byte, o WriteOptions) error {
	r, rel, ok := j.locate(path)
	if !ok || r.noWrite || hasGitComponent(rel) {
		return ErrDenied
	}
	disp := display(rel)
	dir, base, existing, err := r.walkForWrite(rel, disp)
	if err != nil {
		return err
	}
	if dir != r.h {
		defer func() { _ = dir.Close() }()
	}
	if o.Backup && existing != nil {
		if err := backup(dir, base, existing, disp); err != nil {
			return err
		}
	}
	return atomicWrite(dir, base, existing, data, disp)
}

// errChanged reports a file replaced between the walk and the backup.
var errChanged = errors.New("the file changed while it was being backed up")

// backup copies base, the regular file existing describes, to
// base+BackupSuffix in dir, atomically (temporary file, fsync, rename). It
// copies rather than hard-links so that the backup shares no inode with
// anything the agent may later modify in place.
func backup(dir *os.Root, base string, existing fs.FileInfo, disp string) (err error) {
	src, err := dir.OpenFile(base, readFlags, 0)
	if err != nil {
		return ioErr("backup", disp, err)
	}
	defer func() { _ = src.Close() }()
	if fi, err := src.Stat(); err != nil || !os.SameFile(fi, existing) {
		return &fs.PathError{Op: "backup", Path: disp, Err: errChanged}
	}
	f, tmp, err := createTemp(dir, 0o600)
	if err != nil {
		return ioErr("backup", disp, err)
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = dir.Remove(tmp)
		}
	}()
	if err = f.Chmod(existing.Mode().Perm()); err != nil {
		return ioErr("backup", disp, err)
	}
	if _, err = io.Copy(f, src); err != nil {
		return ioErr("backup", disp, err)
	}
	if err = f.Sync(); err != nil {
		return ioErr("backup", disp, err)
	}
	closed = true
	if err = f.Close(); err != nil {
		return ioErr("backup", disp, err)
	}
	if err = dir.Rename(tmp, base+BackupSuffix); err != nil {
		return ioErr("backup", disp, err)
	}
	return nil
}

// createTemp creates an unguessable temporary file in dir (nobody can plant
// it first) with perm, umask applied.
func createTemp(dir *os.Root, perm fs.FileMode) (*os.File, string, error) {
	for try := 0; ; try++ {
		tmp := ".garra-write-" + rand.Text() + ".tmp"
		f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			return f, tmp, nil
		}
		if !errors.Is(err, fs.ErrExist) || try == 9 {
			return nil, "", err
		}
	}
}

// walkForWrite resolves rel to an open directory handle and a final name in
// it, one component at a time. os.Root would do the confinement on its own;
// the walk is here so that every name reached — including those a symlink
// leads to — can be checked for .git, and so that the temporary file and
// the rename use one directory handle that cannot move under the write.
//
// Each directory is checked by Lstat and then opened; the handle is kept
// only if it is the same directory the check saw, so a component swapped
// for a symlink in between is caught. The returned handle is r.h or a new
// handle the caller closes. existing is the Lstat of the final name when it
// is a regular file, nil when it does not exist.
func (r *root) walkForWrite(rel, disp string) (dir *os.Root, base string, existing fs.FileInfo, err error) {
	stack := []*os.Root{r.h}
	defer func() {
		keep := 0
		if err == nil {
			keep = len(stack) - 1
		}
		for i := 1; i < len(stack); i++ {
			if i != keep {
				_ = stack[i].Close()
			}
		}
	}()
	pending := splitPath(rel)
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		cur := stack[len(stack)-1]
		switch c {
		case ".":
			continue
		case "..":
			if len(stack) == 1 {
				return nil, "", nil, ErrDenied
			}
			_ = stack[len(stack)-1].Close()
			stack = stack[:len(stack)-1]
			continue
		}
		if isGitName(c) {
			return nil, "", nil, ErrDenied
		}
		last := len(pending) == 0
		fi, err := cur.Lstat(c)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, "", nil, resolveErr("open", disp, err)
			}
			if last {
				return cur, c, nil, nil
			}
			// A directory to create. Not when a ".." from a symlink
			// target follows: the kernel would not create it either.
			if slices.Contains(pending, "..") {
				return nil, "", nil, resolveErr("open", disp, err)
			}
			if err := cur.Mkdir(c, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, "", nil, resolveErr("mkdir", disp, err)
			}
			if fi, err = cur.Lstat(c); err != nil {
				return nil, "", nil, resolveErr("open", disp, err)
			}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			hops++
			if hops > maxSymlinkHops {
				return nil, "", nil, ErrDenied
			}
			target, err := cur.Readlink(c)
			if err != nil || !relativeLink(target) || hasGitComponent(target) {
				return nil, "", nil, ErrDenied
			}
			pending = append(splitPath(target), pending...)
			continue
		}
		if last {
			switch {
			case fi.IsDir():
				return nil, "", nil, &fs.PathError{Op: "write", Path: disp, Err: ErrIsDir}
			case !fi.Mode().IsRegular():
				return nil, "", nil, &fs.PathError{Op: "write", Path: disp, Err: ErrNotRegular}
			}
			return cur, c, fi, nil
		}
		if !fi.IsDir() {
			return nil, "", nil, &fs.PathError{Op: "open", Path: disp, Err: ErrNotDir}
		}
		if testHookBeforeOpenDir != nil {
			testHookBeforeOpenDir(c)
		}
		sub, err := cur.OpenRoot(c)
		if err != nil {
			return nil, "", nil, resolveErr("open", disp, err)
		}
		sfi, err := sub.Stat(".")
		if err != nil || !os.SameFile(fi, sfi) {
			_ = sub.Close()
			return nil, "", nil, ErrDenied
		}
		stack = append(stack, sub)
	}
	// The path ended on a directory: the root itself, or a symlink to one.
	return nil, "", nil, &fs.PathError{Op: "write", Path: disp, Err: ErrIsDir}
}

// relativeLink reports whether a symlink target is relative to the
// directory holding the link. Absolute, volume-relative and rooted targets
// are refused, as os.Root refuses them.
func relativeLink(target string) bool {
	return target != "" && !filepath.IsAbs(target) &&
		filepath.VolumeName(target) == "" && !os.IsPathSeparator(target[0])
}

// atomicWrite writes data to a new temporary file in dir and renames it over
// base. The temporary file is removed on any failure.
func atomicWrite(dir *os.Root, base string, existing fs.FileInfo, data []byte, disp string) (err error) {
	perm := fs.FileMode(0o666) // umask applies, as for any new file
	if existing != nil {
		perm = 0o600 // widened to the old mode below, after creation
	}
	f, tmp, err := createTemp(dir, perm)
	if err != nil {
		return ioErr("create", disp, err)
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = dir.Remove(tmp)
		}
	}()
	if existing != nil {
		if err = f.Chmod(existing.Mode().Perm()); err != nil {
			return ioErr("chmod", disp, err)
		}
	}
	if _, err = f.Write(data); err != nil {
		return ioErr("write", disp, err)
	}
	if err = f.Sync(); err != nil {
		return ioErr("sync", disp, err)
	}
	closed = true
	if err = f.Close(); err != nil {
		return ioErr("close", disp, err)
	}
	if testHookBeforeRename != nil {
		if err = testHookBeforeRename(); err != nil {
			return ioErr("rename", disp, err)
		}
	}
	if err = dir.Rename(tmp, base); err != nil {
		return ioErr("rename", disp, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes the rename durable where the platform allows fsync on a
// directory. Failure is ignored: the data is already safe in the file.
func syncDir(dir *os.Root) {
	d, err := dir.Open(".")
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
