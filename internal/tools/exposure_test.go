package tools

import (
	"errors"
	"strings"
	"testing"
)

// lookPathWith returns a LookPath that finds exactly the named binaries.
func lookPathWith(installed ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, n := range installed {
			if n == name {
				return "/usr/bin/" + name, nil
			}
		}
		return "", errors.New("executable file not found in $PATH")
	}
}

// Every row of the bash exposure table, cell by cell.
func TestExposureTable(t *testing.T) {
	both := lookPathWith("docker", "podman")
	nothing := lookPathWith()
	tests := []struct {
		row  string
		in   ExposureInput
		want Where
		back string
	}{
		// Row 1: standard — mode off (default), backend ssh, allowlist
		// without bash, no backend, or docker/podman binary missing.
		{"standard/mode off", ExposureInput{Profile: "standard", Mode: "off", Backend: "docker", LookPath: both}, BashNone, ""},
		{"standard/defaults (empty profile and mode)", ExposureInput{LookPath: both}, BashNone, ""},
		{"standard/backend ssh", ExposureInput{Profile: "standard", Mode: "all", Backend: "ssh", LookPath: both}, BashNone, ""},
		{"standard/allowlist without bash", ExposureInput{Profile: "standard", Mode: "allowlist", Backend: "docker", Allowlist: []string{"file_write"}, LookPath: both}, BashNone, ""},
		{"standard/empty allowlist", ExposureInput{Profile: "standard", Mode: "allowlist", Backend: "docker", LookPath: both}, BashNone, ""},
		{"standard/no backend", ExposureInput{Profile: "standard", Mode: "all", Backend: "", LookPath: both}, BashNone, ""},
		{"standard/docker binary missing", ExposureInput{Profile: "standard", Mode: "all", Backend: "docker", LookPath: nothing}, BashNone, ""},
		{"standard/podman binary missing", ExposureInput{Profile: "standard", Mode: "all", Backend: "podman", LookPath: lookPathWith("docker")}, BashNone, ""},
		{"standard/allowlist with bash, binary missing", ExposureInput{Profile: "standard", Mode: "allowlist", Backend: "docker", Allowlist: []string{"bash"}, LookPath: nothing}, BashNone, ""},
		{"standard/bash elevated", ExposureInput{Profile: "standard", Mode: "all", Backend: "docker", Elevated: []string{"bash"}, LookPath: both}, BashNone, ""},
		{"standard/bash elevated, any case", ExposureInput{Profile: "standard", Mode: "all", Backend: "podman", Elevated: []string{"web_fetch", " BASH "}, LookPath: both}, BashNone, ""},
		{"standard/mode off, bash elevated", ExposureInput{Profile: "standard", Mode: "off", Backend: "docker", Elevated: []string{"bash"}, LookPath: both}, BashNone, ""},
		// Row 2: standard — mode all (or allowlist with bash) + docker or
		// podman, binary present.
		{"standard/all+docker", ExposureInput{Profile: "standard", Mode: "all", Backend: "docker", LookPath: both}, BashContainer, "docker"},
		{"standard/all+podman", ExposureInput{Profile: "standard", Mode: "all", Backend: "podman", LookPath: lookPathWith("podman")}, BashContainer, "podman"},
		{"standard/allowlist with bash+docker", ExposureInput{Profile: "standard", Mode: "allowlist", Backend: "docker", Allowlist: []string{"file_read", "bash"}, LookPath: both}, BashContainer, "docker"},
		{"standard/allowlist with bash+podman", ExposureInput{Profile: "standard", Mode: "allowlist", Backend: "podman", Allowlist: []string{" Bash "}, LookPath: both}, BashContainer, "podman"},
		{"standard/all+docker, another tool elevated", ExposureInput{Profile: "standard", Mode: "all", Backend: "docker", Elevated: []string{"web_fetch"}, LookPath: both}, BashContainer, "docker"},
		{"standard/allowlist with bash wins over elevated", ExposureInput{Profile: "standard", Mode: "allowlist", Backend: "docker", Allowlist: []string{"bash"}, Elevated: []string{"bash"}, LookPath: both}, BashContainer, "docker"},
		// Row 3: isolated-pod — mode off, or bash not required to be
		// sandboxed (elevated, allowlist without it): on the pod host.
		{"isolated-pod/bash elevated", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "docker", Elevated: []string{"bash"}, LookPath: both}, BashHost, ""},
		{"isolated-pod/bash elevated, backend ssh", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "ssh", Elevated: []string{"bash"}, LookPath: nothing}, BashHost, ""},
		{"isolated-pod/bash elevated, binary missing", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "docker", Elevated: []string{"Bash"}, LookPath: nothing}, BashHost, ""},
		{"isolated-pod/bash elevated, no backend", ExposureInput{Profile: "isolated-pod", Mode: "all", Elevated: []string{"bash"}, LookPath: nothing}, BashHost, ""},
		{"isolated-pod/mode off, bash elevated", ExposureInput{Profile: "isolated-pod", Mode: "off", Elevated: []string{"bash"}, LookPath: nothing}, BashHost, ""},
		{"isolated-pod/mode off", ExposureInput{Profile: "isolated-pod", Mode: "off", Backend: "docker", LookPath: nothing}, BashHost, ""},
		{"isolated-pod/mode empty", ExposureInput{Profile: "isolated-pod", LookPath: nothing}, BashHost, ""},
		{"isolated-pod/allowlist without bash", ExposureInput{Profile: "isolated-pod", Mode: "allowlist", Backend: "ssh", Allowlist: []string{"web_fetch"}, LookPath: nothing}, BashHost, ""},
		// Row 4: isolated-pod — mode all (or allowlist with bash) + usable
		// docker/podman: in the sandbox.
		{"isolated-pod/all+docker", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "docker", LookPath: both}, BashContainer, "docker"},
		{"isolated-pod/all+podman", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "podman", LookPath: both}, BashContainer, "podman"},
		{"isolated-pod/allowlist with bash+podman", ExposureInput{Profile: "isolated-pod", Mode: "allowlist", Backend: "podman", Allowlist: []string{"bash"}, LookPath: both}, BashContainer, "podman"},
		{"isolated-pod/all+docker, another tool elevated", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "docker", Elevated: []string{"web_fetch"}, LookPath: both}, BashContainer, "docker"},
		{"isolated-pod/allowlist with bash wins over elevated", ExposureInput{Profile: "isolated-pod", Mode: "allowlist", Backend: "podman", Allowlist: []string{"bash"}, Elevated: []string{"bash"}, LookPath: both}, BashContainer, "podman"},
		// Row 5: isolated-pod — sandbox required for bash but unusable
		// (ssh, no backend, binary missing): not registered.
		{"isolated-pod/all+ssh", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "ssh", LookPath: both}, BashNone, ""},
		{"isolated-pod/all+no backend", ExposureInput{Profile: "isolated-pod", Mode: "all", LookPath: both}, BashNone, ""},
		{"isolated-pod/all+docker missing", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "docker", LookPath: nothing}, BashNone, ""},
		{"isolated-pod/allowlist with bash+podman missing", ExposureInput{Profile: "isolated-pod", Mode: "allowlist", Backend: "podman", Allowlist: []string{"bash"}, LookPath: lookPathWith("docker")}, BashNone, ""},
		{"isolated-pod/all+ssh, another tool elevated", ExposureInput{Profile: "isolated-pod", Mode: "all", Backend: "ssh", Elevated: []string{"web_fetch"}, LookPath: both}, BashNone, ""},
		// Misconfiguration: fail-closed.
		{"unknown profile", ExposureInput{Profile: "laptop", Mode: "off", LookPath: both}, BashNone, ""},
		{"unknown mode", ExposureInput{Profile: "isolated-pod", Mode: "elevated", Backend: "docker", LookPath: both}, BashNone, ""},
		{"unknown backend", ExposureInput{Profile: "standard", Mode: "all", Backend: "lxc", LookPath: lookPathWith("lxc")}, BashNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.row, func(t *testing.T) {
			got := DecideBash(tt.in)
			if got.Where != tt.want || got.Backend != tt.back {
				t.Fatalf("DecideBash = {%v %q}, want {%v %q}", got.Where, got.Backend, tt.want, tt.back)
			}
			if (got.Where == BashNone) != (got.Warning != "") {
				t.Fatalf("warning %q with Where=%v: want a warning exactly when bash is absent", got.Warning, got.Where)
			}
			if got.Where != BashNone {
				return
			}
			if !strings.HasPrefix(got.Warning, "bash is not registered: ") {
				t.Errorf("warning %q does not say bash is absent", got.Warning)
			}
			if strings.Contains(tt.row, "isolated-pod/") {
				// The fix for a broken sandbox in a pod: a usable backend,
				// or running on the pod host.
				for _, want := range []string{"agent.sandbox.backend: docker or podman", "agent.sandbox.mode: off"} {
					if !strings.Contains(got.Warning, want) {
						t.Errorf("warning %q does not name the fix %q", got.Warning, want)
					}
				}
				return
			}
			// The spec's Migration text: contain it, or isolated-pod only in
			// a disposable pod.
			for _, want := range []string{"agent.sandbox.mode: all", "agent.sandbox.backend: docker", "podman", "execution.profile: isolated-pod", "disposable pod"} {
				if !strings.Contains(got.Warning, want) {
					t.Errorf("warning %q does not name the fix %q", got.Warning, want)
				}
			}
		})
	}
}

