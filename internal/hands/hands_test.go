package hands_test

import (
	"context"
	"errors"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/tools"
)

// Bash gives each role the runner its exposure and workspace call for.
func TestBash(t *testing.T) {
	cfg := &config.Config{}
	cfg.Agent.Sandbox.Image = "sandbox:test"
	for _, tc := range []struct {
		name     string
		exposure tools.BashExposure
		dir      string
		want     string // the runner's kind: none, refused, host, container
	}{
		{"not offered", tools.BashExposure{Where: tools.BashNone, Warning: "off"}, "/w", "none"},
		{"not offered, no workspace", tools.BashExposure{Where: tools.BashNone, Warning: "off"}, "", "none"},
		{"host without a workspace", tools.BashExposure{Where: tools.BashHost}, "", "refused"},
		{"container without a workspace", tools.BashExposure{Where: tools.BashContainer, Backend: "docker"}, "", "refused"},
		{"host", tools.BashExposure{Where: tools.BashHost}, "/w", "host"},
		{"container", tools.BashExposure{Where: tools.BashContainer, Backend: "podman"}, "/w", "container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hands.Bash(cfg, tc.exposure, tc.dir, nil)
			got := "?"
			switch r := r.(type) {
			case nil:
				got = "none"
			case *tools.HostRunner:
				got = "host"
				if r.DefaultDir != tc.dir {
					t.Errorf("host runner defaults to %q, want %q", r.DefaultDir, tc.dir)
				}
			case *tools.ContainerRunner:
				got = "container"
				if r.Backend != tc.exposure.Backend || r.Image != "sandbox:test" {
					t.Errorf("container runner %s/%s", r.Backend, r.Image)
				}
			default:
				if _, _, err := r.Run(context.Background(), "true", "/w"); errors.Is(err, hands.ErrNoWorkspace) {
					got = "refused"
				}
			}
			if got != tc.want {
				t.Fatalf("runner %s, want %s", got, tc.want)
			}
		})
	}
}

// Exposure follows the configuration: the standard profile without a
// container backend offers no bash, the isolated pod runs it on its host.
func TestExposure(t *testing.T) {
	noBackend := func(string) (string, error) { return "", errors.New("not installed") }
	cfg := &config.Config{}
	if e := hands.Exposure(cfg, noBackend); e.Where != tools.BashNone || e.Warning == "" {
		t.Fatalf("standard profile: %+v", e)
	}
	cfg.Execution.Profile = "isolated-pod"
	if e := hands.Exposure(cfg, noBackend); e.Where != tools.BashHost {
		t.Fatalf("isolated pod: %+v", e)
	}
}

// The sandbox's bash always runs, in the workspace, without a process
// limit of its own (the pod's bounds it).
func TestSandboxBash(t *testing.T) {
	dir := t.TempDir()
	ex := hands.Sandbox(hands.SandboxOptions{Workspace: dir})
	list, err := ex.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"bash", "file_read", "file_write"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Fatalf("sandbox tools %v lack %s", names, want)
		}
	}
	for _, n := range names {
		if n == "web_search" {
			t.Fatal("the sandbox offers web_search; it belongs to the gateway, which holds the key")
		}
	}
}
