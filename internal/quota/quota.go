// Package quota is one orchestrator's own allowance on the gateway, inside
// the budgets the whole bridge shares: calls per minute of garra_ask,
// garra_agent and garra_send_message, garra_agent runs in flight, and LLM
// tokens per UTC day. The counters are handed in (in memory, or shared by
// every replica in PostgreSQL); this package only decides in which order
// they are charged, so that a refused call holds nothing.
package quota

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
)

// The quotas' names, as a refusal, garra_status and the metrics say them:
// the gateway config's words.
const (
	AskPerMinute    = "ask_per_minute"
	AgentPerMinute  = "agent_per_minute"
	SendPerMinute   = "send_per_minute"
	AgentConcurrent = "agent_concurrent"
	LLMTokensPerDay = "llm_tokens_per_day" //nolint:gosec // G101: a quota's name, not a credential
)

// Window is a per-minute quota: the gateway's budget counter. A refused
// take costs nothing.
type Window interface {
	Take() bool
	Remaining() int
	Limit() int
}

// Waiter is a Window that knows when its oldest take leaves the window.
type Waiter interface {
	Wait() time.Duration
}

// Slots bounds the runs in flight. A refused Acquire holds nothing.
type Slots interface {
	// Acquire takes a slot; release gives it back (once).
	Acquire() (release func(), ok bool)
	InUse() int
	Limit() int
}

// Tokens is a token allowance per UTC day.
type Tokens interface {
	// Reserve holds n tokens if the day has room for all of them.
	Reserve(n int64) bool
	// Settle replaces a reservation of reserved with used; it is never
	// refused (what a model call used is spent).
	Settle(reserved, used int64)
	Used() int64
	Limit() int64
}

// Set is one orchestrator's quotas; a nil one is unlimited.
type Set struct {
	Ask, Agent, Send Window
	Concurrent       Slots
	Tokens           Tokens
	// Joint charges a call's quotas all at once (a shared store, in one
	// round trip); nil = one after the other, in Sequential's order.
	Joint Joint
	// Now is the clock of the token day's end; nil = time.Now.
	Now func() time.Time
	// Refused, when set, is told of each refusal (the gateway's metrics).
	Refused func(quota string)
}

// Charge is what one call takes of its orchestrator's quotas before it
// runs: a slot of Slots, N tokens of Tokens and one take of Window; a nil
// counter (or N = 0) is not charged.
type Charge struct {
	Slots  Slots
	Tokens Tokens
	N      int64
	Window Window
}

// Part is which part of a Charge refused it.
type Part int

// The parts of a Charge, in the order they are checked: the first that
// has no room refuses the call.
const (
	Admitted Part = iota
	RefusedSlot
	RefusedTokens
	RefusedWindow
)

// Joint charges a whole Charge, all or nothing: admitted, it holds the
// slot (release gives it back, once), the tokens and the take; refused,
// it holds nothing and says which part refused, checked in Part's order,
// and for RefusedWindow the wait until the window has room (0 = unknown).
// Every Joint refuses exactly what Sequential refuses.
type Joint interface {
	Charge(c Charge) (release func(), refused Part, wait time.Duration)
}

// Sequential charges the parts one after the other, each giving back what
// the earlier ones took when it refuses. It is the Joint of counters that
// share nothing, and the reference every other Joint answers as.
type Sequential struct{}

// Charge charges c part by part.
func (Sequential) Charge(c Charge) (func(), Part, time.Duration) {
	var release func()
	if c.Slots != nil {
		r, ok := c.Slots.Acquire()
		if !ok {
			return nil, RefusedSlot, 0
		}
		release = r
	}
	giveBack := func() {
		if release != nil {
			release()
		}
	}
	if c.Tokens != nil && c.N > 0 && !c.Tokens.Reserve(c.N) {
		giveBack()
		return nil, RefusedTokens, 0
	}
	if c.Window != nil && !c.Window.Take() {
		if c.Tokens != nil && c.N > 0 {
			c.Tokens.Settle(c.N, 0)
		}
		giveBack()
		return nil, RefusedWindow, 0
	}
	return release, Admitted, 0
}

// Bounded reports whether s bounds anything.
func (s *Set) Bounded() bool {
	return s != nil && (s.Ask != nil || s.Agent != nil || s.Send != nil || s.Concurrent != nil || s.Tokens != nil)
}

// Refusal is a call a quota refused: which one, and when to retry.
type Refusal struct {
	Quota      string
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return r.Message() }

// ErrorKind is the stable kind of every quota refusal.
func (r *Refusal) ErrorKind() errkinds.Kind { return errkinds.OverQuota }

// QuotaName is which quota refused.
func (r *Refusal) QuotaName() string { return r.Quota }

// RetryAfterSecs is RetryAfter in whole seconds, at least 1.
func (r *Refusal) RetryAfterSecs() int {
	return max(1, int(math.Ceil(r.RetryAfter.Seconds())))
}

