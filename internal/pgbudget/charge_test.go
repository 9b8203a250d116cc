package pgbudget_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/pgbudget"
	"github.com/garraia/garra/internal/quota"
	"github.com/garraia/garra/test/pgtest"
)

// limits are one orchestrator's quotas in a table case.
type limits struct {
	slots  int
	tokens int64
	window int // each of ask, agent and send per minute
}

// A step admits one call (want: the quota that refuses it, "" = none),
// or, with finish, ends the last admitted call after its one model call
// reserved reserve tokens and used used.
type step struct {
	tool          string
	tokens        int64
	want          string
	finish        bool
	reserve, used int64
}

// A quota set on each store: in memory, charged part by part, and on
// PostgreSQL, charged in one statement. Each call gets names of its own.
type setMaker struct {
	name string
	make func(t *testing.T, l limits, now func() time.Time) *quota.Set
}

var setSeq atomic.Int64

func setMakers() []setMaker {
	memory := setMaker{"memory", func(_ *testing.T, l limits, now func() time.Time) *quota.Set {
		w := func() quota.Window { return gateway.NewBudget(l.window, time.Minute, now) }
		return &quota.Set{Ask: w(), Agent: w(), Send: w(), Concurrent: quota.NewSlots(l.slots), Tokens: quota.NewTokens(l.tokens, now), Now: now}
	}}
	var once sync.Once
	var dsn string
	pg := setMaker{"postgres", func(t *testing.T, l limits, now func() time.Time) *quota.Set {
		once.Do(func() { dsn = pgtest.DSN(t) })
		s := store(t, pool(t, dsn), now)
		return pgSet(s, fmt.Sprintf("quota:o%d:", setSeq.Add(1)), l, now)
	}}
	return []setMaker{memory, pg}
}

// pgSet is a quota set of s's counters named from prefix, charged by s.
func pgSet(s *pgbudget.Store, prefix string, l limits, now func() time.Time) *quota.Set {
	w := func(tool string) quota.Window { return s.Budget(prefix+tool, l.window, time.Minute) }
	return &quota.Set{
		Ask: w("ask"), Agent: w("agent"), Send: w("send"),
		Concurrent: s.Slots(prefix+"agent_runs", l.slots, time.Hour),
		Tokens:     s.Tokens(prefix+"tokens", l.tokens),
		Joint:      s, Now: now,
	}
}

