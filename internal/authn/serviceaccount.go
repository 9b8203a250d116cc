package authn

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
)

// ServiceAccountEntry is one orchestrator that authenticates with a token
// of the ServiceAccount Namespace/Name.
type ServiceAccountEntry struct {
	Caller    string
	Namespace string
	Name      string
}

// Username is the user a TokenReview reports for the entry's tokens.
func (e ServiceAccountEntry) Username() string {
	return config.ServiceAccountUsername(e.Namespace, e.Name)
}

// Reviewer creates TokenReviews: client-go's
// AuthenticationV1().TokenReviews() satisfies it.
type Reviewer interface {
	Create(ctx context.Context, review *authv1.TokenReview, opts metav1.CreateOptions) (*authv1.TokenReview, error)
}

// DefaultReviewCache is how long a TokenReview's verdict is reused. It is
// what a deleted ServiceAccount or a revoked token keeps working for, so
// it is short; a token's own expiry cuts it shorter.
const DefaultReviewCache = 10 * time.Second

// maxCached bounds the cache: beyond it, expired verdicts are dropped, and
// if that frees nothing the cache starts over (a flood of distinct tokens
// must not grow memory).
const maxCached = 4096

// ServiceAccounts admits projected ServiceAccount tokens: the API server
// reviews each one for Audience, and the reviewed user must be exactly an
// entry's system:serviceaccount:NS:NAME.
type ServiceAccounts struct {
	reviewer Reviewer
	audience string
	bound    time.Duration
	now      func() time.Time
	byUser   map[string]string
	reviews  atomic.Int64
	onReview func(result string)

	mu    sync.Mutex
	cache map[[sha256.Size]byte]verdict
}

type verdict struct {
	id      Identity
	err     error
	expires time.Time
}

// ServiceAccountOptions are NewServiceAccounts's knobs.
type ServiceAccountOptions struct {
	// Audience the tokens must be issued for (the gateway's endpoint URL
	// by default in the operator). Required.
	Audience string
	// CacheFor bounds how long a verdict is reused; 0 = DefaultReviewCache.
	CacheFor time.Duration
	Now      func() time.Time
	// OnReview is told the result kind of each TokenReview sent ("ok" or
	// a refusal kind), for metrics.
	OnReview func(result string)
}

// NewServiceAccounts builds the authenticator of entries.
func NewServiceAccounts(r Reviewer, entries []ServiceAccountEntry, o ServiceAccountOptions) (*ServiceAccounts, error) {
	if r == nil {
		return nil, fmt.Errorf("serviceAccount authentication: no API server client")
	}
	if o.Audience == "" {
		return nil, fmt.Errorf("serviceAccount authentication: empty audience")
	}
	if o.CacheFor <= 0 {
		o.CacheFor = DefaultReviewCache
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &ServiceAccounts{reviewer: r, audience: o.Audience, bound: o.CacheFor, now: o.Now,
		byUser: map[string]string{}, onReview: o.OnReview, cache: map[[sha256.Size]byte]verdict{}}
	for _, e := range entries {
		s.byUser[e.Username()] = e.Caller
	}
	return s, nil
}

// Reviews is how many TokenReviews were sent.
func (s *ServiceAccounts) Reviews() int64 { return s.reviews.Load() }

// Authenticate implements Authenticator. Only signed JWTs are sent for
// review: an opaque or unsigned token cannot be a ServiceAccount's, and
// guessing must not turn into API server load.
func (s *ServiceAccounts) Authenticate(ctx context.Context, token string) (Identity, error) {
	u, ok := peek(token)
	if !ok {
		return Identity{}, errSkip
	}
	key := sha256.Sum256([]byte(token))
	now := s.now()
	s.mu.Lock()
	v, ok := s.cache[key]
	s.mu.Unlock()
	if ok && now.Before(v.expires) {
		return v.id, v.err
	}
	id, err := s.review(ctx, token, u, now)
	if err != nil && KindOf(err) == errkinds.AuthUnavailable {
		return Identity{}, err // no verdict: ask again next time
	}
	expires := now.Add(s.bound)
	if u.Expiry != nil {
		// Never beyond the token's own life.
		if exp := time.Unix(int64(*u.Expiry), 0); exp.Before(expires) {
			expires = exp
		}
	}
	s.mu.Lock()
	if len(s.cache) >= maxCached {
		for k, c := range s.cache {
			if !now.Before(c.expires) {
				delete(s.cache, k)
			}
		}
		if len(s.cache) >= maxCached {
			clear(s.cache)
		}
	}
	s.cache[key] = verdict{id: id, err: err, expires: expires}
	s.mu.Unlock()
	return id, err
}

func (s *ServiceAccounts) review(ctx context.Context, token string, u unverified, now time.Time) (Identity, error) {
	s.reviews.Add(1)
	res, err := s.reviewer.Create(ctx, &authv1.TokenReview{Spec: authv1.TokenReviewSpec{
		Token: token, Audiences: []string{s.audience},
	}}, metav1.CreateOptions{})
	if err != nil {
		s.observe(string(errkinds.AuthUnavailable))
		return Identity{}, fmt.Errorf("tokenreview: %w", err)
	}
	st := res.Status
	var out error
	switch {
	case !st.Authenticated:
		// The API server decided; the unverified claims only say which
		// of its reasons it most likely was.
		switch {
		case u.Expiry != nil && now.After(time.Unix(int64(*u.Expiry), 0)):
			out = refuse(errkinds.TokenExpired, "the API server did not authenticate it: "+st.Error)
		case !u.Audience.has(s.audience) && strings.Contains(st.Error, "audience"):
			out = refuse(errkinds.WrongAudience, "the API server did not authenticate it for "+s.audience)
		default:
			out = refuse(errkinds.InvalidToken, "the API server did not authenticate it: "+st.Error)
		}
	case !slices.Contains(st.Audiences, s.audience):
		out = refuse(errkinds.WrongAudience, "the review's audiences do not include "+s.audience)
	default:
		if caller, ok := s.byUser[st.User.Username]; ok {
			s.observe("ok")
			return Identity{Caller: caller, Mode: ModeServiceAccount, Subject: st.User.Username}, nil
		}
		out = refuse(errkinds.IdentityNotAllowed, "the reviewed user is no entry's ServiceAccount")
	}
	s.observe(string(KindOf(out)))
	return Identity{}, out
}

func (s *ServiceAccounts) observe(result string) {
	if s.onReview != nil {
		s.onReview(result)
	}
}