// Message names the quota and the wait; it holds nothing the caller did
// not know.
func (r *Refusal) Message() string {
	return fmt.Sprintf("this orchestrator's quota %s is spent; try again in %d s", r.Quota, r.RetryAfterSecs())
}

// concurrentRetry is what a refusal of agent_concurrent suggests: runs end
// at no time anyone knows.
const concurrentRetry = 5 * time.Second

// Admit charges one call of tool before it runs, holding tokens of the
// day's allowance for its first model call (0 = none). All of it is
// charged or none (Joint): a refused call has spent nothing. A tool no
// quota bounds gets a nil Grant, which is ready to use.
func (s *Set) Admit(tool string, tokens int64) (*Grant, *Refusal) {
	if !s.Bounded() {
		return nil, nil
	}
	var c Charge
	var wname string
	switch tool {
	case mcppolicy.ToolAsk:
		c.Window, wname = s.Ask, AskPerMinute
	case mcppolicy.ToolAgent:
		c.Window, wname = s.Agent, AgentPerMinute
		c.Slots = s.Concurrent
	case mcppolicy.ToolSendMessage:
		c.Window, wname = s.Send, SendPerMinute
		tokens = 0
	default:
		return nil, nil
	}
	if s.Tokens != nil && tokens > 0 {
		c.Tokens, c.N = s.Tokens, tokens
	}
	var j Joint = Sequential{}
	if s.Joint != nil {
		j = s.Joint
	}
	release, refused, wait := j.Charge(c)
	switch refused {
	case RefusedSlot:
		return nil, s.refuse(AgentConcurrent, concurrentRetry)
	case RefusedTokens:
		return nil, s.refuse(LLMTokensPerDay, s.untilTomorrow())
	case RefusedWindow:
		if wait <= 0 {
			wait = waitOf(c.Window)
		}
		return nil, s.refuse(wname, wait)
	}
	return &Grant{s: s, release: release, prepaid: c.N}, nil
}

func (s *Set) refuse(quota string, wait time.Duration) *Refusal {
	if s.Refused != nil {
		s.Refused(quota)
	}
	return &Refusal{Quota: quota, RetryAfter: wait}
}

func waitOf(w Window) time.Duration {
	if x, ok := w.(Waiter); ok {
		if d := x.Wait(); d > 0 {
			return d
		}
	}
	return time.Minute
}

func (s *Set) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// untilTomorrow is how long until the UTC day, and with it the token
// allowance, turns over.
func (s *Set) untilTomorrow() time.Duration {
	return UntilTomorrow(s.now())
}

// UntilTomorrow is the time from t to the next UTC midnight.
func UntilTomorrow(t time.Time) time.Duration {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC).Sub(t)
}

// Status is what is left of each quota s bounds, for garra_status: per
// minute quotas as calls left, agent_concurrent as runs that may start
// now, llm_tokens_per_day as tokens left today.
func (s *Set) Status() map[string]any {
	out := map[string]any{}
	left := func(name string, remaining, limit int64) {
		out[name] = map[string]int64{"limit": limit, "remaining": max(0, remaining)}
	}
	for _, w := range []struct {
		name string
		w    Window
	}{{AskPerMinute, s.Ask}, {AgentPerMinute, s.Agent}, {SendPerMinute, s.Send}} {
		if w.w != nil {
			left(w.name, int64(w.w.Remaining()), int64(w.w.Limit()))
		}
	}
	if s.Concurrent != nil {
		left(AgentConcurrent, int64(s.Concurrent.Limit()-s.Concurrent.InUse()), int64(s.Concurrent.Limit()))
	}
	if s.Tokens != nil {
		left(LLMTokensPerDay, s.Tokens.Limit()-s.Tokens.Used(), s.Tokens.Limit())
	}
	return out
}

// Grant is an admitted call: its run slot and the tokens it holds. It is
// the call's llm.Meter: each model call reserves from what the call holds
// first, then from the day's allowance. Done gives back what is left.
type Grant struct {
	s       *Set
	mu      sync.Mutex
	prepaid int64
	release func()
	done    bool
}

// Reserve holds n tokens for one model call.
func (g *Grant) Reserve(n int64) error {
	if g == nil || g.s.Tokens == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prepaid >= n {
		g.prepaid -= n
		return nil
	}
	if !g.s.Tokens.Reserve(n - g.prepaid) {
		return g.s.refuse(LLMTokensPerDay, g.s.untilTomorrow())
	}
	g.prepaid = 0
	return nil
}

// Settle replaces one model call's reservation with what it used.
func (g *Grant) Settle(reserved, used int64) {
	if g == nil || g.s.Tokens == nil || reserved == used {
		return
	}
	g.s.Tokens.Settle(reserved, used)
}

// Done ends the call: the tokens it still holds and its run slot are
// given back. Later calls do nothing.
func (g *Grant) Done() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return
	}
	g.done = true
	if g.prepaid > 0 {
		g.s.Tokens.Settle(g.prepaid, 0)
		g.prepaid = 0
	}
	if g.release != nil {
		g.release()
	}
}