// The profile is never inferred: without an explicit isolated-pod, no
// host bash, whatever the machine has installed.
func TestExposureNeverHostOnStandard(t *testing.T) {
	for _, mode := range []string{"", "off", "all", "allowlist"} {
		for _, backend := range []string{"", "docker", "podman", "ssh"} {
			for _, elevated := range [][]string{nil, {"bash"}} {
				got := DecideBash(ExposureInput{Mode: mode, Backend: backend, Allowlist: []string{"bash"}, Elevated: elevated, LookPath: lookPathWith("docker", "podman", "ssh")})
				if got.Where == BashHost {
					t.Errorf("mode %q backend %q elevated %v: bash on the host in the standard profile", mode, backend, elevated)
				}
			}
		}
	}
}

func TestExposureWarningNamesTheCause(t *testing.T) {
	cases := map[string]ExposureInput{
		"mode is off":                    {Mode: "off"},
		"does not include bash":          {Mode: "allowlist", Backend: "docker", LookPath: lookPathWith("docker")},
		"docker binary is not installed": {Mode: "all", Backend: "docker", LookPath: lookPathWith()},
		"ssh would send commands":        {Mode: "all", Backend: "ssh"},
		"no backend":                     {Mode: "all"},
		"elevated lists bash":            {Mode: "all", Backend: "docker", Elevated: []string{"bash"}, LookPath: lookPathWith("docker")},
	}
	for want, in := range cases {
		if got := DecideBash(in).Warning; !strings.Contains(got, want) {
			t.Errorf("warning %q does not contain %q", got, want)
		}
	}
}
