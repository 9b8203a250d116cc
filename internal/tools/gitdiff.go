package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/garraia/garra/internal/strictargs"
)

const (
	gitDiffTimeout = 30 * time.Second
	maxRevLen      = 256
)

// gitHardening is passed as -c options to every git child. Each closes a
// way for a planted .git/config (or a global config the file tools could
// write) to run a program or reach outside the repository:
var gitHardening = []string{
	"core.fsmonitor=false",         // the fsmonitor hook runs a program on every index refresh
	"safe.bareRepository=explicit", // no embedded bare repository picked up by discovery
	"core.hooksPath=/dev/null",     // no hooks
	"diff.submodule=short",         // no submodule log
	"submodule.recurse=false",      // no submodule recursion
	"diff.ignoreSubmodules=all",    // with --ignore-submodules=all
	"protocol.allow=never",         // no transport: a promisor lazy fetch cannot run ext:: or ssh
	"core.sshCommand=",             // no ssh wrapper either
	"credential.helper=",           // no credential helper
	"diff.external=",               // with --no-ext-diff
	"core.pager=cat",               // never a pager (with --no-pager)
	"color.ui=false",               // plain text for the model
}

// gitEnv is the environment of every git child: the allowlist, no system
// config, and no terminal prompts.
func gitEnv() []string {
	return append(allowlistedEnv(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_OPTIONAL_LOCKS=0", // read-only: do not refresh the index on disk
	)
}

// revPattern is what git_diff accepts as base: branch, tag, hash, HEAD~2,
// main...HEAD, @{u}. It starts with a letter, digit, '_' or '@' so it can
// be neither an option nor an absolute or parent-relative path.
var revPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_@][A-Za-z0-9._/~^@{}+-]*$`)
})

func gitDiffTool() Tool {
	return Tool{
		Name: ToolGitDiff,
		Description: "Show `git diff` for the working directory (read-only): unstaged changes by default, staged ones with staged, " +
			"or against base (a commit, branch or range). Limited to path when given, otherwise to the working directory.",
		InputSchema: objectSchema(map[string]prop{
			"path":   stringProp("Limit the diff to this file or directory, relative to the working directory.", maxPathLen),
			"staged": boolProp("Show staged changes (git diff --cached)."),
			"base":   stringProp("Compare against this revision (e.g. HEAD~1, main, main...HEAD).", maxRevLen),
		}),
	}
}

type gitDiffArgs struct {
	Path   *string `json:"path"`
	Staged *bool   `json:"staged"`
	Base   *string `json:"base"`
}

func (l *Local) callGitDiff(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a gitDiffArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return argsError(ToolGitDiff, err), nil
	}
	path, err := optionalString("path", a.Path, maxPathLen)
	if err != nil {
		return argsError(ToolGitDiff, err), nil
	}
	base, err := optionalString("base", a.Base, maxRevLen)
	if err == nil && a.Base != nil && !validRev(base) {
		err = errors.New("base: must be a revision such as HEAD~1, main or main...HEAD")
	}
	if err != nil {
		return argsError(ToolGitDiff, err), nil
	}
	dir := l.baseDir()
	if dir == "" {
		return errorResult("git_diff: no workspace directory"), nil
	}
	pathspec, err := relativePathspec(dir, path)
	if err != nil {
		return argsError(ToolGitDiff, err), nil
	}
	g := &gitRunner{dir: dir, maxOut: l.maxOut}
	runCtx, cancel := context.WithTimeout(ctx, gitDiffTimeout)
	defer cancel()
	out, err := g.diff(runCtx, a.Staged != nil && *a.Staged, base, pathspec)
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if err != nil {
		return errorResult("git_diff: %s", scrubPaths(err.Error(), l.hostDirs()...)), nil
	}
	if out == "" {
		return Result{Output: "no changes"}, nil
	}
	return Result{Output: out}, nil
}

func validRev(s string) bool {
	if !revPattern().MatchString(s) || strings.Contains(s, "//") {
		return false
	}
	return !slices.Contains(strings.Split(s, "/"), "..")
}

// relativePathspec turns the model's path into a literal pathspec relative
// to dir that stays inside it. Empty means dir itself (".").
func relativePathspec(dir, p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(dir, filepath.Clean(p))
		if err != nil {
			return "", errors.New("path: must be inside the working directory")
		}
		p = rel
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) || filepath.IsAbs(c) {
		return "", errors.New("path: must be inside the working directory")
	}
	return c, nil
}

// gitRunner runs hardened, read-only git commands in dir.
type gitRunner struct {
	dir    string
	maxOut int
}

// diff runs git diff. It first checks that dir is inside a work tree (so
// git can never fall back to --no-index on paths outside the workspace)
// and collects the configured filter drivers to blank them.
func (g *gitRunner) diff(ctx context.Context, staged bool, base, pathspec string) (string, error) {
	inside, err := g.output(ctx, nil, "rev-parse", "--is-inside-work-tree")
	if err != nil || strings.TrimSpace(inside) != "true" {
		return "", errors.New("the working directory is not inside a git work tree")
	}
	drivers, err := g.filterDrivers(ctx)
	if err != nil {
		return "", err
	}
	args := []string{"diff", "--no-textconv", "--no-ext-diff", "--ignore-submodules=all", "--no-color"}
	if staged {
		args = append(args, "--cached")
	}
	if base != "" {
		args = append(args, "--end-of-options", base)
	}
	args = append(args, "--", pathspec)
	return g.output(ctx, blankFilters(drivers), args...)
}

// filterDrivers lists the names of every filter.<driver>.* configured for
// the repository (all scopes but system, which GIT_CONFIG_NOSYSTEM drops).
func (g *gitRunner) filterDrivers(ctx context.Context) ([]string, error) {
	out, err := g.output(ctx, nil, "config", "-z", "--get-regexp", `^filter\.`)
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 1 {
		return nil, nil // no filter configured
	}
	if err != nil {
		return nil, fmt.Errorf("reading the git configuration: %w", err)
	}
	return parseFilterDrivers(out), nil
}

// parseFilterDrivers extracts driver names from `git config -z
// --get-regexp` output: records "key\nvalue\x00" where key is
// filter.<driver>.<var> and <driver> may itself contain dots.
func parseFilterDrivers(out string) []string {
	var drivers []string
	for rec := range strings.SplitSeq(out, "\x00") {
		key, _, _ := strings.Cut(rec, "\n")
		rest, ok := strings.CutPrefix(key, "filter.")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		if d := rest[:i]; !slices.Contains(drivers, d) {
			drivers = append(drivers, d)
		}
	}
	return drivers
}

