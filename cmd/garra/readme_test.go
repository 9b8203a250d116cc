package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const repoRoot = "../.."

var (
	sourceOnce sync.Once
	sourceText string
)

// productionSource is every non-test Go file under cmd/ and internal/,
// concatenated: what "the code reads" means for an environment variable.
func productionSource(t *testing.T) string {
	t.Helper()
	sourceOnce.Do(func() {
		var b strings.Builder
		for _, dir := range []string{"cmd", "internal"} {
			_ = filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
					return nil
				}
				src, err := os.ReadFile(p)
				if err == nil {
					b.Write(src)
				}
				return nil
			})
		}
		sourceText = b.String()
	})
	if len(sourceText) < 10000 {
		t.Fatal("production source not found: the check would pass vacuously")
	}
	return sourceText
}

// codeReadsEnv reports whether the source names the variable as a string
// literal (os.Getenv, getenv, the config's defaults all go through one).
func codeReadsEnv(t *testing.T, name string) bool {
	t.Helper()
	return strings.Contains(productionSource(t), `"`+name+`"`)
}

// runnableProblems checks that `garra <args> --help` exists: exit 0, and
// the usage line names the subcommand path (cobra prints the root help for
// an unknown subcommand, so exit 0 alone proves nothing). Flags in args
// must be in that help.
func runnableProblems(t *testing.T, args []string) []string {
	t.Helper()
	var sub, flags []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			flags = append(flags, strings.SplitN(a, "=", 2)[0])
		} else if len(flags) == 0 {
			sub = append(sub, a)
		}
	}
	usage := strings.TrimSpace("garra " + strings.Join(sub, " "))
	out, errOut, code := run(t, testEnv(t), append(append([]string{}, sub...), "--help")...)
	if code != 0 {
		return []string{usage + " --help exits " + strconv.Itoa(code) + ": " + errOut}
	}
	var problems []string
	if !strings.Contains(out, "Usage:\n  "+usage+" ") {
		problems = append(problems, "garra has no subcommand path "+strconv.Quote(usage))
	}
	for _, f := range flags {
		if !regexp.MustCompile(`(^|[\s,])` + regexp.QuoteMeta(f) + `[\s=]`).MatchString(out) {
			problems = append(problems, strconv.Quote(f)+" is not a flag of "+usage)
		}
	}
	return problems
}

func assertRunnable(t *testing.T, where string, args []string) {
	t.Helper()
	for _, p := range runnableProblems(t, args) {
		t.Errorf("%s: %s", where, p)
	}
}

type readmeSection struct {
	heading string
	blocks  []string // ```json blocks
	inline  []string // `inline code` spans
}

// readmeSections splits README.md at its headings, keeping each section's
// ```json blocks and inline code spans.
func readmeSections(t *testing.T) []readmeSection {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeSection
	inlineRe := regexp.MustCompile("`([^`]+)`")
	inFence, isJSON := false, false
	var block strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			if inFence {
				if isJSON && len(out) > 0 {
					out[len(out)-1].blocks = append(out[len(out)-1].blocks, block.String())
				}
				inFence = false
				continue
			}
			inFence, isJSON = true, strings.TrimSpace(strings.TrimPrefix(line, "```")) == "json"
			block.Reset()
		case inFence:
			block.WriteString(line + "\n")
		case strings.HasPrefix(line, "#"):
			out = append(out, readmeSection{heading: strings.TrimSpace(strings.TrimLeft(line, "#"))})
		case len(out) > 0:
			for _, m := range inlineRe.FindAllStringSubmatch(line, -1) {
				out[len(out)-1].inline = append(out[len(out)-1].inline, m[1])
			}
		}
	}
	return out
}

// mcpServersBlock is the shape of a Claude Desktop / Claude Code config.
type mcpServersBlock struct {
	MCPServers map[string]struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	} `json:"mcpServers"`
}

