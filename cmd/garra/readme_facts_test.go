package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Facts the README states about the repository, checked against it.

func readmeFile(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// Every relative link of the README names a file or directory that exists.
func TestReadmeLinksExist(t *testing.T) {
	links := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`).FindAllStringSubmatch(readmeFile(t), -1)
	checked := 0
	for _, m := range links {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		checked++
		if _, err := os.Stat(filepath.Join(repoRoot, target)); err != nil {
			t.Errorf("README links to %s, which does not exist", target)
		}
	}
	if checked < 5 {
		t.Fatalf("only %d relative links found", checked)
	}
}

// The e2e section says how many specs the suite has: as many as test/e2e
// declares with It(.
func TestReadmeE2ESpecCount(t *testing.T) {
	m := regexp.MustCompile(`a Ginkgo suite of (\d+) specs`).FindStringSubmatch(readmeFile(t))
	if m == nil {
		t.Fatal("the README does not say how many specs the e2e suite has (\"a Ginkgo suite of N specs\")")
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "test", "e2e", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no e2e files: %v", err)
	}
	specs := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(src), "\n") {
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "It(") {
				specs++
			}
		}
	}
	if said, _ := strconv.Atoi(m[1]); said != specs {
		t.Fatalf("the README says %d e2e specs; test/e2e has %d", said, specs)
	}
}

// Claude Desktop's config file, where each OS keeps it.
func TestReadmeClaudeDesktopConfigPaths(t *testing.T) {
	section := readmeText(t, readmeFile(t), "## Connect Claude Desktop")
	for _, path := range []string{
		"~/Library/Application Support/Claude/claude_desktop_config.json", // macOS
		`%APPDATA%\Claude\claude_desktop_config.json`,                     // Windows
		"~/.config/Claude/claude_desktop_config.json",                     // Linux builds
	} {
		if !strings.Contains(section, "`"+path+"`") {
			t.Errorf("Connect Claude Desktop does not name %s", path)
		}
	}
}

// make test runs the envtest suites, whose first run builds kube-apiserver
// and etcd: the README's Run it section says so, and how long it takes.
func TestReadmeSaysMakeTestBuildsEnvtest(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^unit:.*\benvtest-assets\b`).Match(mk) {
		t.Skip("make test no longer builds the envtest binaries")
	}
	section := readmeText(t, readmeFile(t), "## Run it, test it")
	if !strings.Contains(section, "hack/envtest.sh") || !strings.Contains(section, "25 minutes") {
		t.Fatal("Run it, test it does not say that the first make test builds kube-apiserver and etcd (hack/envtest.sh, about 25 minutes)")
	}
}

// The gateway section says the owner key never gets garra_agent.
func TestReadmeSaysTheOwnerHasNoAgent(t *testing.T) {
	section := readmeText(t, readmeFile(t), "## The HTTP gateway")
	for _, para := range strings.Split(section, "\n\n") {
		if strings.Contains(para, "The owner key") && strings.Contains(para, "but `garra_agent`") {
			return
		}
	}
	t.Fatal("The HTTP gateway does not say, in prose, that the owner key never gets garra_agent")
}

// readmeText is the text of the README under heading, up to the next
// heading of the same level or above (a # line inside a fence is none).
func readmeText(t *testing.T, readme, heading string) string {
	t.Helper()
	level := strings.Count(strings.Fields(heading)[0], "#")
	_, after, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	next := regexp.MustCompile(`^#{1,` + strconv.Itoa(level) + `} `)
	inFence, n := false, 0
	for line := range strings.SplitAfterSeq(after, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if !inFence && next.MatchString(line) {
			return after[:n]
		}
		n += len(line)
	}
	return after
}
