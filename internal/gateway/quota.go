package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/quota"
)

// TokenCounter is an orchestrator's token allowance per UTC day as the
// gateway keeps it (in memory, or shared in PostgreSQL).
type TokenCounter interface {
	quota.Tokens
	SetLimit(limit int64)
}

// SlotCounter bounds an orchestrator's garra_agent runs in flight.
type SlotCounter interface {
	quota.Slots
	SetLimit(limit int)
}

// QuotaStores make the token and run-slot counters of the orchestrators'
// quotas; a nil field keeps them in this process. The per-minute quotas
// are made by Options.Budgets, like the shared budgets, so they hold
// across replicas whenever the budgets do.
type QuotaStores struct {
	// Tokens makes the counter called name of limit tokens a UTC day.
	Tokens func(name string, limit int64) TokenCounter
	// Slots makes the counter called name of limit runs; lease bounds how
	// long a slot its holder never gave back (a replica that died) stays
	// taken.
	Slots func(name string, limit int, lease time.Duration) SlotCounter
	// Joint charges a call's counters at once (one round trip to a shared
	// store); nil = one after the other. It must answer as
	// quota.Sequential does.
	Joint quota.Joint
}

// quotas keeps every orchestrator's quota counters across reloads, keyed
// by its configured name: the identity the gateway authenticated, never
// anything the caller sends. A reload changes limits and keeps what was
// spent.
type quotas struct {
	budgets BudgetFactory
	stores  QuotaStores
	now     func() time.Time

	mu      sync.Mutex
	windows map[string]Counter
	tokens  map[string]TokenCounter
	slots   map[string]SlotCounter

	refusals  *prometheus.CounterVec
	remaining *prometheus.Desc
}

func newQuotas(budgets BudgetFactory, stores QuotaStores, now func() time.Time) *quotas {
	if stores.Tokens == nil {
		stores.Tokens = func(_ string, limit int64) TokenCounter { return quota.NewTokens(limit, now) }
	}
	if stores.Slots == nil {
		stores.Slots = func(_ string, limit int, _ time.Duration) SlotCounter { return quota.NewSlots(limit) }
	}
	return &quotas{
		budgets: budgets, stores: stores, now: now,
		windows: map[string]Counter{}, tokens: map[string]TokenCounter{}, slots: map[string]SlotCounter{},
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garra_quota_refusals_total", Help: "Calls refused by an orchestrator's own quota, by orchestrator and quota.",
		}, []string{"orchestrator", "quota"}),
		remaining: prometheus.NewDesc("garra_quota_remaining",
			"What is left of an orchestrator's quota: calls in the current minute, runs that may start, tokens today.",
			[]string{"orchestrator", "quota"}, nil),
	}
}

// slotLease is how long a run slot outlives a holder that never gave it
// back: longer than any run may last.
func slotLease(m config.MCPHTTP) time.Duration {
	return time.Duration(max(m.AgentMaxSeconds, config.MaxAgentMaxSeconds))*time.Second + time.Minute
}

