// Package pgmigrate applies versioned schema migrations to PostgreSQL
// under an advisory lock, so that replicas starting together migrate once:
// the first takes the lock and applies what is missing, the others wait
// for it and find nothing left to do.
package pgmigrate

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migration is one versioned step. A released migration is never edited:
// a change is a new migration.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Latest is the highest version of ms.
func Latest(ms []Migration) int {
	v := 0
	for _, m := range ms {
		v = max(v, m.Version)
	}
	return v
}

// LockKey is the advisory lock of a migrations table: derived from its
// name, so two sets of migrations in one database do not wait on each
// other.
func LockKey(table string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("garra.migrate:" + table))
	return int64(h.Sum64()) //nolint:gosec // G115: any 64 bits will do for a lock key
}

// Run brings the schema up to date: in one transaction holding the
// table's advisory lock, it creates the migrations table if needed and
// applies each missing migration with its row. A database newer than ms
// is refused.
func Run(ctx context.Context, pool *pgxpool.Pool, table string, ms []Migration) error {
	if !validIdent(table) {
		return fmt.Errorf("migrations table %q is not a plain identifier", table)
	}
	latest := Latest(ms)
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, LockKey(table)); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at BIGINT NOT NULL
)`); err != nil {
			return fmt.Errorf("create %s: %w", table, err)
		}
		current, err := version(ctx, tx, table)
		if err != nil {
			return err
		}
		if current > latest {
			return fmt.Errorf("database schema version %d is newer than this garra (%d): upgrade garra", current, latest)
		}
		for _, m := range ms {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE version = $1`, m.Version).Scan(&n); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
			if n > 0 {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, time.Now().UnixMilli()); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
		}
		return nil
	})
}

// Version is the highest applied migration of table, 0 for none.
func Version(ctx context.Context, pool *pgxpool.Pool, table string) (int, error) {
	if !validIdent(table) {
		return 0, fmt.Errorf("migrations table %q is not a plain identifier", table)
	}
	return version(ctx, pool, table)
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func version(ctx context.Context, q querier, table string) (int, error) {
	var v *int
	if err := q.QueryRow(ctx, `SELECT max(version) FROM `+table).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	return *v, nil
}

// validIdent admits lower-case identifiers only: the table name is spliced
// into SQL.
func validIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
