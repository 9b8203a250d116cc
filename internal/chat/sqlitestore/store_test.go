package sqlitestore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/sqlitestore"
)

var ctx = context.Background()

func open(t *testing.T, path string, o sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(ctx, path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

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

func TestMigrationsFromEmptyAndIdempotentReopen(t *testing.T) {
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
	applied := scalar[int64](t, db, `SELECT sum(applied_at) FROM schema_migrations`)
	if n := scalar[int](t, db, `SELECT count(*) FROM schema_migrations`); n != sqlitestore.LatestSchemaVersion {
		t.Fatalf("%d migration rows", n)
	}
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
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Re-open twice: nothing is re-applied, nothing is lost.
	for range 2 {
		s2 := open(t, path, sqlitestore.Options{})
		if v, _ := s2.SchemaVersion(ctx); v != sqlitestore.LatestSchemaVersion {
			t.Fatalf("version after reopen %d", v)
		}
		if h, err := s2.History(ctx, "web:a", 10); err != nil || len(h) != 1 {
			t.Fatalf("history after reopen %v %v", h, err)
		}
		_ = s2.Close()
	}
	if n := scalar[int](t, db, `SELECT count(*) FROM schema_migrations`); n != sqlitestore.LatestSchemaVersion {
		t.Fatalf("%d migration rows after reopen", n)
	}
	if a := scalar[int64](t, db, `SELECT sum(applied_at) FROM schema_migrations`); a != applied {
		t.Fatal("a migration was re-applied")
	}
}

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garra.db")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := scalar[int](t, raw(t, path), `SELECT count(*) FROM schema_migrations`); n != sqlitestore.LatestSchemaVersion {
		t.Fatalf("%d migration rows", n)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garra.db")
	s := open(t, path, sqlitestore.Options{})
	_ = s.Close()
	if _, err := raw(t, path).Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	_, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this garra") {
		t.Fatalf("err %v", err)
	}
}

func TestAppendListHistory(t *testing.T) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var tick atomic.Int64
	now := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Second) }
	s := open(t, filepath.Join(t.TempDir(), "garra.db"), sqlitestore.Options{Now: now})

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

func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garra.db")
	a := open(t, path, sqlitestore.Options{})
	b := open(t, path, sqlitestore.Options{}) // a second handle, as another process would have
	const writers, each = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*3)
	for w := range writers {
		s := a
		if w%2 == 1 {
			s = b
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
		fmt.Sscanf(m.Text, "%d-%d", &w, &i)
		// Each writer's messages keep their order.
		if prev, ok := last[fmt.Sprint(w)]; ok && i != prev+1 {
			t.Fatalf("writer %d: %d after %d", w, i, prev)
		}
		last[fmt.Sprint(w)] = i
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct messages", len(seen))
	}
	convs, _ := b.Conversations(ctx, chat.ChannelWeb)
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

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garra.db")
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
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

	s = open(t, path, sqlitestore.Options{})
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

func TestIngestIsAtomicAndTheCursorNeverMovesBack(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "garra.db"), sqlitestore.Options{})
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

func TestPairing(t *testing.T) {
	clock := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	path := filepath.Join(t.TempDir(), "garra.db")
	s := open(t, path, sqlitestore.Options{Now: now, Allowlists: map[string][]string{"telegram": {"1", "2"}}})
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
	b, _ := json.Marshal(st)
	db := raw(t, path)
	hash := scalar[string](t, db, `SELECT code_hash FROM pairing_pending WHERE user_id = '7'`)
	if strings.Contains(string(b), code) || strings.Contains(string(b), hash) {
		t.Fatalf("status exposes the code: %s", b)
	}
	if n := scalar[int](t, db, `SELECT count(*) FROM pairing_pending WHERE code_hash LIKE ?`, "%"+code+"%"); n != 0 || hash == code {
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

	// Strangers cannot grow the table without bound.
	for i := range chat.MaxPendingPairings + 5 {
		_, _ = s.RequestPairing(ctx, pending(fmt.Sprint("s", i), chat.NewPairingCode(), now().Add(time.Hour)), in(200+int64(i)))
	}
	if st, _ := s.Pairing(ctx); st[0].PendingPairings != chat.MaxPendingPairings {
		t.Fatalf("pending %d", st[0].PendingPairings)
	}
	if c, _ := s.Cursor(ctx, tg); c != 200+chat.MaxPendingPairings+4 {
		t.Fatalf("cursor %d", c)
	}
}