// blankFilters returns the -c settings that disable each driver.
func blankFilters(drivers []string) []string {
	var cs []string
	for _, d := range drivers {
		cs = append(cs,
			"filter."+d+".clean=",
			"filter."+d+".smudge=",
			"filter."+d+".process=",
			"filter."+d+".required=false",
		)
	}
	return cs
}

// output runs git with the hardening, the extra -c settings and args, and
// returns its capped stdout. On failure the error carries git's stderr.
func (g *gitRunner) output(ctx context.Context, extra []string, args ...string) (string, error) {
	argv := []string{"--no-pager", "--literal-pathspecs", "--no-optional-locks"}
	for _, c := range slices.Concat(gitHardening, extra) {
		argv = append(argv, "-c", c)
	}
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = g.dir
	cmd.Env = gitEnv()
	stdout := newCapWriter(g.maxOut)
	var stderr bytes.Buffer
	cmd.Stdout = stdout
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4 << 10}
	cmd.WaitDelay = killGrace
	if err := runTracked(cmd); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("git timed out: %w", ctx.Err())
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = exitErr.Error()
			}
			return stdout.String(), &gitError{msg: msg, err: exitErr}
		}
		return "", fmt.Errorf("cannot run git: %w", cause(err))
	}
	return stdout.String(), nil
}

// gitError is a git child that exited non-zero; it unwraps to the
// *exec.ExitError.
type gitError struct {
	msg string
	err error
}

func (e *gitError) Error() string { return e.msg }
func (e *gitError) Unwrap() error { return e.err }

// limitedBuffer keeps the first max bytes written.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
