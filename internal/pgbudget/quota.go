package pgbudget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/garraia/garra/internal/pgmigrate"
)

// The orchestrators' quotas beside the budgets: a token count per
// quota and UTC day, and a row per agent run in flight. A token
// reservation is one upsert that adds only while the sum stays within the
// limit; the upsert locks the day's row, so reservations from every
// replica are serialised without a read-modify-write race. A run slot
// locks its quota's row in garra_budgets, as a budget's take does, and
// inserts itself only while fewer than the limit hold one; a slot whose
// replica died is dropped once its lease has passed.
var quotaMigration = pgmigrate.Migration{Version: 2, Name: "quotas", SQL: `
CREATE TABLE garra_quota_tokens (
	name TEXT NOT NULL,
	day  DATE NOT NULL,
	used BIGINT NOT NULL,
	PRIMARY KEY (name, day)
);
CREATE TABLE garra_quota_slots (
	holder  TEXT PRIMARY KEY,
	name    TEXT NOT NULL,
	expires BIGINT NOT NULL
);
CREATE INDEX garra_quota_slots_by_name ON garra_quota_slots (name, expires);
`}

// Tokens is one orchestrator's token allowance per UTC day, shared by
// every replica.
//
// What a settlement gives back (a model call used less than it held) is
// not written at once but owed: the next charge or reservation of this
// allowance carries it in its own round trip, or a write settleDelay
// later does when none comes. A call thus costs one round trip, and
// meanwhile the day counts more than was spent, never less: the other
// replicas may refuse a little early, none admits beyond the limit.
type Tokens struct {
	s     *Store
	name  string
	mu    sync.Mutex
	limit int64
	// owed is the settlements not yet written (≤ 0); flushing, that a
	// write of them is scheduled.
	owed     int64
	flushing bool
}

// settleDelay bounds how long a refund waits for a charge to carry it.
const settleDelay = 200 * time.Millisecond

// takeOwed hands over what is owed; the caller writes it.
func (t *Tokens) takeOwed() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.owed
	t.owed = 0
	return n
}

// flush writes what is owed.
func (t *Tokens) flush() {
	t.mu.Lock()
	t.flushing = false
	t.mu.Unlock()
	if n := t.takeOwed(); n != 0 {
		t.write(n)
	}
}

// write adds delta to today's count.
func (t *Tokens) write(delta int64) {
	ctx, cancel := context.WithTimeout(context.Background(), t.s.timeout)
	defer cancel()
	if _, err := t.s.pool.Exec(ctx, settle, t.name, t.day(), delta); err != nil {
		t.s.log.Error("quota: a token settlement was not recorded; the reservation stands", "quota", t.name, "err", err)
	}
}

// Tokens returns the allowance called name of limit tokens a UTC day
// (below 1 is raised to 1).
func (s *Store) Tokens(name string, limit int64) *Tokens {
	t := &Tokens{s: s, name: name, limit: max(1, limit)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = append(s.tokens, t)
	return t
}

// Flush writes what every allowance of s owes back now: for a gateway
// that stops, whose refunds would otherwise be lost with it.
func (s *Store) Flush() {
	s.mu.Lock()
	all := append([]*Tokens(nil), s.tokens...)
	s.mu.Unlock()
	for _, t := range all {
		t.flush()
	}
}

// $2 is the day as the test clock says it, or NULL for the server's.
const (
	today   = `COALESCE($2::date, (now() AT TIME ZONE 'UTC')::date)`
	reserve = `
INSERT INTO garra_quota_tokens AS t (name, day, used)
SELECT $1, ` + today + `, $3::bigint WHERE $3::bigint <= $4::bigint
ON CONFLICT (name, day) DO UPDATE SET used = t.used + EXCLUDED.used WHERE t.used + EXCLUDED.used <= $4::bigint
RETURNING used`
	settle = `
INSERT INTO garra_quota_tokens AS t (name, day, used) VALUES ($1, ` + today + `, GREATEST($3::bigint, 0))
ON CONFLICT (name, day) DO UPDATE SET used = GREATEST(t.used + $3::bigint, 0)`
	// dropDays keeps the table to today and yesterday per quota.
	dropDays   = `DELETE FROM garra_quota_tokens WHERE name = $1 AND day < ` + today + ` - 1`
	tokensUsed = `SELECT COALESCE((SELECT used FROM garra_quota_tokens WHERE name = $1 AND day = ` + today + `), 0)`
)

func (t *Tokens) day() *string {
	if t.s.now == nil {
		return nil
	}
	d := t.s.now().UTC().Format(time.DateOnly)
	return &d
}

// Reserve holds n tokens if today has room for all of them. A reservation
// the database cannot decide is refused and logged: the quota fails
// closed.
func (t *Tokens) Reserve(n int64) bool {
	limit := t.Limit()
	if n < 0 || n > limit {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.s.timeout)
	defer cancel()
	day := t.day()
	batch := &pgx.Batch{}
	owed := t.takeOwed()
	if owed != 0 {
		batch.Queue(settle, t.name, day, owed)
	}
	batch.Queue(reserve, t.name, day, n, limit)
	batch.Queue(dropDays, t.name, day)
	br := t.s.pool.SendBatch(ctx, batch)
	var err0 error
	if owed != 0 {
		_, err0 = br.Exec()
	}
	var used int64
	err1 := br.QueryRow().Scan(&used)
	_, err2 := br.Exec()
	err := errors.Join(err0, err2, br.Close())
	if !errors.Is(err1, pgx.ErrNoRows) {
		err = errors.Join(err1, err)
	}
	if err != nil {
		t.s.log.Error("quota refused: the shared quota store did not answer", "quota", t.name, "err", err)
		return false
	}
	return err1 == nil
}

// Settle replaces a reservation of reserved tokens with used. A refund is
// owed (see Tokens); more than was reserved is written at once. When the
// database cannot be told, the reservation stands (logged): a quota errs
// towards having spent more.
func (t *Tokens) Settle(reserved, used int64) {
	delta := used - reserved
	if delta == 0 {
		return
	}
	if delta > 0 {
		t.write(delta)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.owed += delta
	if !t.flushing {
		t.flushing = true
		time.AfterFunc(settleDelay, t.flush)
	}
}

// Used is what today has spent and holds, less what this replica owes
// back (the limit when the database does not answer: fail closed).
func (t *Tokens) Used() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), t.s.timeout)
	defer cancel()
	var n int64
	if err := t.s.pool.QueryRow(ctx, tokensUsed, t.name, t.day()).Scan(&n); err != nil {
		t.s.log.Warn("quota: the shared quota store did not answer", "quota", t.name, "err", err)
		return t.Limit()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return max(0, n+t.owed)
}

