package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/garraia/garra/internal/leader"
	"github.com/garraia/garra/test/pgtest"
)

func pgLock(t *testing.T, dsn string) *leader.PGLock {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return &leader.PGLock{Config: cfg, Name: "telegram-poller", Check: 100 * time.Millisecond}
}

func TestPGLockOneLeaderAndHandover(t *testing.T) {
	dsn := pgtest.DSN(t)
	j := newJobs()
	reps := map[string]*replica{}
	for _, name := range []string{"a", "b"} {
		reps[name] = start(pgLock(t, dsn), j.job(name, 50*time.Millisecond))
		t.Cleanup(func() { reps[name].cancel() })
	}
	time.Sleep(time.Second) // both have tried; one leads
	j.noOverlap(t)
	took := handover(t, j, reps, 10*time.Second)
	t.Logf("handover after a graceful stop: %s (check 100ms)", took.Round(time.Millisecond))
	for _, r := range reps {
		r.stop(t)
	}
}

// A leader whose session the server drops stops its job, and the other
// replica starts only after that.
func TestPGLockLostSessionStopsTheJobFirst(t *testing.T) {
	dsn := pgtest.DSN(t)
	j := newJobs()
	reps := map[string]*replica{}
	for _, name := range []string{"a", "b"} {
		reps[name] = start(pgLock(t, dsn), j.job(name, 50*time.Millisecond))
		t.Cleanup(func() { reps[name].stop(t) })
	}
	first := j.waitRunning(t, "", 10*time.Second)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close(ctx) }()
	t0 := time.Now()
	var killed int
	if err := admin.QueryRow(ctx, `
SELECT count(pg_terminate_backend(pid)) FROM pg_locks
WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d sessions: %v", killed, err)
	}
	second := j.waitRunning(t, first, 10*time.Second)
	j.mu.Lock()
	stopped, started := j.stops[first], j.starts[second]
	j.mu.Unlock()
	if stopped.IsZero() || !started.After(stopped) {
		t.Fatalf("%s started at %v; %s stopped at %v", second, started, first, stopped)
	}
	j.noOverlap(t)
	t.Logf("after the leader's session was killed: it stopped in %s, %s started after %s",
		stopped.Sub(t0).Round(time.Millisecond), second, started.Sub(t0).Round(time.Millisecond))
}
