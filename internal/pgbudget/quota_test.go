package pgbudget_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/pgbudget"
	"github.com/garraia/garra/test/pgtest"
)

// The shared quotas are the gateway's counters.
var (
	_ gateway.TokenCounter = (*pgbudget.Tokens)(nil)
	_ gateway.SlotCounter  = (*pgbudget.Slots)(nil)
)

// Tokens reserve within the day, settle to what was used (never below
// zero), and a new UTC day starts afresh.
func TestTokensReserveSettleAndTurnOver(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 4, 23, 0, 0, 0, time.UTC)}
	tk := store(t, pool(t, pgtest.DSN(t)), c.now).Tokens("quota:a:tokens", 1000)
	if !tk.Reserve(600) || tk.Reserve(401) || !tk.Reserve(400) {
		t.Fatal("the day's allowance is not 1000")
	}
	tk.Settle(600, 150)
	if tk.Used() != 550 {
		t.Fatalf("used %d after settling 600 to 150, want 550", tk.Used())
	}
	tk.Settle(400, 0)
	tk.Settle(10_000, 0)
	if tk.Used() != 0 {
		t.Fatalf("used %d, want 0 (never negative)", tk.Used())
	}
	if !tk.Reserve(1000) {
		t.Fatal("a settled day has no room")
	}
	c.add(time.Hour)
	if tk.Used() != 0 || !tk.Reserve(1000) {
		t.Fatal("a new UTC day did not start afresh")
	}
}

// Reservations from three replicas' pools: exactly the limit is held.
func TestTokensExactAcrossPools(t *testing.T) {
	dsn := pgtest.DSN(t)
	var wg sync.WaitGroup
	var held atomic.Int64
	for range 3 {
		tk := store(t, pool(t, dsn), nil).Tokens("quota:a:tokens", 1000)
		for range 20 {
			wg.Go(func() {
				for range 10 {
					if tk.Reserve(7) {
						held.Add(7)
					}
				}
			})
		}
	}
	wg.Wait()
	if held.Load() != 994 {
		t.Fatalf("held %d tokens of 600 reservations of 7, want exactly 994 (142 × 7)", held.Load())
	}
}

// Run slots across three replicas' pools never exceed the limit, are
// given back, and a slot whose holder died is dropped after its lease.
func TestSlotsExactAcrossPoolsAndLeased(t *testing.T) {
	dsn := pgtest.DSN(t)
	var inFlight, peak, ran atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		sl := store(t, pool(t, dsn), nil).Slots("quota:a:agent_runs", 2, time.Minute)
		for range 10 {
			wg.Go(func() {
				for range 5 {
					release, ok := sl.Acquire()
					if !ok {
						continue
					}
					n := inFlight.Add(1)
					raisePeak(&peak, n)
					time.Sleep(2 * time.Millisecond)
					inFlight.Add(-1)
					ran.Add(1)
					release()
				}
			})
		}
	}
	wg.Wait()
	if peak.Load() != 2 {
		t.Fatalf("peak %d runs in flight, limit 2", peak.Load())
	}
	t.Logf("%d runs of 150 attempts, peak %d", ran.Load(), peak.Load())

	c := &clock{t: time.Unix(5000, 0)}
	sl := store(t, pool(t, dsn), c.now).Slots("quota:b:agent_runs", 1, time.Minute)
	if _, ok := sl.Acquire(); !ok { // never released: its replica died
		t.Fatal("first slot refused")
	}
	if _, ok := sl.Acquire(); ok || sl.InUse() != 1 {
		t.Fatal("a second slot of one was admitted")
	}
	c.add(61 * time.Second)
	release, ok := sl.Acquire()
	if !ok {
		t.Fatal("a slot past its lease still holds")
	}
	release()
	release()
	if sl.InUse() != 0 {
		t.Fatalf("in use %d after release", sl.InUse())
	}
}

// Without its database a quota refuses and reports itself spent.
func TestQuotasFailClosed(t *testing.T) {
	p := pool(t, pgtest.DSN(t))
	s := store(t, p, nil)
	tk, sl := s.Tokens("quota:a:tokens", 1000), s.Slots("quota:a:agent_runs", 3, time.Minute)
	if !tk.Reserve(10) {
		t.Fatal("reserve refused")
	}
	p.Close()
	if tk.Reserve(1) || tk.Used() != 1000 {
		t.Fatal("tokens without their database admitted a reservation")
	}
	if _, ok := sl.Acquire(); ok || sl.InUse() != 3 {
		t.Fatal("slots without their database admitted a run")
	}
	if w := s.Budget("quota:a:ask", 1, time.Minute).Wait(); w != time.Minute {
		t.Fatalf("wait without the database %v, want the window", w)
	}
}

// raisePeak makes peak at least n.
func raisePeak(peak *atomic.Int64, n int64) {
	for p := peak.Load(); n > p; p = peak.Load() {
		if peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// A refund is owed until the next charge carries it, 0.2 s pass, or the
// store is flushed; meanwhile this replica counts it given back and the
// others count it spent, never less than was spent.
func TestTokenRefundOwedThenFlushed(t *testing.T) {
	dsn := pgtest.DSN(t)
	s := store(t, pool(t, dsn), nil)
	tk := s.Tokens("quota:r:tokens", 1000)
	other := store(t, pool(t, dsn), nil).Tokens("quota:r:tokens", 1000)
	if !tk.Reserve(600) {
		t.Fatal("reserve refused")
	}
	tk.Settle(600, 100)
	if tk.Used() != 100 {
		t.Fatalf("this replica counts %d, want 100", tk.Used())
	}
	if n := other.Used(); n != 100 && n != 600 {
		t.Fatalf("another replica counts %d, want 600 (owed) or 100 (written)", n)
	}
	s.Flush()
	if n := other.Used(); n != 100 {
		t.Fatalf("another replica counts %d after the flush, want 100", n)
	}
}
