// Package versions holds one test: everything a release publishes carries
// the version of the VERSION file. The chart's version and appVersion, the
// npm packages, server.json's entries, the image tags the docs name and
// the `garra version` the build stamps (through hack/version.sh) agree, at
// rest as well as in a release, which stamps the same value into each.
package versions

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const repoRoot = "../.."

var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

func read(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOneVersionEverywhere(t *testing.T) {
	v := strings.TrimSpace(string(read(t, "VERSION")))
	if !semver.MatchString(v) {
		t.Fatalf("VERSION holds %q, not X.Y.Z", v)
	}
	for _, p := range mismatches(t, v, repoFiles(t)) {
		t.Error(p)
	}
}

// A fixture with one file out of step fails, naming that file and field;
// so does each kind of drift the check knows.
func TestMismatchesNameTheStrayField(t *testing.T) {
	v := strings.TrimSpace(string(read(t, "VERSION")))
	good := repoFiles(t)
	for _, tc := range []struct {
		file, old, new, want string
	}{
		{"charts/garra-operator/Chart.yaml", `appVersion: "v` + v + `"`, `appVersion: "` + v + `"`, "appVersion"},
		{"charts/garra-operator/Chart.yaml", "\nversion: " + v, "\nversion: 9.9.9", "Chart.yaml: version"},
		{"server.json", `"version": "` + v + `",` + "\n" + `  "repository"`, `"version": "9.9.9",` + "\n" + `  "repository"`, "server.json: version"},
		{"server.json", "ghcr.io/garraia/garra:v" + v, "ghcr.io/garraia/garra:" + v, "identifier"},
		{"npm/garra-mcp/package.json", `"@garraia/garra-mcp-win32-x64": "` + v + `"`, `"@garraia/garra-mcp-win32-x64": "9.9.9"`, "win32-x64"},
		{"README.md", "", "\nrun ghcr.io/garraia/garra-sandbox:v9.9.9\n", "README.md"},
		{"charts/garra-operator/README.md", "", "\n--set image.tag=" + v + "\n", "image.tag"},
		{"charts/garra-operator/README.md", "", "\nhelm install x oci://ghcr.io/garraia/charts/garra-operator --version 9.9.9\n", "--version"},
		{"README.md", "", "\nOnce v9.9.9 is released\n", "Once v9.9.9"},
	} {
		files := map[string][]byte{}
		for k, b := range good {
			files[k] = b
		}
		s := string(files[tc.file])
		if tc.old == "" {
			s += tc.new
		} else if !strings.Contains(s, tc.old) {
			t.Fatalf("%s: fixture text %q not found (the file changed; update the fixture)", tc.file, tc.old)
		} else {
			s = strings.Replace(s, tc.old, tc.new, 1)
		}
		files[tc.file] = []byte(s)
		got := strings.Join(mismatches(t, v, files), "\n")
		if !strings.Contains(got, tc.file) || !strings.Contains(got, tc.want) {
			t.Errorf("%s with %q: problems %q, want one naming %q", tc.file, tc.new, got, tc.want)
		}
	}
}

// repoFiles are the files that carry the version.
func repoFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range []string{"server.json", "npm/garra-mcp/package.json", "charts/garra-operator/Chart.yaml",
		"README.md", "charts/garra-operator/README.md"} {
		files[f] = read(t, f)
	}
	return files
}

// imageRef is a Garra image with a version-like tag, as docs and
// server.json write it; chartTag is `--set image.tag=...`.
var (
	imageRef = regexp.MustCompile("ghcr\\.io/garraia/garra(?:-sandbox)?:([^\\s\"',)`]+)")
	chartTag = regexp.MustCompile("image\\.tag=([^\\s\"',)`]+)")
	chartVer = regexp.MustCompile(`--version ([0-9][^\s"',)` + "`" + `]*)`)
	versionY = regexp.MustCompile(`^v?[0-9]+\.[0-9]+`)
	// A release named in prose ("Once v0.1.0 is released"); other
	// projects' versions are named after the project (Kubernetes v1.37.2).
	prose  = regexp.MustCompile(`(\S+\s+)?\bv([0-9]+\.[0-9]+\.[0-9]+)\b`)
	others = []string{"Kubernetes"}
)

