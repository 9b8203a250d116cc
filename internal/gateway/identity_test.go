package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/authn"
	"github.com/garraia/garra/internal/authn/authntest"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/gateway"
)

const (
	audAlpha = "garra-alpha"
	audBeta  = "garra-beta"
	saAud    = "http://team-a-gateway.agents.svc:3888/mcp"
)

// identityConfig has one orchestrator per mode: two OIDC subjects of one
// issuer under two audiences, a ServiceAccount, a static token.
func identityConfig(issuer string) string {
	return "gateway:\n  api_key: " + ownerKey + `
  auth: {audience: '` + saAud + `'}
  metrics: {orchestrator_labels: true}
  mcp_http:
    enabled: true
    orchestrators:
      - {name: alpha, tools: [status], auth: {oidc: {issuer: '` + issuer + `', audience: ` + audAlpha + `, subject: alpha-bot}}}
      - {name: beta, tools: [status, list_chats], auth: {oidc: {issuer: '` + issuer + `', audience: ` + audBeta + `, subject: beta-bot}}}
      - {name: robot, tools: [status, read_history], auth: {service_account: {namespace: agents, name: robot}}}
      - {name: legacy, key_env: LEGACY_KEY, tools: [pair_status]}
`
}

// reviewerFunc is a TokenReview API answering from a table.
type tableReviewer struct {
	mu     sync.Mutex
	users  map[string]string // token → username
	counts int
}

func (r *tableReviewer) Create(_ context.Context, tr *authv1.TokenReview, _ metav1.CreateOptions) (*authv1.TokenReview, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts++
	out := tr.DeepCopy()
	if u, ok := r.users[tr.Spec.Token]; ok {
		out.Status = authv1.TokenReviewStatus{Authenticated: true, User: authv1.UserInfo{Username: u}, Audiences: tr.Spec.Audiences}
	}
	return out, nil
}

func startIdentity(t *testing.T, is *authntest.Issuer, rev authn.Reviewer) (*harness, *audit.Log) {
	t.Helper()
	alog := audit.New(audit.Options{Path: filepath.Join(t.TempDir(), "audit.jsonl")})
	h := start(t, identityConfig(is.URL), map[string]string{"LEGACY_KEY": "legacy-token-0123456789", "KUBERNETES_SERVICE_HOST": "10.0.0.1"},
		func(o *gateway.Options) { o.Reviewer = rev; o.Audit = alog })
	return h, alog
}

// A spec-following go-sdk client with no token is told where the metadata
// is, reads it, gets a token from the issuer it names (client
// credentials) and connects with exactly its orchestrator's tools.
func TestGoSDKClientDiscoversTheIssuerAndConnects(t *testing.T) {
	is := authntest.NewIssuer(t)
	is.Register("alpha-bot", authntest.Client{Secret: "alpha-secret", Audience: audAlpha})
	is.Register("beta-bot", authntest.Client{Secret: "beta-secret", Audience: audBeta})
	h, _ := startIdentity(t, is, &tableReviewer{})

	By := t.Log
	By("no token: 401 with resource_metadata")
	req, _ := http.NewRequest(http.MethodPost, h.url+"/mcp", strings.NewReader(toolsList))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || resp.StatusCode != 401 || len(chs) != 1 || chs[0].Scheme != "bearer" {
		t.Fatalf("status %d, challenges %+v (%v)", resp.StatusCode, chs, err)
	}
	metaURL := chs[0].Params["resource_metadata"]
	if metaURL != h.url+"/.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("resource_metadata %q", metaURL)
	}
	By("the metadata names this resource and the issuer")
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), metaURL, h.url+"/mcp", http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != is.URL {
		t.Fatalf("metadata %+v", prm)
	}
	status, body := request(t, http.MethodGet, h.url+"/.well-known/oauth-protected-resource", "", "", nil)
	if status != 200 || !strings.Contains(body, `"authorization_servers":["`+is.URL+`"]`) {
		t.Fatalf("root metadata %d %s", status, body)
	}

	for _, c := range []struct{ id, secret, tools string }{
		{"alpha-bot", "alpha-secret", "garra_status"},
		{"beta-bot", "beta-secret", "garra_list_chats garra_status"},
	} {
		By("the go-sdk client as " + c.id)
		before := is.Tokens.Load()
		oh, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: c.id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: c.secret}, Issuer: is.URL},
		})
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "n8n", Version: "0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", OAuthHandler: oh}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNames(t, cs); got != c.tools {
			t.Fatalf("%s sees %q, want %q", c.id, got, c.tools)
		}
		_ = cs.Close()
		if is.Tokens.Load() != before+1 {
			t.Fatalf("the client got %d tokens from the issuer, want 1", is.Tokens.Load()-before)
		}
		// The issuer rotates its key between the two clients: the next
		// token is signed by a key the gateway has not fetched yet.
		is.Rotate(t, true)
	}
}

