package authn_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/garraia/garra/internal/authn"
	"github.com/garraia/garra/internal/authn/authntest"
	"github.com/garraia/garra/internal/errkinds"
)

// fakeReviewer answers a TokenReview from a table keyed by token, the way
// the API server fills status; it counts the reviews and records the
// audiences asked for.
type fakeReviewer struct {
	mu        sync.Mutex
	status    map[string]authv1.TokenReviewStatus
	fail      error
	calls     int
	audiences []string
}

func (f *fakeReviewer) Create(_ context.Context, r *authv1.TokenReview, _ metav1.CreateOptions) (*authv1.TokenReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.audiences = r.Spec.Audiences
	if f.fail != nil {
		return nil, f.fail
	}
	out := r.DeepCopy()
	out.Status = f.status[r.Spec.Token]
	return out, nil
}

func authenticated(user string, aud ...string) authv1.TokenReviewStatus {
	return authv1.TokenReviewStatus{Authenticated: true, User: authv1.UserInfo{Username: user}, Audiences: aud}
}

func TestServiceAccountsTable(t *testing.T) {
	const aud = "http://team-a-gateway.agents.svc:3888/mcp"
	// Real JWTs, so that the unverified exp and aud the refusals are
	// labelled from are what a projected token carries.
	is := authntest.NewIssuer(t)
	now := time.Now()
	tok := func(sub string, claims map[string]any) string {
		c := map[string]any{"iss": "https://kubernetes.default.svc", "sub": sub, "aud": []string{aud}, "exp": now.Add(time.Hour).Unix()}
		for k, v := range claims {
			c[k] = v
		}
		return is.Sign(nil, c)
	}
	good := tok("system:serviceaccount:agents:n8n", nil)
	other := tok("system:serviceaccount:agents:intruder", nil)
	otherAud := tok("system:serviceaccount:agents:n8n", map[string]any{"aud": []string{"https://kubernetes.default.svc"}})
	expired := tok("system:serviceaccount:agents:n8n", map[string]any{"exp": now.Add(-time.Minute).Unix()})
	deleted := tok("system:serviceaccount:agents:gone", nil)
	legacyNoAud := tok("system:serviceaccount:agents:n8n", map[string]any{"aud": nil})
	rev := &fakeReviewer{status: map[string]authv1.TokenReviewStatus{
		good:        authenticated("system:serviceaccount:agents:n8n", aud),
		other:       authenticated("system:serviceaccount:agents:intruder", aud),
		otherAud:    {Error: "[invalid bearer token, token audiences [\"https://kubernetes.default.svc\"] is invalid for the target audiences]"},
		expired:     {Error: "[invalid bearer token, square/go-jose/jwt: validation failed, token is expired (exp)]"},
		deleted:     {Error: "[invalid bearer token, service account agents/gone has been deleted]"},
		legacyNoAud: authenticated("system:serviceaccount:agents:n8n"),
	}}
	sa, err := authn.NewServiceAccounts(rev, []authn.ServiceAccountEntry{
		{Caller: "n8n", Namespace: "agents", Name: "n8n"},
		{Caller: "gone", Namespace: "agents", Name: "gone"},
	}, authn.ServiceAccountOptions{Audience: aud})
	if err != nil {
		t.Fatal(err)
	}
	chain := authn.Chain{&authn.Static{}, sa}
	cases := []struct {
		name, token, caller string
		kind                errkinds.Kind
		reviewed            bool
	}{
		{"its own token", good, "n8n", "", true},
		{"another ServiceAccount", other, "", errkinds.IdentityNotAllowed, true},
		{"another audience", otherAud, "", errkinds.WrongAudience, true},
		{"expired", expired, "", errkinds.TokenExpired, true},
		{"deleted ServiceAccount", deleted, "", errkinds.InvalidToken, true},
		{"a review without our audience", legacyNoAud, "", errkinds.WrongAudience, true},
		{"opaque: never sent to the API server", "static-guess-123", "", errkinds.Unauthorized, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := rev.calls
			id, err := chain.Authenticate(context.Background(), c.token)
			if got := kind(err); got != c.kind || id.Caller != c.caller {
				t.Fatalf("got %q %q (%v), want %q %q", id.Caller, got, err, c.caller, c.kind)
			}
			if (rev.calls > before) != c.reviewed {
				t.Fatalf("reviewed=%t, want %t", rev.calls > before, c.reviewed)
			}
			if c.reviewed && (len(rev.audiences) != 1 || rev.audiences[0] != aud) {
				t.Fatalf("review asked for audiences %v", rev.audiences)
			}
			if err != nil && strings.Contains(err.Error(), c.token) {
				t.Fatalf("refusal echoes the token: %v", err)
			}
			if c.caller != "" && (id.Mode != authn.ModeServiceAccount || id.Subject != "system:serviceaccount:agents:n8n" || id.Personal) {
				t.Fatalf("identity %+v", id)
			}
		})
	}
	if got := sa.Reviews(); got != 6 {
		t.Fatalf("%d reviews, want 6", got)
	}
}

