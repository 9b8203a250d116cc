package jail

import (
	"path/filepath"
	"strings"
)

// isGitName reports whether one path component names a .git entry on some
// filesystem git runs on. Besides ".git" itself it catches the spellings
// that reach the same directory on case-insensitive or normalising
// filesystems: any case (".GIT"), HFS+ ignorable code points (".g\u200cit"),
// Win32 trailing dots and spaces (".git. "), NTFS streams (".git::$DATA")
// and the 8.3 short name ("GIT~1"). Git's own is_hfs_dotgit and
// is_ntfs_dotgit make the same comparison.
func isGitName(name string) bool {
	if !strings.ContainsAny(name, "gG") {
		return false
	}
	name = strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, name)
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimRight(name, ". ")
	return strings.EqualFold(name, ".git") || strings.EqualFold(name, "git~1")
}

// hfsIgnorable reports the code points HFS+ drops when comparing names.
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, // zero-width non-joiner .. right-to-left mark
		r >= 0x202a && r <= 0x202e, // bidi embedding and override
		r >= 0x206a && r <= 0x206f, // deprecated format characters
		r == 0xfeff:                // zero-width no-break space
		return true
	}
	return false
}

// hasGitComponent reports whether any component of a relative or absolute
// path is a .git name. Both '/' and the OS separator split components.
func hasGitComponent(p string) bool {
	return strings.ContainsAny(p, "gG") && anyComponent(p, isGitName)
}

// pathHasGit is hasGitComponent for absolute root paths; the volume name
// is not a component.
func pathHasGit(p string) bool {
	return hasGitComponent(p[len(filepath.VolumeName(p)):])
}

func anyComponent(p string, f func(string) bool) bool {
	for _, c := range splitPath(p) {
		if f(c) {
			return true
		}
	}
	return false
}

// splitPath splits on '/' and the OS separator, dropping empty components.
// "." and ".." are kept.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool {
		return r == '/' || r == filepath.Separator
	})
}
