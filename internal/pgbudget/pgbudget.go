// Package pgbudget keeps the gateway's budgets in PostgreSQL, so that a
// budget of N per window is N across every replica rather than N per
// replica, and a spend survives a restart or a reload.
//
// A budget is one row holding the times of its takes in the window (a
// sliding window, like the in-memory budget). A take is one
// INSERT … ON CONFLICT DO UPDATE … WHERE: PostgreSQL locks the row and
// evaluates the room check on its newest version, so takes from any number
// of processes are serialised per budget without a read-modify-write race,
// in one round trip. Times are the server's clock, the one clock every
// replica shares.
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
	name    TEXT PRIMARY KEY,
	touched BIGINT NOT NULL,
	spends  BIGINT[] NOT NULL
);
`},
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

// take is the whole decision in one statement. $1 name, $2 limit, $3 n,
// $4 now in ms (NULL = the server's clock), $5 the window in ms. A new
// row is inserted only when n fits the limit (checked before the call).
const take = `
WITH t AS (SELECT COALESCE($4::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now)
INSERT INTO garra_budgets AS b (name, touched, spends)
SELECT $1, t.now, array_fill(t.now, ARRAY[$3::int]) FROM t
ON CONFLICT (name) DO UPDATE
SET touched = excluded.touched,
    spends = ARRAY(SELECT s FROM unnest(b.spends) s WHERE s > excluded.touched - $5::bigint ORDER BY s) || excluded.spends
WHERE (SELECT count(*) FROM unnest(b.spends) s WHERE s > excluded.touched - $5::bigint) + $3::int <= $2::int
RETURNING 1`

const used = `
SELECT count(*) FROM garra_budgets b, unnest(b.spends) s
WHERE b.name = $1 AND s > COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) - $3::bigint`

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
	var one int
	err := b.s.pool.QueryRow(ctx, take, b.name, limit, n, b.nowArg(), b.window.Milliseconds()).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false
	}
	if err != nil {
		b.s.log.Error("budget refused: the shared budget store did not answer", "budget", b.name, "err", err)
		return false
	}
	return true
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
