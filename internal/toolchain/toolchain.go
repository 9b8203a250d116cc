// Package toolchain finds the programs a sandbox's image offers: which
// well-known build tools and which required ones are on PATH, and what
// version each reports. The sandbox serves the result as the MCP resource
// garra://sandbox/toolchain, so the agent (and whoever set the image up)
// knows what the image offers instead of guessing.
//
// A version command is a program of the image, run with nothing of the
// sandbox's environment (only PATH, HOME and LC_ALL=C), stdin /dev/null,
// under procguard (nothing it starts outlives it), and killed after
// Options.Timeout. Only the first non-empty line of its output is kept,
// with anything that is not printable replaced, at most MaxVersionLen
// characters: it ends up in a model's context.
package toolchain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/garraia/garra/internal/procguard"
)

// URI is the MCP resource the sandbox serves the Report at.
const URI = "garra://sandbox/toolchain"

// Defaults and bounds.
const (
	// DefaultTimeout bounds one version command.
	DefaultTimeout = 2 * time.Second
	// DefaultParallel is how many version commands run at once.
	DefaultParallel = 4
	// MaxVersionLen is the longest version kept, in characters.
	MaxVersionLen = 120
	// maxOutput is how much of a version command's output is kept to look
	// for its first line; the rest is read and dropped, so a chatty program
	// never blocks on a full pipe.
	maxOutput = 4 << 10
	// MaxRequired is how many required tools may be named.
	MaxRequired = 32
)

// namePattern is a program name: no path, no shell syntax. The CRD's
// requiredTools items use the same pattern. Compiled on first use: the
// bounded repetition makes it the costliest table in the package, and most
// commands of the binary never check a name.
var namePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)
})

// ValidName reports whether name may be looked up on PATH.
func ValidName(name string) bool { return namePattern().MatchString(name) }

// CheckRequired refuses a list the sandbox could not look up, naming the
// first bad entry.
func CheckRequired(names []string) error {
	if len(names) > MaxRequired {
		return fmt.Errorf("%d tools named, at most %d", len(names), MaxRequired)
	}
	for i, n := range names {
		if !ValidName(n) {
			return fmt.Errorf("entry %d (%q) is not a program name (letters, digits, '.', '_', '+', '-', at most 64, no '/')", i+1, n)
		}
	}
	return nil
}

// wellKnown are the programs always looked for, with the arguments that
// make each print its version, built on first use.
var wellKnown = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"bash": {"--version"}, "git": {"--version"}, "make": {"--version"}, "cmake": {"--version"},
		"gcc": {"--version"}, "clang": {"--version"}, "go": {"version"}, "rustc": {"--version"},
		"cargo": {"--version"}, "node": {"--version"}, "npm": {"--version"}, "yarn": {"--version"},
		"pnpm": {"--version"}, "deno": {"--version"}, "bun": {"--version"}, "python3": {"--version"},
		"python": {"--version"}, "pip3": {"--version"}, "uv": {"--version"}, "ruby": {"--version"},
		"perl": {"--version"}, "php": {"--version"}, "java": {"-version"}, "javac": {"-version"},
		"mvn": {"--version"}, "gradle": {"--version"}, "dotnet": {"--version"}, "kubectl": {"version", "--client"},
		"helm": {"version", "--short"}, "terraform": {"version"}, "docker": {"--version"}, "curl": {"--version"},
		"jq": {"--version"}, "rg": {"--version"}, "tar": {"--version"}, "ssh": {"-V"},
	}
})

