package pgmigrate_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/garraia/garra/internal/pgmigrate"
	"github.com/garraia/garra/test/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var ctx = context.Background()

func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestLatestAndLockKeys(t *testing.T) {
	if pgmigrate.Latest(nil) != 0 || pgmigrate.Latest([]pgmigrate.Migration{{Version: 2}, {Version: 1}}) != 2 {
		t.Fatal("Latest")
	}
	if pgmigrate.LockKey("a_migrations") == pgmigrate.LockKey("b_migrations") {
		t.Fatal("two tables share a lock key")
	}
}

func TestBadTableNamesAreRefused(t *testing.T) {
	p := pool(t)
	for _, name := range []string{"", "Schema", "x; DROP TABLE y", "9lives", strings.Repeat("a", 64), "a-b"} {
		if err := pgmigrate.Run(ctx, p, name, nil); err == nil {
			t.Errorf("%q accepted", name)
		}
		if _, err := pgmigrate.Version(ctx, p, name); err == nil {
			t.Errorf("Version(%q) accepted", name)
		}
	}
}

// A failing migration applies nothing: the whole run is one transaction,
// and the next run starts again from the last good version.
func TestAFailingMigrationAppliesNothing(t *testing.T) {
	p := pool(t)
	ms := []pgmigrate.Migration{
		{Version: 1, Name: "one", SQL: `CREATE TABLE one (x int)`},
		{Version: 2, Name: "two", SQL: `CREATE TABLE two (x no_such_type)`},
	}
	err := pgmigrate.Run(ctx, p, "t_migrations", ms)
	if err == nil || !strings.Contains(err.Error(), "migration 2 (two)") {
		t.Fatalf("err %v", err)
	}
	var n int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename IN ('one', 't_migrations')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tables left by a failed run (%v)", n, err)
	}
	ms[1].SQL = `CREATE TABLE two (x int)`
	if err := pgmigrate.Run(ctx, p, "t_migrations", ms); err != nil {
		t.Fatal(err)
	}
	if v, err := pgmigrate.Version(ctx, p, "t_migrations"); err != nil || v != 2 {
		t.Fatalf("version %d %v", v, err)
	}
	// A later build adds a migration: only it runs.
	ms = append(ms, pgmigrate.Migration{Version: 3, Name: "three", SQL: `ALTER TABLE two ADD COLUMN y int`})
	if err := pgmigrate.Run(ctx, p, "t_migrations", ms); err != nil {
		t.Fatal(err)
	}
	if v, _ := pgmigrate.Version(ctx, p, "t_migrations"); v != 3 {
		t.Fatalf("version %d", v)
	}
	// An older build refuses the newer database.
	if err := pgmigrate.Run(ctx, p, "t_migrations", ms[:2]); err == nil || !strings.Contains(err.Error(), "newer than this garra") {
		t.Fatalf("older build: %v", err)
	}
}