// mismatches lists every place in files whose version is not v (or, where
// a tag is meant, "v"+v).
func mismatches(t *testing.T, v string, files map[string][]byte) []string {
	t.Helper()
	var out []string
	bad := func(file, field, got, want string) {
		if got != want {
			out = append(out, file+": "+field+" is "+`"`+got+`"`+", want "+`"`+want+`"`+" (VERSION)")
		}
	}

	var server struct {
		Version  string `json:"version"`
		Packages []struct {
			RegistryType string `json:"registryType"`
			Identifier   string `json:"identifier"`
			Version      string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(files["server.json"], &server); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	bad("server.json", "version", server.Version, v)
	for _, p := range server.Packages {
		switch p.RegistryType {
		case "oci":
			_, tag, _ := strings.Cut(p.Identifier, ":")
			bad("server.json", "the oci package's identifier tag ("+p.Identifier+")", tag, "v"+v)
		default:
			bad("server.json", "the "+p.RegistryType+" package's version", p.Version, v)
		}
	}

	var pkg struct {
		Version              string            `json:"version"`
		OptionalDependencies map[string]string `json:"optionalDependencies"`
	}
	if err := json.Unmarshal(files["npm/garra-mcp/package.json"], &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	bad("npm/garra-mcp/package.json", "version", pkg.Version, v)
	for dep, dv := range pkg.OptionalDependencies {
		bad("npm/garra-mcp/package.json", "optionalDependencies."+dep, dv, v)
	}

	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(files["charts/garra-operator/Chart.yaml"], &chart); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	bad("charts/garra-operator/Chart.yaml", "version", chart.Version, v)
	// appVersion is the default image tag, so it is the tag the release
	// pushes: vX.Y.Z.
	bad("charts/garra-operator/Chart.yaml", "appVersion", chart.AppVersion, "v"+v)

	// The docs: every Garra image or chart image.tag with a version-like
	// tag names this release's tag (TAG, REGISTRY and the like are left
	// alone).
	for _, doc := range []string{"README.md", "charts/garra-operator/README.md"} {
		text := string(files[doc])
		for _, re := range []*regexp.Regexp{imageRef, chartTag} {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				if versionY.MatchString(m[1]) {
					bad(doc, m[0], m[1], "v"+v)
				}
			}
		}
		for _, m := range chartVer.FindAllStringSubmatch(text, -1) {
			bad(doc, m[0], m[1], v)
		}
		for _, m := range prose.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(others, strings.TrimSpace(m[1])) {
				bad(doc, strings.TrimSpace(m[0]), m[2], v)
			}
		}
	}
	return out
}

// hack/version.sh is what the Makefile, hack/npm.sh, hack/images.sh and
// hack/release.sh stamp into `garra version`, the npm packages and the
// image tags: vVERSION on a tag, vVERSION-dev.g<commit> off one, and a
// refusal for a tag that disagrees with VERSION.
func TestVersionScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hack", "version.sh"), read(t, "hack/version.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("1.2.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "hack", "version.sh"), args...)
		b, err := cmd.Output()
		return strings.TrimSpace(string(b)), err
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "x")

	if got, err := run(); err != nil || !regexp.MustCompile(`^v1\.2\.3-dev\.g[0-9a-f]{12}$`).MatchString(got) {
		t.Errorf("untagged: %q, %v; want v1.2.3-dev.g<commit>", got, err)
	}
	if got, err := run("--bare"); err != nil || !strings.HasPrefix(got, "1.2.3-dev.g") || !semver.MatchString(got) {
		t.Errorf("untagged --bare: %q, %v; want a semantic version 1.2.3-dev.g<commit>", got, err)
	}
	git("tag", "v1.2.3")
	if got, err := run(); err != nil || got != "v1.2.3" {
		t.Errorf("tagged v1.2.3: %q, %v", got, err)
	}
	if got, err := run("--bare"); err != nil || got != "1.2.3" {
		t.Errorf("tagged v1.2.3, --bare: %q, %v", got, err)
	}
	git("tag", "v1.2.4")
	if got, err := run(); err == nil {
		t.Errorf("tagged v1.2.4 with VERSION 1.2.3: %q and no error", got)
	}
}
