package hands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/tools"
)

func abi(n int) func() int { return func() int { return n } }

// twoLocal is a gateway config with two orchestrators on local workspaces.
func twoLocal() *config.Config {
	cfg := config.Default()
	for _, n := range []string{"a", "b"} {
		cfg.Gateway.MCPHTTP.Orchestrators = append(cfg.Gateway.MCPHTTP.Orchestrators, config.Orchestrator{Name: n, Tools: []string{"agent"}})
	}
	return cfg
}

// A kernel without Landlock: under required, bash is refused with the
// stable kind, through the agent's own bash tool, and nothing runs; under
// best-effort it runs, and the startup log warns.
func TestNoLandlock(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, tc := range []struct {
		name     string
		cfg      *config.Config
		role     hands.Role
		required bool
	}{
		{"gateway default, two local workspaces", twoLocal(), hands.RoleGateway, true},
		{"laptop, required", &config.Config{Agent: config.Agent{Confinement: config.ConfinementRequired}}, hands.RoleLaptop, true},
		{"laptop default", config.Default(), hands.RoleLaptop, false},
		{"gateway, best-effort", func() *config.Config {
			c := twoLocal()
			c.Agent.Confinement = config.ConfinementBestEffort
			return c
		}(), hands.RoleGateway, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(marker)
			conf := hands.NewConfinement(tc.cfg, hands.ConfineOptions{Role: tc.role, ABI: abi(0)})
			var logs bytes.Buffer
			hands.LogConfinement(slog.New(slog.NewTextHandler(&logs, nil)), tools.BashExposure{Where: tools.BashHost}, conf)
			j := jail.New([]string{dir})
			defer func() { _ = j.Close() }()
			local := hands.Local(tc.cfg, j, dir, hands.Bash(tc.cfg, tools.BashExposure{Where: tools.BashHost}, dir, conf), nil)
			args, _ := json.Marshal(map[string]string{"command": "touch " + marker})
			res, err := local.Call(context.Background(), tools.ToolBash, args)
			if err != nil {
				t.Fatal(err)
			}
			if tc.required {
				if !res.IsError || !strings.Contains(res.Output, "refused: confinement_unavailable: agent.confinement is required") {
					t.Errorf("result %+v, want the confinement_unavailable refusal", res)
				}
				if exists(marker) {
					t.Error("bash ran unconfined under required")
				}
				if !strings.Contains(conf.String(), "refused") || strings.Contains(logs.String(), "level=WARN") {
					t.Errorf("String %q, log %q", conf.String(), logs.String())
				}
				return
			}
			if res.IsError || !exists(marker) {
				t.Errorf("best-effort did not run bash: %+v", res)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "unconfined") {
				t.Errorf("best-effort without Landlock logged no warning: %q", logs.String())
			}
		})
	}
}

// The confinement in force is named, ABI and egress included, and one
// orchestrator on a local workspace does not make required the default.
func TestConfinementString(t *testing.T) {
	one := config.Default()
	one.Gateway.MCPHTTP.Orchestrators = []config.Orchestrator{{Name: "a", Tools: []string{"agent"}}}
	none := config.Default()
	none.Agent.Egress = config.EgressNone
	noNS := errors.New("probe said no")
	for _, tc := range []struct {
		cfg  *config.Config
		role hands.Role
		abi  int
		ns   error
		want string
	}{
		{one, hands.RoleGateway, 7, nil, "landlock ABI 7: files, egress internet, signals and abstract sockets scoped, " +
			"namespaces: user, mount (.git config, hooks and info read-only), pid (best-effort, default)"},
		{twoLocal(), hands.RoleGateway, 7, nil, "(required, default: local workspaces of more than one orchestrator)"},
		{none, hands.RoleLaptop, 7, nil, "egress none (TCP connect denied), signals and abstract sockets scoped, " +
			"namespaces: user, mount (.git config, hooks and info read-only), pid, net (egress none)"},
		{none, hands.RoleLaptop, 3, noNS, "egress none NOT enforced (TCP needs ABI 4), signals and abstract sockets NOT scoped (ABI 6), " +
			"no namespaces (unprivileged user namespaces unavailable: probe said no; .git config and hooks stay writable)"},
	} {
		got := hands.NewConfinement(tc.cfg, hands.ConfineOptions{Role: tc.role, ABI: abi(tc.abi),
			Namespaces: func() error { return tc.ns }}).String()
		if !strings.Contains(got, tc.want) {
			t.Errorf("String() = %q, want it to hold %q", got, tc.want)
		}
	}
}

