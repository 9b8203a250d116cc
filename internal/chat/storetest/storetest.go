// Package storetest is the behaviour every chat store must have, as one
// suite each store's tests run against a real database: conversations and
// history, atomic ingest, the cursor, pairing (digests only, one use,
// racing approvals), concurrent writers from two handles, concurrent
// opens that migrate once, reopening.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/garraia/garra/internal/chat"
)

// Store is what the suite drives.
type Store interface {
	chat.ChannelStore
	Close() error
	SchemaVersion(ctx context.Context) (int, error)
}

// Options are the store options the suite sets.
type Options struct {
	Allowlists map[string][]string
	Now        func() time.Time
}

// DB is one empty database of the store under test.
type DB interface {
	// Open opens another handle on the database, as another process
	// would; the test closes it at the end (closing twice is fine).
	Open(t *testing.T, o Options) (Store, error)
	// Scalar runs a query without parameters straight on the database and
	// returns its single value as text.
	Scalar(t *testing.T, q string) string
	// Exec runs a statement straight on the database.
	Exec(t *testing.T, q string)
}

// Backend makes empty databases.
type Backend struct {
	New func(t *testing.T) DB
	// Latest is the store's LatestSchemaVersion.
	Latest int
}

var ctx = context.Background()

// Run runs the suite.
func Run(t *testing.T, b Backend) {
	for name, fn := range map[string]func(*testing.T, Backend){
		"MigrationsOnceAndIdempotentReopen": testMigrations,
		"ConcurrentOpensMigrateOnce":        testConcurrentOpens,
		"NewerSchemaIsRefused":              testNewerSchema,
		"AppendListHistory":                 testAppendListHistory,
		"ConcurrentWriters":                 testConcurrentWriters,
		"ReopenKeepsEverything":             testReopen,
		"IngestIsAtomic":                    testIngest,
		"Pairing":                           testPairing,
		"RacingApprovalsAdmitOnce":          testRacingApprovals,
	} {
		t.Run(name, func(t *testing.T) { fn(t, b) })
	}
}

