package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/sqlitestore"
	"github.com/garraia/garra/internal/chat/telegram"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
	tgfake "github.com/garraia/garra/test/fakes/telegram"
)

const botToken = "123456789:AAgateway-e2e-token-abcdefghijklmnop"

const pastedSecret = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// newChannel builds the real Telegram channel against the double; run
// starts its polling until the test ends.
func newChannel(t *testing.T, store *sqlitestore.Store, tg *tgfake.Server, llm *llmdouble.Server, run bool) *telegram.Channel {
	t.Helper()
	cfg, err := config.Parse([]byte("llm: {provider: openrouter, base_url: " + llm.OpenAIBaseURL() + "}"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TG_TOKEN": botToken, "OPENROUTER_API_KEY": "llm-test-key-0123"}
	ch, err := telegram.New(telegram.Options{
		Config: config.Telegram{BotTokenEnv: "TG_TOKEN", APIBaseURL: tg.URL(), Allowlist: []string{"111"}},
		Getenv: func(k string) string { return env[k] },
		Store:  store,
		Asker:  &ask.Core{Config: cfg, Getenv: func(k string) string { return env[k] }},
		Logger: slog.New(slog.DiscardHandler), PollTimeout: time.Second, RetryDelay: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if run {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = ch.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		deadline := time.Now().Add(5 * time.Second)
		for !ch.Online("telegram") {
			if time.Now().After(deadline) {
				t.Fatal("the channel did not come online")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return ch
}

// data is the payload of a garra.mcp.v1 envelope.
func data(env map[string]any) map[string]any {
	d, _ := env["data"].(map[string]any)
	return d
}

func chats(env map[string]any) string {
	rows, _ := data(env)["chats"].([]any)
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.(map[string]any)["chat"].(string))
	}
	return strings.Join(ids, " ")
}

// The chat tools of POST /mcp over the real SQLite store and the real
// Telegram channel (against the Bot API double).
func TestChatToolsOverTheRealStoreAndChannel(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, "111")
	tg := tgfake.New(t, botToken)
	llm := llmdouble.New(t) // echo
	ch := newChannel(t, store, tg, llm, true)

	// Ana (allowlisted) talks on Telegram and pastes a secret; a stranger asks to pair.
	tg.PrivateMessage(tgfake.User{ID: 111, FirstName: "Ana"}, "my key is "+pastedSecret)
	tg.WaitSent(t, 1, 5*time.Second)
	tg.PrivateMessage(tgfake.User{ID: 333, FirstName: "Carla"}, "hi")
	code := strings.Fields(tg.WaitSent(t, 2, 5*time.Second)[1].Text)
	_ = store.Append(ctx, "telegram:222", "telegram", chat.Message{Role: "user", Text: "another chat"})
	_ = store.Append(ctx, "web:abc", "web", chat.Message{Role: "user", Text: "from the console"})

	yaml := enabled + "    allow_send: true\n    max_history_messages: 10\n" + orchestrators +
		"channels: {telegram: {proactive_chat_ids: ['111', '222'], allowlist: ['111']}}\n"
	h := start(t, yaml, orchEnv, func(o *gateway.Options) { o.Store, o.Sender = store, ch })
	owner := client(t, h.url, ownerKey)
	n8n := client(t, h.url, "n8n-token-1234567890")

	// garra_list_chats: newest first, channel filter, the orchestrator's scope.
	for filter, want := range map[string]string{"": "web:abc telegram:222 telegram:111", "telegram": "telegram:222 telegram:111", "web": "web:abc"} {
		args := map[string]any{}
		if filter != "" {
			args["channel"] = filter
		}
		if env, isErr := call(t, owner, "garra_list_chats", args); isErr || chats(env) != want {
			t.Errorf("owner, channel %q: %v", filter, env)
		}
	}
	if env, _ := call(t, n8n, "garra_list_chats", map[string]any{}); chats(env) != "telegram:111" {
		t.Fatalf("n8n sees %v", env)
	}
	env, _ := call(t, owner, "garra_list_chats", map[string]any{"channel": "telegram"})
	row := data(env)["chats"].([]any)[1].(map[string]any)
	if row["channel"] != "telegram" || row["messages"] != float64(2) || row["title"] != "Ana" {
		t.Fatalf("row %v", row)
	}

	// garra_read_history: the last N, redacted on the way out, stored as is.
	env, isErr := call(t, owner, "garra_read_history", map[string]any{"chat": "telegram:111", "limit": 2})
	msgs, _ := data(env)["messages"].([]any)
	if isErr || data(env)["redacted"] != true || len(msgs) != 2 {
		t.Fatalf("env %v", env)
	}
	if s := fmt.Sprint(env); strings.Contains(s, pastedSecret) || !strings.Contains(s, "[REDACTED]") {
		t.Fatalf("not redacted: %v", env)
	}
	if m := msgs[0].(map[string]any); m["role"] != "user" || msgs[1].(map[string]any)["role"] != "assistant" {
		t.Fatalf("order %v", msgs)
	}
	if raw, _ := store.History(ctx, "telegram:111", 2); !strings.Contains(raw[0].Text, pastedSecret) {
		t.Fatal("the store must keep what was said")
	}
	if env, _ := call(t, owner, "garra_read_history", map[string]any{"chat": "telegram:111", "limit": 1}); len(data(env)["messages"].([]any)) != 1 {
		t.Fatalf("limit 1: %v", env)
	}
	if env, isErr := call(t, n8n, "garra_read_history", map[string]any{"chat": "telegram:222"}); !isErr || kindOf(env) != "not_found" {
		t.Fatalf("out of scope: %v", env)
	}
	if env, isErr := call(t, owner, "garra_read_history", map[string]any{"chat": "telegram:999"}); !isErr || kindOf(env) != "not_found" {
		t.Fatalf("missing: %v", env)
	}
	if env, isErr := call(t, n8n, "garra_read_history", map[string]any{"chat": "telegram:111"}); isErr || len(data(env)["messages"].([]any)) != 2 {
		t.Fatalf("in scope: %v", env)
	}

	// garra_pair_status: sizes and display names, never the code.
	env, _ = call(t, owner, "garra_pair_status", nil)
	st := data(env)["channels"].([]any)[0].(map[string]any)
	if st["channel"] != "telegram" || st["allowlist_size"] != float64(1) || st["pending_pairings"] != float64(1) ||
		fmt.Sprint(st["pending_users"]) != "[Carla]" {
		t.Fatalf("pair status %v", env)
	}
	for _, word := range code {
		if len(word) == 8 && strings.Contains(fmt.Sprint(env), word) {
			t.Fatal("pair status exposes the code")
		}
	}

	// garra_status: the channel is online.
	env, _ = call(t, owner, "garra_status", nil)
	if fmt.Sprint(data(env)["channels"]) != "[map[name:telegram online:true] map[name:web online:true]]" || data(env)["conversations"] != float64(3) {
		t.Fatalf("status %v", env)
	}

	// garra_send_message: delivered on Telegram and recorded.
	if env, isErr := call(t, owner, "garra_send_message", map[string]any{"chat_id": "111", "text": "reminder"}); isErr || env["ok"] != true {
		t.Fatalf("send %v", env)
	}
	if got := tg.SentTo(111); got[len(got)-1] != "reminder" {
		t.Fatalf("sent %v", got)
	}
	if h, _ := store.History(ctx, "telegram:111", 1); h[0].Text != "reminder" || h[0].Role != "assistant" {
		t.Fatalf("not recorded: %v", h)
	}
	// The Bot API refuses: delivery_failed, its text only in the log.
	tg.FailSendMessage(400, "Bad Request: chat not found")
	env, isErr = call(t, owner, "garra_send_message", map[string]any{"chat_id": "222", "text": "x"})
	if !isErr || kindOf(env) != "delivery_failed" || strings.Contains(fmt.Sprint(env), "chat not found") {
		t.Fatalf("refused send %v", env)
	}
	if !strings.Contains(h.logs.String(), "chat not found") || strings.Contains(h.logs.String(), botToken) {
		t.Fatalf("log:\n%s", h.logs.String())
	}
}

func TestSendChannelOfflineWithTheRealChannel(t *testing.T) {
	store := openStore(t, "111")
	tg := tgfake.New(t, botToken)
	ch := newChannel(t, store, tg, llmdouble.New(t), false) // built, never started
	h := start(t, enabled+"    allow_send: true\nchannels: {telegram: {proactive_chat_ids: ['111']}}\n", nil,
		func(o *gateway.Options) { o.Store, o.Sender = store, ch })
	env, isErr := call(t, client(t, h.url, ownerKey), "garra_send_message", map[string]any{"chat_id": "111", "text": "x"})
	if !isErr || kindOf(env) != "channel_offline" || len(tg.Sent()) != 0 {
		t.Fatalf("env %v", env)
	}
}
