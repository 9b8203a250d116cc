package gateway

import (
	"sync"
	"time"
)

// Counter is a budget as the gateway uses it: the in-memory Budget of one
// process, or a budget shared by every replica (kept in PostgreSQL) when
// several gateway processes must spend from one allowance. A refused take
// costs nothing; SetLimit never refills what the window has spent.
type Counter interface {
	Take() bool
	TakeN(n int) bool
	Remaining() int
	Limit() int
	SetLimit(limit int)
}

// BudgetFactory makes the counter called name ("ask", "agent", "send",
// "ip:<address>") of limit per window.
type BudgetFactory func(name string, limit int, window time.Duration) Counter

// memoryBudgets is the default factory: budgets in this process only.
func memoryBudgets(now func() time.Time) BudgetFactory {
	return func(_ string, limit int, window time.Duration) Counter { return NewBudget(limit, window, now) }
}

var _ Counter = (*Budget)(nil)

// Budget is a sliding-window counter: at most Limit takes in any Window.
// It is exact under concurrency (one mutex) and a refused take costs
// nothing.
type Budget struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	now    func() time.Time
	taken  []time.Time // ascending
}

// NewBudget makes a budget of limit per window. A limit below 1 is raised
// to 1, as the spec says of the per-minute budgets.
func NewBudget(limit int, window time.Duration, now func() time.Time) *Budget {
	if limit < 1 {
		limit = 1
	}
	if now == nil {
		now = time.Now
	}
	return &Budget{limit: limit, window: window, now: now}
}

// Take consumes one unit if the window has room.
func (b *Budget) Take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.now()
	b.expire(t)
	if len(b.taken) >= b.limit {
		return false
	}
	b.taken = append(b.taken, t)
	return true
}

// TakeN consumes n units if the window has room for all of them, and none
// otherwise.
func (b *Budget) TakeN(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.now()
	b.expire(t)
	if n < 0 || len(b.taken)+n > b.limit {
		return false
	}
	for range n {
		b.taken = append(b.taken, t)
	}
	return true
}

// Remaining is how many takes the window has room for now.
func (b *Budget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(b.now())
	return max(0, b.limit-len(b.taken))
}

// Limit is the budget's size.
func (b *Budget) Limit() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit
}

// SetLimit changes the budget's size (below 1 is raised to 1) and keeps
// what the window has already spent: a reload must not refill a budget.
func (b *Budget) SetLimit(limit int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.limit = max(1, limit)
}

// Wait is how long until the window has room for one more take (0 when it
// has now): a refusal's Retry-After.
func (b *Budget) Wait() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.now()
	b.expire(t)
	if len(b.taken) < b.limit {
		return 0
	}
	return b.window - t.Sub(b.taken[len(b.taken)-b.limit])
}

func (b *Budget) expire(t time.Time) {
	cut := 0
	for cut < len(b.taken) && t.Sub(b.taken[cut]) >= b.window {
		cut++
	}
	if cut > 0 {
		// Reslice rather than copy: copying the window on every take is
		// quadratic at high limits. append reallocates, dropping the prefix.
		b.taken = b.taken[cut:]
	}
}
