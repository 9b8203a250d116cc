package pgbudget_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/pgbudget"
	"github.com/garraia/garra/test/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var ctx = context.Background()

// The shared budget is a gateway.Counter.
var _ gateway.Counter = (*pgbudget.Budget)(nil)

func pool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func store(t testing.TB, p *pgxpool.Pool, now func() time.Time) *pgbudget.Store {
	t.Helper()
	s, err := pgbudget.Open(ctx, p, pgbudget.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// The shared budget behaves as the in-memory one, case for case.
func TestSameSemanticsAsTheMemoryBudget(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := store(t, pool(t, pgtest.DSN(t)), c.now)
	b := s.Budget("ask", 2, time.Minute)
	if got := []bool{b.Take(), b.Take(), b.Take()}; !slices.Equal(got, []bool{true, true, false}) {
		t.Fatalf("takes = %v, want exactly 2", got)
	}
	c.add(30 * time.Second)
	if b.Take() || b.Remaining() != 0 {
		t.Fatal("window has not slid yet")
	}
	c.add(30 * time.Second)
	if b.Remaining() != 2 || !b.Take() {
		t.Fatal("window should have slid after 60s")
	}
	if s.Budget("x", 0, time.Minute).Limit() != 1 || s.Budget("y", -5, time.Minute).Limit() != 1 {
		t.Fatal("a limit below 1 must be raised to 1")
	}

	n := s.Budget("batch", 5, time.Minute)
	if !n.TakeN(3) || n.Remaining() != 2 {
		t.Fatalf("TakeN(3): remaining %d", n.Remaining())
	}
	if n.TakeN(3) || n.Remaining() != 2 {
		t.Fatalf("a TakeN that does not fit took something: remaining %d", n.Remaining())
	}
	if !n.TakeN(2) || n.TakeN(1) || !n.TakeN(0) || n.TakeN(-1) || n.TakeN(6) {
		t.Fatal("TakeN at the edge")
	}
	c.add(time.Minute)
	if !n.TakeN(5) {
		t.Fatal("the window slid; 5 must fit")
	}

	// SetLimit keeps what was spent: raising 5 (all spent) to 7 leaves 2.
	n.SetLimit(7)
	if n.Limit() != 7 || n.Remaining() != 2 || !n.TakeN(2) || n.Take() {
		t.Fatalf("after SetLimit(7): limit %d remaining %d", n.Limit(), n.Remaining())
	}
	n.SetLimit(0)
	if n.Limit() != 1 {
		t.Fatal("SetLimit below 1 must raise to 1")
	}
	// Budgets are independent by name.
	if other := s.Budget("other", 1, time.Minute); !other.Take() {
		t.Fatal("another budget's spend counted")
	}
}

// Several processes' pools, many goroutines each: exactly the limit is
// admitted, whatever the interleaving.
func TestExactAcrossPoolsAndGoroutines(t *testing.T) {
	dsn := pgtest.DSN(t)
	const replicas, perReplica, limit = 3, 40, 50
	const calls = 1000
	pools := make([]*pgxpool.Pool, replicas)
	for r := range pools {
		pools[r] = pool(t, dsn)
	}
	for round, take := range []func(*pgbudget.Budget) int{
		func(b *pgbudget.Budget) int { return boolInt(b.Take()) },
		func(b *pgbudget.Budget) int { return 3 * boolInt(b.TakeN(3)) }, // 50 is no multiple of 3: 48 at most
	} {
		name := fmt.Sprint("round", round)
		var admitted, made atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for r := range replicas {
			rb := store(t, pools[r], nil).Budget(name, limit, time.Minute)
			for range perReplica {
				wg.Go(func() {
					<-start
					for made.Add(1) <= calls {
						admitted.Add(int64(take(rb)))
					}
				})
			}
		}
		close(start)
		wg.Wait()
		want := int64(limit)
		if round == 1 {
			want = 48
		}
		if admitted.Load() != want {
			t.Fatalf("%s: %d units admitted of %d calls, want exactly %d", name, admitted.Load(), calls, want)
		}
		t.Logf("%s: %d calls over %d pools, %d goroutines: %d admitted", name, calls, replicas, replicas*perReplica, admitted.Load())
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A spend is in the database: a restarted process (a new pool) sees it.
func TestSpendSurvivesARestart(t *testing.T) {
	dsn := pgtest.DSN(t)
	p := pool(t, dsn)
	b := store(t, p, nil).Budget("agent", 3, time.Minute)
	if !b.TakeN(2) {
		t.Fatal("takes refused")
	}
	p.Close()
	again := store(t, pool(t, dsn), nil).Budget("agent", 3, time.Minute)
	if again.Remaining() != 1 || !again.Take() || again.Take() {
		t.Fatalf("after a restart: remaining %d, want 1", again.Remaining())
	}
}

// The server's clock slides the window when no clock is injected.
func TestServerClockSlides(t *testing.T) {
	b := store(t, pool(t, pgtest.DSN(t)), nil).Budget("ip:127.0.0.1", 2, 300*time.Millisecond)
	if !b.TakeN(2) || b.Take() {
		t.Fatal("limit 2")
	}
	time.Sleep(350 * time.Millisecond)
	if b.Remaining() != 2 || !b.Take() {
		t.Fatalf("the window did not slide: remaining %d", b.Remaining())
	}
}

// A budget that cannot reach the database refuses: it fails closed.
func TestUnreachableDatabaseRefuses(t *testing.T) {
	p := pool(t, pgtest.DSN(t))
	b := store(t, p, nil).Budget("ask", 100, time.Minute)
	if !b.Take() {
		t.Fatal("take refused")
	}
	p.Close()
	if b.Take() || b.TakeN(1) || b.Remaining() != 0 {
		t.Fatal("a budget without its database admitted a take")
	}
}

// BenchmarkChargedCall is the latency a charged call pays for its budget:
// the in-memory budget against the shared one on this machine's server
// (a Unix socket), with p50 and p95.
func BenchmarkChargedCall(b *testing.B) {
	run := func(b *testing.B, c gateway.Counter) {
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			c.Take()
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
		b.ReportMetric(pct(0.50), "p50-ns")
		b.ReportMetric(pct(0.95), "p95-ns")
	}
	b.Run("memory", func(b *testing.B) {
		run(b, gateway.NewBudget(1<<30, time.Minute, nil))
	})
	// A short window keeps the row small however long the run.
	b.Run("postgres-unix-socket", func(b *testing.B) {
		run(b, store(b, pool(b, pgtest.DSN(b)), nil).Budget("bench", 1<<30, 100*time.Millisecond))
	})
	b.Run("postgres-loopback-tcp", func(b *testing.B) {
		run(b, store(b, pool(b, pgtest.LoopbackDSN(b, pgtest.DSN(b))), nil).Budget("bench", 1<<30, 100*time.Millisecond))
	})
}