// WellKnown lists the programs always looked for, sorted.
func WellKnown() []string {
	known := wellKnown()
	out := make([]string, 0, len(known))
	for n := range known {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Options configures Discover.
type Options struct {
	// PATH is searched, as $PATH is ("" finds nothing).
	PATH string
	// Home is HOME for the version commands (some write a cache there).
	Home string
	// Required are looked for besides the well-known programs; one not
	// found is listed in Report.Missing. A required program that is not
	// well-known is asked for its version with --version.
	Required []string
	// Timeout bounds each version command (DefaultTimeout when not
	// positive).
	Timeout time.Duration
	// Parallel is how many version commands run at once (DefaultParallel
	// when not positive).
	Parallel int
}

// Tool is one program found on PATH.
type Tool struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Version is the first line the version command printed, sanitised;
	// "" when it printed nothing usable (Error says why).
	Version  string `json:"version,omitempty"`
	Required bool   `json:"required,omitempty"`
	// Error is why there is no version: "timed out after 2s", "exit
	// status 1", "no readable output".
	Error string `json:"error,omitempty"`
}

// Report is what Discover found.
type Report struct {
	// Tools are the programs found, sorted by name.
	Tools []Tool `json:"tools"`
	// Required are the names asked for, as given.
	Required []string `json:"required"`
	// Missing are the required programs not on PATH, sorted.
	Missing []string `json:"missing"`
	// DiscoveredAt is when the discovery ran; DurationMS how long it took.
	DiscoveredAt time.Time `json:"discovered_at"`
	DurationMS   int64     `json:"duration_ms"`
}

// Discover looks for every well-known and required program on o.PATH and
// asks each found one for its version, o.Parallel at a time, each bounded
// by o.Timeout. It returns when all have answered or been killed, or ctx
// ends (those not asked yet then carry ctx's error).
func Discover(ctx context.Context, o Options) Report {
	t0 := time.Now()
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	required := map[string]bool{}
	for _, n := range o.Required {
		if ValidName(n) {
			required[n] = true
		}
	}
	names := WellKnown()
	for n := range required {
		if _, ok := wellKnown()[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)

	rep := Report{Tools: []Tool{}, Required: append([]string{}, o.Required...), Missing: []string{}, DiscoveredAt: t0.UTC()}
	for _, n := range names {
		p, ok := lookPath(n, o.PATH)
		switch {
		case ok:
			rep.Tools = append(rep.Tools, Tool{Name: n, Path: p, Required: required[n]})
		case required[n]:
			rep.Missing = append(rep.Missing, n)
		}
	}

	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i := range rep.Tools {
		t := &rep.Tools[i]
		args, ok := wellKnown()[t.Name]
		if !ok {
			args = []string{"--version"}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				t.Error = ctx.Err().Error()
				return
			}
			defer func() { <-sem }()
			t.Version, t.Error = version(ctx, o, t.Path, args)
		}()
	}
	wg.Wait()
	rep.DurationMS = time.Since(t0).Milliseconds()
	return rep
}

// lookPath finds name in the directories of path as a shell would: the
// first regular, executable file of that name.
func lookPath(name, path string) (string, bool) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			// A relative entry (or an empty one, meaning ".") would make
			// the answer depend on the current directory.
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// version runs `path args...` and returns its sanitised first line, or
// why there is none.
func version(ctx context.Context, o Options, path string, args []string) (string, string) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c := procguard.Command(ctx, procguard.Limits{MaxProcs: -1}, path, args...)
	c.Cmd.Env = []string{"PATH=" + o.PATH, "HOME=" + o.Home, "LC_ALL=C"}
	c.Cmd.Dir = os.TempDir()
	out := &boundedBuffer{max: maxOutput}
	c.Cmd.Stdout, c.Cmd.Stderr = out, out
	if err := c.Start(); err != nil {
		return "", "cannot start: " + err.Error()
	}
	err := c.Wait()
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", "timed out after " + o.Timeout.String()
		}
		return "", ctx.Err().Error()
	}
	v := firstLine(out.bytes())
	var ee *exec.ExitError
	switch {
	case v != "":
		// Some print their version and exit non-zero (java -version on
		// old releases): the line is what matters.
		return v, ""
	case errors.As(err, &ee):
		return "", ee.Error()
	case err != nil:
		return "", "failed: " + err.Error()
	}
	return "", "no readable output"
}

// firstLine is the first non-empty line of out, every character that is
// not printable (control characters, escape sequences' ESC, invalid
// UTF-8) replaced by '?', cut to MaxVersionLen characters; "" when that
// line is mostly not printable (a binary's bytes, not a version).
func firstLine(out []byte) string {
	for line := range strings.SplitSeq(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var b strings.Builder
		bad, n := 0, 0
		for i := 0; i < len(line) && n < MaxVersionLen; n++ {
			r, size := utf8.DecodeRuneInString(line[i:])
			i += size
			if (r == utf8.RuneError && size <= 1) || !unicode.IsPrint(r) {
				r = '?'
				bad++
			}
			b.WriteRune(r)
		}
		// A line that is mostly replacement is not a version but a binary
		// program's bytes: no version rather than noise in the prompt.
		if bad*4 > n {
			return ""
		}
		return strings.TrimSpace(b.String())
	}
	return ""
}

// boundedBuffer keeps the first max bytes written and drops the rest,
// never failing a write (so the program is never blocked or killed by a
// short write).
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *boundedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.buf)
}

// Sanitize is rep as a real discovery could have made it, whoever sent
// it: entries whose names are not program names dropped, paths and
// versions cut to one printable line, errors to a short one, and no more
// entries than a discovery can produce.
func Sanitize(rep Report) Report {
	limit := len(wellKnown()) + MaxRequired
	out := Report{Tools: []Tool{}, Required: []string{}, Missing: []string{}, DiscoveredAt: rep.DiscoveredAt, DurationMS: rep.DurationMS}
	for _, t := range rep.Tools {
		if len(out.Tools) < limit && ValidName(t.Name) {
			out.Tools = append(out.Tools, Tool{Name: t.Name, Path: firstLine([]byte(t.Path)), Version: firstLine([]byte(t.Version)),
				Required: t.Required, Error: firstLine([]byte(t.Error))})
		}
	}
	for _, list := range []struct{ in, out *[]string }{{&rep.Required, &out.Required}, {&rep.Missing, &out.Missing}} {
		for _, n := range *list.in {
			if len(*list.out) < MaxRequired && ValidName(n) {
				*list.out = append(*list.out, n)
			}
		}
	}
	return out
}

// Summary is the toolchain in a paragraph for the agent's system prompt:
// each program found with its version, then the required ones missing.
// The report comes from the sandbox, which bash runs in: whatever it
// says, only program names pass, versions are sanitised again to one
// printable line of MaxVersionLen, and no more entries than a real
// discovery can make, so the prompt is bounded.
func Summary(rep Report) string {
	rep = Sanitize(rep)
	if len(rep.Tools) == 0 && len(rep.Missing) == 0 {
		return "The sandbox's PATH has none of the well-known build tools (bash, git, make, compilers, language runtimes)."
	}
	var b strings.Builder
	if len(rep.Tools) == 0 {
		b.WriteString("The sandbox's PATH has none of the well-known build tools.")
	} else {
		b.WriteString("Programs on the sandbox's PATH (use these; do not assume others are installed): ")
		for i, t := range rep.Tools {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(t.Name)
			if t.Version != "" {
				b.WriteString(" (" + t.Version + ")")
			}
		}
		b.WriteString(".")
	}
	if len(rep.Missing) > 0 {
		b.WriteString(" Required but missing: " + strings.Join(rep.Missing, ", ") + ".")
	}
	return b.String()
}
