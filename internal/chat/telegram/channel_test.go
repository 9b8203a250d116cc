package telegram_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/sqlitestore"
	"github.com/garraia/garra/internal/chat/telegram"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/test/fakes/llmdouble"
	tgfake "github.com/garraia/garra/test/fakes/telegram"
	"github.com/garraia/garra/test/testlog"
)

const token = "123456789:AAtest-token-abcdefghijklmnopqrstuvw"

var (
	ana      = tgfake.User{ID: 111, FirstName: "Ana", Username: "ana"}
	stranger = tgfake.User{ID: 222, FirstName: "Bruno"}
	codeRE   = regexp.MustCompile(`\b[A-HJ-NP-Z2-9]{8}\b`)
)

type syncBuffer = testlog.Buffer

type harness struct {
	tg    *tgfake.Server
	llm   *llmdouble.Server
	path  string
	store *sqlitestore.Store
	logs  *syncBuffer
	cfg   config.Telegram
}

func newHarness(t *testing.T, steps ...llmdouble.Step) *harness {
	t.Helper()
	h := &harness{tg: tgfake.New(t, token), llm: llmdouble.New(t, steps...), path: filepath.Join(t.TempDir(), "garra.db"), logs: &syncBuffer{}}
	h.cfg = config.Telegram{BotTokenEnv: "TG_TOKEN", APIBaseURL: h.tg.URL(), Allowlist: []string{"111"}}
	h.store = h.openStore(t)
	return h
}

func (h *harness) openStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), h.path, sqlitestore.Options{Allowlists: map[string][]string{"telegram": h.cfg.Allowlist}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func (h *harness) options(t *testing.T) telegram.Options {
	cfg, err := config.Parse([]byte("llm: {provider: openrouter, base_url: " + h.llm.OpenAIBaseURL() + "}"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TG_TOKEN": token, "OPENROUTER_API_KEY": "k"}
	return telegram.Options{
		Config:      h.cfg,
		Getenv:      func(k string) string { return env[k] },
		Store:       h.store,
		Asker:       &ask.Core{Config: cfg, Getenv: func(k string) string { return env[k] }},
		Request:     ask.Request{Provider: "openrouter", Model: "m1"},
		Logger:      slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PollTimeout: time.Second, RetryDelay: 20 * time.Millisecond, MaxRetryDelay: 100 * time.Millisecond,
	}
}

// start runs a channel until the returned stop (also called at cleanup).
func (h *harness) start(t *testing.T, mutate ...func(*telegram.Options)) (*telegram.Channel, func()) {
	t.Helper()
	o := h.options(t)
	for _, f := range mutate {
		f(&o)
	}
	ch, err := telegram.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Run did not stop within 5s")
			}
		})
	}
	t.Cleanup(stop)
	return ch, stop
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) cursorReaches(t *testing.T, updateID int) {
	t.Helper()
	eventually(t, "the stored offset", func() bool {
		c, _ := h.store.Cursor(context.Background(), chat.ChannelTelegram)
		return c >= int64(updateID)+1
	})
}

func history(t *testing.T, s chat.Store, id string) []chat.Message {
	t.Helper()
	h, err := s.History(context.Background(), id, 0)
	if err != nil {
		t.Fatalf("history %s: %v", id, err)
	}
	return h
}

