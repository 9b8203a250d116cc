package quota_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/quota"
)

// window is a per-minute quota of limit takes, counting them.
type window struct {
	mu           sync.Mutex
	limit, taken int
}

func (w *window) Take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.taken >= w.limit {
		return false
	}
	w.taken++
	return true
}
func (w *window) Remaining() int      { w.mu.Lock(); defer w.mu.Unlock(); return w.limit - w.taken }
func (w *window) Limit() int          { return w.limit }
func (w *window) Wait() time.Duration { return 17 * time.Second }

var noon = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return noon }

// Each quota refuses with its own name and wait, and a refused call holds
// nothing: no slot, no token, no take of the per-minute quota.
func TestEachQuotaRefusesAndHoldsNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tool  string
		setup func(s *quota.Set)
		want  string
		wait  time.Duration
	}{
		{"ask", mcppolicy.ToolAsk, func(s *quota.Set) { s.Ask = &window{limit: 0} }, quota.AskPerMinute, 17 * time.Second},
		{"agent", mcppolicy.ToolAgent, func(s *quota.Set) { s.Agent = &window{limit: 0} }, quota.AgentPerMinute, 17 * time.Second},
		{"send", mcppolicy.ToolSendMessage, func(s *quota.Set) { s.Send = &window{limit: 0} }, quota.SendPerMinute, 17 * time.Second},
		{"concurrent", mcppolicy.ToolAgent, func(s *quota.Set) {
			s.Concurrent = quota.NewSlots(1)
			s.Concurrent.Acquire()
		}, quota.AgentConcurrent, 5 * time.Second},
		{"tokens", mcppolicy.ToolAsk, func(s *quota.Set) { s.Tokens = quota.NewTokens(100, clock) }, quota.LLMTokensPerDay, 12 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var refused []string
			s := &quota.Set{Now: clock, Refused: func(q string) { refused = append(refused, q) }}
			tt.setup(s)
			// Room everywhere else, so that only the quota under test refuses.
			spare := &window{limit: 5}
			slots := quota.NewSlots(5)
			tokens := quota.NewTokens(1_000_000, clock)
			if s.Ask == nil {
				s.Ask = spare
			}
			if s.Agent == nil {
				s.Agent = spare
			}
			if s.Send == nil {
				s.Send = spare
			}
			if s.Concurrent == nil {
				s.Concurrent = slots
			}
			if s.Tokens == nil {
				s.Tokens = tokens
			}
			g, r := s.Admit(tt.tool, 500)
			if g != nil || r == nil {
				t.Fatalf("admitted: %v %v", g, r)
			}
			if r.Quota != tt.want || r.RetryAfter != tt.wait || r.ErrorKind() != "over_quota" {
				t.Fatalf("refusal %+v, want %s after %v", r, tt.want, tt.wait)
			}
			if len(refused) != 1 || refused[0] != tt.want {
				t.Fatalf("told of %v", refused)
			}
			if spare.taken != 0 || slots.InUse() != 0 || tokens.Used() != 0 {
				t.Fatalf("a refused call held something: takes %d, slots %d, tokens %d", spare.taken, slots.InUse(), tokens.Used())
			}
		})
	}
}

// A grant's model calls reserve from what the call holds first, settle to
// the provider's usage, and Done gives back the rest and the slot.
func TestGrantMetersTokens(t *testing.T) {
	tokens := quota.NewTokens(10_000, clock)
	slots := quota.NewSlots(1)
	s := &quota.Set{Tokens: tokens, Concurrent: slots, Now: clock}
	g, r := s.Admit(mcppolicy.ToolAgent, 1000)
	if r != nil {
		t.Fatal(r)
	}
	if tokens.Used() != 1000 || slots.InUse() != 1 {
		t.Fatalf("held %d tokens, %d slots", tokens.Used(), slots.InUse())
	}
	// First model call: bound 1500, 1000 of it already held.
	if err := g.Reserve(1500); err != nil {
		t.Fatal(err)
	}
	if tokens.Used() != 1500 {
		t.Fatalf("used %d after the first reservation", tokens.Used())
	}
	g.Settle(1500, 300)
	if tokens.Used() != 300 {
		t.Fatalf("used %d after settling to 300", tokens.Used())
	}
	// A turn beyond the day's room is refused naming the quota.
	err := g.Reserve(20_000)
	var ref *quota.Refusal
	if !errors.As(err, &ref) || ref.Quota != quota.LLMTokensPerDay || ref.RetryAfterSecs() != 12*3600 {
		t.Fatalf("over the day: %v", err)
	}
	g.Done()
	g.Done()
	if tokens.Used() != 300 || slots.InUse() != 0 {
		t.Fatalf("after Done: %d tokens, %d slots", tokens.Used(), slots.InUse())
	}
	st := s.Status()
	if got := st[quota.LLMTokensPerDay].(map[string]int64); got["remaining"] != 9700 || got["limit"] != 10_000 {
		t.Fatalf("status %v", st)
	}
}

// The token day turns over at UTC midnight.
func TestTokensTurnOverAtUTCMidnight(t *testing.T) {
	now := noon
	tk := quota.NewTokens(10, func() time.Time { return now })
	if !tk.Reserve(10) || tk.Reserve(1) {
		t.Fatal("the day's allowance is not 10")
	}
	now = time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
	if !tk.Reserve(10) {
		t.Fatal("a new day did not start afresh")
	}
	if d := quota.UntilTomorrow(time.Date(2026, 3, 4, 23, 59, 30, 0, time.FixedZone("x", 3600))); d != time.Hour+30*time.Second {
		t.Fatalf("until tomorrow %v", d)
	}
}

// Under concurrency the memory counters admit exactly their limits.
func TestMemoryCountersExactUnderConcurrency(t *testing.T) {
	slots := quota.NewSlots(3)
	tokens := quota.NewTokens(1000, clock)
	var inFlight, peak, reserved atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if tokens.Reserve(7) {
				reserved.Add(7)
			}
			release, ok := slots.Acquire()
			if !ok {
				return
			}
			n := inFlight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			inFlight.Add(-1)
			release()
		})
	}
	wg.Wait()
	if peak.Load() > 3 || peak.Load() < 1 {
		t.Fatalf("peak runs %d, limit 3", peak.Load())
	}
	if reserved.Load() != 994 || tokens.Used() != 994 {
		t.Fatalf("reserved %d (counter %d), want 994 (142 × 7)", reserved.Load(), tokens.Used())
	}
}

// No quota at all: nothing is charged and the grant is nil and usable.
func TestUnboundedSetAdmitsEverything(t *testing.T) {
	var s *quota.Set
	g, r := s.Admit(mcppolicy.ToolAgent, 100)
	if g != nil || r != nil || s.Bounded() {
		t.Fatal("a nil set bounded a call")
	}
	g.Done()
	if err := g.Reserve(10); err != nil {
		t.Fatal(err)
	}
}