// Every validation path over HTTP: the right tokens admitted as their
// orchestrator, each bad one refused with its kind in the body, the
// metrics and the audit, and never echoed.
func TestIdentityRefusalsOverHTTP(t *testing.T) {
	is := authntest.NewIssuer(t)
	other := authntest.NewIssuer(t)
	rev := &tableReviewer{}
	h, alog := startIdentity(t, is, rev)
	now := time.Now()
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"sub": "alpha-bot", "aud": audAlpha, "exp": now.Add(time.Minute).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	robot := other.Sign(nil, map[string]any{"iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:agents:robot", "aud": saAud})
	intruder := other.Sign(nil, map[string]any{"iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:agents:intruder", "aud": saAud})
	rev.users = map[string]string{robot: "system:serviceaccount:agents:robot", intruder: "system:serviceaccount:agents:intruder"}

	cases := []struct {
		name, token string
		status      int
		kind        errkinds.Kind // body error; "" = admitted
		tools       string
	}{
		{"alpha", is.Sign(nil, claims(nil)), 200, "", "garra_status"},
		{"beta", is.Sign(nil, claims(map[string]any{"sub": "beta-bot", "aud": audBeta})), 200, "", "garra_list_chats garra_status"},
		{"ServiceAccount", robot, 200, "", "garra_read_history garra_status"},
		{"static token", "legacy-token-0123456789", 200, "", "garra_pair_status"},
		{"expired", is.Sign(nil, claims(map[string]any{"exp": now.Add(-time.Hour).Unix()})), 401, errkinds.TokenExpired, ""},
		{"wrong audience", is.Sign(nil, claims(map[string]any{"aud": "someone-else"})), 401, errkinds.WrongAudience, ""},
		{"wrong iss", other.Sign(nil, claims(map[string]any{"iss": other.URL})), 401, errkinds.InvalidToken, ""},
		{"alg none", authntest.Unsigned(claims(map[string]any{"iss": is.URL})), 401, errkinds.InvalidToken, ""},
		{"HS256 with the public key", authntest.HS256(is.PublicKeyPEM(), claims(map[string]any{"iss": is.URL})), 401, errkinds.InvalidToken, ""},
		{"another orchestrator's subject", is.Sign(nil, claims(map[string]any{"sub": "beta-bot"})), 401, errkinds.IdentityNotAllowed, ""},
		{"another ServiceAccount", intruder, 401, errkinds.IdentityNotAllowed, ""},
		{"unknown opaque", "guess-guess-guess", 401, "unauthorized", ""},
	}
	t.Run("challenge", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/mcp", strings.NewReader(toolsList))
		req.Header.Set("Authorization", "Bearer "+cases[4].token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := `Bearer realm="garra", resource_metadata="` + h.url + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`
		if got := resp.Header.Get("WWW-Authenticate"); got != want {
			t.Fatalf("WWW-Authenticate %q, want %q", got, want)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, h.url, c.token, toolsList, nil)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			if strings.Contains(body, c.token) || strings.Contains(h.logs.String(), c.token) {
				t.Fatal("the token is echoed in the response or the log")
			}
			if c.kind != "" {
				var e map[string]string
				if err := json.Unmarshal([]byte(body), &e); err != nil || e["error"] != string(c.kind) {
					t.Fatalf("body %s, want error %q", body, c.kind)
				}
				return
			}
			if got := toolNames(t, client(t, h.url, c.token)); got != c.tools {
				t.Fatalf("tools %q, want %q", got, c.tools)
			}
		})
	}
	m := metricsText(t, h.url)
	for _, want := range []string{
		`garra_mcp_refusals_total{kind="token_expired"} 2`, `garra_mcp_refusals_total{kind="wrong_audience"} 1`,
		`garra_mcp_refusals_total{kind="invalid_token"} 3`, `garra_mcp_refusals_total{kind="identity_not_allowed"} 2`,
		`garra_mcp_authentications_total{auth="oidc",caller="alpha"}`, `garra_mcp_authentications_total{auth="serviceAccount",caller="robot"}`,
		`garra_mcp_authentications_total{auth="token",caller="legacy"}`, `garra_tokenreviews_total{result="ok"} 1`,
		`garra_tokenreviews_total{result="identity_not_allowed"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grep(m, "garra_"))
		}
	}
	// Three requests by the ServiceAccount (one POST, a connect, a list),
	// one refused intruder and one JWT of an unconfigured issuer: three
	// reviews, the rest cached; alg none is never sent.
	if rev.counts != 3 {
		t.Errorf("%d TokenReviews, want 3", rev.counts)
	}

	t.Log("the audit names the mode and the identity, the OIDC one pseudonymized")
	cs := client(t, h.url, is.Sign(nil, claims(nil)))
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_status"}); err != nil {
		t.Fatal(err)
	}
	rcs := client(t, h.url, robot)
	if _, err := rcs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_status"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(alog.Path())
	if err != nil {
		t.Fatal(err)
	}
	p := alog.Pseudonym(is.URL + "#alpha-bot")
	for _, want := range []string{
		`"caller":"alpha","auth":"oidc","identity":"` + p + `","tool":"garra_status","outcome":"ok"`,
		`"caller":"robot","auth":"serviceAccount","identity":"system:serviceaccount:agents:robot","tool":"garra_status","outcome":"ok"`,
		`"outcome":"refused","error":{"kind":"wrong_audience"}`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("audit lacks %s:\n%s", want, raw)
		}
	}
	if strings.Contains(string(raw), "alpha-bot") {
		t.Errorf("the OIDC subject is in the audit in clear:\n%s", raw)
	}
}

