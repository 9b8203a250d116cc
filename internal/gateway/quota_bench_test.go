package gateway_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// BenchmarkQuotaCheck is what an orchestrator's quota adds to a charged
// call: two orchestrators on one gateway, one with all five quotas (never
// reached) and one with none, called in turn by the same worker so that
// both see the same load. Each garra_ask goes through the whole call path
// to a loopback LLM double. It reports each side's p50 and p95 and the
// p50 difference, in memory (a gateway on SQLite) and on PostgreSQL
// (budgets and quotas shared), where the quota's per-minute take and token
// reservation are one statement, one round trip, which also carries the
// settlements of earlier calls.
func BenchmarkQuotaCheck(b *testing.B) {
	for _, st := range []string{"memory", "postgres"} {
		b.Run(st, func(b *testing.B) {
			double := llmdouble.New(b)
			yaml := "gateway:\n  api_key: " + ownerKey + "\n  rate_limit: {requests_per_minute: 1000000000}\n" +
				"  mcp_http:\n    enabled: true\n    allow_ask: true\n    ask_budget_per_minute: 1000000000\n" + `
    orchestrators:
      - name: free
        key_env: FREE_KEY
        tools: [ask]
      - name: bounded
        key_env: BOUNDED_KEY
        tools: [ask]
        quota: {ask_per_minute: 1000000000, agent_per_minute: 1000000000, send_per_minute: 1000000000, agent_concurrent: 100, llm_tokens_per_day: 1000000000000}
llm: {provider: openrouter, base_url: ` + double.OpenAIBaseURL() + "}\n"
			env := map[string]string{"FREE_KEY": "free-token-12345678", "BOUNDED_KEY": "bounded-token-1234567", "OPENROUTER_API_KEY": "k"}
			store := quotaStores()[0]
			if st == "postgres" {
				store = quotaStores()[1]
			}
			opt, _ := store.opts(b)
			path := filepath.Join(b.TempDir(), "config.yml")
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				b.Fatal(err)
			}
			cfg, _, err := config.Load(path, func(k string) string { return env[k] })
			if err != nil {
				b.Fatal(err)
			}
			cfg.DataDir = b.TempDir()
			o := gateway.Options{Config: cfg, Getenv: func(k string) string { return env[k] }, Version: "bench", Logger: slog.New(slog.DiscardHandler)}
			opt(&o)
			g, err := gateway.New(o)
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(g.Handler())
			defer srv.Close()
			h := srv.URL
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"garra_ask","arguments":{"message":"hi"}}}`
			client := &http.Client{Timeout: 30 * time.Second}
			send := func(token string) time.Duration {
				req, _ := http.NewRequest(http.MethodPost, h+"/mcp", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				d := time.Since(t0)
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `\"ok\":true`) {
					b.Fatalf("HTTP %d %s", resp.StatusCode, raw)
				}
				return d
			}
			send(env["FREE_KEY"])
			send(env["BOUNDED_KEY"])
			var free, bounded []time.Duration
			for b.Loop() {
				free = append(free, send(env["FREE_KEY"]))
				bounded = append(bounded, send(env["BOUNDED_KEY"]))
			}
			slices.Sort(free)
			slices.Sort(bounded)
			pct := func(s []time.Duration, p float64) float64 {
				return float64(s[int(p*float64(len(s)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(free, 0.5), "free-p50-ms")
			b.ReportMetric(pct(bounded, 0.5), "quota-p50-ms")
			b.ReportMetric(pct(free, 0.95), "free-p95-ms")
			b.ReportMetric(pct(bounded, 0.95), "quota-p95-ms")
			b.ReportMetric((pct(bounded, 0.5)-pct(free, 0.5))*1000, "p50-extra-us")
		})
	}
}
