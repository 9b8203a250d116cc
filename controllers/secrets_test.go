package controllers

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestGeneratedSecrets(t *testing.T) {
	gs := testServer()
	tests := []struct {
		name       string
		build      func() (*corev1.Secret, error)
		wantName   string
		wantLabels map[string]string
		wantKeys   []string
	}{
		{"gateway", func() (*corev1.Secret, error) { return gatewaySecret(gs, rand.Reader) },
			"team-a-gateway", gatewayLabels(), []string{"api-key"}},
		{"orchestrator", func() (*corev1.Secret, error) {
			return orchestratorSecret(inlineMember(gs, gs.Spec.Orchestrators[0]), rand.Reader)
		},
			"team-a-orch-badgood", sandboxLabels("badgood"), []string{"sandbox-token", "token"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sec, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			if sec.Name != tc.wantName || sec.Namespace != "agents" {
				t.Errorf("name = %s/%s", sec.Namespace, sec.Name)
			}
			checkOwned(t, sec.ObjectMeta, tc.wantLabels, true)
			if sec.Immutable == nil || !*sec.Immutable {
				t.Error("generated Secret is not immutable")
			}
			if got := sortedKeys(sec.Data); !slices.Equal(got, tc.wantKeys) {
				t.Errorf("keys = %v, want %v", got, tc.wantKeys)
			}
			seen := map[string]bool{}
			for k, v := range sec.Data {
				raw, err := base64.RawURLEncoding.DecodeString(string(v))
				if err != nil || len(raw) != 32 {
					t.Errorf("%s = %q: not 32 bytes of base64url (%v)", k, v, err)
				}
				if seen[string(v)] {
					t.Errorf("%s repeats another key's value", k)
				}
				seen[string(v)] = true
			}
		})
	}
}

