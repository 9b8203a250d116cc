package telegram_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/garraia/garra/internal/chat/pgstore"
	"github.com/garraia/garra/internal/chat/telegram"
	"github.com/garraia/garra/internal/leader"
	"github.com/garraia/garra/test/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// recording notes which replica leads.
type recording struct {
	leader.Elector
	name string
	mu   *sync.Mutex
	now  *string
}

func (r recording) Lead(ctx context.Context, fn func(context.Context)) {
	r.Elector.Lead(ctx, func(lctx context.Context) {
		r.mu.Lock()
		*r.now = r.name
		r.mu.Unlock()
		fn(lctx)
		r.mu.Lock()
		if *r.now == r.name {
			*r.now = ""
		}
		r.mu.Unlock()
	})
}

// Two gateway replicas share one PostgreSQL store and one bot: only the
// leader polls, each message is answered exactly once, and stopping the
// leader hands polling to the other.
func TestTwoReplicasAnswerEachUpdateOnce(t *testing.T) {
	h := newHarness(t) // echo model; h.store (SQLite) is unused here
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	leading := ""
	stops := map[string]func(){}
	for _, name := range []string{"a", "b"} {
		s, err := pgstore.Open(context.Background(), dsn, pgstore.Options{Allowlists: map[string][]string{"telegram": h.cfg.Allowlist}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		el := recording{Elector: &leader.PGLock{Config: cfg, Name: "telegram", Check: 100 * time.Millisecond}, name: name, mu: &mu, now: &leading}
		_, stops[name] = h.start(t, func(o *telegram.Options) { o.Store, o.Elector = s, el })
	}
	leaderNow := func() string { mu.Lock(); defer mu.Unlock(); return leading }
	eventually(t, "a leader", func() bool { return leaderNow() != "" })

	const first = 20
	for i := range first {
		h.tg.PrivateMessage(ana, fmt.Sprint("q", i))
	}
	h.tg.WaitSent(t, first, 10*time.Second)

	old := leaderNow()
	t0 := time.Now()
	stops[old]()
	eventually(t, "the other replica leads", func() bool { l := leaderNow(); return l != "" && l != old })
	took := time.Since(t0)
	for i := range first {
		h.tg.PrivateMessage(ana, fmt.Sprint("q", first+i))
	}
	sent := h.tg.WaitSent(t, 2*first, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // room for a wrong second answer

	var texts []string
	for _, s := range h.tg.Sent() {
		texts = append(texts, s.Text)
	}
	for i := range 2 * first {
		if n := countOf(texts, fmt.Sprint("echo: q", i)); n != 1 {
			t.Fatalf("q%d answered %d times; sent %v", i, n, texts)
		}
	}
	if len(h.tg.Sent()) != 2*first || len(sent) < 2*first || len(h.llm.Requests()) != 2*first {
		t.Fatalf("%d sent, %d model calls, want %d", len(h.tg.Sent()), len(h.llm.Requests()), 2*first)
	}
	if c := h.tg.Conflicts(); c != 0 {
		t.Fatalf("%d getUpdates ended by another instance's poll: two replicas polled at once", c)
	}
	t.Logf("%d updates, each answered once, 0 conflicting polls; polling moved from %s in %s after it stopped",
		2*first, old, took.Round(time.Millisecond))
}

func countOf(xs []string, x string) int {
	n := 0
	for i := slices.Index(xs, x); i >= 0; i = slices.Index(xs, x) {
		n++
		xs = xs[i+1:]
	}
	return n
}