// A verdict is reused for at most the bound and never beyond the token's
// own expiry; an API server error is not cached.
func TestServiceAccountsCache(t *testing.T) {
	const aud = "garra"
	is := authntest.NewIssuer(t)
	clock := time.Now()
	now := func() time.Time { return clock }
	long := is.Sign(nil, map[string]any{"sub": "x", "aud": aud, "exp": clock.Add(time.Hour).Unix()})
	short := is.Sign(nil, map[string]any{"sub": "x", "aud": aud, "exp": clock.Add(3 * time.Second).Unix()})
	user := authenticated("system:serviceaccount:ns:sa", aud)
	rev := &fakeReviewer{status: map[string]authv1.TokenReviewStatus{long: user, short: user}}
	var results []string
	sa, err := authn.NewServiceAccounts(rev, []authn.ServiceAccountEntry{{Caller: "o", Namespace: "ns", Name: "sa"}},
		authn.ServiceAccountOptions{Audience: aud, CacheFor: 10 * time.Second, Now: now, OnReview: func(r string) { results = append(results, r) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func(tok string) error { _, err := sa.Authenticate(ctx, tok); return err }
	for range 5 {
		if err := call(long); err != nil {
			t.Fatal(err)
		}
	}
	if sa.Reviews() != 1 {
		t.Fatalf("5 calls within the bound sent %d reviews, want 1", sa.Reviews())
	}
	clock = clock.Add(9 * time.Second)
	_ = call(long)
	if sa.Reviews() != 1 {
		t.Fatalf("at 9s: %d reviews", sa.Reviews())
	}
	clock = clock.Add(time.Second) // the bound: reviewed again
	_ = call(long)
	if sa.Reviews() != 2 {
		t.Fatalf("at 10s: %d reviews, want 2", sa.Reviews())
	}
	// The short token's verdict ends with the token, before the bound.
	clock = time.Now()
	_ = call(short)
	clock = clock.Add(2 * time.Second)
	_ = call(short)
	if sa.Reviews() != 3 {
		t.Fatalf("short token within its life: %d reviews, want 3", sa.Reviews())
	}
	clock = clock.Add(2 * time.Second) // past exp, well within the bound
	rev.status[short] = authv1.TokenReviewStatus{Error: "token is expired"}
	if err := call(short); authn.KindOf(err) != errkinds.TokenExpired {
		t.Fatalf("after its exp: %v", err)
	}
	if sa.Reviews() != 4 {
		t.Fatalf("after the short token's exp: %d reviews, want 4", sa.Reviews())
	}
	// No verdict is no cache entry.
	rev.fail = errors.New("connection refused")
	clock = clock.Add(time.Minute)
	for range 2 {
		if err := call(long); authn.KindOf(err) != errkinds.AuthUnavailable {
			t.Fatalf("API server down: %v", err)
		}
	}
	if sa.Reviews() != 6 {
		t.Fatalf("failed reviews: %d, want 6", sa.Reviews())
	}
	if got, want := strings.Join(results, ","), "ok,ok,ok,token_expired,auth_unavailable,auth_unavailable"; got != want {
		t.Fatalf("review results %v", results)
	}
	if _, err := authn.NewServiceAccounts(rev, nil, authn.ServiceAccountOptions{}); err == nil {
		t.Fatal("no audience accepted")
	}
}
