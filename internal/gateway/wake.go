package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/kube"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/sandboxz"
	"github.com/garraia/garra/internal/tools"
)

// Waking idle sandboxes. An orchestrator whose sandbox has a wake entry
// (the operator's sandbox.idleTimeout) may find it scaled to zero. Before
// an agent run the gateway marks the call on the sandbox's Deployment
// (the operator's idle clock reads the mark) and asks for one replica in
// the same patch; when no replica was available it waits, within the
// call's own deadline, until the sandbox answers an MCP handshake. While
// the call is in flight (the wait, then the run) the mark is kept fresh,
// so the idle clock never runs out under a call: a pod slow to start (a
// volume still detaching from the last one) or a run longer than the
// idleTimeout is not scaled away beneath it.

// touchEvery throttles the mark: at most one patch per sandbox in this
// long. A call in flight marks again once the last mark is this old, and
// looks every touchEvery/2, so no two marks of a busy sandbox are more
// than 1.5 × touchEvery apart; that is below the shortest idleTimeout
// (10 s), so the operator never suspends a sandbox with a call in flight.
const touchEvery = 5 * time.Second

// wakePoll is how often a waking sandbox is asked whether it answers.
const wakePoll = 100 * time.Millisecond

// wakeAttemptTimeout bounds the nth handshake with a waking sandbox. The
// first ones are short: a connection made before the pod is reachable
// may get no answer at all, and waiting long on it would delay the wake
// by that much; later ones grow, so that a slow node still gets an answer.
// Pure, for the table test.
func wakeAttemptTimeout(n int) time.Duration {
	if n >= 3 {
		return 2 * time.Second
	}
	return 250 * time.Millisecond << n
}

// Waker marks a call on a sandbox Deployment and scales it to one
// replica; it reports whether a replica was available already.
type Waker interface {
	Wake(ctx context.Context, w config.SandboxWake, at time.Time) (awake bool, err error)
}

// wakeFieldManager names the gateway as the field manager of its marks.
const wakeFieldManager = "garra-gateway"

// kubeWaker is the Waker of a gateway in its pod: one merge patch through
// the Deployments API (the wake Role grants get and patch on exactly the
// idle sandboxes).
type kubeWaker struct{ c *kube.Client }

func (k kubeWaker) Wake(ctx context.Context, w config.SandboxWake, at time.Time) (bool, error) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{sandboxz.AnnotationLastCall: at.UTC().Format(time.RFC3339Nano)}},
		"spec":     map[string]any{"replicas": 1},
	})
	if err != nil {
		return false, err
	}
	d, err := k.c.MergePatchDeployment(ctx, w.Namespace, w.Deployment, patch, wakeFieldManager)
	if err != nil {
		return false, fmt.Errorf("wake: %w", err)
	}
	return d.Status.AvailableReplicas > 0, nil
}

// wakes holds the Waker (built on first use, in the pod) and when each
// sandbox was last marked.
type wakes struct {
	given  Waker
	mu     sync.Mutex
	waker  Waker
	marked map[string]time.Time
	// waking holds, per sandbox being woken, a channel closed when that
	// wake ends, so that a call arriving meanwhile waits for it too.
	waking map[string]chan struct{}
	// every is the mark throttle; 0 means touchEvery (tests shorten it).
	every time.Duration
}

func (ws *wakes) interval() time.Duration {
	if ws.every > 0 {
		return ws.every
	}
	return touchEvery
}

func (ws *wakes) get() (Waker, error) {
	if ws.given != nil {
		return ws.given, nil
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.waker != nil {
		return ws.waker, nil
	}
	rc, err := kube.Config("")
	if err != nil {
		return nil, err
	}
	c, err := kube.New(rc, 0)
	if err != nil {
		return nil, err
	}
	ws.waker = kubeWaker{c}
	return ws.waker, nil
}

// due says whether key is to be marked at now, and records it if so.
func (ws *wakes) due(key string, now time.Time) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.dueLocked(key, now)
}

func (ws *wakes) dueLocked(key string, now time.Time) bool {
	if last, ok := ws.marked[key]; ok && now.Sub(last) < ws.interval() {
		return false
	}
	if ws.marked == nil {
		ws.marked = map[string]time.Time{}
	}
	ws.marked[key] = now
	return true
}

