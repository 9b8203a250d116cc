package leader

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultCheck is how often the holder of a PGLock checks its session,
// and how often the others try to take the lock.
const DefaultCheck = time.Second

// PGLock elects through a session-level PostgreSQL advisory lock held on
// a connection of its own: the lock lives as long as that session. The
// holder pings its session every Check and stops its job when a ping
// fails; a new holder waits two Checks before starting, so that a holder
// whose session the server dropped has noticed and stopped first.
type PGLock struct {
	// Config is the database to lock in (a copy is connected; the pool's
	// connections are not used, as a pooled session could be reused).
	Config *pgx.ConnConfig
	// Name is the lock's name (its 64-bit key is derived from it).
	Name   string
	Check  time.Duration // 0 = DefaultCheck
	Logger *slog.Logger
}

// Key is the advisory lock key of name.
func Key(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("garra.leader:" + name))
	return int64(h.Sum64()) //nolint:gosec // G115: any 64 bits will do for a lock key
}

func (l *PGLock) check() time.Duration {
	if l.Check > 0 {
		return l.Check
	}
	return DefaultCheck
}

func (l *PGLock) log() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Lead implements Elector.
func (l *PGLock) Lead(ctx context.Context, fn func(context.Context)) {
	for ctx.Err() == nil {
		conn, err := l.acquire(ctx)
		if err != nil {
			l.log().Warn("leader: cannot try the poller lock", "lock", l.Name, "error", err)
		}
		if conn == nil {
			if !sleep(ctx, l.check()) {
				return
			}
			continue
		}
		l.log().Info("leader: this replica leads", "lock", l.Name)
		l.hold(ctx, conn, fn)
		l.log().Info("leader: this replica stopped leading", "lock", l.Name)
	}
}

// acquire returns a session holding the lock, or nil when another does.
func (l *PGLock) acquire(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*l.check()+5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, l.Config.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(cctx, `SELECT pg_try_advisory_lock($1)`, Key(l.Name)).Scan(&ok); err != nil || !ok {
		_ = conn.Close(context.WithoutCancel(cctx))
		return nil, err
	}
	return conn, nil
}

// hold runs fn while the session answers, then unlocks after fn returned.
func (l *PGLock) hold(ctx context.Context, conn *pgx.Conn, fn func(context.Context)) {
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if sleep(lctx, 2*l.check()) {
			fn(lctx)
		}
	}()
	tick := time.NewTicker(l.check())
	defer tick.Stop()
watch:
	for {
		select {
		case <-done:
			break watch
		case <-ctx.Done():
			break watch
		case <-tick.C:
			pctx, pcancel := context.WithTimeout(ctx, l.check())
			err := conn.Ping(pctx)
			pcancel()
			if err != nil && ctx.Err() == nil {
				l.log().Error("leader: lost the poller lock's session; stopping", "lock", l.Name, "error", err)
				break watch
			}
		}
	}
	cancel()
	<-done
	uctx, ucancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ucancel()
	_, _ = conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, Key(l.Name))
	_ = conn.Close(uctx)
}