// Without an injected reviewer the gateway builds a TokenReview client
// from gateway.auth.kubeconfig: here an API server double that answers
// the POST client-go sends. Without any API server the serviceAccount
// orchestrator is disabled, never open.
func TestServiceAccountReviewerFromKubeconfig(t *testing.T) {
	is := authntest.NewIssuer(t)
	robot := is.Sign(nil, map[string]any{"iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:agents:robot", "aud": saAud})
	var mu sync.Mutex
	var paths []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		// client-go sends protobuf; the universal deserializer reads it.
		raw, _ := io.ReadAll(r.Body)
		obj, _, err := kscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		tr, ok := obj.(*authv1.TokenReview)
		if err != nil || !ok {
			http.Error(w, fmt.Sprint(err), http.StatusBadRequest)
			return
		}
		tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenReview"
		if tr.Spec.Token == robot && slices.Equal(tr.Spec.Audiences, []string{saAud}) {
			tr.Status = authv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences,
				User: authv1.UserInfo{Username: "system:serviceaccount:agents:robot"}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(tr)
	}))
	defer api.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: '"+api.URL+"'}}]\n"+
		"users: [{name: u, user: {token: gateway-sa-token}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withKubeconfig := strings.Replace(identityConfig(is.URL), "auth: {audience: '"+saAud+"'}", "auth: {audience: '"+saAud+"', kubeconfig: '"+kc+"'}", 1)
	h := start(t, withKubeconfig, map[string]string{"LEGACY_KEY": "legacy-token-0123456789"})
	if status, body := post(t, h.url, robot, toolsList, nil); status != 200 {
		t.Fatalf("%d %s\n%s", status, body, h.logs.String())
	}
	if got := toolNames(t, client(t, h.url, robot)); got != "garra_read_history garra_status" {
		t.Fatalf("robot sees %q", got)
	}
	mu.Lock()
	if len(paths) != 1 || paths[0] != "POST /apis/authentication.k8s.io/v1/tokenreviews" {
		t.Fatalf("API server saw %v", paths)
	}
	mu.Unlock()

	off := start(t, identityConfig(is.URL), map[string]string{"LEGACY_KEY": "legacy-token-0123456789"})
	if status, body := post(t, off.url, robot, toolsList, nil); status != 401 || strings.Contains(body, "garra_status") {
		t.Fatalf("off-cluster without an API server: %d %s", status, body)
	}
	if !strings.Contains(off.logs.String(), `msg="orchestrator disabled: no API server to review its ServiceAccount tokens" orchestrator=robot`) {
		t.Fatalf("no warning:\n%s", off.logs.String())
	}
	if got := toolNames(t, client(t, off.url, "legacy-token-0123456789")); got != "garra_pair_status" {
		t.Fatalf("the other orchestrators keep working: %q", got)
	}
}