// One table, both stores: the same calls are admitted and refused, name
// the same quota, and leave the same counts, whether the parts are
// charged one by one in memory or all at once on PostgreSQL.
func TestChargeSameOnEveryStore(t *testing.T) {
	agent, ask, send := mcppolicy.ToolAgent, mcppolicy.ToolAsk, mcppolicy.ToolSendMessage
	room := limits{slots: 5, tokens: 1000, window: 5}
	for _, tt := range []struct {
		name  string
		l     limits
		steps []step
		// left is what Status says is left of each quota afterwards.
		left map[string]int64
	}{
		{"admitted holds a slot, the tokens and a take", room,
			[]step{{tool: agent, tokens: 100}},
			map[string]int64{quota.AgentConcurrent: 4, quota.LLMTokensPerDay: 900, quota.AgentPerMinute: 4, quota.AskPerMinute: 5, quota.SendPerMinute: 5}},
		{"no slot free: refused first, holds nothing", limits{slots: 1, tokens: 150, window: 1},
			[]step{{tool: agent, tokens: 100}, {tool: agent, tokens: 100, want: quota.AgentConcurrent}},
			map[string]int64{quota.AgentConcurrent: 0, quota.LLMTokensPerDay: 50, quota.AgentPerMinute: 0, quota.AskPerMinute: 1, quota.SendPerMinute: 1}},
		{"tokens before the window, holds nothing", limits{slots: 5, tokens: 150, window: 1},
			[]step{{tool: agent, tokens: 100}, {tool: agent, tokens: 100, want: quota.LLMTokensPerDay}},
			map[string]int64{quota.AgentConcurrent: 4, quota.LLMTokensPerDay: 50, quota.AgentPerMinute: 0, quota.AskPerMinute: 1, quota.SendPerMinute: 1}},
		{"the window last, holds nothing", limits{slots: 5, tokens: 1000, window: 1},
			[]step{{tool: ask, tokens: 100}, {tool: ask, tokens: 100, want: quota.AskPerMinute}},
			map[string]int64{quota.AgentConcurrent: 5, quota.LLMTokensPerDay: 900, quota.AgentPerMinute: 1, quota.AskPerMinute: 0, quota.SendPerMinute: 1}},
		{"a bound beyond the day", room,
			[]step{{tool: ask, tokens: 1001, want: quota.LLMTokensPerDay}},
			map[string]int64{quota.AgentConcurrent: 5, quota.LLMTokensPerDay: 1000, quota.AgentPerMinute: 5, quota.AskPerMinute: 5, quota.SendPerMinute: 5}},
		{"send charges its window alone", limits{slots: 1, tokens: 1, window: 1},
			[]step{{tool: agent, tokens: 1}, {tool: send, tokens: 100}, {tool: send, want: quota.SendPerMinute}},
			map[string]int64{quota.AgentConcurrent: 0, quota.LLMTokensPerDay: 0, quota.AgentPerMinute: 0, quota.AskPerMinute: 1, quota.SendPerMinute: 0}},
		{"a finished call keeps its usage and gives back its slot", room,
			[]step{{tool: agent, tokens: 100}, {finish: true, reserve: 100, used: 30}},
			map[string]int64{quota.AgentConcurrent: 5, quota.LLMTokensPerDay: 970, quota.AgentPerMinute: 4, quota.AskPerMinute: 5, quota.SendPerMinute: 5}},
		{"what a call gave back is there for the next", limits{slots: 1, tokens: 130, window: 5},
			[]step{{tool: agent, tokens: 100}, {finish: true, reserve: 100, used: 30}, {tool: agent, tokens: 100}, {tool: ask, tokens: 1, want: quota.LLMTokensPerDay}},
			map[string]int64{quota.AgentConcurrent: 0, quota.LLMTokensPerDay: 0, quota.AgentPerMinute: 3, quota.AskPerMinute: 5, quota.SendPerMinute: 5}},
		{"a model call beyond its hold reserves the rest", room,
			[]step{{tool: ask, tokens: 100}, {finish: true, reserve: 400, used: 250}},
			map[string]int64{quota.AgentConcurrent: 5, quota.LLMTokensPerDay: 750, quota.AgentPerMinute: 5, quota.AskPerMinute: 4, quota.SendPerMinute: 5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, mk := range setMakers() {
				t.Run(mk.name, func(t *testing.T) {
					c := &clock{t: time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)}
					s := mk.make(t, tt.l, c.now)
					var told []string
					s.Refused = func(q string) { told = append(told, q) }
					var last *quota.Grant
					var want []string
					for i, st := range tt.steps {
						if st.finish {
							if err := last.Reserve(st.reserve); err != nil {
								t.Fatalf("step %d: reserve: %v", i, err)
							}
							last.Settle(st.reserve, st.used)
							last.Done()
							continue
						}
						g, r := s.Admit(st.tool, st.tokens)
						got := ""
						if r != nil {
							got = r.Quota
							want = append(want, r.Quota)
							if r.RetryAfter <= 0 || r.RetryAfter > 24*time.Hour {
								t.Fatalf("step %d: retry after %v", i, r.RetryAfter)
							}
						}
						if got != st.want || (r == nil) == (g == nil) {
							t.Fatalf("step %d (%s): refused by %q, want %q", i, st.tool, got, st.want)
						}
						if g != nil {
							last = g
						}
					}
					if fmt.Sprint(told) != fmt.Sprint(want) {
						t.Fatalf("told of %v, refused %v", told, want)
					}
					left := map[string]int64{}
					for k, v := range s.Status() {
						left[k] = v.(map[string]int64)["remaining"]
					}
					if !maps.Equal(left, tt.left) {
						t.Fatalf("left %v, want %v", left, tt.left)
					}
				})
			}
		})
	}
}

// A window's refusal on PostgreSQL says when its oldest take leaves it,
// from the same statement.
func TestChargeRefusalWaitsForTheOldestTake(t *testing.T) {
	c := &clock{t: time.Unix(10_000, 0)}
	s := store(t, pool(t, pgtest.DSN(t)), c.now)
	set := pgSet(s, "quota:w:", limits{slots: 1, tokens: 1, window: 1}, c.now)
	if _, r := set.Admit(mcppolicy.ToolSendMessage, 0); r != nil {
		t.Fatal(r)
	}
	c.add(20 * time.Second)
	_, r := set.Admit(mcppolicy.ToolSendMessage, 0)
	if r == nil || r.Quota != quota.SendPerMinute || r.RetryAfter != 40*time.Second {
		t.Fatalf("refusal %+v, want send_per_minute after 40s", r)
	}
}

