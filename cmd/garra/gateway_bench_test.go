package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkGatewayVsBareHTTP puts `garra gateway` side by side with a bare
// go-sdk streamable HTTP server (test/baremcp -http), each a process of
// its own on loopback, both built as make build builds garra. The same
// closed-loop load (gatewayBenchClients keep-alive clients in this
// process, each POSTing its next request as soon as the last one is
// answered) goes to each in turn, in alternated rounds, so that both see
// the same machine: tools/list, then tools/call of garra_status on the
// gateway (as its owner) and of the bare server's one trivial tool.
//
// Both run the SDK the same way: stateless, JSON responses, no session.
// The gateway keeps its whole stack: per-IP limit (high enough never to
// refuse), origin, Host and bearer checks, metrics, the call's log line
// (into a file) and the audit file.
//
// For each side it reports requests per second, p50 and p99 latency, and
// the server process's CPU time per request (utime+stime from /proc before
// and after each round), and the ratios gateway/bare. Setting
// GARRA_BENCH_GATEWAY_BEFORE to another garra binary adds it as a third
// side, so two builds compare in one run.
func BenchmarkGatewayVsBareHTTP(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads process CPU time from /proc")
	}
	dir := b.TempDir()
	garra := releaseBuild(b, dir, "garra", ".")
	bare := releaseBuild(b, dir, "baremcp", "../../test/baremcp")

	sides := []*benchSide{startBenchGateway(b, garra, "garra")}
	if before := os.Getenv("GARRA_BENCH_GATEWAY_BEFORE"); before != "" {
		sides = append(sides, startBenchGateway(b, before, "before"))
	}
	sides = append(sides, startBenchBare(b, bare))

	methods := []struct {
		name        string
		garra, bare string
	}{
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`},
		{"tools/call", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"garra_status","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"ok"}}}`},
	}
	results := make([][]*benchTally, len(methods)) // [method][side]
	for i := range methods {
		results[i] = make([]*benchTally, len(sides))
		for j := range sides {
			results[i][j] = &benchTally{}
		}
	}
	bodyOf := func(mi int, s *benchSide) string {
		if s.bare {
			return methods[mi].bare
		}
		return methods[mi].garra
	}
	// Warm both up (connections, the runtime's heap) before measuring.
	for mi := range methods {
		for _, s := range sides {
			if _, err := s.round(bodyOf(mi, s), gatewayBenchWarmup); err != nil {
				b.Fatalf("%s %s: %v\n%s", s.name, methods[mi].name, err, s.logTail())
			}
		}
	}
	round := 0
	for b.Loop() {
		for mi := range methods {
			for k := range sides {
				// Rotate who goes first, so that no side always follows
				// another's garbage or warm caches.
				si := (k + round) % len(sides)
				s := sides[si]
				t, err := s.round(bodyOf(mi, s), gatewayBenchRound)
				if err != nil {
					b.Fatalf("%s %s: %v\n%s", s.name, methods[mi].name, err, s.logTail())
				}
				results[mi][si].add(t)
			}
		}
		round++
	}

	bareIdx := len(sides) - 1
	var sb strings.Builder
	fmt.Fprintf(&sb, "whole processes on loopback, %d keep-alive clients, %d alternated rounds of %v per side and method:\n",
		gatewayBenchClients, round, gatewayBenchRound)
	fmt.Fprintf(&sb, "%-11s %-7s %10s %9s %9s %11s\n", "method", "side", "req/s", "p50 ms", "p99 ms", "CPU us/req")
	for mi, m := range methods {
		for si, s := range sides {
			t := results[mi][si]
			fmt.Fprintf(&sb, "%-11s %-7s %10.0f %9.3f %9.3f %11.1f\n", m.name, s.name, t.rate(), ms(t.pct(50)), ms(t.pct(99)), t.cpuPerReq())
		}
		bt := results[mi][bareIdx]
		for si, s := range sides[:bareIdx] {
			t := results[mi][si]
			fmt.Fprintf(&sb, "%-11s %-7s %10.2f %9.2f %9.2f %11.2f  (%s/bare)\n", m.name, "ratio",
				t.rate()/bt.rate(), ms(t.pct(50))/ms(bt.pct(50)), ms(t.pct(99))/ms(bt.pct(99)), t.cpuPerReq()/bt.cpuPerReq(), s.name)
		}
		key := strings.ReplaceAll(m.name, "/", "-")
		gt := results[mi][0]
		b.ReportMetric(gt.rate(), key+"-garra-req/s")
		b.ReportMetric(bt.rate(), key+"-bare-req/s")
		b.ReportMetric(gt.rate()/bt.rate(), key+"-rate-ratio")
		b.ReportMetric(gt.cpuPerReq()/bt.cpuPerReq(), key+"-cpu-ratio")
	}
	sb.WriteString("targets: tools/list rate >= 0.9x, tools/call rate >= 0.8x, CPU per request <= 1.3x")
	b.Log(sb.String())
}

const (
	gatewayBenchClients = 8
	gatewayBenchRound   = time.Second
	gatewayBenchWarmup  = 300 * time.Millisecond
	gatewayBenchKey     = "bench-owner-key-6a0f3e2d1c4b5a69788796a5b4c3d2e1"
	// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat
	// (100 on every Linux the kernel ABI allows).
	clockTicks = 100
)

// benchSide is one server process under load and its HTTP client.
type benchSide struct {
	name string
	bare bool
	url  string
	pid  int
	log  string // path of its log file
	hc   *http.Client
}