// hold keeps key marked while a call is in flight: every half interval
// it calls mark when the last mark is at least an interval old. The
// returned release stops it and marks once more if due, so the idle clock
// counts from near the call's end. A failed mark is not throttled: the
// next round tries again.
func (ws *wakes) hold(ctx context.Context, key string, now func() time.Time, mark func(context.Context, time.Time) error) (release func()) {
	ctx, stop := context.WithCancel(ctx)
	try := func(ctx context.Context) {
		t := now()
		if ws.due(key, t) && mark(ctx, t) != nil {
			ws.forget(key)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ws.interval() / 2)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				try(ctx)
			}
		}
	}()
	return func() {
		stop()
		<-done
		// The call's own context may be over already; the last mark gets
		// a short one of its own.
		end, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
		try(end)
	}
}

// markTimeout bounds the mark made when a call ends.
const markTimeout = 5 * time.Second

// claim is due and, when key is due, records in the same step that this
// call is waking it (a call arriving meanwhile finds the wake in
// wakingDone); end ends the wake.
func (ws *wakes) claim(key string, now time.Time) (end func(), ok bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !ws.dueLocked(key, now) {
		return nil, false
	}
	if ws.waking == nil {
		ws.waking = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	ws.waking[key] = ch
	return func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if ws.waking[key] == ch {
			delete(ws.waking, key)
		}
		close(ch)
	}, true
}

// wakingDone is closed when key's wake in progress ends; nil when none is.
func (ws *wakes) wakingDone(key string) <-chan struct{} {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.waking[key]
}

// forget drops key's mark time, so that the next call patches again (a
// failed wake must not be throttled away).
func (ws *wakes) forget(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.marked, key)
}

// errWake wraps what kept a sandbox from waking.
var errWake = errors.New("the sandbox could not be woken")

// wakeSandbox marks c's call and, when its sandbox was asleep, waits until
// it answers, within ctx. From then until release is called (the end of
// the call) the mark is kept fresh (see hold). Without a wake entry it
// does nothing.
func (g *policy) wakeSandbox(ctx context.Context, c mcppolicy.Caller, token string) (release func(), err error) {
	if c.Sandbox == nil || c.Sandbox.Wake == nil {
		return func() {}, nil
	}
	w := *c.Sandbox.Wake
	key := w.Namespace + "/" + w.Deployment
	waker, err := g.wakes.get()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errWake, err)
	}
	mark := func(ctx context.Context, t time.Time) error {
		_, err := waker.Wake(ctx, w, t)
		return err
	}
	start := g.now()
	endWaking, claimed := g.wakes.claim(key, start)
	if !claimed {
		// Marked moments ago by another call: the sandbox is awake, or
		// being woken by that call, whose wake this one waits for. From
		// here on this call keeps it marked too.
		release = g.wakes.hold(ctx, key, g.now, mark)
		if done := g.wakes.wakingDone(key); done != nil {
			select {
			case <-done:
			case <-ctx.Done():
				release()
				return nil, fmt.Errorf("%w within the call's deadline: %w", errWake, ctx.Err())
			}
		}
		return release, nil
	}
	defer endWaking()
	awake, err := waker.Wake(ctx, w, start)
	if err != nil {
		g.wakes.forget(key)
		return nil, fmt.Errorf("%w: %w", errWake, err)
	}
	release = g.wakes.hold(ctx, key, g.now, mark)
	if awake {
		return release, nil
	}
	remote := tools.NewRemote(tools.RemoteOptions{URL: c.Sandbox.URL, Token: token, TracerProvider: g.tracing})
	for n := 0; ; n++ {
		attempt, cancel := context.WithTimeout(ctx, wakeAttemptTimeout(n))
		_, err := remote.Tools(attempt)
		cancel()
		if err == nil {
			g.log.Info("sandbox woken", "caller", c.Name, "after", g.now().Sub(start).Round(time.Millisecond))
			g.metrics.woke(g.now().Sub(start))
			return release, nil
		}
		select {
		case <-ctx.Done():
			release()
			return nil, fmt.Errorf("%w within the call's deadline: %w", errWake, ctx.Err())
		case <-time.After(wakePoll):
		}
	}
}
