package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/test/fakes/egressdouble"
)

// The gateway-config example of "Give the agent a credential" is a config
// that `garra config check` accepts once its files exist: its egress and
// credential fields are the real ones.
func TestReadmeCredentialConfigChecks(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := readmeText(t, string(readme), "### Give the agent a credential")
	var example string
	for _, m := range regexp.MustCompile("(?ms)^```yaml\n(.*?)^```").FindAllStringSubmatch(section, -1) {
		if strings.HasPrefix(m[1], "gateway:") {
			example = m[1]
		}
	}
	if example == "" {
		t.Fatal("no gateway config example in the section")
	}
	dir := t.TempDir()
	caCert, caKey := egressdouble.WriteCA(t, dir, "egress-ca", true)
	files := map[string]string{
		"/etc/garra/egress-ca.crt": caCert, "/etc/garra/egress-ca.key": caKey,
	}
	for _, name := range []string{"ci", "ci-sandbox", "github"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name+"-0123456789abcdef0123456789abcdef"), 0o600); err != nil {
			t.Fatal(err)
		}
		files["/etc/garra/tokens/"+name] = p
	}
	for from, to := range files {
		example = strings.ReplaceAll(example, from, to)
	}
	if strings.Contains(example, "/etc/garra") {
		t.Fatalf("a path of the example is not stood in for:\n%s", example)
	}
	cfg, err := config.FromBytes([]byte(example), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.Check(func(string) string { return "" }) {
		if strings.HasPrefix(p.Field, "gateway.") && !p.Warning {
			t.Errorf("%s", p)
		}
	}
	if o := cfg.Gateway.MCPHTTP.Orchestrators[0]; len(o.Credentials) != 1 || o.Egress == nil || cfg.Gateway.Egress.Listen == "" {
		t.Fatalf("the example lost its egress fields: %+v", o)
	}
}