// The README's Claude Desktop and Claude Code snippets must parse, run an
// existing subcommand with existing flags, and set only variables the code
// reads.
func TestReadmeClientSnippets(t *testing.T) {
	sections := readmeSections(t)
	for _, client := range []string{"Claude Desktop", "Claude Code"} {
		t.Run(client, func(t *testing.T) {
			var blocks []string
			var inline []string
			for _, s := range sections {
				if strings.Contains(s.heading, client) {
					blocks = append(blocks, s.blocks...)
					inline = append(inline, s.inline...)
				}
			}
			if len(blocks) == 0 {
				t.Fatalf("no ```json snippet under a %q heading", client)
			}
			for i, b := range blocks {
				dec := json.NewDecoder(strings.NewReader(b))
				dec.DisallowUnknownFields()
				var cfg mcpServersBlock
				if err := dec.Decode(&cfg); err != nil {
					t.Fatalf("snippet %d does not parse: %v\n%s", i, err, b)
				}
				if len(cfg.MCPServers) == 0 {
					t.Fatalf("snippet %d has no mcpServers entry", i)
				}
				for name, srv := range cfg.MCPServers {
					where := client + " snippet " + name
					args, problems := garraArgs(t, srv.Command, srv.Args)
					for _, p := range problems {
						t.Errorf("%s: %s", where, p)
					}
					if args != nil {
						assertRunnable(t, where, args)
					}
					for k := range srv.Env {
						if !codeReadsEnv(t, k) {
							t.Errorf("%s sets %s, which the code never reads", where, k)
						}
					}
				}
			}
			// `claude mcp add NAME [opts] -- garra ARGS…` one-liners.
			for _, code := range inline {
				if !strings.HasPrefix(code, "claude mcp add") {
					continue
				}
				_, cmdline, ok := strings.Cut(code, " -- ")
				fields := strings.Fields(cmdline)
				if !ok || len(fields) == 0 || filepath.Base(fields[0]) != "garra" {
					t.Errorf("%q does not run garra after --", code)
					continue
				}
				assertRunnable(t, code, fields[1:])
			}
		})
	}
}

// garraArgs is what garra runs with when a host starts command with args:
// garra itself, the image of server.json's OCI package under `docker run`,
// or its npm package under npx (whose bin runs mcp-server when given no
// arguments). Variables docker passes on must be read by the code. A
// snippet that fits none of these is a problem.
func garraArgs(t *testing.T, command string, args []string) ([]string, []string) {
	t.Helper()
	switch filepath.Base(command) {
	case "garra", "garra.exe":
		return args, nil
	case "docker":
		oci := serverJSONPackage(t, "oci").Identifier
		if len(args) < 3 || !slices.Equal(args[:3], []string{"run", "-i", "--rm"}) {
			return nil, []string{fmt.Sprintf("docker %q does not start with run -i --rm", args)}
		}
		rest := args[3:]
		var problems []string
		for len(rest) >= 2 && rest[0] == "-e" {
			if !codeReadsEnv(t, rest[1]) {
				problems = append(problems, "passes "+rest[1]+" into the container, which the code never reads")
			}
			rest = rest[2:]
		}
		if len(rest) == 0 || rest[0] != oci {
			return nil, append(problems, fmt.Sprintf("docker %q does not run server.json's image %s", args, oci))
		}
		return rest[1:], problems
	case "npx", "npx.cmd":
		pkg := serverJSONPackage(t, "npm").Identifier
		if len(args) < 2 || args[0] != "-y" || args[1] != pkg {
			return nil, []string{fmt.Sprintf("npx %q does not run -y %s", args, pkg)}
		}
		if len(args) == 2 {
			return []string{"mcp-server"}, nil
		}
		return args[2:], nil
	}
	return nil, []string{fmt.Sprintf("runs %q: not garra, docker or npx", command)}
}