func TestAllowlistedUserIsAnsweredWithHistory(t *testing.T) {
	h := newHarness(t) // echo model
	ch, _ := h.start(t)
	eventually(t, "online", func() bool { return ch.Online("telegram") })
	if ch.Online("web") {
		t.Fatal("online on another channel")
	}

	h.tg.PrivateMessage(ana, "hello")
	sent := h.tg.WaitSent(t, 1, 5*time.Second)
	if sent[0].ChatID != 111 || sent[0].Text != "echo: hello" {
		t.Fatalf("sent %+v", sent)
	}
	msgs := history(t, h.store, "telegram:111")
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Text != "hello" || msgs[1].Role != "assistant" || msgs[1].Text != "echo: hello" {
		t.Fatalf("stored %+v", msgs)
	}
	convs, _ := h.store.Conversations(context.Background(), "telegram")
	if len(convs) != 1 || convs[0].Title != "Ana (@ana)" {
		t.Fatalf("conversations %+v", convs)
	}

	// The second question travels with the first exchange.
	h.tg.PrivateMessage(ana, "and again")
	h.tg.WaitSent(t, 2, 5*time.Second)
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	var turns []string
	for _, m := range reqs[1].Body["messages"].([]any) {
		mm := m.(map[string]any)
		if mm["role"] != "system" {
			turns = append(turns, mm["role"].(string)+"="+mm["content"].(string))
		}
	}
	if strings.Join(turns, "|") != "user=hello|assistant=echo: hello|user=and again" || reqs[1].Model != "m1" {
		t.Fatalf("turns %v model %s", turns, reqs[1].Model)
	}
	if len(history(t, h.store, "telegram:111")) != 4 {
		t.Fatal("second exchange not stored")
	}
	// Offsets: the channel confirms what it processed.
	polls := h.tg.Polls()
	if last := polls[len(polls)-1]; last.Offset != tgfake.FirstUpdateID+2 || last.Timeout != 1 {
		t.Fatalf("last poll %+v", last)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	h := newHarness(t)
	for i := range 30 {
		_ = h.store.Append(context.Background(), "telegram:111", "telegram", chat.Message{Role: []string{"user", "assistant"}[i%2], Text: "old"})
	}
	h.start(t, func(o *telegram.Options) { o.HistoryLimit = 4 })
	h.tg.PrivateMessage(ana, "new")
	h.tg.WaitSent(t, 1, 5*time.Second)
	if n := len(h.llm.Requests()[0].Body["messages"].([]any)); n != 1+4+1 { // system + 4 earlier + the question
		t.Fatalf("%d messages sent to the model", n)
	}
}

func TestStrangerGetsAPairingCodeAndNoAnswerUntilApproved(t *testing.T) {
	h := newHarness(t)
	h.start(t)

	h.tg.PrivateMessage(stranger, "hi, who are you?")
	sent := h.tg.WaitSent(t, 1, 5*time.Second)
	code := codeRE.FindString(sent[0].Text)
	if sent[0].ChatID != 222 || code == "" || !strings.Contains(sent[0].Text, "garra pair approve "+code) {
		t.Fatalf("pairing message %+v", sent)
	}
	if len(h.llm.Requests()) != 0 {
		t.Fatal("the model was called for a stranger")
	}
	if convs, _ := h.store.Conversations(context.Background(), ""); len(convs) != 0 {
		t.Fatalf("a stranger's message was stored: %+v", convs)
	}
	st, _ := h.store.Pairing(context.Background())
	if len(st) != 1 || st[0].PendingPairings != 1 || st[0].Pending[0] != "Bruno" || st[0].AllowlistSize != 1 {
		t.Fatalf("pair status %+v", st)
	}
	if strings.Contains(h.logs.String(), code) {
		t.Fatal("the pairing code reached the log")
	}

	// More messages while the code is live: no second code, no answer.
	id := h.tg.PrivateMessage(stranger, "hello?")
	h.cursorReaches(t, id)
	// A stranger in a group is ignored.
	id = h.tg.GroupMessage(-1001, "Some group", tgfake.User{ID: 333, FirstName: "Carla"}, "hey bot")
	h.cursorReaches(t, id)
	if len(h.tg.Sent()) != 1 || len(h.llm.Requests()) != 0 {
		t.Fatalf("sent %+v", h.tg.Sent())
	}

	// The owner approves (the store-level function `garra pair approve` runs).
	u, err := h.store.Approve(context.Background(), code)
	if err != nil || u.UserID != "222" {
		t.Fatalf("approve: %+v %v", u, err)
	}
	h.tg.PrivateMessage(stranger, "now?")
	sent = h.tg.WaitSent(t, 2, 5*time.Second)
	if sent[1].ChatID != 222 || sent[1].Text != "echo: now?" || len(h.llm.Requests()) != 1 {
		t.Fatalf("after approval %+v", sent)
	}
	if msgs := history(t, h.store, "telegram:222"); len(msgs) != 2 {
		t.Fatalf("stored %+v", msgs)
	}

	// Revoked: pairing again, no answer.
	if err := h.store.Revoke(context.Background(), "telegram", "222"); err != nil {
		t.Fatal(err)
	}
	h.tg.PrivateMessage(stranger, "still there?")
	sent = h.tg.WaitSent(t, 3, 5*time.Second)
	if codeRE.FindString(sent[2].Text) == "" || len(h.llm.Requests()) != 1 {
		t.Fatalf("after revoke %+v", sent)
	}
}

func TestUndeliveredPairingCodeIsDropped(t *testing.T) {
	h := newHarness(t)
	h.tg.FailSendMessage(403, "Forbidden: bot was blocked by the user")
	h.start(t)
	id := h.tg.PrivateMessage(stranger, "hi")
	h.cursorReaches(t, id)
	eventually(t, "the pairing dropped", func() bool {
		st, _ := h.store.Pairing(context.Background())
		return st[0].PendingPairings == 0
	})
	h.tg.FailSendMessage(0, "")
	h.tg.PrivateMessage(stranger, "hi again")
	if sent := h.tg.WaitSent(t, 1, 5*time.Second); codeRE.FindString(sent[0].Text) == "" {
		t.Fatalf("no fresh code: %+v", sent)
	}
}

func TestRestartDoesNotReprocessUpdates(t *testing.T) {
	h := newHarness(t)
	_, stop := h.start(t)
	first := h.tg.PrivateMessage(ana, "one")
	h.tg.WaitSent(t, 1, 5*time.Second)
	h.cursorReaches(t, first)
	stop()
	_ = h.store.Close()

	// Telegram never saw a confirmation: everything is deliverable again.
	h.tg.ForgetConfirmations()
	second := h.tg.PrivateMessage(ana, "two")

	h.store = h.openStore(t) // a new process on the same file
	h.start(t)
	h.tg.WaitSent(t, 2, 5*time.Second)
	h.cursorReaches(t, second)
	time.Sleep(200 * time.Millisecond) // room for a wrong second answer
	if sent := h.tg.Sent(); len(sent) != 2 || sent[1].Text != "echo: two" {
		t.Fatalf("sent %+v", sent)
	}
	if n := len(h.llm.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
	msgs := history(t, h.store, "telegram:111")
	if len(msgs) != 4 || msgs[0].Text != "one" || msgs[2].Text != "two" {
		t.Fatalf("stored %+v", msgs)
	}
	// The new instance asked from the stored offset.
	var resumed bool
	for _, p := range h.tg.Polls() {
		resumed = resumed || p.Offset == first+1
	}
	if !resumed {
		t.Fatalf("polls %+v", h.tg.Polls())
	}
}

func TestModelFailureSendsAFallbackAndStoresNoReply(t *testing.T) {
	h := newHarness(t, llmdouble.Step{Status: 401, ErrorMessage: "invalid key sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef"})
	h.start(t)
	h.tg.PrivateMessage(ana, "hello")
	sent := h.tg.WaitSent(t, 1, 5*time.Second)
	if sent[0].Text != telegram.FallbackText {
		t.Fatalf("sent %+v", sent)
	}
	if msgs := history(t, h.store, "telegram:111"); len(msgs) != 1 || msgs[0].Role != "user" {
		t.Fatalf("stored %+v", msgs)
	}
}

func TestSend(t *testing.T) {
	h := newHarness(t)
	ch, _ := h.start(t)
	eventually(t, "online", isOnline(ch))
	ctx := context.Background()
	h.tg.KnowChat(111)

	if err := ch.Send(ctx, "telegram", "111", "reminder: call mom"); err != nil {
		t.Fatal(err)
	}
	if got := h.tg.SentTo(111); len(got) != 1 || got[0] != "reminder: call mom" {
		t.Fatalf("sent %v", got)
	}
	if msgs := history(t, h.store, "telegram:111"); len(msgs) != 1 || msgs[0].Role != "assistant" {
		t.Fatalf("proactive message not recorded: %+v", msgs)
	}

	// The Bot API refuses: the error carries its description (for the log).
	err := ch.Send(ctx, "telegram", "999", "x")
	if err == nil || !strings.Contains(err.Error(), "chat not found") {
		t.Fatalf("unknown chat: %v", err)
	}
	h.tg.FailSendMessage(400, "Bad Request: message is too long")
	if err := ch.Send(ctx, "telegram", "111", "x"); err == nil || !strings.Contains(err.Error(), "message is too long") || strings.Contains(err.Error(), token) {
		t.Fatalf("refused send: %v", err)
	}
	h.tg.FailSendMessage(0, "")
	if err := ch.Send(ctx, "web", "111", "x"); err == nil {
		t.Fatal("sent on another channel")
	}
	if err := ch.Send(ctx, "telegram", "@someone", "x"); err == nil {
		t.Fatal("non-numeric chat id accepted")
	}

	// Long texts go out in parts within Telegram's limit.
	long := strings.Repeat("palavra ", 1200) // 9600 chars
	if err := ch.Send(ctx, "telegram", "111", long); err != nil {
		t.Fatal(err)
	}
	parts := h.tg.SentTo(111)[1:]
	if len(parts) != 3 || strings.Join(parts, "") != long {
		t.Fatalf("%d parts", len(parts))
	}
}

func TestOfflineWhenTheTokenIsRejected(t *testing.T) {
	h := newHarness(t)
	ch, stop := h.start(t)
	eventually(t, "online", isOnline(ch))
	h.tg.SetToken("revoked")
	eventually(t, "offline after getUpdates fails", func() bool { return !ch.Online("telegram") })
	if err := ch.Send(context.Background(), "telegram", "111", "x"); err == nil {
		t.Fatal("send while offline")
	}
	h.tg.SetToken(token)
	eventually(t, "online again", isOnline(ch))
	stop()
	if ch.Online("telegram") {
		t.Fatal("online after Run returned")
	}
	if strings.Contains(h.logs.String(), token) {
		t.Fatal("the token reached the log")
	}
	if !strings.Contains(h.logs.String(), "telegram channel offline") {
		t.Fatalf("no offline line:\n%s", h.logs.String())
	}
}

func TestBadTokenFromTheStartAndUnreachableAPI(t *testing.T) {
	h := newHarness(t)
	h.tg.SetToken("another")
	ch, _ := h.start(t)
	eventually(t, "connection attempts", func() bool { return h.tg.Calls("getMe") >= 3 })
	if ch.Online("telegram") {
		t.Fatal("online with a rejected token")
	}

	// Nothing listening: the transport error must not carry the token.
	h2 := newHarness(t)
	h2.cfg.APIBaseURL = "http://127.0.0.1:1"
	ch2, _ := h2.start(t)
	eventually(t, "a logged failure", func() bool { return strings.Contains(h2.logs.String(), "cannot reach the Bot API") })
	if ch2.Online("telegram") || strings.Contains(h2.logs.String(), token) || !strings.Contains(h2.logs.String(), "<bot-token>") {
		t.Fatalf("logs:\n%s", h2.logs.String())
	}
}

func TestRunStopsDuringALongPoll(t *testing.T) {
	h := newHarness(t)
	ch, stop := h.start(t, func(o *telegram.Options) { o.PollTimeout = 30 * time.Second })
	eventually(t, "online", isOnline(ch))
	eventually(t, "a poll", func() bool { return len(h.tg.Polls()) > 0 })
	start := time.Now()
	stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("stop took %v", d)
	}
}

func TestNewAndEndpoint(t *testing.T) {
	h := newHarness(t)
	o := h.options(t)
	o.Getenv = func(string) string { return "" }
	if _, err := telegram.New(o); !errors.Is(err, telegram.ErrNoToken) {
		t.Fatalf("no token: %v", err)
	}
	for base, want := range map[string]string{
		"":                         "https://api.telegram.org/bot%s/%s",
		"http://127.0.0.1:8081/":   "http://127.0.0.1:8081/bot%s/%s",
		"https://tg.example/a%20b": "https://tg.example/a%%20b/bot%s/%s",
		"ftp://x":                  "",
		"127.0.0.1:8081":           "",
		"http://host/path?token=1": "",
	} {
		got, err := telegram.Endpoint(base)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("Endpoint(%q) = %q, %v", base, got, err)
		}
	}
}

func TestSplit(t *testing.T) {
	if p := telegram.Split("short", 4096); len(p) != 1 || p[0] != "short" {
		t.Fatal(p)
	}
	emoji := strings.Repeat("😀", 3000) // 6000 UTF-16 units
	parts := telegram.Split(emoji, 4096)
	if len(parts) != 2 || strings.Join(parts, "") != emoji {
		t.Fatalf("%d parts", len(parts))
	}
	for _, p := range parts {
		if len(utf16.Encode([]rune(p))) > 4096 {
			t.Fatal("part over the limit")
		}
	}
	lines := strings.Repeat("line of text\n", 500)
	for _, p := range telegram.Split(lines, 1000) {
		if !strings.HasSuffix(p, "\n") && p != "" {
			t.Fatalf("cut inside a line: %q", p[len(p)-10:])
		}
	}
}

func isOnline(ch *telegram.Channel) func() bool {
	return func() bool { return ch.Online("telegram") }
}
