package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/kube"
)

// scaleSizes are the gateway sizes compared: a small team and a
// platform's thousand attached orchestrators.
var scaleSizes = []int{10, 1000}

const scaleOwnerKey = "scale-owner-key-0123456789abcdef"

func scaleToken(i int, gen string) string {
	return fmt.Sprintf("orch-%04d-token-%s-0123456789abcdef", i, gen)
}

// scaleConfig is config.yml for n orchestrators the way the operator
// renders it: each with a token file and a sandbox (URL and token file)
// in the tokens directory.
func scaleConfig(n int, tokens string) string {
	var b strings.Builder
	b.WriteString("gateway:\n  api_key: " + scaleOwnerKey + "\n  rate_limit: {requests_per_minute: 1000000000}\n  mcp_http:\n    enabled: true\n    orchestrators:\n")
	for i := range n {
		name := fmt.Sprintf("team-%02d/orch-%04d", i%50, i)
		key := fmt.Sprintf("team-%02d.orch-%04d", i%50, i)
		fmt.Fprintf(&b, "      - name: %s\n        key_file: %s\n        tools: [status, ask]\n        sandbox:\n          url: http://orch-%04d.team-%02d.svc:8080\n          token_file: %s\n",
			name, filepath.Join(tokens, key), i, i%50, filepath.Join(tokens, key+".sandbox"))
	}
	b.WriteString("llm: {provider: ollama, model: llama3.2}\n")
	return b.String()
}

// scaleSecret is the tokens Secret as the API server sends it in a watch
// event, orchestrator 0's caller token of generation gen.
func scaleSecret(n int, gen string) json.RawMessage {
	data := map[string]string{}
	for i := range n {
		key := fmt.Sprintf("team-%02d.orch-%04d", i%50, i)
		g := "a"
		if i == 0 {
			g = gen
		}
		data[key] = base64.StdEncoding.EncodeToString([]byte(scaleToken(i, g)))
		data[key+".sandbox"] = base64.StdEncoding.EncodeToString([]byte(scaleToken(i, "sandbox")))
	}
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"name": "g-tokens", "resourceVersion": gen}, "data": data})
	if err != nil {
		panic(err)
	}
	return raw
}

// scaleGateway is a gateway of n orchestrators whose policy comes from a
// live watch (the overlay), as in the cluster.
func scaleGateway(tb testing.TB, n int) *Gateway {
	tb.Helper()
	dir := tb.TempDir()
	tokens := filepath.Join(dir, "tokens")
	yml := scaleConfig(n, tokens)
	getenv := func(string) string { return "" }
	cfg, err := config.FromBytes([]byte(yml), getenv)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.DataDir = filepath.Join(dir, "data")
	g, err := New(Options{Config: cfg, Getenv: getenv, Logger: slog.New(slog.DiscardHandler), ConfigPath: filepath.Join(dir, "config.yml")})
	if err != nil {
		tb.Fatal(err)
	}
	sec, _, err := secretFromWatch(kube.WatchState{Raw: scaleSecret(n, "a")})
	if err != nil {
		tb.Fatal(err)
	}
	g.watched.o = overlay{config: []byte(strings.Replace(yml, "gateway:\n", "data_dir: "+cfg.DataDir+"\ngateway:\n", 1)),
		secretDir: tokens, secret: sec, secretName: "ns/g-tokens"}
	if got := g.Reload(); got != ReloadApplied {
		_, problems := g.reload.get()
		tb.Fatalf("first reload of %d orchestrators: %s %v", n, got, problems)
	}
	if got := len(g.cur.Load().callers.byName); got != n+1 {
		tb.Fatalf("%d callers, want %d", got, n+1)
	}
	return g
}

// BenchmarkGatewayScale compares a gateway of 10 and of 1,000
// orchestrators, side by side:
//
//   - apply: a watch event (the tokens Secret with one orchestrator's
//     token rotated, as the API server sends it) decoded and applied: the
//     new policy built and swapped in. ns/op is the time from the event's
//     arrival to the new policy serving; the target is 100 ms at 1,000.
//   - heap: the live heap once the policy is built, after a collection,
//     per orchestrator (heap-B/orch, the difference between the two sizes
//     divided by theirs) and in all (heap-MiB).
//   - call: one authenticated tools/list through the whole HTTP stack
//     (bearer lookup, the caller's server), for a caller in the middle of
//     the list: it must not grow with the number of orchestrators.
func BenchmarkGatewayScale(b *testing.B) {
	heaps := map[int]uint64{}
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("apply/orchestrators=%d", n), func(b *testing.B) {
			g := scaleGateway(b, n)
			events := []json.RawMessage{scaleSecret(n, "b"), scaleSecret(n, "c")}
			i := 0
			for b.Loop() {
				sec, _, err := secretFromWatch(kube.WatchState{Raw: events[i%2]})
				if err != nil {
					b.Fatal(err)
				}
				g.watched.mu.Lock()
				g.watched.o.secret = sec
				g.watched.mu.Unlock()
				if got := g.Reload(); got != ReloadApplied {
					b.Fatalf("reload %d: %s", i, got)
				}
				i++
			}
		})
	}
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("heap/orchestrators=%d", n), func(b *testing.B) {
			var g *Gateway
			for b.Loop() {
				g = scaleGateway(b, n)
			}
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.HeapAlloc
			g.cur.Store(nil) // drop this one; measure it by its absence
			g = nil
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heaps[n] = before - min(before, ms.HeapAlloc)
			b.ReportMetric(float64(heaps[n])/(1<<20), "heap-MiB")
			if lo, hi := scaleSizes[0], scaleSizes[len(scaleSizes)-1]; n == hi {
				b.ReportMetric(float64(heaps[hi]-min(heaps[hi], heaps[lo]))/float64(hi-lo), "heap-B/orch")
			}
		})
	}
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("call/orchestrators=%d", n), func(b *testing.B) {
			g := scaleGateway(b, n)
			h := g.Handler()
			token := scaleToken(n/2, "a")
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.RemoteAddr = "127.0.0.1:1234"
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "garra_status") {
					b.Fatalf("tools/list: %d %.300s", w.Code, w.Body.String())
				}
			}
		})
	}
}