// set is c's quota under m, or nil for a caller no quota binds (the
// owner, an orchestrator without one). Its refusals are counted under c's
// name only when named (gateway.metrics.orchestrator_labels).
func (q *quotas) set(c mcppolicy.Caller, m config.MCPHTTP, named bool) *quota.Set {
	if c.Kind != mcppolicy.Orchestrator {
		return nil
	}
	lim := m.QuotaFor(c.Name)
	if lim.IsZero() {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	label := callerLabel(c, named)
	s := &quota.Set{Joint: q.stores.Joint, Now: q.now, Refused: func(name string) { q.refusals.WithLabelValues(label, name).Inc() }}
	window := func(tool string, limit int) quota.Window {
		if limit <= 0 {
			return nil
		}
		key := "quota:" + c.Name + ":" + tool
		w, ok := q.windows[key]
		if !ok {
			w = q.budgets(key, limit, time.Minute)
			q.windows[key] = w
		}
		w.SetLimit(limit)
		return w
	}
	s.Ask, s.Agent, s.Send = window("ask", lim.AskPerMinute), window("agent", lim.AgentPerMinute), window("send", lim.SendPerMinute)
	if lim.AgentConcurrent > 0 {
		key := "quota:" + c.Name + ":agent_runs"
		sl, ok := q.slots[key]
		if !ok {
			sl = q.stores.Slots(key, lim.AgentConcurrent, slotLease(m))
			q.slots[key] = sl
		}
		sl.SetLimit(lim.AgentConcurrent)
		s.Concurrent = sl
	}
	if lim.LLMTokensPerDay > 0 {
		key := "quota:" + c.Name + ":tokens"
		t, ok := q.tokens[key]
		if !ok {
			t = q.stores.Tokens(key, lim.LLMTokensPerDay)
			q.tokens[key] = t
		}
		t.SetLimit(lim.LLMTokensPerDay)
		s.Tokens = t
	}
	return s
}

// quotaCollector reports the remaining quota of each orchestrator of the
// policy in force, read when scraped.
type quotaCollector struct{ g *Gateway }

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.g.quotas.remaining }

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.g.cur.Load()
	if p == nil || p.callers == nil {
		return
	}
	m, named := p.cfg.Gateway.MCPHTTP, p.cfg.Gateway.Metrics.OrchestratorLabels
	// Unnamed, the orchestrators share one label value: each quota reports
	// the least any of them has left, which is what an alert wants, and one
	// series per quota, as a collector must.
	least := map[string]int64{}
	for _, caller := range p.callers.byName {
		s := c.g.quotas.set(caller, m, named)
		if s == nil {
			continue
		}
		for name, v := range s.Status() {
			left := v.(map[string]int64)["remaining"]
			if named {
				ch <- prometheus.MustNewConstMetric(c.g.quotas.remaining, prometheus.GaugeValue, float64(left), caller.Name, name)
			} else if cur, ok := least[name]; !ok || left < cur {
				least[name] = left
			}
		}
	}
	for name, left := range least {
		ch <- prometheus.MustNewConstMetric(c.g.quotas.remaining, prometheus.GaugeValue, float64(left), unnamedOrchestrator, name)
	}
}

// retryAfters carry a quota refusal's wait from the tool call to its HTTP
// response, by the request id mcpcancel gave the request.
type retryAfters struct {
	mu sync.Mutex
	m  map[string]time.Duration
}

// note records d for the request req arrived on; several refusals in one
// batch keep the longest.
func (ra *retryAfters) note(req *mcp.CallToolRequest, d time.Duration) {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return
	}
	id := req.Extra.Header.Get(requestIDHeader)
	if id == "" {
		return
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if _, ok := ra.m[id]; ok {
		ra.m[id] = max(ra.m[id], d)
	}
}

// header sets Retry-After on a response whose tool call a quota refused.
// It must run inside mcpcancel's binding, which sets the request id. An
// event stream has sent its headers before any call ends: only the
// envelope carries the wait there.
func (ra *retryAfters) header(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(requestIDHeader)
		ra.mu.Lock()
		ra.m[id] = 0
		ra.mu.Unlock()
		defer func() {
			ra.mu.Lock()
			delete(ra.m, id)
			ra.mu.Unlock()
		}()
		next.ServeHTTP(&retryWriter{ResponseWriter: w, ra: ra, id: id}, r)
	})
}

type retryWriter struct {
	http.ResponseWriter
	ra    *retryAfters
	id    string
	wrote bool
}

func (w *retryWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.ra.mu.Lock()
		d := w.ra.m[w.id]
		w.ra.mu.Unlock()
		if d > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int((d+time.Second-1)/time.Second))))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *retryWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps event streams flowing through the wrapper.
func (w *retryWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if !w.wrote {
			w.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