func open(t *testing.T, db DB, o Options) Store {
	t.Helper()
	s, err := db.Open(t, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func msg(role, text string) chat.Message { return chat.Message{Role: role, Text: text} }

func testMigrations(t *testing.T, b Backend) {
	db := b.New(t)
	s := open(t, db, Options{})
	if v, err := s.SchemaVersion(ctx); err != nil || v != b.Latest || v < 2 {
		t.Fatalf("version %d %v", v, err)
	}
	if err := s.Append(ctx, "web:a", chat.ChannelWeb, msg("user", "hi")); err != nil {
		t.Fatal(err)
	}
	applied := db.Scalar(t, `SELECT sum(applied_at) FROM schema_migrations`)
	if n := db.Scalar(t, `SELECT count(*) FROM schema_migrations`); n != fmt.Sprint(b.Latest) {
		t.Fatalf("%s migration rows", n)
	}
	for _, table := range []string{"conversations", "messages", "channel_cursors", "pairing_pending", "pairing_approved"} {
		db.Scalar(t, `SELECT count(*) FROM `+table)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Re-open twice: nothing is re-applied, nothing is lost.
	for range 2 {
		s2 := open(t, db, Options{})
		if v, _ := s2.SchemaVersion(ctx); v != b.Latest {
			t.Fatalf("version after reopen %d", v)
		}
		if h, err := s2.History(ctx, "web:a", 10); err != nil || len(h) != 1 {
			t.Fatalf("history after reopen %v %v", h, err)
		}
		_ = s2.Close()
	}
	if n := db.Scalar(t, `SELECT count(*) FROM schema_migrations`); n != fmt.Sprint(b.Latest) {
		t.Fatalf("%s migration rows after reopen", n)
	}
	if a := db.Scalar(t, `SELECT sum(applied_at) FROM schema_migrations`); a != applied {
		t.Fatal("a migration was re-applied")
	}
}

// ConcurrentOpens: replicas starting together on an empty database all
// open it, and each migration is applied once.
func testConcurrentOpens(t *testing.T, b Backend) {
	db := b.New(t)
	const openers = 6
	var wg sync.WaitGroup
	errs := make(chan error, openers)
	start := make(chan struct{})
	for range openers {
		wg.Go(func() {
			<-start
			s, err := db.Open(t, Options{})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := db.Scalar(t, `SELECT count(*) FROM schema_migrations`); n != fmt.Sprint(b.Latest) {
		t.Fatalf("%s migration rows", n)
	}
	if n := db.Scalar(t, `SELECT count(DISTINCT version) FROM schema_migrations`); n != fmt.Sprint(b.Latest) {
		t.Fatalf("%s distinct versions", n)
	}
}

func testNewerSchema(t *testing.T, b Backend) {
	db := b.New(t)
	s := open(t, db, Options{})
	_ = s.Close()
	db.Exec(t, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)`)
	_, err := db.Open(t, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this garra") {
		t.Fatalf("err %v", err)
	}
}

func testAppendListHistory(t *testing.T, b Backend) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var tick atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Second) }
	s := open(t, b.New(t), Options{Now: now})

	if _, err := s.History(ctx, "telegram:1", 10); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("missing conversation: %v", err)
	}
	if c, err := s.Conversations(ctx, ""); err != nil || len(c) != 0 {
		t.Fatalf("empty list %v %v", c, err)
	}
	for i := range 30 {
		role := chat.RoleUser
		if i%2 == 1 {
			role = chat.RoleAssistant
		}
		if err := s.Append(ctx, "telegram:1", chat.ChannelTelegram, msg(role, fmt.Sprint("t", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, "web:x", chat.ChannelWeb, msg("user", "w0")); err != nil {
		t.Fatal(err)
	}
	if err := s.Ingest(ctx, chat.Inbound{Channel: chat.ChannelTelegram, Cursor: 7, ConvID: "telegram:-100", Title: "Family", Msg: msg("user", "g0")}); err != nil {
		t.Fatal(err)
	}

	// Newest activity first; channel filter.
	all, err := s.Conversations(ctx, "")
	if err != nil || len(all) != 3 || all[0].ID != "telegram:-100" || all[1].ID != "web:x" || all[2].ID != "telegram:1" {
		t.Fatalf("list %+v %v", all, err)
	}
	if all[0].Title != "Family" || all[0].Channel != "telegram" || all[2].Messages != 30 || all[2].UpdatedAt.IsZero() {
		t.Fatalf("rows %+v", all)
	}
	tg, _ := s.Conversations(ctx, chat.ChannelTelegram)
	web, _ := s.Conversations(ctx, chat.ChannelWeb)
	if len(tg) != 2 || len(web) != 1 || web[0].ID != "web:x" {
		t.Fatalf("filter: %+v %+v", tg, web)
	}
	// Activity moves a conversation to the top.
	_ = s.Append(ctx, "telegram:1", chat.ChannelTelegram, msg("user", "t30"))
	if all, _ = s.Conversations(ctx, ""); all[0].ID != "telegram:1" || all[0].Messages != 31 {
		t.Fatalf("after activity %+v", all[0])
	}

	// History: the last N, oldest first, times preserved.
	h, err := s.History(ctx, "telegram:1", 5)
	if err != nil || len(h) != 5 || h[0].Text != "t26" || h[4].Text != "t30" || h[0].Role != "user" || h[1].Role != "assistant" {
		t.Fatalf("last 5: %+v %v", h, err)
	}
	if !h[0].At.Before(h[4].At) || h[0].At.Location() != time.UTC {
		t.Fatalf("times %v %v", h[0].At, h[4].At)
	}
	if h, _ := s.History(ctx, "telegram:1", 0); len(h) != 31 || h[0].Text != "t0" {
		t.Fatalf("all: %d", len(h))
	}
	if h, _ := s.History(ctx, "telegram:1", 1000); len(h) != 31 {
		t.Fatalf("limit beyond the end: %d", len(h))
	}
	explicit := time.Date(2020, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	_ = s.Append(ctx, "web:x", chat.ChannelWeb, chat.Message{Role: "assistant", Text: "w1", At: explicit})
	if h, _ := s.History(ctx, "web:x", 1); !h[0].At.Equal(explicit) {
		t.Fatalf("explicit time %v", h[0].At)
	}

	// What Append refuses.
	for name, tc := range map[string]struct {
		id, ch string
		m      chat.Message
	}{
		"id of another channel": {"web:x", chat.ChannelTelegram, msg("user", "x")},
		"no chat id":            {"telegram:", chat.ChannelTelegram, msg("user", "x")},
		"bad role":              {"telegram:1", chat.ChannelTelegram, msg("system", "x")},
		"invalid utf-8":         {"telegram:1", chat.ChannelTelegram, msg("user", "\xff")},
	} {
		if err := s.Append(ctx, tc.id, tc.ch, tc.m); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func testConcurrentWriters(t *testing.T, b Backend) {
	db := b.New(t)
	a := open(t, db, Options{})
	bb := open(t, db, Options{}) // a second handle, as another process would have
	const writers, each = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*3)
	for w := range writers {
		s := a
		if w%2 == 1 {
			s = bb
		}
		wg.Go(func() {
			for i := range each {
				errs <- s.Append(ctx, "web:shared", chat.ChannelWeb, msg("user", fmt.Sprintf("%d-%d", w, i)))
				errs <- s.Append(ctx, fmt.Sprintf("web:w%d", w), chat.ChannelWeb, msg("user", fmt.Sprint(i)))
				if i%10 == 0 { // readers alongside the writers
					if _, err := s.History(ctx, "web:shared", 20); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	h, err := a.History(ctx, "web:shared", 0)
	if err != nil || len(h) != writers*each {
		t.Fatalf("shared conversation has %d messages, want %d (%v)", len(h), writers*each, err)
	}
	seen := map[string]bool{}
	last := map[string]int{}
	for _, m := range h {
		seen[m.Text] = true
		var w, i int
		_, _ = fmt.Sscanf(m.Text, "%d-%d", &w, &i)
		// Each writer's messages keep their order.
		if prev, ok := last[fmt.Sprint(w)]; ok && i != prev+1 {
			t.Fatalf("writer %d: %d after %d", w, i, prev)
		}
		last[fmt.Sprint(w)] = i
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct messages", len(seen))
	}
	convs, _ := bb.Conversations(ctx, chat.ChannelWeb)
	if len(convs) != writers+1 {
		t.Fatalf("%d conversations", len(convs))
	}
	for _, c := range convs {
		want := each
		if c.ID == "web:shared" {
			want = writers * each
		}
		if c.Messages != want {
			t.Fatalf("%s counts %d messages, want %d", c.ID, c.Messages, want)
		}
	}
}

func testReopen(t *testing.T, b Backend) {
	db := b.New(t)
	s := open(t, db, Options{})
	_ = s.Append(ctx, "web:1", chat.ChannelWeb, msg("user", "a"))
	_ = s.Append(ctx, "web:1", chat.ChannelWeb, msg("assistant", "b"))
	if err := s.Ingest(ctx, chat.Inbound{Channel: chat.ChannelTelegram, Cursor: 501, ConvID: "telegram:9", Title: "Ana", Msg: msg("user", "c")}); err != nil {
		t.Fatal(err)
	}
	code := chat.NewPairingCode()
	if _, err := s.RequestPairing(ctx, pending("42", code, time.Now().Add(time.Hour)), chat.Inbound{Channel: chat.ChannelTelegram, Cursor: 502}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, db, Options{})
	if c, _ := s.Cursor(ctx, chat.ChannelTelegram); c != 502 {
		t.Fatalf("cursor %d", c)
	}
	if h, _ := s.History(ctx, "web:1", 10); len(h) != 2 || h[1].Text != "b" {
		t.Fatalf("web history %+v", h)
	}
	if convs, _ := s.Conversations(ctx, ""); len(convs) != 2 || convs[0].Title != "Ana" {
		t.Fatalf("conversations %+v", convs)
	}
	if u, err := s.Approve(ctx, strings.ToLower(code)); err != nil || u.UserID != "42" {
		t.Fatalf("approve after reopen: %+v %v", u, err)
	}
}

func testIngest(t *testing.T, b Backend) {
	s := open(t, b.New(t), Options{})
	if c, err := s.Cursor(ctx, chat.ChannelTelegram); err != nil || c != 0 {
		t.Fatalf("fresh cursor %d %v", c, err)
	}
	if err := s.Ingest(ctx, chat.Inbound{Channel: chat.ChannelTelegram, Cursor: 10}); err != nil {
		t.Fatal(err)
	}
	// A message the store refuses leaves the cursor where it was.
	if err := s.Ingest(ctx, chat.Inbound{Channel: chat.ChannelTelegram, Cursor: 11, ConvID: "telegram:1", Msg: msg("robot", "x")}); err == nil {
		t.Fatal("bad message accepted")
	}
	if c, _ := s.Cursor(ctx, chat.ChannelTelegram); c != 10 {
		t.Fatalf("cursor moved with a failed ingest: %d", c)
	}
	if _, err := s.History(ctx, "telegram:1", 1); !errors.Is(err, chat.ErrNotFound) {
		t.Fatal("a failed ingest left a conversation")
	}
	_ = s.Ingest(ctx, chat.Inbound{Channel: chat.ChannelTelegram, Cursor: 5})
	if c, _ := s.Cursor(ctx, chat.ChannelTelegram); c != 10 {
		t.Fatalf("cursor moved back: %d", c)
	}
	// A cancelled context commits nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Ingest(cctx, chat.Inbound{Channel: chat.ChannelTelegram, Cursor: 12, ConvID: "telegram:1", Msg: msg("user", "x")}); err == nil {
		t.Fatal("cancelled ingest succeeded")
	}
	if c, _ := s.Cursor(ctx, chat.ChannelTelegram); c != 10 {
		t.Fatalf("cursor %d", c)
	}
}

func pending(user, code string, expires time.Time) chat.PendingPairing {
	return chat.PendingPairing{Channel: chat.ChannelTelegram, UserID: user, ChatID: user, DisplayName: "User " + user,
		CodeHash: chat.HashPairingCode(code), ExpiresAt: expires}
}

func testPairing(t *testing.T, b Backend) {
	clock := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	db := b.New(t)
	s := open(t, db, Options{Now: now, Allowlists: map[string][]string{"telegram": {"1", "2"}}})
	tg := chat.ChannelTelegram
	in := func(c int64) chat.Inbound { return chat.Inbound{Channel: tg, Cursor: c} }

	code := chat.NewPairingCode()
	if len(code) != chat.PairingCodeLen || strings.ContainsAny(code, "01IO") {
		t.Fatalf("code %q", code)
	}
	if created, err := s.RequestPairing(ctx, pending("7", code, now().Add(chat.PairingTTL)), in(100)); err != nil || !created {
		t.Fatalf("request: %v %v", created, err)
	}
	// A second message from the same stranger gets no second code, but the cursor moves.
	if created, _ := s.RequestPairing(ctx, pending("7", chat.NewPairingCode(), now().Add(chat.PairingTTL)), in(101)); created {
		t.Fatal("second code for a user with a live one")
	}
	if c, _ := s.Cursor(ctx, tg); c != 101 {
		t.Fatalf("cursor %d", c)
	}
	code2 := chat.NewPairingCode()
	_, _ = s.RequestPairing(ctx, pending("8", code2, now().Add(chat.PairingTTL)), in(102))

	st, err := s.Pairing(ctx)
	if err != nil || len(st) != 1 || st[0].Channel != tg || st[0].AllowlistSize != 2 || st[0].PendingPairings != 2 ||
		strings.Join(st[0].Pending, ",") != "User 7,User 8" {
		t.Fatalf("status %+v %v", st, err)
	}
	js, _ := json.Marshal(st)
	hash := db.Scalar(t, `SELECT code_hash FROM pairing_pending WHERE user_id = '7'`)
	if strings.Contains(string(js), code) || strings.Contains(string(js), hash) {
		t.Fatalf("status exposes the code: %s", js)
	}
	if n := db.Scalar(t, `SELECT count(*) FROM pairing_pending WHERE code_hash LIKE '%`+code+`%'`); n != "0" || hash == code {
		t.Fatal("the code is stored in the clear")
	}

	if ok, _ := s.IsApproved(ctx, tg, "7"); ok {
		t.Fatal("approved before approve")
	}
	if _, err := s.Approve(ctx, "WRONGCOD"); !errors.Is(err, chat.ErrNoPairing) {
		t.Fatalf("wrong code: %v", err)
	}
	if _, err := s.Approve(ctx, "short"); !errors.Is(err, chat.ErrNoPairing) {
		t.Fatalf("short code: %v", err)
	}
	u, err := s.Approve(ctx, " "+strings.ToLower(code[:4])+"-"+code[4:]+" ")
	if err != nil || u.UserID != "7" || u.Channel != tg || u.DisplayName != "User 7" || !u.ApprovedAt.Equal(now()) {
		t.Fatalf("approve: %+v %v", u, err)
	}
	if _, err := s.Approve(ctx, code); !errors.Is(err, chat.ErrNoPairing) {
		t.Fatalf("one-time code used twice: %v", err)
	}
	if ok, _ := s.IsApproved(ctx, tg, "7"); !ok {
		t.Fatal("not approved")
	}
	if st, _ := s.Pairing(ctx); st[0].AllowlistSize != 3 || st[0].PendingPairings != 1 {
		t.Fatalf("after approve %+v", st)
	}

	// Expiry: user 8's code dies after the TTL, and a new one can be issued.
	advance(chat.PairingTTL + time.Second)
	if st, _ := s.Pairing(ctx); st[0].PendingPairings != 0 {
		t.Fatalf("expired pairing still pending %+v", st)
	}
	if _, err := s.Approve(ctx, code2); !errors.Is(err, chat.ErrNoPairing) {
		t.Fatalf("expired code approved: %v", err)
	}
	if created, _ := s.RequestPairing(ctx, pending("8", chat.NewPairingCode(), now().Add(chat.PairingTTL)), in(103)); !created {
		t.Fatal("no new code after expiry")
	}
	if p, a, _ := s.Pairings(ctx, tg); len(p) != 1 || len(a) != 1 || p[0].UserID != "8" || a[0].UserID != "7" {
		t.Fatalf("pairings %+v %+v", p, a)
	}
	if err := s.CancelPairing(ctx, tg, "8"); err != nil {
		t.Fatal(err)
	}

	// Revoke.
	if err := s.Revoke(ctx, tg, "7"); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, tg, "7"); !errors.Is(err, chat.ErrNotPaired) {
		t.Fatalf("second revoke: %v", err)
	}
	if ok, _ := s.IsApproved(ctx, tg, "7"); ok {
		t.Fatal("still approved")
	}

	// Strangers cannot grow the table without bound, even asking at once
	// through two handles.
	s2 := open(t, db, Options{Now: now})
	var wg sync.WaitGroup
	for i := range chat.MaxPendingPairings + 20 {
		h := s
		if i%2 == 1 {
			h = s2
		}
		wg.Go(func() {
			_, _ = h.RequestPairing(ctx, pending(fmt.Sprint("s", i), chat.NewPairingCode(), now().Add(time.Hour)), in(200+int64(i)))
		})
	}
	wg.Wait()
	if st, _ := s.Pairing(ctx); st[0].PendingPairings != chat.MaxPendingPairings {
		t.Fatalf("pending %d", st[0].PendingPairings)
	}
	if c, _ := s.Cursor(ctx, tg); c != 200+chat.MaxPendingPairings+19 {
		t.Fatalf("cursor %d", c)
	}
}

// RacingApprovals: the same code approved from many handles at once (the
// owner's `garra pair approve` twice, on two replicas) admits once.
func testRacingApprovals(t *testing.T, b Backend) {
	db := b.New(t)
	handles := []Store{open(t, db, Options{}), open(t, db, Options{})}
	for round := range 5 {
		code := chat.NewPairingCode()
		user := fmt.Sprint("racer", round)
		if created, err := handles[0].RequestPairing(ctx, pending(user, code, time.Now().Add(time.Hour)), chat.Inbound{}); err != nil || !created {
			t.Fatalf("request: %v %v", created, err)
		}
		var ok, refused atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 8 {
			wg.Go(func() {
				<-start
				_, err := handles[i%2].Approve(ctx, code)
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, chat.ErrNoPairing):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if ok.Load() != 1 || refused.Load() != 7 {
			t.Fatalf("round %d: %d approvals succeeded, %d refused; want 1 and 7", round, ok.Load(), refused.Load())
		}
		if approved, _ := handles[1].IsApproved(ctx, chat.ChannelTelegram, user); !approved {
			t.Fatalf("round %d: not approved", round)
		}
	}
}
