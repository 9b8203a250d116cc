package controllers

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// A pass publishes the gateway's policy (its members, their tokens, its
// config) within its first steps, then spends most of its time on what
// callers do not wait for: sandbox objects, deletions, probes and the
// status. A change of the spec that arrives meanwhile is queued behind
// all of that, so a team that applies an Orchestrator just after another
// team's would wait for the other's sandbox to be written before its own
// token works. Instead, from the first step after the policy, a pass
// watches whether the policy's inputs changed in the cache since it
// began (yieldCheck), and if so it stops there and yields: the change's
// own watch event has queued the next pass (the server's and the
// Orchestrators' watches in SetupWithManager enqueue on every change the
// stamp sees), which publishes the new policy first and then does
// everything this one skipped. Passes act on what is in the cluster, so
// nothing a yielded pass left undone is lost; under a burst of changes the
// slow part runs once the burst is over. Everything a pass does that is
// not idempotent (generated Secrets, rotations, the annotation's removal)
// happens before the look-out starts.

// yieldCheckEvery is the least time between two looks at the cache for a
// newer policy: far below a single write to the API server, far above the
// cost of a look (a list of the server's Orchestrators from the cache).
const yieldCheckEvery = 10 * time.Millisecond

// policyStamp digests what, of a server and the Orchestrators naming it,
// a pass's policy was built from: the server's spec generation and
// rotate-token annotation, and each Orchestrator's identity (a create or
// a delete), spec generation and rotate-token annotation. Status writes,
// labels and finalizers leave it as it is. The Orchestrators may come in
// any order.
func policyStamp(gs *garrav1alpha1.GarraServer, obs []garrav1alpha1.Orchestrator) uint64 {
	one := func(uid string, gen int64, ann map[string]string) uint64 {
		h := fnv.New64a()
		_, _ = h.Write([]byte(uid))
		_, _ = h.Write(binary.LittleEndian.AppendUint64(nil, uint64(gen))) //nolint:gosec // G115: a generation is never negative; its bits are all a digest needs
		if v, ok := ann[garrav1alpha1.AnnotationRotateToken]; ok {
			_, _ = h.Write([]byte{1})
			_, _ = h.Write([]byte(v))
		}
		return h.Sum64()
	}
	sum := one(string(gs.UID), gs.Generation, gs.Annotations)
	// A sum, not a hash of a sorted list: the order of a cache list is
	// not stable, and a sum needs no copy to sort.
	for i := range obs {
		sum += one(string(obs[i].UID), obs[i].Generation, obs[i].Annotations)
	}
	return sum + uint64(len(obs))
}

// currentPolicyStamp is gs's policyStamp as the cache holds it now; ok is
// false when it cannot be read (gone, or the cache failed), which never
// makes a pass yield.
func (r *GarraServerReconciler) currentPolicyStamp(ctx context.Context, key client.ObjectKey) (uint64, bool) {
	gs := &garrav1alpha1.GarraServer{}
	if err := r.Get(ctx, key, gs, client.UnsafeDisableDeepCopy); err != nil {
		return 0, false
	}
	var list garrav1alpha1.OrchestratorList
	if err := r.List(ctx, &list, client.MatchingFields{serverRefIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, false
	}
	return policyStamp(gs, list.Items), true
}

// errYielded is the cause of a pass's context once a newer policy came.
var errYielded = errors.New("a newer policy arrived")

// yieldCheck is one pass's look-out for a newer policy. It looks in two
// ways: the pass asks between its writes (yield), and, while a single
// write or probe takes long, a goroutine cancels the pass's context
// (watch), so that even a slow API server or gateway holds a new policy
// back by one look, not by one request's timeout.
type yieldCheck struct {
	r        *GarraServerReconciler
	key      client.ObjectKey
	baseline uint64
	known    bool
	// active is set once the pass has published its policy: before
	// that, nothing yields.
	active bool
	last   time.Time
	now    func() time.Time
}

// rebase takes the cache's stamp now as the one the pass acts on.
func (y *yieldCheck) rebase(ctx context.Context) {
	y.baseline, y.known = y.r.currentPolicyStamp(ctx, y.key)
	y.last = y.now()
}

// changed says whether the cache's stamp differs from the baseline.
func (y *yieldCheck) changed(ctx context.Context) bool {
	cur, ok := y.r.currentPolicyStamp(ctx, y.key)
	return ok && cur != y.baseline
}

// newer says whether the policy's inputs changed since the baseline; it
// looks at most every yieldCheckEvery and says no in between.
func (y *yieldCheck) newer(ctx context.Context) bool {
	if y == nil || !y.active || !y.known || y.now().Sub(y.last) < yieldCheckEvery {
		return false
	}
	y.last = y.now()
	return y.changed(ctx)
}

// watch starts the look-out: the context it returns is cancelled, with
// errYielded, once the policy's inputs change; stop ends the look-out and
// must be called. The baseline must not change while it runs.
func (y *yieldCheck) watch(ctx context.Context) (watched context.Context, stop func()) {
	y.active = true
	watched, cancel := context.WithCancelCause(ctx)
	if !y.known {
		return watched, func() { cancel(nil) }
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(yieldCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-watched.Done():
				return
			case <-t.C:
				if y.changed(watched) {
					cancel(errYielded)
					return
				}
			}
		}
	}()
	return watched, func() { close(done); <-ended; cancel(nil) }
}

// yielded says whether ctx was cancelled for a newer policy.
func yielded(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errYielded) }

// yield reports whether the pass is to stop for a newer policy, and
// remembers it: once a pass yields, every later check says so too.
func (s *reconcileState) yield(ctx context.Context) bool {
	if !s.yielded && (yielded(ctx) || s.lookout.newer(ctx)) {
		s.yielded = true
	}
	return s.yielded
}
