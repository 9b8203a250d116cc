package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
)

// serverJSON mirrors the fields of the MCP registry's server.json schema
// (2025-12-11) that Garra uses. Decoding is strict, so a misspelled or
// invented field fails here instead of at `mcp-publisher publish`.
type serverJSON struct {
	Schema      string `json:"$schema"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Version     string `json:"version"`
	Repository  *struct {
		URL    string `json:"url"`
		Source string `json:"source"`
	} `json:"repository"`
	Packages []serverJSONPackageEntry `json:"packages"`
}

type serverJSONPackageEntry struct {
	RegistryType string `json:"registryType"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version"`
	RuntimeHint  string `json:"runtimeHint"`
	Transport    struct {
		Type string `json:"type"`
	} `json:"transport"`
	PackageArguments []struct {
		Type        string `json:"type"`
		Value       string `json:"value"`
		Description string `json:"description"`
	} `json:"packageArguments"`
	EnvironmentVariables []envInput `json:"environmentVariables"`
}

type envInput struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	IsRequired  *bool    `json:"isRequired"`
	IsSecret    *bool    `json:"isSecret"`
	Format      string   `json:"format"`
	Default     string   `json:"default"`
	Placeholder string   `json:"placeholder"`
	Choices     []string `json:"choices"`
}

// OCI registries the official registry accepts (its package-types page).
var ociRegistries = regexp.MustCompile(`^(docker\.io|ghcr\.io|quay\.io|mcr\.microsoft\.com|[a-z0-9.-]+\.pkg\.dev|[a-z0-9-]+\.azurecr\.io)/[a-z0-9._/-]+:([A-Za-z0-9._-]+)$`)

func loadServerJSON(t *testing.T) serverJSON {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s serverJSON
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	return s
}

func TestServerJSONMeetsTheRegistryRules(t *testing.T) {
	s := loadServerJSON(t)
	if !regexp.MustCompile(`^https://static\.modelcontextprotocol\.io/schemas/2025-\d\d-\d\d/server\.schema\.json$`).MatchString(s.Schema) {
		t.Errorf("$schema %q is not a dated 2025 server.schema.json URL", s.Schema)
	}
	// name: reverse DNS with exactly one slash; io.github.<owner> must be
	// the GitHub owner of the module (the registry authenticates it).
	if !regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`).MatchString(s.Name) || len(s.Name) < 3 || len(s.Name) > 200 {
		t.Errorf("name %q is not reverse-DNS namespace/name", s.Name)
	}
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	ns, server, _ := strings.Cut(s.Name, "/")
	if owner, ok := strings.CutPrefix(ns, "io.github."); !ok || !bytes.Contains(mod, []byte("module github.com/"+owner+"/"+server+"\n")) {
		t.Errorf("name %q does not match the module path in go.mod", s.Name)
	}
	if n := len([]rune(s.Description)); n < 1 || n > 100 {
		t.Errorf("description is %d characters; the registry allows 1 to 100", n)
	}
	if s.Version == "" || s.Version == "latest" || len(s.Version) > 255 || strings.ContainsAny(s.Version, "^~<>=* ") || strings.Contains(s.Version, ".x") {
		t.Errorf("version %q must be one specific version", s.Version)
	}
	if s.Repository == nil || s.Repository.Source != "github" || s.Repository.URL != "https://github.com/"+strings.TrimPrefix(ns, "io.github.")+"/"+server {
		t.Errorf("repository %+v does not point at the module's GitHub repository", s.Repository)
	}

	if len(s.Packages) != 2 {
		t.Fatalf("%d packages, want the OCI image and the npm package", len(s.Packages))
	}
	for _, p := range s.Packages {
		if p.Transport.Type != "stdio" {
			t.Errorf("%s package over %s, want stdio", p.RegistryType, p.Transport.Type)
		}
		// The arguments start the stdio server of the binary.
		var args []string
		for _, a := range p.PackageArguments {
			if a.Type != "positional" || a.Value == "" {
				t.Errorf("%s package argument %+v", p.RegistryType, a)
			}
			args = append(args, a.Value)
		}
		if len(args) == 0 || args[0] != "mcp-server" {
			t.Fatalf("%s packageArguments %v do not start `garra mcp-server`", p.RegistryType, args)
		}
		assertRunnable(t, "server.json "+p.RegistryType+" packageArguments", args)
	}

	p := serverJSONPackage(t, "oci")
	if p.RuntimeHint != "docker" {
		t.Errorf("oci package run by %q, want docker", p.RuntimeHint)
	}
	m := ociRegistries.FindStringSubmatch(p.Identifier)
	if m == nil {
		t.Errorf("identifier %q is not registry/namespace/repository:tag on a registry the MCP registry accepts", p.Identifier)
	} else if tag := m[2]; tag != s.Version && tag != "v"+s.Version {
		t.Errorf("image tag %q does not match version %q", tag, s.Version)
	}
	if p.Version != "" {
		t.Errorf("an OCI package carries its version in the tag, not in version (%q)", p.Version)
	}

	// The npm package is npm/garra-mcp, whose mcpName is what the registry
	// checks ownership by; hack/npm.sh stamps one version on it and its
	// platform packages, and at rest they agree with server.json.
	p = serverJSONPackage(t, "npm")
	raw, err := os.ReadFile(filepath.Join(repoRoot, "npm", "garra-mcp", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Name                 string            `json:"name"`
		Version              string            `json:"version"`
		MCPName              string            `json:"mcpName"`
		OptionalDependencies map[string]string `json:"optionalDependencies"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatalf("npm/garra-mcp/package.json: %v", err)
	}
	if p.RuntimeHint != "npx" || p.Identifier != pkg.Name || p.Version != s.Version || pkg.Version != s.Version || pkg.MCPName != s.Name {
		t.Errorf("npm package %s@%s (%s), package.json %s@%s mcpName %q; want %s@%s run by npx, mcpName %s",
			p.Identifier, p.Version, p.RuntimeHint, pkg.Name, pkg.Version, pkg.MCPName, pkg.Name, s.Version, s.Name)
	}
	for dep, v := range pkg.OptionalDependencies {
		if !strings.HasPrefix(dep, pkg.Name+"-") || v != pkg.Version {
			t.Errorf("optional dependency %s@%s is not a %s-<os>-<cpu> package at %s", dep, v, pkg.Name, pkg.Version)
		}
	}
}

