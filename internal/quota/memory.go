package quota

import (
	"sync"
	"time"
)

// MemorySlots are run slots of this process alone.
type MemorySlots struct {
	mu    sync.Mutex
	limit int
	inUse int
}

// NewSlots makes limit slots (below 1 is raised to 1).
func NewSlots(limit int) *MemorySlots { return &MemorySlots{limit: max(1, limit)} }

// Acquire takes a slot if one is free.
func (s *MemorySlots) Acquire() (func(), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse >= s.limit {
		return nil, false
	}
	s.inUse++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.inUse--
			s.mu.Unlock()
		})
	}, true
}

// InUse is how many slots are taken.
func (s *MemorySlots) InUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse
}

// Limit is how many slots there are.
func (s *MemorySlots) Limit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}

// SetLimit changes the number of slots; runs in flight keep theirs.
func (s *MemorySlots) SetLimit(limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = max(1, limit)
}

// MemoryTokens is a token allowance per UTC day of this process alone.
type MemoryTokens struct {
	mu    sync.Mutex
	limit int64
	now   func() time.Time
	day   string
	used  int64
}

// NewTokens makes an allowance of limit tokens a UTC day (below 1 is
// raised to 1); now nil = time.Now.
func NewTokens(limit int64, now func() time.Time) *MemoryTokens {
	if now == nil {
		now = time.Now
	}
	return &MemoryTokens{limit: max(1, limit), now: now}
}

// roll starts a new day's count when the UTC date changed.
func (t *MemoryTokens) roll() {
	if d := t.now().UTC().Format(time.DateOnly); d != t.day {
		t.day, t.used = d, 0
	}
}

// Reserve holds n tokens if today has room for them all.
func (t *MemoryTokens) Reserve(n int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roll()
	if n < 0 || t.used+n > t.limit {
		return false
	}
	t.used += n
	return true
}

// Settle replaces a reservation with what was used. A reservation made
// yesterday settles against today, which at worst counts a call that
// straddled midnight on the new day.
func (t *MemoryTokens) Settle(reserved, used int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roll()
	t.used = max(0, t.used+used-reserved)
}

// Used is what today has spent and holds.
func (t *MemoryTokens) Used() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roll()
	return t.used
}

// Limit is the day's allowance.
func (t *MemoryTokens) Limit() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limit
}

// SetLimit changes the allowance and keeps what today has spent.
func (t *MemoryTokens) SetLimit(limit int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limit = max(1, limit)
}
