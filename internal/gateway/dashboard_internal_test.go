package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/garraia/garra/internal/mcppolicy"
)

// dashboardFile is the Grafana dashboard the chart ships.
var dashboardFile = filepath.Join("..", "..", "charts", "garra-operator", "dashboards", "garra-gateway.json")

var (
	metricName = regexp.MustCompile(`\bgarra_[a-z0-9_]+`)
	groupBy    = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matcher    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	selector   = regexp.MustCompile(`\{([^}]*)\}`)
	labelsOf   = regexp.MustCompile(`label_values\([^,]+,\s*([a-zA-Z_][a-zA-Z0-9_]*)\)`)
)

// targetLabels are the labels Prometheus itself puts on every scraped
// series (from the ServiceMonitor's target), not the gateway's.
var targetLabels = []string{"namespace", "pod", "service", "job", "instance", "container", "endpoint"}

// registeredFamilies are the gateway's metric families with their label
// names, gathered from its registry after touching every series once (a
// vector with no child is not gathered).
func registeredFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	m := newMetrics(map[string]Counter{"ask": NewBudget(10, time.Minute, nil)})
	m.observe("garra_ask", "refused", "rate_limited", time.Millisecond)
	m.reloads.WithLabelValues("applied").Inc()
	m.loaded("0123abcd")
	m.admitted(mcppolicy.Caller{Name: "n8n", Auth: "token"}, false)
	m.reviewed("ok")
	fams, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// familyOf maps a series name in PromQL to its family: a histogram's
// _bucket, _sum and _count series belong to the histogram.
func familyOf(name string, fams map[string]*dto.MetricFamily) (*dto.MetricFamily, bool) {
	if f, ok := fams[name]; ok {
		return f, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
				return f, true
			}
		}
	}
	return nil, false
}

// dashboardQueries are the PromQL of every panel target and query
// variable, keyed by where they are.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: uid %q, %d panels", dashboardFile, d.UID, len(d.Panels))
	}
	qs := map[string]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %d: empty expr", p.Title, i)
			}
			qs["panel "+p.Title+" #"+string(rune('A'+i))] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		qs["variable "+v.Name] = s
	}
	return qs
}

// TestDashboardUsesRegisteredMetrics: every series the shipped dashboard
// queries is one the gateway registers, every label it groups or filters
// by is one those series carry (or Prometheus adds), and the panels the
// chart promises (calls, refusals, budgets, latency, reloads) are there.
// Renaming a metric or a label without the dashboard fails here.
func TestDashboardUsesRegisteredMetrics(t *testing.T) {
	fams := registeredFamilies(t)
	used := map[string]bool{}
	for where, q := range dashboardQueries(t) {
		names := metricName.FindAllString(q, -1)
		if len(names) == 0 {
			t.Errorf("%s: queries no garra_ series: %s", where, q)
		}
		labels := slices.Clone(targetLabels)
		for _, n := range names {
			f, ok := familyOf(n, fams)
			if !ok {
				t.Errorf("%s: %s is not a metric the gateway registers", where, n)
				continue
			}
			used[f.GetName()] = true
			if f.GetType() == dto.MetricType_HISTOGRAM {
				labels = append(labels, "le")
			}
			for _, lp := range f.GetMetric()[0].GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		var refs []string
		for _, g := range groupBy.FindAllStringSubmatch(q, -1) {
			for l := range strings.SplitSeq(g[1], ",") {
				refs = append(refs, strings.TrimSpace(l))
			}
		}
		for _, sel := range selector.FindAllStringSubmatch(q, -1) {
			for _, m := range matcher.FindAllStringSubmatch(sel[1], -1) {
				refs = append(refs, m[1])
			}
		}
		for _, m := range labelsOf.FindAllStringSubmatch(q, -1) {
			refs = append(refs, m[1])
		}
		for _, l := range refs {
			if l != "" && !slices.Contains(labels, l) {
				t.Errorf("%s: label %q is on none of %v", where, l, names)
			}
		}
	}
	for _, want := range []string{"garra_mcp_calls_total", "garra_mcp_refusals_total", "garra_budget_remaining",
		"garra_mcp_call_duration_seconds", "garra_config_reload_total"} {
		if !used[want] {
			t.Errorf("the dashboard has no panel on %s", want)
		}
	}
}
