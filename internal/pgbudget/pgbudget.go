// Package pgbudget keeps the gateway's budgets in PostgreSQL, so that a
// budget of N per window is N across every replica rather than N per
// replica, and a spend survives a restart or a reload.
//
// A budget is a sliding window, like the in-memory one: a row per budget
// and a row per take in garra_budget_spends. A take locks its budget's row
// (SELECT … FOR UPDATE), then inserts its spend only if the spends still in
// the window leave room; in read committed each statement sees what the
// previous holder of the lock committed, so takes from any number of
// processes are serialised per budget without a read-modify-write race.
// The statements go in one batch, one round trip, in the implicit
// transaction of that batch. Times are the server's clock, the one clock
// every replica shares.
package pgbudget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/garraia/garra/internal/pgmigrate"
)

var migrations = []pgmigrate.Migration{
	{Version: 1, Name: "budgets", SQL: `
CREATE TABLE garra_budgets (
	name TEXT PRIMARY KEY
);
CREATE TABLE garra_budget_spends (
	name TEXT NOT NULL,
	at   BIGINT NOT NULL,
	n    INTEGER NOT NULL
);
CREATE INDEX garra_budget_spends_by_time ON garra_budget_spends (name, at);
`},
	quotaMigration,
	chargeMigration,
}

const migrationsTable = "garra_budget_migrations"

// DefaultTimeout bounds one budget statement: a take that cannot be
// decided in time is refused.
const DefaultTimeout = 2 * time.Second

// Options configures a Store.
type Options struct {
	Logger  *slog.Logger
	Timeout time.Duration // per statement; 0 = DefaultTimeout
	// Now replaces the server's clock (tests); nil = the server's.
	Now func() time.Time
}

// Store makes budgets kept in one database.
type Store struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	timeout time.Duration
	now     func() time.Time

	mu     sync.Mutex
	tokens []*Tokens // every allowance made, for Flush
}

// Open migrates the budget table on pool (which the caller keeps and
// closes).
func Open(ctx context.Context, pool *pgxpool.Pool, o Options) (*Store, error) {
	if err := pgmigrate.Run(ctx, pool, migrationsTable, migrations); err != nil {
		return nil, fmt.Errorf("budgets: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Store{pool: pool, log: o.Logger, timeout: o.Timeout, now: o.Now}, nil
}

// Budget is one shared sliding window: at most Limit takes in any Window,
// across every process using the same name. The limit lives in the
// process (each replica reads the same config); the spends live in the
// database.
type Budget struct {
	s      *Store
	name   string
	window time.Duration
	mu     sync.Mutex
	limit  int
}

// Budget returns the budget called name. A limit below 1 is raised to 1,
// as for the in-memory budget.
func (s *Store) Budget(name string, limit int, window time.Duration) *Budget {
	return &Budget{s: s, name: name, window: window, limit: max(1, limit)}
}

// The statements of a take, in one batch. $1 is the budget's name; now
// is $2 in ms, or the server's clock when NULL (the batch's transaction
// time, the same for all three).
const (
	ensure = `INSERT INTO garra_budgets (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`
	lock   = `SELECT 1 FROM garra_budgets WHERE name = $1 FOR UPDATE`
	// spend: $3 window ms, $4 n, $5 limit. Inserted only when it fits.
	spend = `
INSERT INTO garra_budget_spends (name, at, n)
SELECT $1, t.now, $4::int FROM (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) t
WHERE (SELECT COALESCE(sum(n), 0) FROM garra_budget_spends WHERE name = $1 AND at > t.now - $3::bigint) + $4::int <= $5::int
RETURNING 1`
	// expire drops what left the window: the table holds at most a
	// window's worth of takes per budget.
	expire = `DELETE FROM garra_budget_spends WHERE name = $1 AND at <= COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) - $3::bigint`
	used   = `
SELECT COALESCE(sum(n), 0) FROM garra_budget_spends
WHERE name = $1 AND at > COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) - $3::bigint`
)

func (b *Budget) nowArg() *int64 {
	if b.s.now == nil {
		return nil
	}
	v := b.s.now().UnixMilli()
	return &v
}

// Take consumes one unit if the window has room.
func (b *Budget) Take() bool { return b.TakeN(1) }

// TakeN consumes n units if the window has room for all of them, and none
// otherwise. A take the database cannot decide (down, too slow) is
// refused and logged: a budget fails closed.
func (b *Budget) TakeN(n int) bool {
	limit := b.Limit()
	if n < 0 || n > limit {
		return false
	}
	if n == 0 {
		return b.used() <= limit
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.s.timeout)
	defer cancel()
	now, win := b.nowArg(), b.window.Milliseconds()
	batch := &pgx.Batch{}
	batch.Queue(ensure, b.name)
	batch.Queue(lock, b.name)
	batch.Queue(spend, b.name, now, win, n, limit)
	batch.Queue(expire, b.name, now, win)
	br := b.s.pool.SendBatch(ctx, batch)
	_, err1 := br.Exec()
	_, err2 := br.Exec()
	var one int
	err3 := br.QueryRow().Scan(&one)
	_, err4 := br.Exec()
	err := errors.Join(err1, err2, err4, br.Close())
	if !errors.Is(err3, pgx.ErrNoRows) {
		err = errors.Join(err, err3)
	}
	if err != nil {
		b.s.log.Error("budget refused: the shared budget store did not answer", "budget", b.name, "err", err)
		return false
	}
	return err3 == nil
}

func (b *Budget) used() int {
	ctx, cancel := context.WithTimeout(context.Background(), b.s.timeout)
	defer cancel()
	var n int
	if err := b.s.pool.QueryRow(ctx, used, b.name, b.nowArg(), b.window.Milliseconds()).Scan(&n); err != nil {
		b.s.log.Warn("budget: the shared budget store did not answer", "budget", b.name, "err", err)
		return b.Limit() // report it spent: fail closed
	}
	return n
}

// oldest is the time of the oldest spend still in the window.
const oldest = `
SELECT COALESCE(min(at) + $3::bigint - COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint), 0)
FROM garra_budget_spends WHERE name = $1 AND at > COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) - $3::bigint`

// Wait is how long until the oldest spend leaves the window, the earliest
// a refused take can succeed: a refusal's Retry-After (the window when
// the database does not answer).
func (b *Budget) Wait() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), b.s.timeout)
	defer cancel()
	var ms int64
	if err := b.s.pool.QueryRow(ctx, oldest, b.name, b.nowArg(), b.window.Milliseconds()).Scan(&ms); err != nil {
		return b.window
	}
	return time.Duration(max(ms, 0)) * time.Millisecond
}

// Remaining is how many takes the window has room for now (0 when the
// database does not answer).
func (b *Budget) Remaining() int { return max(0, b.Limit()-b.used()) }

// Limit is the budget's size.
func (b *Budget) Limit() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit
}

// SetLimit changes the budget's size (below 1 is raised to 1); what the
// window has spent stays in the database.
func (b *Budget) SetLimit(limit int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.limit = max(1, limit)
}
