package gateway

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
)

// metrics are the gateway's Prometheus series, in a registry of their own
// (no global state; tests build as many gateways as they like).
type metrics struct {
	registry *prometheus.Registry
	calls    *prometheus.CounterVec
	refusals *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	reloads  *prometheus.CounterVec
	config   *prometheus.GaugeVec
	authns   *prometheus.CounterVec
	reviews  *prometheus.CounterVec
	wakes    prometheus.Histogram
	watch    *prometheus.GaugeVec
	// egress and egressBytes are the egress proxy's (egressout.go).
	egress, egressBytes *prometheus.CounterVec
}

func newMetrics(budgets map[string]Counter) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garra_mcp_calls_total", Help: "MCP tool calls by tool and outcome (ok, error, refused, invalid_params, cancelled).",
		}, []string{"tool", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garra_mcp_refusals_total", Help: "Refused requests and tool calls by stable kind.",
		}, []string{"kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "garra_mcp_call_duration_seconds", Help: "MCP tool call latency.",
			Buckets: []float64{.001, .005, .025, .1, .5, 1, 5, 15, 60, 300, 600},
		}, []string{"tool"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garra_config_reload_total", Help: "Config re-reads by result (applied, rejected, unchanged).",
		}, []string{"result"}),
		config: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "garra_config_info", Help: "The config in force, by the sha256 of its file (always 1).",
		}, []string{"hash"}),
		authns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garra_mcp_authentications_total", Help: "Requests admitted, by caller (owner, orchestrator, or each orchestrator's name with gateway.metrics.orchestrator_labels) and how it proved itself (token, serviceAccount, oidc).",
		}, []string{"caller", "auth"}),
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garra_tokenreviews_total", Help: "TokenReviews sent to the API server (cached verdicts are not counted), by result (ok or a refusal kind).",
		}, []string{"result"}),
		watch: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "garra_policy_watch_live", Help: "1 while the watch of a policy object (configmap, secret) through the API server is the source of the policy, 0 while the mounted files are.",
		}, []string{"object"}),
		wakes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "garra_sandbox_wake_seconds", Help: "How long a call waited for an idle-suspended sandbox to wake and answer.",
			Buckets: []float64{.25, .5, 1, 2, 4, 8, 15, 30, 60},
		}),
	}
	m.egress, m.egressBytes = egressMetrics()
	m.registry.MustRegister(m.egress, m.egressBytes)
	m.registry.MustRegister(m.calls, m.refusals, m.latency, m.reloads, m.config, m.authns, m.reviews, m.wakes, m.watch,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for name, b := range budgets {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "garra_budget_remaining", Help: "Calls left in the current one-minute window of a shared budget.",
			ConstLabels: prometheus.Labels{"budget": name},
		}, func() float64 { return float64(b.Remaining()) }))
	}
	return m
}

func (m *metrics) observe(tool, outcome string, kind errkinds.Kind, d time.Duration) {
	m.calls.WithLabelValues(tool, outcome).Inc()
	m.latency.WithLabelValues(tool).Observe(d.Seconds())
	if kind != "" && outcome == "refused" {
		m.refusals.WithLabelValues(string(kind)).Inc()
	}
}

// loaded makes hash the one config_info series (none without a file).
func (m *metrics) loaded(hash string) {
	m.config.Reset()
	if hash != "" {
		m.config.WithLabelValues(hash).Set(1)
	}
}

func (m *metrics) refused(kind errkinds.Kind) { m.refusals.WithLabelValues(string(kind)).Inc() }

func (m *metrics) admitted(c mcppolicy.Caller, named bool) {
	m.authns.WithLabelValues(callerLabel(c, named), c.Auth).Inc()
}

// unnamedOrchestrator is the caller label of every orchestrator unless
// gateway.metrics.orchestrator_labels is set.
const unnamedOrchestrator = "orchestrator"

// callerLabel is c's value of a caller label: its name when named (the
// operator's choice), else only owner or orchestrator, so that /metrics
// neither lists the tenants nor grows a series per orchestrator.
func callerLabel(c mcppolicy.Caller, named bool) string {
	if named || c.IsOwner() {
		return c.Name
	}
	return unnamedOrchestrator
}

func (m *metrics) reviewed(result string) { m.reviews.WithLabelValues(result).Inc() }

func (m *metrics) woke(d time.Duration) { m.wakes.Observe(d.Seconds()) }

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
