package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/sqlitestore"
	"github.com/garraia/garra/internal/chat/storetest"
)

var ctx = context.Background()

// raw opens the file with the bare driver, to look under the store.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func scalar[T any](t *testing.T, db *sql.DB, q string, args ...any) T {
	t.Helper()
	var v T
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

func msg(role, text string) chat.Message { return chat.Message{Role: role, Text: text} }

// TestFileModeAndWAL is what only the SQLite store has: a private file in
// WAL mode; the rest of its behaviour is the shared suite's.
func TestFileModeAndWAL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := sqlitestore.OpenDataDir(ctx, dir, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, sqlitestore.FileName)
	if s.Path() != path {
		t.Fatalf("path %s", s.Path())
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != sqlitestore.LatestSchemaVersion || v < 2 {
		t.Fatalf("version %d %v", v, err)
	}
	if err := s.Append(ctx, "web:a", chat.ChannelWeb, msg("user", "hi")); err != nil {
		t.Fatal(err)
	}
	db := raw(t, path)
	if mode := scalar[string](t, db, `PRAGMA journal_mode`); mode != "wal" {
		t.Fatalf("journal_mode %s", mode)
	}
	for _, table := range []string{"conversations", "messages", "channel_cursors", "pairing_pending", "pairing_approved"} {
		if n := scalar[int](t, db, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table); n != 1 {
			t.Fatalf("table %s missing", table)
		}
	}
	for _, p := range []string{dir, path} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s is readable by others: %v", p, fi.Mode())
		}
	}
	_ = s.Close()
}

type sqliteDB struct{ path string }

func (d sqliteDB) Open(t *testing.T, o storetest.Options) (storetest.Store, error) {
	s, err := sqlitestore.Open(ctx, d.path, sqlitestore.Options{Allowlists: o.Allowlists, Now: o.Now})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, nil
}

func (d sqliteDB) Scalar(t *testing.T, q string) string {
	return fmt.Sprint(scalar[any](t, raw(t, d.path), q))
}

func (d sqliteDB) Exec(t *testing.T, q string) {
	t.Helper()
	if _, err := raw(t, d.path).Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		New:    func(t *testing.T) storetest.DB { return sqliteDB{filepath.Join(t.TempDir(), "garra.db")} },
		Latest: sqlitestore.LatestSchemaVersion,
	})
}
