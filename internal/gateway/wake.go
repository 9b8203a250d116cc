package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/rest"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/sandboxz"
	"github.com/garraia/garra/internal/tools"
)

// Waking idle sandboxes. An orchestrator whose sandbox has a wake entry
// (the operator's sandbox.idleTimeout) may find it scaled to zero. Before
// an agent run the gateway marks the call on the sandbox's Deployment
// (the operator's idle clock reads the mark) and asks for one replica in
// the same patch; when no replica was available it waits, within the
// call's own deadline, until the sandbox answers an MCP handshake.

// touchEvery throttles the mark: at most one patch per sandbox in this
// long while it is awake. It is below the shortest idleTimeout (10 s), so
// the operator never suspends a sandbox between two marks of a busy one.
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

// metav1PatchOptions names the gateway as the field manager of its marks.
var metav1PatchOptions = metav1.PatchOptions{FieldManager: "garra-gateway"}

// kubeWaker is the Waker of a gateway in its pod: one merge patch through
// the Deployments API (the wake Role grants get and patch on exactly the
// idle sandboxes).
type kubeWaker struct{ c appsv1.AppsV1Interface }

func (k kubeWaker) Wake(ctx context.Context, w config.SandboxWake, at time.Time) (bool, error) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{sandboxz.AnnotationLastCall: at.UTC().Format(time.RFC3339Nano)}},
		"spec":     map[string]any{"replicas": 1},
	})
	if err != nil {
		return false, err
	}
	d, err := k.c.Deployments(w.Namespace).Patch(ctx, w.Deployment, types.MergePatchType, patch, metav1PatchOptions)
	if err != nil {
		return false, fmt.Errorf("wake Deployment %s/%s: %w", w.Namespace, w.Deployment, err)
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
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("API server config: %w", err)
	}
	c, err := appsv1.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("deployments client: %w", err)
	}
	ws.waker = kubeWaker{c}
	return ws.waker, nil
}

// due says whether key is to be marked at now, and records it if so.
func (ws *wakes) due(key string, now time.Time) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if last, ok := ws.marked[key]; ok && now.Sub(last) < touchEvery {
		return false
	}
	if ws.marked == nil {
		ws.marked = map[string]time.Time{}
	}
	ws.marked[key] = now
	return true
}

// markedAt records t as key's mark time.
func (ws *wakes) markedAt(key string, t time.Time) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.marked[key] = t
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
// it answers, within ctx. Without a wake entry it does nothing.
func (g *policy) wakeSandbox(ctx context.Context, c mcppolicy.Caller, token string) error {
	if c.Sandbox == nil || c.Sandbox.Wake == nil {
		return nil
	}
	w := *c.Sandbox.Wake
	key := w.Namespace + "/" + w.Deployment
	start := g.now()
	if !g.wakes.due(key, start) {
		return nil
	}
	waker, err := g.wakes.get()
	if err == nil {
		var awake bool
		awake, err = waker.Wake(ctx, w, start)
		if err == nil && awake {
			return nil
		}
	}
	if err != nil {
		g.wakes.forget(key)
		return fmt.Errorf("%w: %w", errWake, err)
	}
	remote := tools.NewRemote(tools.RemoteOptions{URL: c.Sandbox.URL, Token: token, TracerProvider: g.tracing})
	for n := 0; ; n++ {
		attempt, cancel := context.WithTimeout(ctx, wakeAttemptTimeout(n))
		_, err := remote.Tools(attempt)
		cancel()
		if err == nil {
			g.wakes.markedAt(key, g.now()) // the throttle counts from the wake's end
			g.log.Info("sandbox woken", "caller", c.Name, "after", g.now().Sub(start).Round(time.Millisecond))
			g.metrics.woke(g.now().Sub(start))
			return nil
		}
		select {
		case <-ctx.Done():
			g.wakes.forget(key)
			return fmt.Errorf("%w within the call's deadline: %w", errWake, ctx.Err())
		case <-time.After(wakePoll):
		}
	}
}