// Three replicas' pools charging one orchestrator's quotas at once: the
// window admits exactly its limit, the tokens never exceed the day, the
// slots never the runs allowed, and every refused call held nothing.
func TestChargeExactAcrossPools(t *testing.T) {
	dsn := pgtest.DSN(t)
	l := limits{slots: 3, tokens: 1_000_000, window: 40}
	var admitted, refused, inFlight, peak atomic.Int64
	var wg sync.WaitGroup
	var sets []*quota.Set
	for range 3 {
		set := pgSet(store(t, pool(t, dsn), nil), "quota:x:", l, nil)
		sets = append(sets, set)
		for range 20 {
			wg.Go(func() {
				for range 5 {
					g, r := set.Admit(mcppolicy.ToolAgent, 1000)
					if r != nil {
						refused.Add(1)
						continue
					}
					admitted.Add(1)
					raisePeak(&peak, inFlight.Add(1))
					time.Sleep(time.Millisecond)
					inFlight.Add(-1)
					_ = g.Reserve(1000)
					g.Settle(1000, 10)
					g.Done()
				}
			})
		}
	}
	wg.Wait()
	if peak.Load() > 3 || admitted.Load()+refused.Load() != 300 || admitted.Load() > 40 {
		t.Fatalf("admitted %d, refused %d, peak %d runs", admitted.Load(), refused.Load(), peak.Load())
	}
	st := sets[0].Status()
	if got := st[quota.AgentConcurrent].(map[string]int64)["remaining"]; got != 3 {
		t.Fatalf("%d slots free after every run ended", got)
	}
	// The window counted exactly the admitted calls; each of them used
	// 10 tokens, whichever replica still owes the refund of the rest.
	if got := st[quota.AgentPerMinute].(map[string]int64)["remaining"]; got != 40-admitted.Load() {
		t.Fatalf("window has %d left after %d admitted", got, admitted.Load())
	}
	// Until every replica has written its refunds, the day counts more.
	spent := func() int64 {
		return l.tokens - pgSet(store(t, pool(t, dsn), nil), "quota:x:", l, nil).Status()[quota.LLMTokensPerDay].(map[string]int64)["remaining"]
	}
	deadline := time.Now().Add(5 * time.Second)
	for spent() != 10*admitted.Load() && time.Now().Before(deadline) {
		if spent() < 10*admitted.Load() {
			t.Fatalf("the day counts %d tokens, less than the %d used", spent(), 10*admitted.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := spent(); got != 10*admitted.Load() {
		t.Fatalf("the day counts %d tokens, want %d", got, 10*admitted.Load())
	}
}

// Without its database the one-statement charge refuses, naming the first
// quota the call would have charged, and holds nothing.
func TestChargeFailsClosed(t *testing.T) {
	p := pool(t, pgtest.DSN(t))
	set := pgSet(store(t, p, nil), "quota:f:", limits{slots: 2, tokens: 1000, window: 5}, nil)
	p.Close()
	for tool, want := range map[string]string{mcppolicy.ToolAgent: quota.AgentConcurrent, mcppolicy.ToolAsk: quota.LLMTokensPerDay, mcppolicy.ToolSendMessage: quota.SendPerMinute} {
		if g, r := set.Admit(tool, 10); g != nil || r == nil || r.Quota != want {
			t.Fatalf("%s without the database: %v %+v, want refused by %s", tool, g, r, want)
		}
	}
}

// BenchmarkCharge is what one quota'd garra_ask costs the caller on
// PostgreSQL: its admission and the settlement of its one model call,
// charged part by part (a round trip for the tokens, one for the take,
// one for the settlement) against all at once (one statement, the
// settlement carried by the next). p50 and p95 per call; a short window
// keeps the spends in it few however long the run.
func BenchmarkCharge(b *testing.B) {
	for _, joint := range []bool{false, true} {
		name := "part-by-part"
		if joint {
			name = "one-statement"
		}
		b.Run(name, func(b *testing.B) {
			s := store(b, pool(b, pgtest.DSN(b)), nil)
			set := &quota.Set{
				Ask:    s.Budget("quota:b:ask", 1<<30, 100*time.Millisecond),
				Tokens: s.Tokens("quota:b:tokens", 1<<50),
			}
			if joint {
				set.Joint = s
			}
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				g, r := set.Admit(mcppolicy.ToolAsk, 1000)
				if r != nil {
					b.Fatal(r)
				}
				if err := g.Reserve(1000); err != nil {
					b.Fatal(err)
				}
				g.Settle(1000, 200)
				g.Done()
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(pct(0.50), "p50-us")
			b.ReportMetric(pct(0.95), "p95-us")
		})
	}
}
