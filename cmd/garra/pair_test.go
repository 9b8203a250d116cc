package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/sqlitestore"
	"github.com/garraia/garra/internal/chat/telegram"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/test/fakes/llmdouble"
	tgfake "github.com/garraia/garra/test/fakes/telegram"
)

// pairConfig writes a config whose data_dir is a fresh temp dir, with user
// 111 in the Telegram allowlist.
func pairConfig(t *testing.T, extra string) (cfgPath, dataDir string) {
	t.Helper()
	dataDir = filepath.Join(t.TempDir(), "data")
	cfgPath = filepath.Join(t.TempDir(), "config.yml")
	body := fmt.Sprintf("data_dir: %s\nchannels:\n  telegram:\n    bot_token_env: TG_TOKEN\n    allowlist: ['111']\n%s", dataDir, extra)
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, dataDir
}

func openDataDir(t *testing.T, dataDir string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.OpenDataDir(context.Background(), dataDir, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestPairCommands(t *testing.T) {
	cfgPath, dataDir := pairConfig(t, "")
	s := openDataDir(t, dataDir)
	ctx := context.Background()
	code := chat.NewPairingCode()
	tg := chat.ChannelTelegram
	if _, err := s.RequestPairing(ctx, chat.PendingPairing{Channel: tg, UserID: "444", ChatID: "444", DisplayName: "Bruno",
		CodeHash: chat.HashPairingCode(code), ExpiresAt: time.Now().Add(time.Hour)}, chat.Inbound{}); err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)

	out, errOut, rc := run(t, env, "pair", "list", "--config", cfgPath)
	if rc != 0 || !strings.Contains(out, "allowlist (config): 111") || !strings.Contains(out, "444") ||
		!strings.Contains(out, "Bruno") || !strings.Contains(out, "pending: 1") || strings.Contains(out, code) {
		t.Fatalf("list: rc=%d\n%s%s", rc, out, errOut)
	}

	for name, tc := range map[string]struct {
		args []string
		rc   int
		want string
	}{
		"wrong code":      {[]string{"pair", "approve", "WRONG234"}, 1, "no pending pairing"},
		"no code":         {[]string{"pair", "approve"}, 2, "exactly one CODE"},
		"revoke nobody":   {[]string{"pair", "revoke", "999"}, 1, "not approved"},
		"revoke config":   {[]string{"pair", "revoke", "111"}, 1, "channels.telegram.allowlist"},
		"revoke no user":  {[]string{"pair", "revoke"}, 2, "exactly one USER"},
		"unknown channel": {[]string{"pair", "revoke", "--channel", "irc", "1"}, 2, "only telegram"},
	} {
		_, errOut, rc := run(t, env, append(tc.args, "--config", cfgPath)...)
		if rc != tc.rc || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: rc=%d stderr=%s", name, rc, errOut)
		}
	}

	out, errOut, rc = run(t, env, "pair", "approve", strings.ToLower(code), "--config", cfgPath)
	if rc != 0 || !strings.Contains(out, "approved telegram user 444 (Bruno)") {
		t.Fatalf("approve: rc=%d %s%s", rc, out, errOut)
	}
	if ok, _ := s.IsApproved(ctx, tg, "444"); !ok {
		t.Fatal("not approved in the store")
	}
	if _, errOut, rc = run(t, env, "pair", "approve", code, "--config", cfgPath); rc != 1 || !strings.Contains(errOut, "already used") {
		t.Fatalf("second approve: rc=%d %s", rc, errOut)
	}

	out, _, _ = run(t, env, "pair", "list", "--json", "--config", cfgPath)
	var listing []struct {
		Channel   string
		Allowlist []string
		Approved  []struct {
			UserID string `json:"user_id"`
		}
		Pending []any
	}
	if err := json.Unmarshal([]byte(out), &listing); err != nil || len(listing) != 1 || len(listing[0].Approved) != 1 ||
		listing[0].Approved[0].UserID != "444" || len(listing[0].Pending) != 0 {
		t.Fatalf("json listing %s (%v)", out, err)
	}

	if out, errOut, rc = run(t, env, "pair", "revoke", "444", "--config", cfgPath); rc != 0 || !strings.Contains(out, "revoked telegram user 444") {
		t.Fatalf("revoke: rc=%d %s%s", rc, out, errOut)
	}
	if ok, _ := s.IsApproved(ctx, tg, "444"); ok {
		t.Fatal("still approved")
	}
}

// A stranger on Telegram, the owner running the real binary against the
// data_dir the running channel holds open, and the stranger answered.
func TestPairApproveAdmitsATelegramUser(t *testing.T) {
	cfgPath, dataDir := pairConfig(t, "")
	const token = "123456789:AApair-test-token-abcdefghijklmnopq"
	tg := tgfake.New(t, token)
	llm := llmdouble.New(t) // echo
	store := openDataDir(t, dataDir)
	cfg, err := config.Parse([]byte("llm: {provider: openrouter, base_url: " + llm.OpenAIBaseURL() + "}"))
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"TG_TOKEN": token, "OPENROUTER_API_KEY": "k"}[k] }
	ch, err := telegram.New(telegram.Options{
		Config: config.Telegram{BotTokenEnv: "TG_TOKEN", APIBaseURL: tg.URL(), Allowlist: []string{"111"}},
		Getenv: getenv, Store: store, Asker: &ask.Core{Config: cfg, Getenv: getenv},
		Logger: slog.New(slog.DiscardHandler), PollTimeout: time.Second, RetryDelay: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ch.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	bruno := tgfake.User{ID: 444, FirstName: "Bruno"}
	tg.PrivateMessage(bruno, "hello?")
	sent := tg.WaitSent(t, 1, 5*time.Second)
	code := regexp.MustCompile(`\b[A-HJ-NP-Z2-9]{8}\b`).FindString(sent[0].Text)
	if code == "" || len(llm.Requests()) != 0 {
		t.Fatalf("pairing message %+v, %d model calls", sent, len(llm.Requests()))
	}

	env := testEnv(t)
	out, errOut, rc := run(t, env, "pair", "list", "--config", cfgPath)
	if rc != 0 || !strings.Contains(out, "Bruno") || strings.Contains(out, code) {
		t.Fatalf("list: rc=%d %s%s", rc, out, errOut)
	}
	if out, errOut, rc = run(t, env, "pair", "approve", code, "--config", cfgPath); rc != 0 {
		t.Fatalf("approve: rc=%d %s%s", rc, out, errOut)
	}

	tg.PrivateMessage(bruno, "and now?")
	sent = tg.WaitSent(t, 2, 5*time.Second)
	if sent[1].ChatID != 444 || sent[1].Text != "echo: and now?" || len(llm.Requests()) != 1 {
		t.Fatalf("after approval %+v", sent)
	}
}