// startBenchGateway runs bin as `garra gateway` with the bridge on, the
// owner's key in its environment, a per-IP limit the load never reaches
// and its log into a file.
func startBenchGateway(b *testing.B, bin, name string) *benchSide {
	b.Helper()
	dir := b.TempDir()
	cfg := fmt.Sprintf(`data_dir: %s
gateway:
  listen: 127.0.0.1:0
  rate_limit: {requests_per_minute: 1000000000}
  mcp_http:
    enabled: true
`, filepath.Join(dir, "data"))
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	env := testEnv(b, "GARRAIA_GATEWAY_API_KEY="+gatewayBenchKey)
	s := &benchSide{name: name, log: filepath.Join(dir, "gateway.log")}
	addr := startBenchProcess(b, s, env, gatewayListeningLine, bin, "gateway", "--config", path)
	s.url = "http://" + addr + "/mcp"
	return s
}

var bareListeningLine = regexp.MustCompile(`baremcp listening (\S+)`)

func startBenchBare(b *testing.B, bin string) *benchSide {
	b.Helper()
	s := &benchSide{name: "bare", bare: true, log: filepath.Join(b.TempDir(), "bare.log")}
	addr := startBenchProcess(b, s, testEnv(b), bareListeningLine, bin, "-http", "127.0.0.1:0")
	s.url = "http://" + addr + "/mcp"
	return s
}

// startBenchProcess starts bin with its output into s.log (a file: a pipe
// read by this process would tie the server's pace to ours), waits for
// listening to show its address, and stops it on cleanup.
func startBenchProcess(b *testing.B, s *benchSide, env []string, listening *regexp.Regexp, bin string, args ...string) string {
	b.Helper()
	out, err := os.Create(s.log)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = out.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s.pid = cmd.Process.Pid
	exited := stopAtCleanup(b, cmd, s.name)
	s.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: gatewayBenchClients, DisableCompression: true}}
	b.Cleanup(s.hc.CloseIdleConnections)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		text, _ := os.ReadFile(s.log)
		if m := listening.FindSubmatch(text); m != nil {
			return string(m[1])
		}
		select {
		case err := <-exited:
			b.Fatalf("%s exited before listening (%v):\n%s", s.name, err, text)
		case <-time.After(20 * time.Millisecond):
		}
	}
	b.Fatalf("%s: no listening line after 60 s:\n%s", s.name, s.logTail())
	return ""
}

func (s *benchSide) logTail() string {
	text, _ := os.ReadFile(s.log)
	if len(text) > 4000 {
		text = text[len(text)-4000:]
	}
	return string(text)
}

// benchRound is what one round of load on one side measured.
type benchRound struct {
	requests int
	elapsed  time.Duration
	cpu      time.Duration // the server's, over the round
	lat      []time.Duration
}

// round drives s with gatewayBenchClients closed-loop clients POSTing body
// for d, and reads the server's CPU time around it.
func (s *benchSide) round(body string, d time.Duration) (benchRound, error) {
	cpu0, err := processCPU(s.pid)
	if err != nil {
		return benchRound{}, err
	}
	lats := make([][]time.Duration, gatewayBenchClients)
	errs := make([]error, gatewayBenchClients)
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for c := range gatewayBenchClients {
		wg.Go(func() {
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := s.post(body); err != nil {
					errs[c] = err
					return
				}
				lats[c] = append(lats[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := processCPU(s.pid)
	if err != nil {
		return benchRound{}, err
	}
	if err := errors.Join(errs...); err != nil {
		return benchRound{}, err
	}
	r := benchRound{elapsed: elapsed, cpu: cpu1 - cpu0, lat: slices.Concat(lats...)}
	r.requests = len(r.lat)
	return r, nil
}

// post sends one request and insists on a 200 carrying a JSON-RPC result.
func (s *benchSide) post(body string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+gatewayBenchKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"result"`)) || bytes.Contains(raw, []byte(`"isError":true`)) {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	return nil
}

// processCPU is a process's user plus system CPU time so far.
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time: %w", err)
	}
	return parseProcStatCPU(string(raw))
}

// parseProcStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line. The command name, field 2, may hold spaces and
// parentheses, so fields are counted from its closing parenthesis.
func parseProcStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat: %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat: %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc stat CPU time %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// benchTally adds up one side's rounds for one method.
type benchTally struct {
	requests int
	elapsed  time.Duration
	cpu      time.Duration
	lat      []time.Duration
}

func (t *benchTally) add(r benchRound) {
	t.requests += r.requests
	t.elapsed += r.elapsed
	t.cpu += r.cpu
	t.lat = append(t.lat, r.lat...)
}

func (t *benchTally) rate() float64 { return float64(t.requests) / t.elapsed.Seconds() }

// cpuPerReq is the server's CPU time per request in µs.
func (t *benchTally) cpuPerReq() float64 {
	return float64(t.cpu.Microseconds()) / float64(t.requests)
}

func (t *benchTally) pct(p int) time.Duration {
	s := slices.Clone(t.lat)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func TestParseProcStatCPU(t *testing.T) {
	stat := "4242 (garra (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 75 0 0 20 0 9 0 100 0 0\n"
	got, err := parseProcStatCPU(stat)
	if err != nil || got != 3250*time.Millisecond {
		t.Fatalf("got %v, %v; want 3.25s", got, err)
	}
	if _, err := parseProcStatCPU("4242 (garra) S 1"); err == nil {
		t.Fatal("a short line parsed")
	}
}
