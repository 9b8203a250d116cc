package gateway

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/garraia/garra/internal/authn"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
)

// callers are a policy's authenticated identities: the authenticator that
// resolves a bearer token to a name, and what each name may do.
type callers struct {
	auth   authn.Authenticator
	byName map[string]mcppolicy.Caller
	// issuers are the OIDC issuers the protected resource metadata lists.
	issuers []string
}

// callerDeps are what the non-token modes need from outside the config.
type callerDeps struct {
	// reviewer sends TokenReviews (nil: serviceAccount entries are
	// disabled).
	reviewer authn.Reviewer
	onReview func(result string)
	// read reads the token files (nil: the disk).
	read config.SecretReader
}

// callersFrom builds the callers: the owner's key, then each orchestrator
// in its mode. An orchestrator whose mode cannot work (a token variable
// unset or empty, a file unreadable, no API server for its ServiceAccount,
// an OIDC entry that would match too much, an identity another entry
// already claims) is disabled with one warning: it must fail closed, never
// authenticate anyone by accident.
func callersFrom(cfg *config.Config, getenv func(string) string, log *slog.Logger, deps callerDeps) *callers {
	cs := &callers{byName: map[string]mcppolicy.Caller{}}
	static := &authn.Static{}
	if cfg.Gateway.APIKey != "" {
		static.Add(mcppolicy.OwnerName, cfg.Gateway.APIKey)
		cs.byName[mcppolicy.OwnerName] = mcppolicy.OwnerCaller()
	}
	var sas []authn.ServiceAccountEntry
	var oidcs []authn.OIDCEntry
	claimed := map[string]string{}
	shared := sharedTokens(cfg, getenv, deps.read)
	for _, o := range cfg.Gateway.MCPHTTP.Orchestrators {
		if config.OrchestratorNameReserved(o.Name) {
			// It would read as the owner in every log and audit line.
			log.Warn("orchestrator disabled: its name is reserved", "orchestrator", o.Name,
				"fix", "rename it; `garra config check` lists the reserved names")
			continue
		}
		disabled := func(why, fix string, attrs ...any) {
			log.Warn("orchestrator disabled: "+why, append(append([]any{"orchestrator", o.Name}, attrs...), "auth", o.AuthMode(), "fix", fix)...)
		}
		if key := o.IdentityKey(); key != "" {
			if prev, ok := claimed[key]; ok {
				disabled("orchestrator "+prev+" claims the same identity", "give each orchestrator its own ServiceAccount or OIDC subject; `garra config check` names both")
				continue
			}
			claimed[key] = o.Name
		}
		switch o.AuthMode() {
		case config.AuthServiceAccount:
			sa := o.Auth.ServiceAccount
			switch {
			case deps.reviewer == nil:
				disabled("no API server to review its ServiceAccount tokens", "run the gateway in the cluster, or set gateway.auth.kubeconfig")
				continue
			case cfg.Gateway.Auth.Audience == "":
				disabled("gateway.auth.audience is empty", "set gateway.auth.audience to the audience its projected token is issued for")
				continue
			case sa.Namespace == "" || sa.Name == "":
				disabled("its service_account names no namespace and name", "set both")
				continue
			}
			sas = append(sas, authn.ServiceAccountEntry{Caller: o.Name, Namespace: sa.Namespace, Name: sa.Name})
		case config.AuthOIDC:
			a := o.Auth.OIDC
			if err := config.CheckIssuerURL(a.Issuer); err != nil {
				disabled("its oidc.issuer "+err.Error(), "set an https issuer URL")
				continue
			}
			if strings.TrimSpace(a.Audience) == "" || (a.Subject == "" && len(a.Claims) == 0) {
				disabled("its oidc entry needs an audience and a subject or claims", "run `garra config check`")
				continue
			}
			oidcs = append(oidcs, authn.OIDCEntry{Caller: o.Name, Issuer: a.Issuer, Audience: a.Audience, Subject: a.Subject, Claims: a.Claims})
		default:
			tokens, err := o.TokensWith(getenv, deps.read)
			if err != nil {
				disabled("no token", "set the variable key_env names in the gateway's environment, or key_file to a readable file holding the token", "error", err.Error())
				continue
			}
			if why, ok := shared[o.Name]; ok {
				disabled("its token "+why, "give each caller a token of its own; `garra config check` names the entry")
				continue
			}
			// Every line of a token file is valid: the overlap of a rotation.
			for _, t := range tokens {
				static.Add(o.Name, t)
			}
		}
		cs.byName[o.Name] = mcppolicy.OrchestratorCaller(o)
	}
	chain := authn.Chain{static}
	if len(oidcs) > 0 {
		oa := authn.NewOIDC(oidcs, authn.OIDCOptions{})
		cs.issuers = oa.Issuers()
		chain = append(chain, oa)
	}
	if len(sas) > 0 {
		sa, err := authn.NewServiceAccounts(deps.reviewer, sas, authn.ServiceAccountOptions{
			Audience: cfg.Gateway.Auth.Audience,
			CacheFor: time.Duration(cfg.Gateway.Auth.ReviewCacheSeconds) * time.Second,
			OnReview: deps.onReview,
		})
		if err != nil { // checked above; kept so a change there cannot open anything
			log.Warn("serviceAccount orchestrators disabled", "error", err.Error())
			for _, e := range sas {
				delete(cs.byName, e.Caller)
			}
		} else {
			chain = append(chain, sa)
		}
	}
	cs.auth = chain
	return cs
}

// authenticate resolves token to its caller, carrying how it was proved.
func (cs *callers) authenticate(ctx context.Context, token string) (mcppolicy.Caller, error) {
	id, err := cs.auth.Authenticate(ctx, token)
	if err != nil {
		return mcppolicy.Caller{}, err
	}
	c, ok := cs.byName[id.Caller]
	if !ok { // an authenticator names only entries it was given
		return mcppolicy.Caller{}, &authn.Refusal{Kind: errkinds.IdentityNotAllowed, Detail: "no entry " + id.Caller}
	}
	c.Auth, c.Identity, c.IdentityPersonal = id.Mode, id.Subject, id.Personal
	return c, nil
}

type callerKey struct{}

func withCaller(ctx context.Context, c mcppolicy.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerFrom(ctx context.Context) (mcppolicy.Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(mcppolicy.Caller)
	return c, ok
}

// sharedTokens names the orchestrators whose token also proves another
// caller, and why. Check refuses such a config; this holds for a gateway
// built without it. The owner keeps its key, and both orchestrators of a
// shared token lose it: which of them a call came from cannot be told.
func sharedTokens(cfg *config.Config, getenv func(string) string, read config.SecretReader) map[string]string {
	out := map[string]string{}
	orchs := cfg.Gateway.MCPHTTP.Orchestrators
	for _, tc := range cfg.TokenCollisionsWith(cfg.Gateway.APIKey, getenv, read) {
		name := orchs[tc.Index].Name
		if tc.Owner {
			out[name] = "is the owner's key"
			continue
		}
		out[name] = "is orchestrator " + tc.Other + "'s too"
		if _, ok := out[tc.Other]; !ok {
			out[tc.Other] = "is orchestrator " + name + "'s too"
		}
	}
	return out
}
