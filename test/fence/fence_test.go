package fence

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/garraia/garra/"

// Families of packages a role may be fenced from, by import path prefix.
var (
	kubernetes  = []string{"k8s.io/client-go/", "k8s.io/api/", "k8s.io/apimachinery/", "sigs.k8s.io/controller-runtime"}
	stores      = []string{"github.com/jackc/pgx/", "modernc.org/sqlite", "modernc.org/libc"}
	prometheus  = []string{"github.com/prometheus/"}
	telegram    = []string{"github.com/go-telegram-bot-api/"}
	llmSDKs     = []string{"github.com/openai/", "github.com/anthropics/"}
	identity    = []string{"github.com/coreos/go-oidc/", "github.com/go-jose/", module + "internal/authn"}
	mcpSDK      = []string{"github.com/modelcontextprotocol/"}
	tracingSDK  = []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/", "go.opentelemetry.io/proto/"}
	typedClient = []string{"k8s.io/client-go/kubernetes", "k8s.io/api/core/"}
)

func join(families ...[]string) []string { return slices.Concat(families...) }

// The packages `garra mcp-server` is composed of (cmd/garra's mcp-server
// command wires them): the laptop must not pay for the cluster, the shared
// store, metrics or chat channels.
var stdioRoom = []string{
	"internal/mcpstdio", "internal/mcpserver", "internal/mcppolicy", "internal/mcptrace", "internal/mcpprompts",
	"internal/hands", "internal/agent", "internal/tools", "internal/jail", "internal/shellgate", "internal/procguard",
	"internal/toolchain", "internal/ask", "internal/llm", "internal/audit", "internal/config", "internal/redact",
	"internal/telemetry", "internal/quota",
}

func TestFences(t *testing.T) {
	for _, f := range []struct {
		role      string
		packages  []string
		forbidden []string
	}{
		{"stdio server", stdioRoom, join(kubernetes, stores, prometheus, telegram)},
		// The sandbox pod runs the agent's hands and nothing else: no LLM
		// client, no credentials of the cluster, no store.
		{"sandbox", []string{"internal/sandbox"}, join(kubernetes, stores, prometheus, telegram, llmSDKs, identity)},
		// The egress proxy decides and carries out; the gateway records
		// (audit, metrics) through a callback, so the proxy links neither
		// Prometheus nor a store nor the cluster.
		{"egress proxy", []string{"internal/egressproxy"}, join(kubernetes, stores, prometheus, telegram, llmSDKs, identity)},
		// Policy is pure: who may call what, decided from the config.
		{"mcppolicy", []string{"internal/mcppolicy"}, join(kubernetes, identity, mcpSDK, stores, prometheus)},
		// The operator reconciles objects; it serves no MCP, and its
		// controllers make spans through the API only (the manager's main
		// chooses the provider).
		{"manager", []string{"cmd/manager"}, mcpSDK},
		{"controllers", []string{"controllers"}, join(mcpSDK, tracingSDK)},
		// The one garra binary speaks to the API server through
		// internal/kube's REST client, never a typed clientset (whose
		// global scheme every command would initialise), and reads no
		// type of the core group, the largest to initialise.
		{"garra binary", []string{"cmd/garra"}, typedClient},
	} {
		t.Run(f.role, func(t *testing.T) {
			for _, pkg := range f.packages {
				for _, dep := range deps(t, module+pkg) {
					for _, bad := range f.forbidden {
						if dep == strings.TrimSuffix(bad, "/") || strings.HasPrefix(dep, bad) {
							t.Errorf("%s (%s) links %s, which the %s must not", pkg, f.role, dep, f.role)
						}
					}
				}
			}
		})
	}
}

// mcppolicy's own imports within the project: the config it reads, the
// error kinds it names and the ask limits it applies, nothing else.
func TestPolicyImportsOnlyItsInputs(t *testing.T) {
	allowed := []string{"internal/config", "internal/errkinds", "internal/ask"}
	for _, imp := range imports(t, module+"internal/mcppolicy") {
		if rest, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(allowed, rest) {
			t.Errorf("internal/mcppolicy imports %s; it may import only %v of the project", rest, allowed)
		}
	}
}

// Only internal/kube, of the garra binary's packages, talks to the API
// server: one client configuration, one place to read for every call.
func TestOneKubernetesRoom(t *testing.T) {
	for _, line := range goListLines(t, "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"cmd/garra") {
		fields := strings.Fields(line)
		rest, ok := strings.CutPrefix(fields[0], module)
		if !ok || rest == "internal/kube" {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "k8s.io/client-go/") {
				t.Errorf("%s imports %s: API calls belong in internal/kube", rest, imp)
			}
		}
	}
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	return goList(t, "-deps", pkg)
}

func imports(t *testing.T, pkg string) []string {
	t.Helper()
	return goList(t, "-f", `{{join .Imports "\n"}}`, pkg)
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	return strings.Fields(strings.Join(goListLines(t, args...), "\n"))
}

func goListLines(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v\n%s", args, err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
