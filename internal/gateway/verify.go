package gateway

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/sandboxz"
	"github.com/garraia/garra/internal/toolchain"
	"github.com/garraia/garra/internal/tools"
)

// Sandbox verification: Ready says an orchestrator's pod is up; verified
// says the gateway can actually use it. The gateway does what an agent run
// will do, an MCP handshake with the sandbox and its tools/list under the
// sandbox token, for every orchestrator with a sandbox: at start, after
// every reload, and every VerifyInterval. GET /sandboxz gives the owner
// (the operator holds the gateway key) the last verdicts (package
// sandboxz is the wire format).

// VerifyInterval is how often every sandbox is checked again.
const VerifyInterval = 30 * time.Second

// verifyRetry is how soon a round follows one that left a sandbox not
// verified: pods starting with the gateway, or a token being repaired,
// show as verified within seconds rather than at the next interval.
const verifyRetry = 5 * time.Second

// nextRound is the wait before the next round after one that produced
// verdicts. Pure, for the table test.
func nextRound(verdicts map[string]sandboxz.Verdict) time.Duration {
	for _, v := range verdicts {
		if !v.Verified {
			return verifyRetry
		}
	}
	return VerifyInterval
}

// verifyTimeout bounds one sandbox's handshake.
const verifyTimeout = 5 * time.Second

// verdictOf turns one handshake's outcome into a verdict. It is pure, for
// the table test.
func verdictOf(nTools int, err error, at time.Time) sandboxz.Verdict {
	v := sandboxz.Verdict{Tools: nTools, CheckedAt: at}
	switch {
	case err == nil && nTools > 0:
		v.Verified, v.Message = true, "the sandbox answered the gateway's MCP handshake and listed its tools"
	case err == nil:
		v.Reason, v.Message = sandboxz.NoTools, "the sandbox answered but lists no tool"
	case errors.Is(err, errNoSandboxToken):
		v.Reason, v.Message = sandboxz.NoToken, "the gateway has no token for this sandbox: "+oneLine(err.Error())
	case errors.Is(err, tools.ErrRemoteUnauthorized):
		v.Reason, v.Message = sandboxz.TokenRefused, "the sandbox refused the gateway's token: the orchestrator's Secret and the sandbox disagree"
	case errors.Is(err, tools.ErrRemoteToolsTooLarge):
		// It answered; what it lists is past what the gateway will hold.
		v.Reason, v.Message = sandboxz.NoTools, "the sandbox's tool list is refused: "+oneLine(err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		v.Reason, v.Message = sandboxz.Unreachable, "no answer from the sandbox within "+verifyTimeout.String()
	default:
		v.Reason, v.Message = sandboxz.Unreachable, "the sandbox could not be reached: "+oneLine(err.Error())
	}
	return v
}

var errNoSandboxToken = errors.New("no sandbox token")

// verifier holds the last verdicts.
type verifier struct {
	mu       sync.Mutex
	hash     string
	verdicts map[string]sandboxz.Verdict
	poke     chan struct{}
}

func newVerifier() *verifier {
	return &verifier{verdicts: map[string]sandboxz.Verdict{}, poke: make(chan struct{}, 1)}
}

// again asks the loop for a round now (after a reload).
func (v *verifier) again() {
	select {
	case v.poke <- struct{}{}:
	default:
	}
}

func (v *verifier) report() sandboxz.Report {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := sandboxz.Report{ConfigHash: v.hash, Sandboxes: make(map[string]sandboxz.Verdict, len(v.verdicts))}
	for k, x := range v.verdicts {
		out.Sandboxes[k] = x
	}
	return out
}

// verifyLoop checks every sandbox at once, then on every poke and every
// VerifyInterval (verifyRetry while one is not verified), until ctx ends.
func (g *Gateway) verifyLoop(ctx context.Context) {
	for {
		g.verifySandboxes(ctx)
		t := time.NewTimer(nextRound(g.verify.report().Sandboxes))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-g.verify.poke:
			t.Stop()
		}
	}
}

// verifySandboxes runs one round: every sandbox of the policy in force,
// concurrently, each within verifyTimeout. Orchestrators no longer in the
// policy drop out of the report.
func (g *Gateway) verifySandboxes(ctx context.Context) {
	p := g.cur.Load()
	var names []string
	if p.callers != nil {
		for name, c := range p.callers.byName {
			if c.Sandbox != nil && c.Sandbox.URL != "" {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	out := make(map[string]sandboxz.Verdict, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		c := p.callers.byName[name]
		wg.Go(func() {
			v := g.verifyOne(ctx, p, c)
			mu.Lock()
			out[name] = v
			mu.Unlock()
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	g.verify.mu.Lock()
	prev := g.verify.verdicts
	g.verify.verdicts, g.verify.hash = out, p.hash
	g.verify.mu.Unlock()
	for _, name := range names {
		now, was := out[name], prev[name]
		if now.Verified != was.Verified || now.Reason != was.Reason {
			if now.Verified {
				g.log.Info("sandbox verified", "orchestrator", name, "tools", now.Tools)
			} else {
				g.log.Warn("sandbox not verified", "orchestrator", name, "reason", now.Reason, "message", now.Message)
			}
		}
	}
}

func (g *Gateway) verifyOne(ctx context.Context, p *policy, c mcppolicy.Caller) sandboxz.Verdict {
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	token, err := c.Sandbox.TokenWith(p.getenv, p.secrets)
	if err != nil || token == "" {
		if err == nil {
			err = errors.New("empty")
		}
		return verdictOf(0, errors.Join(errNoSandboxToken, err), g.now())
	}
	list, err := tools.NewRemote(tools.RemoteOptions{URL: c.Sandbox.URL, Token: token}).Tools(ctx)
	v := verdictOf(len(list), err, g.now())
	if !v.Verified {
		return v
	}
	// The toolchain the sandbox reports, sanitised; a sandbox that cannot
	// say (an older garra) stays verified with no toolchain listed.
	rep, err := p.readSandboxToolchain(ctx, c, toolchainReadTimeout)
	if err != nil {
		return v
	}
	return withToolchain(v, rep)
}

// withToolchain adds the sandbox's toolchain to a verified verdict: a
// required program missing makes it not verified, naming the programs.
// Pure, for the table test.
func withToolchain(v sandboxz.Verdict, rep toolchain.Report) sandboxz.Verdict {
	rep = toolchain.Sanitize(rep)
	for _, t := range rep.Tools {
		v.Toolchain = append(v.Toolchain, t.Name)
	}
	if len(rep.Missing) > 0 {
		v.Missing = rep.Missing
		v.Verified, v.Reason = false, sandboxz.MissingTools
		v.Message = "required tools missing from the sandbox's PATH: " + strings.Join(rep.Missing, ", ")
	}
	return v
}

// apiSandboxes serves GET /sandboxz (the owner only).
func (g *policy) apiSandboxes(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, g.verify.report())
}