// Every variable in the README's "Environment knobs" table is read by the
// code.
func TestReadmeEnvKnobsAreRead(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "### Environment knobs")
	if !ok {
		t.Skip("README has no Environment knobs section")
	}
	table, _, _ := strings.Cut(after, "\n#")
	names := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`").FindAllStringSubmatch(table, -1)
	if len(names) < 4 {
		t.Fatalf("found only %d variables in the knobs table", len(names))
	}
	for _, m := range names {
		if !codeReadsEnv(t, m[1]) {
			t.Errorf("README documents %s, which the code never reads", m[1])
		}
	}
}

// The checks above must be able to fail.
func TestReadmeCheckersCatchDrift(t *testing.T) {
	if codeReadsEnv(t, "GARRAIA_MCP_NO_SUCH_KNOB") {
		t.Fatal("codeReadsEnv accepts a variable nothing reads")
	}
	if p := runnableProblems(t, []string{"mcp-server", "--config", "x.yml"}); len(p) != 0 {
		t.Fatalf("a valid command line is refused: %v", p)
	}
	for _, args := range [][]string{{"no-such-command"}, {"mcp-server", "--no-such-flag"}, {"mcp"}} {
		if len(runnableProblems(t, args)) == 0 {
			t.Errorf("%v passes the check", args)
		}
	}
	image, pkg := serverJSONPackage(t, "oci").Identifier, serverJSONPackage(t, "npm").Identifier
	for _, c := range []struct {
		command string
		args    []string
		want    []string // nil: refused
	}{
		{"docker", []string{"run", "-i", "--rm", "-e", "OPENROUTER_API_KEY", image, "mcp-server"}, []string{"mcp-server"}},
		{"npx", []string{"-y", pkg}, []string{"mcp-server"}},
		{"npx", []string{"-y", pkg, "version"}, []string{"version"}},
		{"docker", []string{"run", "--rm", image, "mcp-server"}, nil}, // no -i: no stdin
		{"docker", []string{"run", "-i", "--rm", "ghcr.io/other/image:v1", "mcp-server"}, nil},
		{"docker", []string{"run", "-i", "--rm", "-e", "NO_SUCH_VARIABLE", image, "mcp-server"}, nil},
		{"npx", []string{"-y", "@other/package"}, nil},
		{"node", []string{"server.js"}, nil},
	} {
		got, problems := garraArgs(t, c.command, c.args)
		if c.want == nil && len(problems) == 0 {
			t.Errorf("%s %q passes the check", c.command, c.args)
		}
		if c.want != nil && (len(problems) != 0 || !slices.Equal(got, c.want)) {
			t.Errorf("%s %q: garra %q, problems %v; want garra %q", c.command, c.args, got, problems, c.want)
		}
	}
}

// TestTrackedFilesNameNoMachinePath keeps the project about itself: no
// tracked file may carry the absolute path of this checkout or of the
// shared directory beside it (a developer's machine layout), and the e2e
// cluster tool is only ever found relative to the checkout or through
// E2E_CLUSTER_TOOL.
func TestTrackedFilesNameNoMachinePath(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	places := []string{root}
	if shared, err := filepath.Abs(filepath.Join(root, "..", "shared")); err == nil {
		if _, err := os.Stat(shared); err == nil {
			places = append(places, shared)
		}
	}
	var machine []*regexp.Regexp
	for _, p := range places {
		// The pattern is assembled, so it never matches its own source.
		machine = append(machine, regexp.MustCompile(`(^|[^\w./-])`+regexp.QuoteMeta(p+"/")))
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	absTool := regexp.MustCompile(`(^|[^.])/` + `shared/e2e-cluster`)
	checked := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if strings.HasPrefix(name, "test/conformance/node_modules/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			continue // deleted in the work tree, or binary
		}
		checked++
		for i, re := range machine {
			if re.Match(data) {
				t.Errorf("%s names this machine's path %s/", name, places[i])
			}
		}
		if loc := absTool.FindIndex(data); loc != nil {
			t.Errorf("%s names the e2e cluster tool by an absolute path (%q); use ../shared/e2e-cluster or E2E_CLUSTER_TOOL",
				name, strings.TrimSpace(string(data[loc[0]:loc[1]])))
		}
	}
	if checked < 100 {
		t.Fatalf("only %d tracked files read: the check would pass vacuously", checked)
	}
}
