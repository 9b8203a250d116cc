package egressproxy_test

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkProxiedVsDirectHTTPS is the cost the egress proxy adds to an
// HTTPS GET on loopback: each iteration makes one GET straight to the
// API and one through the proxy with the credential injected (TLS
// terminated with the gateway's CA, upstream TLS verified, the answer
// searched for the credential), both kept alive, and reports the p50 and
// p99 of each side by side, and the p50 added (target: at most 1 ms).
func BenchmarkProxiedVsDirectHTTPS(b *testing.B) {
	f := newFixture(b)
	direct := f.client(b, nil)
	proxied := f.client(b, f.proxy.URL(alphaToken))
	get := func(c *http.Client) time.Duration {
		t0 := time.Now()
		resp, err := c.Get(f.api.URL + "/bench")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 401 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(t0)
	}
	// Warm both connections (handshakes, the leaf certificate).
	get(direct)
	get(proxied)
	ds, ps := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		ds = append(ds, get(direct))
		ps = append(ps, get(proxied))
	}
	b.StopTimer()
	dp50, dp99, pp50, pp99 := pct(ds, 50), pct(ds, 99), pct(ps, 50), pct(ps, 99)
	b.ReportMetric(us(dp50), "direct-p50-us")
	b.ReportMetric(us(pp50), "proxied-p50-us")
	b.ReportMetric(us(pp50-dp50), "added-p50-us")
	b.ReportMetric(us(dp99), "direct-p99-us")
	b.ReportMetric(us(pp99), "proxied-p99-us")
	b.ReportMetric(0, "ns/op")
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}
