package gateway_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/gateway"
)

// garra_send_message with dry_run: true runs every check, sends nothing,
// spends no budget, and returns the exact redacted text and the target.
func TestSendDryRun(t *testing.T) {
	sender := &fakeSender{}
	log := audit.New(audit.Options{Path: filepath.Join(t.TempDir(), "audit.jsonl")})
	yaml := enabled + "    allow_send: true\n    redact_patterns: ['corp-[0-9]{6}']\n" + orchestrators +
		"channels: {telegram: {proactive_chat_ids: ['111', '222']}}\n"
	h := start(t, yaml, orchEnv, func(o *gateway.Options) { o.Sender = sender; o.Audit = log })
	owner := client(t, h.url, ownerKey)
	const secret = "sk-or-v1-abcdefabcdefabcdefabcdefabcdefabcdefabcdef0123"

	for range 6 { // more than the budget of 5: a dry run spends none of it
		env, isErr := call(t, owner, "garra_send_message", map[string]any{"chat_id": " 111 ", "text": "deploy corp-123456 with " + secret, "dry_run": true})
		d, _ := env["data"].(map[string]any)
		if isErr || env["ok"] != true || d["dry_run"] != true || d["delivered"] != false || d["channel"] != "telegram" ||
			d["chat_id"] != "111" || d["chat"] != "telegram:111" || d["send_budget_remaining"] != float64(5) {
			t.Fatalf("dry run: %v", env)
		}
		text, _ := d["text"].(string)
		if strings.Contains(text, "corp-123456") || strings.Contains(text, "abcdefabcdef") || !strings.HasPrefix(text, "deploy [REDACTED] with ") {
			t.Fatalf("dry-run text is not the redacted text: %q", text)
		}
	}
	if len(sender.sent) != 0 {
		t.Fatalf("a dry run sent %v", sender.sent)
	}
	if b := read(t, owner, "garra://policy")["budgets"].(map[string]any)["send"].(map[string]any); b["remaining"] != float64(5) {
		t.Fatalf("send budget after dry runs: %v", b)
	}

	// The checks still apply, with the same kinds and no echo.
	n8n := client(t, h.url, "n8n-token-1234567890")
	for _, tt := range []struct {
		name string
		args map[string]any
		kind string
	}{
		{"not approved", map[string]any{"chat_id": "987654321", "text": "x", "dry_run": true}, "target_not_allowed"},
		{"outside the chats", map[string]any{"chat_id": "222", "text": "x", "dry_run": true}, "target_not_allowed"},
		{"other channel", map[string]any{"channel": "web", "chat_id": "111", "text": "x", "dry_run": true}, "channel_unsupported"},
	} {
		env, isErr := call(t, n8n, "garra_send_message", tt.args)
		if !isErr || kindOf(env) != tt.kind || strings.Contains(fmt.Sprint(env), "987654321") {
			t.Errorf("%s: %v", tt.name, env)
		}
	}
	// dry_run: false sends.
	if env, isErr := call(t, owner, "garra_send_message", map[string]any{"chat_id": "111", "text": "go", "dry_run": false}); isErr || env["data"].(map[string]any)["delivered"] != true {
		t.Fatalf("real send: %v", env)
	}
	if len(sender.sent) != 1 {
		t.Fatalf("sent %v", sender.sent)
	}

	_, lines := auditLines(t, log.Path())
	if n := len(find(lines, map[string]any{"tool": "garra_send_message", "outcome": "ok", "dry_run": true})); n != 6 {
		t.Fatalf("%d dry-run audit lines, want 6", n)
	}
	if n := len(find(lines, map[string]any{"tool": "garra_send_message", "outcome": "ok", "dry_run": nil})); n != 1 {
		t.Fatalf("%d real-send audit lines, want 1", n)
	}
}