func TestNewCredentialUsesInjectedRandomness(t *testing.T) {
	got, err := newCredential(bytes.NewReader(bytes.Repeat([]byte{0xfb}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	if want := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := newCredential(bytes.NewReader(make([]byte, 31))); err == nil {
		t.Error("short entropy accepted")
	}
}

// The gateway's own credentials are files, the outside services' keys
// variables; together they are what the pod reads.
func TestGatewaySecretRefs(t *testing.T) {
	tests := []struct {
		name        string
		mutate      func(*garrav1alpha1.GarraServer)
		files, envs map[string]string
	}{
		{"generated key, LLM key, one BYO token", nil, map[string]string{
			"api-key":          "team-a-gateway/api-key",
			"badgood":          "team-a-orch-badgood/token",
			"badgood.sandbox":  "team-a-orch-badgood/sandbox-token",
			"n8n-prod":         "n8n-token/token",
			"n8n-prod.sandbox": "team-a-orch-n8n-prod/sandbox-token",
		}, map[string]string{
			"GARRA_LLM_API_KEY": "llm-keys/openrouter",
		}},
		{"BYO gateway key, telegram, ollama", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.APIKeySecretRef = &garrav1alpha1.SecretKeySelector{Name: "my-key", Key: "k"}
			gs.Spec.LLM = garrav1alpha1.LLMSpec{Provider: garrav1alpha1.ProviderOllama}
			gs.Spec.Channels = &garrav1alpha1.ChannelsSpec{Telegram: &garrav1alpha1.TelegramSpec{
				BotTokenSecretRef: &garrav1alpha1.SecretKeySelector{Name: "tg", Key: "bot"}}}
			gs.Spec.Orchestrators = nil
		}, map[string]string{
			"api-key": "my-key/k",
		}, map[string]string{
			"TELEGRAM_BOT_TOKEN": "tg/bot",
		}},
		{"web search key", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.WebSearch = &garrav1alpha1.WebSearchSpec{APIKeySecretRef: garrav1alpha1.SecretKeySelector{Name: "brave", Key: "api"}}
			gs.Spec.Orchestrators = nil
		}, map[string]string{
			"api-key": "team-a-gateway/api-key",
		}, map[string]string{
			"GARRA_LLM_API_KEY": "llm-keys/openrouter",
			"BRAVE_API_KEY":     "brave/api",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			if tc.mutate != nil {
				tc.mutate(gs)
			}
			files, envs := map[string]string{}, map[string]string{}
			owner := gatewayAPIKeyRef(gs).String()
			files["api-key"] = owner
			all := []string{owner}
			for _, er := range gatewayEnvRefs(gs) {
				envs[er.Env] = er.Ref.String()
				all = append(all, er.Ref.String())
			}
			var pod []string
			for _, r := range gatewayPodRefs(gs, inlineMembers(gs)) {
				pod = append(pod, r.String())
			}
			if !slices.Equal(pod, all) {
				t.Errorf("gatewayPodRefs = %v, want the owner key then the variables %v", pod, all)
			}
			for _, o := range gs.Spec.Orchestrators {
				files[o.Name] = orchTokenRef(inlineMember(gs, o)).String()
				files[o.Name+".sandbox"] = sandboxTokenRef(inlineMember(gs, o)).String()
				all = append(all, files[o.Name], files[o.Name+".sandbox"])
			}
			eqMap(t, "file refs", files, tc.files)
			eqMap(t, "env refs", envs, tc.envs)
			var got []string
			for _, r := range gatewaySecretRefs(gs, inlineMembers(gs)) {
				got = append(got, r.String())
			}
			if !slices.Equal(got, all) {
				t.Errorf("gatewaySecretRefs = %v, want the pod's then each orchestrator's tokens %v", got, all)
			}
		})
	}
	if got := ReferencedSecretNames(testServer()); !slices.Equal(got, []string{"llm-keys", "n8n-token"}) {
		t.Errorf("ReferencedSecretNames = %v", got)
	}
	withSearch := testServer()
	withSearch.Spec.Gateway.WebSearch = &garrav1alpha1.WebSearchSpec{APIKeySecretRef: garrav1alpha1.SecretKeySelector{Name: "brave", Key: "api"}}
	if got := ReferencedSecretNames(withSearch); !slices.Equal(got, []string{"brave", "llm-keys", "n8n-token"}) {
		t.Errorf("ReferencedSecretNames with web search = %v (a key change must roll the gateway)", got)
	}
}

func TestInputsHash(t *testing.T) {
	refs := []secretRef{{Secret: "a", Key: "k", Field: ""}, {Secret: "b", Key: "k", Field: ""}}
	base := inputsHash(refs, map[string][]byte{"a/k": []byte("1"), "b/k": []byte("2")})
	for name, h := range map[string]string{
		"secret changed":  inputsHash(refs, map[string][]byte{"a/k": []byte("1"), "b/k": []byte("3")}),
		"secret missing":  inputsHash(refs, map[string][]byte{"a/k": []byte("1")}),
		"boundary moved":  inputsHash(refs, map[string][]byte{"a/k": []byte("12"), "b/k": []byte("")}),
		"another ref set": inputsHash(refs[:1], map[string][]byte{"a/k": []byte("1"), "b/k": []byte("2")}),
	} {
		if h == base {
			t.Errorf("%s: hash unchanged", name)
		}
	}
	unrelated := inputsHash(refs, map[string][]byte{"a/k": []byte("1"), "b/k": []byte("2"), "c/k": []byte("x")})
	if unrelated != base {
		t.Error("a key no pod reads changed the hash")
	}
}

// A missing key counts on the server's GatewayReady when the server or an
// inline entry names it, never when only an attached Orchestrator does,
// whatever namespace that Orchestrator is in.
func TestServerMissing(t *testing.T) {
	gs := testServer()
	team := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: "team", UID: "uid-ci"}}
	team.Spec.TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "ci-token", Key: "token"}
	team.Spec.Credentials = []garrav1alpha1.CredentialSpec{{Name: "tickets", SecretRef: garrav1alpha1.SecretKeySelector{Name: "tickets", Key: "api-key"},
		Hosts: []string{"tickets.example.com"}}}
	team.Spec.Sandbox.Egress = garrav1alpha1.EgressGateway
	// An Orchestrator in the server's own namespace (from: Same): its refs
	// carry no namespace, as the server's do.
	same := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Name: "ops", Namespace: gs.Namespace, UID: "uid-ops"}}
	same.Spec.TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "ops-token", Key: "token"}
	// One naming the very key an inline entry names.
	shared := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: gs.Namespace, UID: "uid-copy"}}
	shared.Spec.TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "n8n-token", Key: "token"}
	ms := append(inlineMembers(gs), attachedMember(gs, team), attachedMember(gs, same), attachedMember(gs, shared))

	// missing is what readSecrets records when the Secrets named are absent.
	missing := func(absent ...string) []secretRef {
		var out []secretRef
		for _, ref := range gatewaySecretRefs(gs, ms) {
			if slices.Contains(absent, ref.Secret) {
				out = append(out, ref)
			}
		}
		return out
	}
	tests := []struct {
		name   string
		absent []string
		want   []string // fields counted on the server
	}{
		{"nothing missing", nil, nil},
		{"the LLM key", []string{"llm-keys"}, []string{"spec.llm.apiKeySecretRef"}},
		{"an inline entry's token", []string{"n8n-token"}, []string{"spec.orchestrators[n8n-prod].tokenSecretRef"}},
		{"a team's token, in its namespace", []string{"ci-token"}, nil},
		{"a team's credential", []string{"tickets"}, nil},
		{"a token of an Orchestrator in the server's namespace", []string{"ops-token"}, nil},
		{"attached and server keys together", []string{"ci-token", "ops-token", "llm-keys"}, []string{"spec.llm.apiKeySecretRef"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := missing(tc.absent...)
			if len(tc.absent) > 0 && len(in) == 0 {
				t.Fatalf("the fixture names none of %v", tc.absent)
			}
			var got []string
			for _, ref := range serverMissing(gs, ms, in) {
				got = append(got, ref.Field)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("counted on the server: %q, want %q", got, tc.want)
			}
		})
	}
	// The inline entry's key, named by an attached one too, counts on the
	// server once, under the server's field.
	in := missing("n8n-token")
	if len(in) != 2 {
		t.Fatalf("readSecrets records %d refs for a key two members name, want 2: %+v", len(in), in)
	}
	if got := serverMissing(gs, ms, in); len(got) != 1 || got[0].Field != "spec.orchestrators[n8n-prod].tokenSecretRef" {
		t.Errorf("shared key: %+v", got)
	}
}
