package chatruntime

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/chat/pgstore"
	"github.com/garraia/garra/internal/chat/sqlitestore"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/leader"
	"github.com/garraia/garra/test/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func cfgOf(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.FromBytes([]byte("data_dir: "+t.TempDir()+"\n"+yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestOpenStoreByDriver(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	env := map[string]string{"PG": dsn}
	getenv := func(k string) string { return env[k] }

	s, err := OpenStore(ctx, cfgOf(t, ""), getenv)
	if _, ok := s.(*sqlitestore.Store); err != nil || !ok {
		t.Fatalf("default: %T %v", s, err)
	}
	_ = s.Close()
	s, err = OpenStore(ctx, cfgOf(t, "store: {driver: postgres, dsn_env: PG}"), getenv)
	if _, ok := s.(*pgstore.Store); err != nil || !ok {
		t.Fatalf("postgres: %T %v", s, err)
	}
	_ = s.Close()
	for yaml, field := range map[string]string{
		"store: {driver: postgres, dsn_env: UNSET}": "store.dsn_env",
		"store: {driver: postgres}":                 "store.dsn_env",
		"store: {driver: mysql}":                    "store.driver",
	} {
		if _, err := OpenStore(ctx, cfgOf(t, yaml), getenv); err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", yaml, err, field)
		}
	}
}

func TestPollerElector(t *testing.T) {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, pgtest.DSN(t), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	log := slog.New(slog.DiscardHandler)
	if e, ok := pollerElector(s.Pool(), log).(*leader.PGLock); !ok || e.Name != pollerLock {
		t.Fatalf("poller elector %T, want the advisory lock %q", e, pollerLock)
	}
}
