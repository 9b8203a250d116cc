package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStdioStartupVsBare puts `garra mcp-server` side by side with a
// bare go-sdk stdio server (test/baremcp), both built the way `make build`
// builds garra, spawned alternately in one run so that both see the same
// machine. It reports the median spawn → initialize reply of each, the
// idle resident memory of each after initialize + tools/list, and the two
// ratios (garra over bare) that the laptop path is held to.
func BenchmarkStdioStartupVsBare(b *testing.B) {
	dir := b.TempDir()
	garra := releaseBuild(b, dir, "garra", ".")
	bare := releaseBuild(b, dir, "baremcp", "../../test/baremcp")
	env := testEnv(b)

	var garraStart, bareStart []time.Duration
	var garraRSS, bareRSS []float64
	for b.Loop() {
		d, rss := spawnInitialize(b, env, garra, "mcp-server")
		garraStart, garraRSS = append(garraStart, d), append(garraRSS, rss)
		d, rss = spawnInitialize(b, env, bare)
		bareStart, bareRSS = append(bareStart, d), append(bareRSS, rss)
	}
	gs, bs := median(garraStart), median(bareStart)
	gr, br := medianF(garraRSS), medianF(bareRSS)
	b.ReportMetric(float64(gs.Microseconds())/1000, "garra-init-ms")
	b.ReportMetric(float64(bs.Microseconds())/1000, "bare-init-ms")
	b.ReportMetric(float64(gs)/float64(bs), "init-ratio")
	b.ReportMetric(gr, "garra-idle-MiB")
	b.ReportMetric(br, "bare-idle-MiB")
	b.ReportMetric(gr/br, "idle-ratio")

	// Package initialisation, which runs before main whatever the command:
	// how many packages have init work, and what it costs.
	gInits, gInitMS := packageInit(b, env, garra, "mcp-server")
	bInits, bInitMS := packageInit(b, env, bare)
	b.ReportMetric(float64(gInits), "garra-init-pkgs")
	b.ReportMetric(gInitMS, "garra-pkginit-ms")
	b.ReportMetric(float64(bInits), "bare-init-pkgs")
	b.ReportMetric(bInitMS, "bare-pkginit-ms")
	b.Logf("stdio startup, garra mcp-server vs a bare go-sdk server, medians of %d spawns each in this run:\n"+
		"%-22s %12s %12s %8s %s\n"+
		"%-22s %12.1f %12.1f %8.2f %s\n"+
		"%-22s %12.1f %12.1f %8.2f %s\n"+
		"%-22s %12d %12d\n"+
		"%-22s %12.1f %12.1f",
		len(garraStart),
		"", "garra", "bare", "ratio", "target",
		"initialize reply (ms)", float64(gs.Microseconds())/1000, float64(bs.Microseconds())/1000, float64(gs)/float64(bs), "ratio <= 2.5",
		"idle RSS (MiB)", gr, br, gr/br, "garra <= 32 MiB",
		"packages with init", gInits, bInits,
		"package init (ms)", gInitMS, bInitMS)
}

// packageInit runs bin under GODEBUG=inittrace=1 with stdin closed (it
// exits at once) and returns how many packages ran init work and the
// median, over a few runs, of their summed clock time in ms.
func packageInit(b *testing.B, env []string, bin string, args ...string) (int, float64) {
	b.Helper()
	var sums []float64
	n := 0
	for range 5 {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(slices.Clone(env), "GODEBUG=inittrace=1")
		cmd.Stdin = strings.NewReader("")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		_ = cmd.Run() // the trace is what counts, not how the server ends
		count, sum := parseInitTrace(stderr.String())
		if count == 0 {
			b.Fatalf("%s printed no init trace:\n%s", bin, stderr.String())
		}
		n = count
		sums = append(sums, sum)
	}
	return n, medianF(sums)
}

// parseInitTrace sums the lines "init PKG @T ms, D ms clock, ..." that
// the runtime prints for each package with init work.
func parseInitTrace(trace string) (int, float64) {
	n, sum := 0, 0.0
	for line := range strings.Lines(trace) {
		f := strings.Fields(line)
		if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		d, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			continue
		}
		n++
		sum += d
	}
	return n, sum
}

// releaseBuild builds pkg (relative to this package) as make build does:
// static, trimmed, stripped.
func releaseBuild(b *testing.B, dir, name, pkg string) string {
	b.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// spawnInitialize starts bin, times spawn → initialize reply, then lists
// the tools, lets the process settle and reads its resident set in MiB.
func spawnInitialize(b *testing.B, env []string, bin string, args ...string) (time.Duration, float64) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = io.Discard
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	start := time.Now()
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("%s: %v", bin, err)
	}
	took := time.Since(start)
	b.StopTimer()
	defer b.StartTimer()
	defer func() { _ = cs.Close() }()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		b.Fatalf("%s tools/list: %v", bin, err)
	}
	time.Sleep(20 * time.Millisecond)
	rss, err := residentMiB(cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return took, rss
}

// residentMiB reads VmRSS of a process from /proc.
func residentMiB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read resident set: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", rest, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(fs []float64) float64 {
	s := slices.Clone(fs)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestParseInitTrace(t *testing.T) {
	trace := "init internal/bytealg @0.005 ms, 0 ms clock, 0 bytes, 0 allocs\n" +
		"some other line\n" +
		"init runtime @0.031 ms, 0.25 ms clock, 0 bytes, 0 allocs\n" +
		"init k8s.io/client-go/kubernetes/scheme @40 ms, 10 ms clock, 674504 bytes, 5668 allocs\n"
	n, sum := parseInitTrace(trace)
	if n != 3 || sum != 10.25 {
		t.Fatalf("got %d packages, %v ms; want 3, 10.25", n, sum)
	}
}