// Limit is the day's allowance.
func (t *Tokens) Limit() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limit
}

// SetLimit changes the allowance; what today spent stays.
func (t *Tokens) SetLimit(limit int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limit = max(1, limit)
}

// Slots bound one orchestrator's agent runs in flight across every
// replica.
type Slots struct {
	s     *Store
	name  string
	lease time.Duration
	mu    sync.Mutex
	limit int
}

// Slots returns the run slots called name, limit of them (below 1 is
// raised to 1); a slot not given back is dropped after lease.
func (s *Store) Slots(name string, limit int, lease time.Duration) *Slots {
	return &Slots{s: s, name: name, lease: lease, limit: max(1, limit)}
}

// $2 is now in ms, or the server's clock when NULL.
const (
	nowMS    = `COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)`
	dropDead = `DELETE FROM garra_quota_slots WHERE name = $1 AND expires <= ` + nowMS
	// occupy: $3 holder, $4 lease ms, $5 limit.
	occupy = `
INSERT INTO garra_quota_slots (holder, name, expires)
SELECT $3, $1, ` + nowMS + ` + $4::bigint
WHERE (SELECT count(*) FROM garra_quota_slots WHERE name = $1) < $5::int
RETURNING 1`
	vacate  = `DELETE FROM garra_quota_slots WHERE holder = $1`
	holding = `SELECT count(*) FROM garra_quota_slots WHERE name = $1 AND expires > ` + nowMS
)

func (sl *Slots) nowArg() *int64 {
	if sl.s.now == nil {
		return nil
	}
	v := sl.s.now().UnixMilli()
	return &v
}

// Acquire takes a slot if fewer than the limit are held; one the database
// cannot decide is refused (logged).
func (sl *Slots) Acquire() (func(), bool) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	holder := hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), sl.s.timeout)
	defer cancel()
	now := sl.nowArg()
	batch := &pgx.Batch{}
	batch.Queue(ensure, sl.name)
	batch.Queue(lock, sl.name)
	batch.Queue(dropDead, sl.name, now)
	batch.Queue(occupy, sl.name, now, holder, sl.lease.Milliseconds(), sl.Limit())
	br := sl.s.pool.SendBatch(ctx, batch)
	_, err1 := br.Exec()
	_, err2 := br.Exec()
	_, err3 := br.Exec()
	var one int
	err4 := br.QueryRow().Scan(&one)
	err := errors.Join(err1, err2, err3, br.Close())
	if !errors.Is(err4, pgx.ErrNoRows) {
		err = errors.Join(err, err4)
	}
	if err != nil {
		sl.s.log.Error("quota refused: the shared quota store did not answer", "quota", sl.name, "err", err)
		return nil, false
	}
	if err4 != nil {
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { sl.release(holder) }) }, true
}

// release gives a slot back; when the database cannot be told, the lease
// frees it later (logged).
func (sl *Slots) release(holder string) {
	ctx, cancel := context.WithTimeout(context.Background(), sl.s.timeout)
	defer cancel()
	if _, err := sl.s.pool.Exec(ctx, vacate, holder); err != nil {
		sl.s.log.Error("quota: a run slot was not given back; its lease frees it", "quota", sl.name, "lease", sl.lease, "err", err)
	}
}

// InUse is how many slots are held (the limit when the database does not
// answer: fail closed).
func (sl *Slots) InUse() int {
	ctx, cancel := context.WithTimeout(context.Background(), sl.s.timeout)
	defer cancel()
	var n int
	if err := sl.s.pool.QueryRow(ctx, holding, sl.name, sl.nowArg()).Scan(&n); err != nil {
		sl.s.log.Warn("quota: the shared quota store did not answer", "quota", sl.name, "err", err)
		return sl.Limit()
	}
	return n
}

// Limit is how many runs may be in flight.
func (sl *Slots) Limit() int {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.limit
}

// SetLimit changes the limit; runs in flight keep their slots.
func (sl *Slots) SetLimit(limit int) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.limit = max(1, limit)
}
