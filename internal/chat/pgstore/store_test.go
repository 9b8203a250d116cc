package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/garraia/garra/internal/chat/pgstore"
	"github.com/garraia/garra/internal/chat/storetest"
	"github.com/garraia/garra/test/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var ctx = context.Background()

type pgDB struct{ dsn string }

func (d pgDB) Open(t *testing.T, o storetest.Options) (storetest.Store, error) {
	s, err := pgstore.Open(ctx, d.dsn, pgstore.Options{Allowlists: o.Allowlists, Now: o.Now})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, nil
}

func (d pgDB) conn(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(ctx) })
	return c
}

func (d pgDB) Scalar(t *testing.T, q string) string {
	t.Helper()
	var v any
	if err := d.conn(t).QueryRow(ctx, q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return fmt.Sprint(v)
}

func (d pgDB) Exec(t *testing.T, q string) {
	t.Helper()
	if _, err := d.conn(t).Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		New:    func(t *testing.T) storetest.DB { return pgDB{pgtest.DSN(t)} },
		Latest: pgstore.LatestSchemaVersion,
	})
}

func TestOpenErrorsNeverCarryTheDSN(t *testing.T) {
	for name, dsn := range map[string]string{
		"empty":        "",
		"malformed":    "postgres://garra:s3cr3t-pw@[::1/db",
		"unreachable":  "postgres://garra:s3cr3t-pw@127.0.0.1:1/garra?connect_timeout=2",
		"bad keywords": "host=x password=s3cr3t-pw bogus",
	} {
		_, err := pgstore.Open(ctx, dsn, pgstore.Options{})
		if err == nil {
			t.Fatalf("%s: opened", name)
		}
		if strings.Contains(err.Error(), "s3cr3t-pw") {
			t.Fatalf("%s: error carries the password: %v", name, err)
		}
	}
}