// The shell gate leaves the network to the kernel only where the kernel
// keeps a call off it entirely: egress none, Landlock denying TCP connects
// (and its file rules), and UDP closed by the call's own network namespace
// or by Landlock itself (ABI 10).
func TestConfinementNetworkBounded(t *testing.T) {
	none := config.Default()
	none.Agent.Egress = config.EgressNone
	noNS := errors.New("probe said no")
	for _, tc := range []struct {
		name string
		cfg  *config.Config
		abi  int
		ns   error
		want bool
	}{
		{"egress none, ABI 7, namespaces", none, 7, nil, true},
		{"egress internet", config.Default(), 7, nil, false},
		{"egress none, no namespaces, UDP open (ABI 7)", none, 7, noNS, false},
		{"egress none, no namespaces, UDP denied (ABI 10)", none, 10, noNS, true},
		{"egress none, namespaces, TCP connect not denied (ABI 3)", none, 3, nil, false},
		{"egress none, namespaces, no Landlock", none, 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hands.NewConfinement(tc.cfg, hands.ConfineOptions{Role: hands.RoleLaptop, ABI: abi(tc.abi),
				Namespaces: func() error { return tc.ns }})
			if got := c.NetworkBounded(); got != tc.want {
				t.Errorf("NetworkBounded() = %v, want %v (%s)", got, tc.want, c)
			}
		})
	}
}

// A call's domain: it writes its workspace and a private TMPDIR, which
// goes when the call ends; garra's paths under a granted one are cut out
// of it (a config under /etc, the user's credential stores in a workspace
// that is the home), a symlink into them included; an exposed store is
// not.
func TestConfineGrants(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".ssh", ".aws", "proj/src", ".garraia"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A link at a split directory's level would become a rule of its own,
	// and a rule grants what its path resolves to. (One deeper is harmless:
	// Landlock judges an access by the resolved path.)
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "keys")); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(home, ".garraia", "config.yml")
	cfg := config.Default()
	cfg.DataDir = filepath.Join(home, ".garraia")
	cfg.Agent.Expose = []string{filepath.Join(home, ".aws")}
	tmpRoot := t.TempDir()
	conf := hands.NewConfinement(cfg, hands.ConfineOptions{Role: hands.RoleLaptop, ABI: abi(7), Home: home, TempDir: tmpRoot, ConfigPath: cfgPath})

	c, err := conf.Confine(home)
	if err != nil {
		t.Fatal(err)
	}
	ll := c.Landlock
	if ll == nil || ll.ABI != 7 || len(c.Env) != 1 || !strings.HasPrefix(c.Env[0], "TMPDIR="+tmpRoot+"/") {
		t.Fatalf("confinement %+v", c)
	}
	tmp := strings.TrimPrefix(c.Env[0], "TMPDIR=")
	has := func(list []string, p string) bool { return slices.Contains(list, p) }
	for _, p := range []string{filepath.Join(home, "proj"), filepath.Join(home, ".aws"), tmp, "/dev/null"} {
		if !has(ll.Write, p) {
			t.Errorf("write grants %v lack %s", ll.Write, p)
		}
	}
	for _, p := range []string{home, filepath.Join(home, ".ssh"), filepath.Join(home, ".garraia"), filepath.Join(home, "keys")} {
		if has(ll.Write, p) || has(ll.Read, p) {
			t.Errorf("%s is granted: write %v read %v", p, ll.Write, ll.Read)
		}
	}
	if !has(ll.Read, "/usr") || has(ll.Read, "/tmp") || has(ll.Read, "/home") {
		t.Errorf("read grants %v", ll.Read)
	}
	if !exists(tmp) {
		t.Fatal("no private TMPDIR")
	}
	c.Release()
	if exists(tmp) {
		t.Error("the private TMPDIR outlived the call")
	}

	// A config kept in the project: the project is the workspace, the file
	// alone is cut out.
	proj := filepath.Join(home, "proj", "src")
	conf = hands.NewConfinement(config.Default(), hands.ConfineOptions{ABI: abi(7), Home: home, TempDir: tmpRoot, ConfigPath: filepath.Join(proj, "garra.yml")})
	if err := os.WriteFile(filepath.Join(proj, "garra.yml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "main.go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = conf.Confine(proj)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if !has(c.Landlock.Write, filepath.Join(proj, "main.go")) || has(c.Landlock.Write, filepath.Join(proj, "garra.yml")) || has(c.Landlock.Write, proj) {
		t.Errorf("write grants %v", c.Landlock.Write)
	}
}

// ErrUnconfined carries its stable kind first.
func TestErrUnconfinedKind(t *testing.T) {
	_, err := hands.NewConfinement(&config.Config{Agent: config.Agent{Confinement: config.ConfinementRequired}}, hands.ConfineOptions{ABI: abi(0)}).Confine("/w")
	if !errors.Is(err, hands.ErrUnconfined) || !strings.HasPrefix(err.Error(), "confinement_unavailable: ") {
		t.Fatalf("err = %v", err)
	}
}
