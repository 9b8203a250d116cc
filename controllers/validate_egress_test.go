package controllers

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// githubCredential is a GitHub token for git over HTTPS.
func githubCredential() garrav1alpha1.CredentialSpec {
	return garrav1alpha1.CredentialSpec{
		Name:      "github",
		SecretRef: garrav1alpha1.SecretKeySelector{Name: "gh", Key: "token"},
		Hosts:     []string{"github.com", "*.githubusercontent.com"},
		Methods:   []string{"GET", "POST"},
		Inject:    garrav1alpha1.CredentialInject{Scheme: garrav1alpha1.CredentialBasic, Username: "x-access-token"},
	}
}

func TestEgressProblem(t *testing.T) {
	gw := garrav1alpha1.EgressGateway
	tests := []struct {
		name   string
		egress garrav1alpha1.Egress
		hosts  []string
		creds  []garrav1alpha1.CredentialSpec
		change func(*garrav1alpha1.CredentialSpec)
		want   string // a substring of the problem; "" means none
	}{
		{name: "gateway with hosts and a credential", egress: gw, hosts: []string{"proxy.golang.org", "*.npmjs.org"}, creds: []garrav1alpha1.CredentialSpec{githubCredential()}},
		{name: "gateway with nothing: the proxy refuses everything", egress: gw},
		{name: "none without either", egress: garrav1alpha1.EgressNone},
		{name: "hosts with none", egress: garrav1alpha1.EgressNone, hosts: []string{"a.example"},
			want: "spec.orchestrators[ci].sandbox.egressHosts is used only with spec.orchestrators[ci].sandbox.egress: gateway (it is none)"},
		{name: "hosts with egress unset (none)", hosts: []string{"a.example"}, want: "(it is none)"},
		{name: "credentials with internet", egress: garrav1alpha1.EgressInternet, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			want: "spec.orchestrators[ci].credentials need spec.orchestrators[ci].sandbox.egress: gateway (it is internet)"},
		{name: "an IP address", egress: gw, hosts: []string{"10.0.0.1"}, want: "egressHosts[0]: \"10.0.0.1\" is an IP address"},
		{name: "an IPv6 address", egress: gw, hosts: []string{"ok.example", "[::1]"}, want: "egressHosts[1]: \"[::1]\" is an IP address"},
		{name: "a port", egress: gw, hosts: []string{"a.example:443"}, want: "no scheme, port or path"},
		{name: "a URL", egress: gw, hosts: []string{"https://a.example"}, want: "no scheme, port or path"},
		{name: "upper case", egress: gw, hosts: []string{"GitHub.com"}, want: "egressHosts[0]: \"GitHub.com\" is not a host name in lower case"},
		{name: "a wildcard inside", egress: gw, hosts: []string{"a.*.example"}, want: "the only wildcard is a leading \"*.\""},
		{name: "a bare star", egress: gw, hosts: []string{"*"}, want: "the only wildcard"},
		{name: "a wildcard of nothing", egress: gw, hosts: []string{"*."}, want: "is not a wildcard's domain"},
		{name: "a credential host is checked too", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Hosts = []string{"github.com", "*.*.example"} },
			want:   "spec.orchestrators[ci].credentials[0].hosts[1]"},
		{name: "a credential without hosts", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Hosts = nil }, want: "credentials[0].hosts is empty"},
		{name: "duplicate names", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential(), githubCredential()},
			want: "spec.orchestrators[ci].credentials[1].name: \"github\" is also the name of spec.orchestrators[ci].credentials[0]"},
		{name: "a name that is no label", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Name = "GitHub_Token" }, want: "credentials[0].name: \"GitHub_Token\" is not a lower-case DNS label"},
		{name: "a secretRef without a key", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.SecretRef.Key = "" }, want: "credentials[0].secretRef needs a name and a key"},
		{name: "an unknown method", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Methods = []string{"GET", "get"} }, want: "credentials[0].methods[1]: \"get\" is not one of GET"},
		{name: "a path prefix without a slash", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.PathPrefixes = []string{"/org/", "repo"} }, want: "credentials[0].pathPrefixes[1]: \"repo\" must start with /"},
		{name: "a path prefix with a query", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.PathPrefixes = []string{"/a?b"} }, want: "must be a path alone"},
		{name: "a path prefix with a dot segment", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.PathPrefixes = []string{"/org/../admin"} }, want: "must not hold . or .. segments"},
		{name: "a username with a line break", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Inject.Username = "a\nb" }, want: "or a control character"},
		{name: "another proxy header", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) {
				c.Inject = garrav1alpha1.CredentialInject{Header: "Proxy-Connection"}
			},
			want: "frames the request or speaks to the proxy"},
		{name: "Basic without a username", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Inject.Username = "" }, want: "credentials[0].inject.username is required with scheme Basic"},
		{name: "Basic with a colon in the username", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Inject.Username = "a:b" }, want: "may not contain ':'"},
		{name: "a username with Bearer", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Inject.Scheme = garrav1alpha1.CredentialBearer },
			want:   "credentials[0].inject.username is used only with scheme Basic (it is Bearer)"},
		{name: "a named header with None", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) {
				c.Inject = garrav1alpha1.CredentialInject{Header: "X-Api-Key", Scheme: garrav1alpha1.CredentialNone}
			}},
		{name: "a header that is no token", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Inject = garrav1alpha1.CredentialInject{Header: "X Api"} },
			want:   "credentials[0].inject.header: \"X Api\" is not an HTTP header name"},
		{name: "the proxy's own header", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) {
				c.Inject = garrav1alpha1.CredentialInject{Header: "Proxy-Authorization"}
			},
			want: "credentials[0].inject.header: Proxy-Authorization frames the request or speaks to the proxy"},
		{name: "an unknown scheme", egress: gw, creds: []garrav1alpha1.CredentialSpec{githubCredential()},
			change: func(c *garrav1alpha1.CredentialSpec) { c.Inject = garrav1alpha1.CredentialInject{Scheme: "Digest"} },
			want:   "credentials[0].inject.scheme: \"Digest\" is not Bearer, Basic or None"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			o := garrav1alpha1.OrchestratorSpec{Name: "ci"}
			o.Sandbox.Egress = tc.egress
			o.Sandbox.EgressHosts = tc.hosts
			o.Credentials = tc.creds
			if tc.change != nil {
				tc.change(&o.Credentials[0])
			}
			got := egressProblem(inlineMember(gs, o))
			switch {
			case tc.want == "" && got != "":
				t.Errorf("problem = %q, want none", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("problem = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

// An attached Orchestrator's problems name its own fields (spec...), and
// make it not accepted, never the server invalid.
func TestEgressProblemAttached(t *testing.T) {
	gs := testServer()
	gs.Spec.AllowedOrchestrators = &garrav1alpha1.AllowedOrchestrators{Namespaces: &garrav1alpha1.OrchestratorNamespaces{From: garrav1alpha1.NamespacesFromAll}}
	ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: "team"}}
	ob.Spec.ServerRef.Name = gs.Name
	ob.Spec.Credentials = []garrav1alpha1.CredentialSpec{githubCredential()}
	ob.Spec.Workspace.Size = gs.Spec.Gateway.Storage.Size
	att := decideAttachment(gs, ob, nil, "sbx:1", nil)
	if att.accepted || att.reason != garrav1alpha1.ReasonInvalidSpec ||
		!strings.Contains(att.message, "spec.credentials need spec.sandbox.egress: gateway") {
		t.Errorf("attachment = %+v", att)
	}
	ob.Spec.Sandbox.Egress = garrav1alpha1.EgressGateway
	if att := decideAttachment(gs, ob, nil, "sbx:1", nil); !att.accepted {
		t.Errorf("with egress gateway: %+v", att)
	}
	// An inline entry's problem makes the server invalid.
	gs.Spec.Orchestrators[0].Credentials = []garrav1alpha1.CredentialSpec{githubCredential()}
	if msg := invalidSpec(gs, "garra:1", "sbx:1"); !strings.Contains(msg, "spec.orchestrators[badgood].credentials need") {
		t.Errorf("invalidSpec = %q", msg)
	}
}
