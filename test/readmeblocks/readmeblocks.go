// Package readmeblocks reads the fenced code blocks of README.md with the
// marker each carries, saying which test runs it. The marker is an HTML
// comment on the line just before the fence (GitHub does not render it):
//
//	<!-- test: RUNNER [ARGUMENT] -->
//
// Runners lists every runner and the test that owns it. A block with no
// marker, an unknown runner, or a runnable language (sh, yaml, json) marked
// as mere output is a problem: a new example cannot slip in unrun.
package readmeblocks

import (
	"fmt"
	"regexp"
	"strings"
)

// Block is one fenced code block.
type Block struct {
	Line     int    // line of the opening fence, 1-based
	Heading  string // the nearest heading above, without its #s
	Lang     string // the fence's info string: sh, yaml, json, console, ""
	Runner   string // the marker's first word; "" without a marker
	Argument string // the rest of the marker
	Body     string
}

// Where names a block for a failure message.
func (b Block) Where() string {
	return fmt.Sprintf("README.md:%d (%s, under %q)", b.Line, b.Runner, b.Heading)
}

// Runner is how one kind of block is run and by which test.
type Runner struct {
	Langs []string // fence languages it takes
	By    string   // the test that runs it
	Doc   string
	// NeedsArgument says the marker must carry one (a file name, a path,
	// a reason).
	NeedsArgument bool
}

// Runners is every marker a README block may carry.
var Runners = map[string]Runner{
	"sh": {Langs: []string{"sh"}, By: "cmd/garra TestReadmeBlocksRun",
		Doc: "run by sh -e, in README order, in one scratch directory with bin/garra the binary under test, provider keys set and every provider the LLM double on loopback"},
	"serve": {Langs: []string{"sh"}, By: "cmd/garra TestReadmeBlocksRun",
		Doc: "starts a server in the foreground: run like sh, it must be listening on the loopback address it names within 20 s, then it gets SIGTERM"},
	"file": {Langs: []string{"yaml"}, By: "cmd/garra TestReadmeBlocksRun",
		Doc: "written where its first line `# NAME` says (~/ is HOME) for the sh blocks after it, and passed by `garra config check` with exit 0"},
	"config": {Langs: []string{"yaml"}, By: "cmd/garra TestReadmeBlocksRun",
		Doc: "a part of config.yml: with every variable it names set, `garra config check` runs it (exit 0, or 3 for a part the fragment leaves off)"},
	"mcp-json": {Langs: []string{"json"}, By: "cmd/garra TestReadmeBlocksRun",
		Doc: "an MCP host's mcpServers config: parsed strictly, and the garra command it starts answers initialize"},
	"kubernetes": {Langs: []string{"yaml"}, By: "test/readme TestReadmeKubernetesBlocks",
		Doc: "whole Kubernetes objects: applied with a server-side dry run on a real API server with the CRDs installed"},
	"garraserver": {Langs: []string{"yaml"}, By: "test/readme TestReadmeKubernetesBlocks", NeedsArgument: true,
		Doc: "a part of a GarraServer at the path the argument names (spec, spec.orchestrators[0], ...): set into the sample GarraServer, which is then applied with a server-side dry run"},
	"kubectl": {Langs: []string{"sh"}, By: "test/readme TestReadmeKubectlBlocks",
		Doc: "kubectl commands against a real API server with the operator's controllers running: objects created, patches and annotations dry-run, waits for conditions the operator sets"},
	"columns": {Langs: []string{"", "console"}, By: "test/readme TestReadmeColumns",
		Doc: "`kubectl get` output: its header is the printer columns of the CRD"},
	"helm": {Langs: []string{"sh"}, By: "test/chart TestReadmeInstallBlocks",
		Doc: "helm install (and kubectl apply of the chart's CRDs): the chart rendered with the block's flags by Helm's library, every object decoded strictly"},
	"kustomize": {Langs: []string{"sh"}, By: "test/chart TestReadmeInstallBlocks",
		Doc: "kustomize edit set image and kubectl apply -k: built with kustomize's library, every object decoded strictly, the images the step set in force"},
	"output": {Langs: []string{"", "console", "text"},
		Doc: "what a command prints or a picture of a structure: shown, never run (a runnable language cannot be output)"},
	"by": {Langs: []string{"sh", "yaml", "json", "", "console"}, NeedsArgument: true, By: "the test the argument names",
		Doc: "run by the Go test the argument names, which does what a runner here cannot (stands in files, starts more); cmd/garra checks that test exists"},
	"skip": {Langs: []string{"sh", "yaml", "json", "", "console"}, NeedsArgument: true,
		Doc: "not run by make test, for the reason the argument gives (make test itself, a real cluster, a remote identity provider)"},
}

var (
	fenceRe  = regexp.MustCompile("^```")
	markerRe = regexp.MustCompile(`^<!-- test: (\S+)\s*(.*?)\s*-->$`)
)

// Parse returns every fenced block of the README, in order.
func Parse(readme string) []Block {
	lines := strings.Split(readme, "\n")
	var out []Block
	heading := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		}
		if !fenceRe.MatchString(line) {
			continue
		}
		b := Block{Line: i + 1, Heading: heading, Lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		if i > 0 {
			if m := markerRe.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.Runner, b.Argument = m[1], m[2]
			}
		}
		var body strings.Builder
		for i++; i < len(lines) && !fenceRe.MatchString(lines[i]); i++ {
			body.WriteString(lines[i] + "\n")
		}
		b.Body = body.String()
		out = append(out, b)
	}
	return out
}

// Problems are the blocks no test would run as they are marked.
func Problems(blocks []Block) []string {
	var out []string
	for _, b := range blocks {
		r, ok := Runners[b.Runner]
		switch {
		case b.Runner == "":
			out = append(out, fmt.Sprintf("README.md:%d: a ```%s block under %q has no <!-- test: RUNNER --> marker before it", b.Line, b.Lang, b.Heading))
		case !ok:
			out = append(out, fmt.Sprintf("%s: no runner %q", b.Where(), b.Runner))
		case !contains(r.Langs, b.Lang):
			out = append(out, fmt.Sprintf("%s: runner %s does not take a ```%s block (it takes %q)", b.Where(), b.Runner, b.Lang, r.Langs))
		case r.NeedsArgument && b.Argument == "":
			out = append(out, fmt.Sprintf("%s: runner %s needs an argument", b.Where(), b.Runner))
		}
	}
	return out
}

// Of returns the blocks marked with runner.
func Of(blocks []Block, runner string) []Block {
	var out []Block
	for _, b := range blocks {
		if b.Runner == runner {
			out = append(out, b)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
