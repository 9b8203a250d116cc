package controllers

import (
	"context"
	"maps"
	"reflect"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/garraia/garra/internal/sandboxz"
)

// The server's reconcile is the one that asks the gateway which config it
// runs and how its handshakes went, and the one that sees every
// Orchestrator naming the server at once (clashes between them, token
// rotations). It leaves what it learned about each attached Orchestrator
// here, in the manager's memory, and the Orchestrator controller of the
// same manager reads it into that Orchestrator's status: the gateway is
// asked once per server, not once per Orchestrator, and each status has
// one writer. Both controllers run only in the leader, so they share it.

// memberReport is the server's last word on one attached Orchestrator.
type memberReport struct {
	// refused is set when the server refused it for what only the whole
	// set shows (a clash with another caller); the pure decision admitted
	// it.
	refused *attachment
	// generation is the Orchestrator's generation the pass rendered.
	generation int64
	// applied is its ConfigApplied condition (type and generation unset).
	applied metav1.Condition
	// verdict is the gateway's handshake with its sandbox; nil when the
	// gateway was not asked.
	verdict *sandboxz.Verdict
	// rotation is when its replaced tokens stop being accepted; nil when
	// no overlap is in progress.
	rotation *time.Time
	// failed is why the pass could not write its objects, "" when it could.
	failed string
}

// memberReports holds, per server, its last pass's memberReport per
// attached Orchestrator (by NAMESPACE/NAME), and the generations the
// gateway last confirmed having loaded.
type memberReports struct {
	mu sync.Mutex
	// byServer is absent for a server with no pass since the manager
	// started: its Orchestrators' conditions are kept as they are.
	byServer map[types.NamespacedName]map[string]memberReport
	// loaded are, per server, the generation of each Orchestrator in the
	// last config the gateway reported running.
	loaded map[types.NamespacedName]map[string]int64
	// queue is the Orchestrator controller's, once it has started.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func newMemberReports() *memberReports {
	return &memberReports{
		byServer: map[types.NamespacedName]map[string]memberReport{},
		loaded:   map[types.NamespacedName]map[string]int64{},
	}
}

// source hands the Orchestrator controller's queue to the reports, so a
// changed report enqueues its Orchestrator.
func (r *memberReports) source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.queue = q
		return nil
	})
}

// get is the report on Orchestrator id of server; known is false when the
// server has had no pass since the manager started.
func (r *memberReports) get(server types.NamespacedName, id string) (rep memberReport, ok, known bool) {
	if r == nil {
		return rep, false, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	reps, known := r.byServer[server]
	rep, ok = reps[id]
	return rep, ok, known
}

// confirmLoaded records that the gateway of server runs a config holding
// these generations (it replaces what was recorded).
func (r *memberReports) confirmLoaded(server types.NamespacedName, gens map[string]int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loaded[server] = maps.Clone(gens)
}

// loadedGen is the generation of id in the config server's gateway last
// reported running, and whether it held id at all.
func (r *memberReports) loadedGen(server types.NamespacedName, id string) (int64, bool) {
	if r == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.loaded[server][id]
	return g, ok
}

// publish replaces server's reports and enqueues every Orchestrator whose
// report changed, appeared or went.
func (r *memberReports) publish(server types.NamespacedName, reps map[string]memberReport) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.byServer[server]
	r.byServer[server] = reps
	if r.queue == nil {
		return
	}
	for id, rep := range reps {
		if o, ok := old[id]; !had || !ok || !reflect.DeepEqual(o, rep) {
			r.queue.Add(orchestratorRequest(id))
		}
	}
	for id := range old {
		if _, ok := reps[id]; !ok {
			r.queue.Add(orchestratorRequest(id))
		}
	}
}

// forget drops a deleted server's reports.
func (r *memberReports) forget(server types.NamespacedName) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byServer, server)
	delete(r.loaded, server)
}

// orchestratorRequest is the request of the Orchestrator NAMESPACE/NAME.
func orchestratorRequest(id string) reconcile.Request {
	ns, name, _ := strings.Cut(id, "/")
	return reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}
}
