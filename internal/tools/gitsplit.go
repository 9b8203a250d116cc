package tools

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// GitSplit is how a workspace's own .git is divided for a command that may
// change the workspace: git runs what some of .git says (hooks, and the
// aliases, filters, fsmonitor and pager of its config) at the user's next
// git command, outside any confinement, so those stay read-only; the rest
// (objects, refs, the index, logs, HEAD) is what a commit writes, so it
// stays writable.
type GitSplit struct {
	// Pin is the workspace's .git directory, to be made immovable (a
	// command that could rename or remove it could set up another in its
	// place); "" when there is none, or .git is a file.
	Pin string
	// ReadOnly are the paths to be made read-only: beneath a .git
	// directory its config, config.worktree, commondir, hooks/, info/
	// and each submodule's config, hooks/ and info/ under modules/; a .git
	// file itself (a worktree's or submodule's pointer to its repository);
	// and the files the config includes and the hooks directory it names,
	// where they lie in the workspace. Each exists and is canonical.
	ReadOnly []string
}

// gitCodePaths are the entries of a git directory that git reads as code or
// configuration. commondir names another directory to take the config and
// hooks from; a command can still create one where there was none (see
// SplitGit).
var gitCodePaths = []string{"config", "config.worktree", "commondir", "hooks", "info"}

// maxIncludeDepth bounds how deep SplitGit follows config includes (git's
// own bound is 10).
const maxIncludeDepth = 10

// SplitGit is the split of dir's own .git (dir absolute). A .git above dir
// is none of its business: a command confined to dir cannot write there.
// What it does not cover: a file of the list above that does not exist yet
// can still be created (a commondir, chiefly: git then takes the config
// and hooks from where it points), and includes spelt with a condition git
// evaluates at run time are followed whatever the condition.
func SplitGit(dir string) (GitSplit, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return GitSplit{}, errors.New("the working directory cannot be resolved")
	}
	p := filepath.Join(root, ".git")
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return GitSplit{}, nil
	case err != nil:
		return GitSplit{}, errors.New("the working directory's .git cannot be read")
	case fi.Mode()&os.ModeSymlink != 0:
		return GitSplit{}, errors.New("the working directory's .git is a symlink and cannot be protected; replace it with the repository or a gitdir file")
	case fi.Mode().IsRegular():
		return GitSplit{ReadOnly: []string{p}}, nil
	case !fi.IsDir():
		return GitSplit{}, errors.New("the working directory's .git is neither a directory nor a file")
	}
	s := &GitSplit{Pin: p}
	seen := map[string]bool{}
	add := func(q string) {
		// Only what lies in the workspace: nothing else is writable.
		if c, err := filepath.EvalSymlinks(q); err == nil && !seen[c] && (c == root || strings.HasPrefix(c, root+string(filepath.Separator))) {
			seen[c] = true
			s.ReadOnly = append(s.ReadOnly, c)
		}
	}
	gitDirs := []string{p}
	if subs, err := filepath.Glob(filepath.Join(p, "modules", "*")); err == nil {
		gitDirs = append(gitDirs, subs...)
	}
	for _, g := range gitDirs {
		for _, e := range gitCodePaths {
			add(filepath.Join(g, e))
		}
		s.configRefs(filepath.Join(g, "config"), root, add, 0)
	}
	return *s, nil
}

// configRefs adds what the config file names that git reads as code or
// configuration: included files (and theirs in turn) and core.hooksPath.
// Relative paths are git's: an include's from the including file's
// directory, the hooks directory's from the work tree.
func (s *GitSplit) configRefs(file, root string, add func(string), depth int) {
	if depth > maxIncludeDepth {
		return
	}
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	home, _ := os.UserHomeDir()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.IndexAny(line, " \t\"].")
			if end < 0 {
				continue
			}
			section = strings.ToLower(line[1:end])
			if i := strings.Index(line, "]"); i >= 0 {
				line = strings.TrimSpace(line[i+1:])
			}
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if value == "" {
			continue
		}
		switch {
		case key == "path" && (section == "include" || section == "includeif"):
		case key == "hookspath" && section == "core":
		default:
			continue
		}
		switch {
		case strings.HasPrefix(value, "~/") && home != "":
			value = filepath.Join(home, value[2:])
		case filepath.IsAbs(value):
		case key == "hookspath":
			value = filepath.Join(root, value)
		default:
			value = filepath.Join(filepath.Dir(file), value)
		}
		add(value)
		if key == "path" {
			s.configRefs(value, root, add, depth+1)
		}
	}
}