// serverJSONPackage is server.json's one package of registryType.
func serverJSONPackage(t *testing.T, registryType string) serverJSONPackageEntry {
	t.Helper()
	var found []serverJSONPackageEntry
	for _, p := range loadServerJSON(t).Packages {
		if p.RegistryType == registryType {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("server.json has %d %s packages, want 1", len(found), registryType)
	}
	return found[0]
}

// The environment variables: complete (every knob the stdio server reads)
// and honest (each is read by the code, secrets are marked).
func TestServerJSONEnvironmentVariables(t *testing.T) {
	pkgs := loadServerJSON(t).Packages
	for _, p := range pkgs[1:] {
		if !reflect.DeepEqual(p.EnvironmentVariables, pkgs[0].EnvironmentVariables) {
			t.Errorf("the %s package's environmentVariables differ from the %s package's: the binary is the same", p.RegistryType, pkgs[0].RegistryType)
		}
	}
	envs := pkgs[0].EnvironmentVariables
	byName := map[string]envInput{}
	for _, e := range envs {
		if _, dup := byName[e.Name]; dup {
			t.Errorf("%s listed twice", e.Name)
		}
		byName[e.Name] = e
		switch {
		case e.Description == "":
			t.Errorf("%s has no description", e.Name)
		case e.IsRequired == nil || e.IsSecret == nil:
			t.Errorf("%s must say isRequired and isSecret", e.Name)
		case !codeReadsEnv(t, e.Name):
			t.Errorf("%s is listed but the code never reads it", e.Name)
		}
		secretish := strings.HasSuffix(e.Name, "_KEY") || strings.HasSuffix(e.Name, "_TOKEN")
		if e.IsSecret != nil && *e.IsSecret != secretish {
			t.Errorf("%s: isSecret %v", e.Name, *e.IsSecret)
		}
		if e.Format != "" && !slices.Contains([]string{"string", "number", "boolean", "filepath"}, e.Format) {
			t.Errorf("%s: format %q is not in the schema's enum", e.Name, e.Format)
		}
		if len(e.Choices) > 0 && e.Default != "" && !slices.Contains(e.Choices, e.Default) {
			t.Errorf("%s: default %q is not one of its choices", e.Name, e.Default)
		}
	}
	want := []string{mcppolicy.EnvModelAllowlist, mcppolicy.EnvMaxTimeoutSecs, mcppolicy.EnvEnableTools, mcppolicy.EnvAllowedDirs,
		config.EnvConfigPath, config.EnvExecutionProfile, config.EnvBraveAPIKey}
	for _, k := range config.DefaultAPIKeyEnv {
		want = append(want, k)
	}
	for _, k := range want {
		if _, ok := byName[k]; !ok {
			t.Errorf("server.json does not list %s, which garra mcp-server reads", k)
		}
	}
	// Every GARRAIA_MCP_* string in the source is a knob and must be listed.
	for _, k := range regexp.MustCompile(`"(GARRAIA_MCP_[A-Z0-9_]+)"`).FindAllStringSubmatch(productionSource(t), -1) {
		if _, ok := byName[k[1]]; !ok {
			t.Errorf("server.json does not list %s", k[1])
		}
	}
	if e := byName["OPENROUTER_API_KEY"]; e.IsRequired == nil || !*e.IsRequired {
		t.Error("OPENROUTER_API_KEY is the default provider's key: isRequired")
	}
	if e := byName[config.EnvExecutionProfile]; !slices.Equal(e.Choices, []string{config.ProfileStandard, config.ProfileIsolatedPod}) {
		t.Errorf("%s choices %v", config.EnvExecutionProfile, e.Choices)
	}
}
