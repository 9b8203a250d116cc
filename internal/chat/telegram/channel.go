// Package telegram is the Telegram channel: long polling of the Bot API
// through github.com/go-telegram-bot-api/telegram-bot-api/v5, every update
// committed to the store together with the next offset, replies from the
// shared ask core with the conversation's recent history, and pairing of
// strangers with one-time codes the owner approves with `garra pair`.
//
// The bot token is read only from the environment variable named by
// channels.telegram.bot_token_env; channels.telegram.api_base_url replaces
// https://api.telegram.org (a local Bot API server, a test double).
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/leader"
)

// Defaults of Options.
const (
	DefaultPollTimeout   = 30 * time.Second
	DefaultRetryDelay    = time.Second
	DefaultMaxRetryDelay = time.Minute
	// FailureThreshold is how many getUpdates failures in a row take the
	// channel offline. A rejected token (401, 403, 404) does at once.
	FailureThreshold = 3
	// MaxMessageLen is sendMessage's limit in UTF-16 code units; longer
	// texts go out in several messages.
	MaxMessageLen = 4096
	// sendTimeout bounds one sendMessage.
	sendTimeout = 30 * time.Second
)

// FallbackText is sent when the model gives no answer; the reason stays in
// the log.
const FallbackText = "Sorry, I could not answer right now. Please try again in a moment."

// ErrNoToken means the bot token variable is unset: the channel does not run.
var ErrNoToken = errors.New("telegram: no bot token")

// Options configures a Channel.
type Options struct {
	Config config.Telegram
	Getenv func(string) string
	Store  chat.ChannelStore
	// Asker and Request answer admitted users (Request carries provider,
	// model, system prompt and timeout); HistoryLimit is how many earlier
	// messages go with each question (0 = chat.DefaultHistoryLimit).
	Asker        chat.Asker
	Request      ask.Request
	HistoryLimit int
	Logger       *slog.Logger
	// HTTPClient carries the Bot API requests (nil = a default client).
	// Deadlines come from contexts, not from the client.
	HTTPClient *http.Client
	// PollTimeout is the long-poll wait of one getUpdates (whole seconds).
	PollTimeout time.Duration
	// RetryDelay is the first wait after a failure, doubling up to
	// MaxRetryDelay.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// PairingTTL is how long a pairing code lives (0 = chat.PairingTTL).
	PairingTTL time.Duration
	Now        func() time.Time
	// Elector decides which replica long-polls: Telegram serves one
	// getUpdates per bot, so with several gateway replicas only the
	// leader polls (every replica can still send). nil = this process
	// polls (one replica).
	Elector leader.Elector
}

// Channel is a Telegram channel. It implements chat.Sender.
type Channel struct {
	o         Options
	token     string
	endpoint  string
	hc        *http.Client
	log       *slog.Logger
	assistant *chat.Assistant
	allow     []string

	online atomic.Bool
	mu     sync.Mutex
	bot    *tgbotapi.BotAPI
}

var _ chat.Sender = (*Channel)(nil)

// Endpoint turns api_base_url into the library's endpoint format
// ("<base>/bot%s/%s"); "" is the public Bot API.
func Endpoint(base string) (string, error) {
	if base == "" {
		return tgbotapi.APIEndpoint, nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("channels.telegram.api_base_url: %q is not an http(s) base URL", base)
	}
	return strings.ReplaceAll(strings.TrimRight(base, "/"), "%", "%%") + "/bot%s/%s", nil
}

// New checks the options and builds the channel; nothing is sent until Run.
// It returns ErrNoToken when the token variable is unset or empty.
func New(o Options) (*Channel, error) {
	if o.Getenv == nil || o.Store == nil || o.Asker == nil {
		return nil, errors.New("telegram: Getenv, Store and Asker are required")
	}
	token := ""
	if o.Config.BotTokenEnv != "" {
		token = strings.TrimSpace(o.Getenv(o.Config.BotTokenEnv))
	}
	if token == "" {
		return nil, ErrNoToken
	}
	endpoint, err := Endpoint(o.Config.APIBaseURL)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PollTimeout < time.Second {
		o.PollTimeout = DefaultPollTimeout
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = DefaultRetryDelay
	}
	if o.MaxRetryDelay < o.RetryDelay {
		o.MaxRetryDelay = max(DefaultMaxRetryDelay, o.RetryDelay)
	}
	if o.PairingTTL <= 0 {
		o.PairingTTL = chat.PairingTTL
	}
	if o.Elector == nil {
		o.Elector = leader.Always{}
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c := &Channel{o: o, token: token, endpoint: endpoint, hc: hc, log: o.Logger.With("channel", chat.ChannelTelegram)}
	for _, id := range o.Config.Allowlist {
		c.allow = append(c.allow, strings.TrimSpace(id))
	}
	c.assistant = &chat.Assistant{Store: o.Store, Recorder: o.Store, Asker: o.Asker, Request: o.Request,
		HistoryLimit: o.HistoryLimit, Now: o.Now}
	return c, nil
}

// Online implements chat.Sender: true while polling works.
func (c *Channel) Online(channel string) bool {
	return channel == chat.ChannelTelegram && c.online.Load()
}

// Send implements chat.Sender: sendMessage to chatID (split when longer
// than Telegram allows), then the text is recorded in the conversation as
// the assistant's. A refusal keeps the Bot API's description in the error,
// for the log only.
func (c *Channel) Send(ctx context.Context, channel, chatID, text string) error {
	if channel != chat.ChannelTelegram {
		return fmt.Errorf("telegram: cannot send on channel %q", channel)
	}
	id, err := strconv.ParseInt(chatID, 10, 64)
	if err != nil {
		return errors.New("telegram: the chat id is not a number")
	}
	bot := c.currentBot()
	if bot == nil || !c.online.Load() {
		return errors.New("telegram: channel offline")
	}
	if err := c.sendText(ctx, bot, id, text); err != nil {
		return err
	}
	msg := chat.Message{Role: chat.RoleAssistant, Text: text, At: c.o.Now().UTC()}
	if err := c.o.Store.Append(ctx, chat.ConvID(chat.ChannelTelegram, chatID), chat.ChannelTelegram, msg); err != nil {
		c.log.Warn("telegram: delivered message not recorded", "error", err)
	}
	return nil
}

// Run connects (getMe) and long-polls until ctx ends, then returns nil.
// Failures are logged and retried with backoff; they never end Run.
func (c *Channel) Run(ctx context.Context) error {
	defer c.online.Store(false)
	delay := c.o.RetryDelay
	for {
		bot, err := c.connect(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			c.mu.Lock()
			c.bot = bot
			c.mu.Unlock()
			c.online.Store(true)
			c.log.Info("telegram channel online", "bot", "@"+bot.Self.UserName)
			c.o.Elector.Lead(ctx, func(lctx context.Context) { c.poll(lctx, bot) })
			return nil
		}
		c.online.Store(false)
		c.log.Warn("telegram: cannot reach the Bot API", "error", err, "retry_in", delay.String(),
			"fix", "check the token in "+c.o.Config.BotTokenEnv+" and channels.telegram.api_base_url")
		if !sleep(ctx, delay) {
			return nil
		}
		delay = min(2*delay, c.o.MaxRetryDelay)
	}
}

func (c *Channel) connect(ctx context.Context) (*tgbotapi.BotAPI, error) {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	bot, err := tgbotapi.NewBotAPIWithClient(c.token, c.endpoint, c.client(ctx))
	if err != nil {
		return nil, c.scrub(err)
	}
	return bot, nil
}

func (c *Channel) currentBot() *tgbotapi.BotAPI {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bot
}

// poll is the long-polling loop. The offset in memory is always the
// stored cursor or an update that was committed after it.
func (c *Channel) poll(ctx context.Context, bot *tgbotapi.BotAPI) {
	var offset int64
	delay := c.o.RetryDelay
	for {
		cur, err := c.o.Store.Cursor(ctx, chat.ChannelTelegram)
		if err == nil {
			offset = cur
			break
		}
		c.log.Error("telegram: cannot read the stored offset", "error", err)
		if !sleep(ctx, delay) {
			return
		}
		delay = min(2*delay, c.o.MaxRetryDelay)
	}
	failures := 0
	delay = c.o.RetryDelay
	for ctx.Err() == nil {
		updates, err := c.getUpdates(ctx, bot, offset)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			if (failures >= FailureThreshold || rejected(err)) && c.online.Swap(false) {
				c.log.Error("telegram channel offline: getUpdates keeps failing", "error", err, "failures", failures)
			} else {
				c.log.Warn("telegram: getUpdates failed", "error", err, "failures", failures)
			}
			if !sleep(ctx, delay) {
				return
			}
			delay = min(2*delay, c.o.MaxRetryDelay)
			continue
		}
		if failures > 0 && !c.online.Swap(true) {
			c.log.Info("telegram channel online again")
		}
		failures, delay = 0, c.o.RetryDelay
		for _, u := range updates {
			if int64(u.UpdateID) < offset {
				continue // already committed: never processed twice
			}
			if err := c.handle(ctx, bot, u); err != nil {
				if ctx.Err() != nil {
					return
				}
				// Not committed: the same update comes back on the next poll.
				c.log.Error("telegram: update not stored; will retry", "error", err)
				if !sleep(ctx, delay) {
					return
				}
				break
			}
			offset = int64(u.UpdateID) + 1
		}
	}
}

func (c *Channel) getUpdates(ctx context.Context, bot *tgbotapi.BotAPI, offset int64) ([]tgbotapi.Update, error) {
	secs := int(c.o.PollTimeout / time.Second)
	ctx, cancel := context.WithTimeout(ctx, c.o.PollTimeout+15*time.Second)
	defer cancel()
	updates, err := c.with(ctx, bot).GetUpdates(tgbotapi.UpdateConfig{
		Offset: int(offset), Limit: 100, Timeout: secs, AllowedUpdates: []string{"message"},
	})
	if err != nil {
		return nil, c.scrub(err)
	}
	return updates, nil
}

// handle processes one update and commits it with the next offset.
func (c *Channel) handle(ctx context.Context, bot *tgbotapi.BotAPI, u tgbotapi.Update) error {
	skip := chat.Inbound{Channel: chat.ChannelTelegram, Cursor: int64(u.UpdateID) + 1}
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot || m.Chat == nil || strings.TrimSpace(m.Text) == "" {
		return c.o.Store.Ingest(ctx, skip)
	}
	userID := strconv.FormatInt(m.From.ID, 10)
	chatID := strconv.FormatInt(m.Chat.ID, 10)
	admitted := slices.Contains(c.allow, userID)
	if !admitted {
		ok, err := c.o.Store.IsApproved(ctx, chat.ChannelTelegram, userID)
		if err != nil {
			return err
		}
		admitted = ok
	}
	if !admitted {
		return c.pair(ctx, bot, m, userID, chatID, skip)
	}
	convID := chat.ConvID(chat.ChannelTelegram, chatID)
	in := skip
	in.ConvID, in.Title = convID, title(m)
	in.Msg = chat.Message{Role: chat.RoleUser, Text: m.Text, At: c.o.Now().UTC()}
	if err := c.o.Store.Ingest(ctx, in); err != nil {
		return err
	}
	c.answer(ctx, bot, convID, m.Chat.ID, m.Text)
	return nil
}

// answer replies to a stored user message. Failures are logged: the
// update is committed and is not retried.
func (c *Channel) answer(ctx context.Context, bot *tgbotapi.BotAPI, convID string, chatID int64, text string) {
	reply, env, err := c.assistant.Reply(ctx, convID, chat.ChannelTelegram, text)
	if err != nil {
		c.log.Error("telegram: reply not stored", "error", err)
		return
	}
	out := reply.Text
	if !env.OK {
		c.log.Warn("telegram: no answer from the model", "error_kind", env.Error.Kind, "error", env.Error.Message)
		out = FallbackText
	}
	if err := c.sendText(ctx, bot, chatID, out); err != nil {
		c.log.Warn("telegram: reply not delivered", "error", err)
	}
}

// pair answers a stranger in a private chat with a one-time code, stored
// (digest only) with the offset. Strangers in groups are ignored, and a
// stranger who already holds a live code gets nothing more. Their messages
// are not stored.
func (c *Channel) pair(ctx context.Context, bot *tgbotapi.BotAPI, m *tgbotapi.Message, userID, chatID string, skip chat.Inbound) error {
	if m.Chat.Type != "private" {
		return c.o.Store.Ingest(ctx, skip)
	}
	now := c.o.Now().UTC()
	code := chat.NewPairingCode()
	created, err := c.o.Store.RequestPairing(ctx, chat.PendingPairing{
		Channel: chat.ChannelTelegram, UserID: userID, ChatID: chatID, DisplayName: displayName(m.From),
		CodeHash: chat.HashPairingCode(code), CreatedAt: now, ExpiresAt: now.Add(c.o.PairingTTL),
	}, skip)
	if err != nil {
		return err
	}
	if !created {
		c.log.Info("telegram: message from an unpaired user ignored", "user_id", userID)
		return nil
	}
	c.log.Info("telegram: pairing code issued", "user_id", userID, "expires_at", now.Add(c.o.PairingTTL).Format(time.RFC3339))
	if err := c.sendText(ctx, bot, m.Chat.ID, PairingText(code, c.o.PairingTTL)); err != nil {
		c.log.Warn("telegram: pairing code not delivered; dropped", "user_id", userID, "error", err)
		if err := c.o.Store.CancelPairing(ctx, chat.ChannelTelegram, userID); err != nil {
			c.log.Error("telegram: cannot drop the undelivered pairing", "error", err)
		}
	}
	return nil
}

// PairingText is what a stranger receives instead of an answer.
func PairingText(code string, ttl time.Duration) string {
	return fmt.Sprintf("This is a private assistant. To ask its owner for access, give them this pairing code "+
		"(valid for %s):\n\n%s\n\nThe owner approves it with: garra pair approve %s", ttlText(ttl), code, code)
}

func ttlText(d time.Duration) string {
	if d%time.Hour == 0 {
		if d == time.Hour {
			return "1 hour"
		}
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.Round(time.Second).String()
}

// sendText delivers text in as many messages as Telegram's limit needs.
func (c *Channel) sendText(ctx context.Context, bot *tgbotapi.BotAPI, chatID int64, text string) error {
	for _, part := range Split(text, MaxMessageLen) {
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		_, err := c.with(sctx, bot).Send(tgbotapi.NewMessage(chatID, part))
		cancel()
		if err != nil {
			return fmt.Errorf("telegram sendMessage: %w", c.scrub(err))
		}
	}
	return nil
}

// Split cuts text into parts of at most limit UTF-16 code units, at a line
// break or a space when one is near the end of a part.
func Split(text string, limit int) []string {
	var parts []string
	runes := []rune(text)
	for len(runes) > 0 {
		n, size := 0, 0
		for n < len(runes) {
			w := 1
			if utf16.RuneLen(runes[n]) == 2 {
				w = 2
			}
			if size+w > limit {
				break
			}
			size += w
			n++
		}
		if n < len(runes) {
			n = breakAt(runes, n)
		}
		parts = append(parts, string(runes[:n]))
		runes = runes[n:]
	}
	return parts
}

// breakAt moves a cut at n back to just after the last line break, else
// the last space, within the part's final fifth.
func breakAt(runes []rune, n int) int {
	for _, sep := range []rune{'\n', ' '} {
		for i := n - 1; i > n*4/5; i-- {
			if runes[i] == sep {
				return i + 1
			}
		}
	}
	return n
}

func title(m *tgbotapi.Message) string {
	if m.Chat.Title != "" {
		return m.Chat.Title
	}
	return displayName(m.From)
}

func displayName(u *tgbotapi.User) string {
	if u == nil {
		return ""
	}
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	switch {
	case u.UserName != "" && name != "":
		return name + " (@" + u.UserName + ")"
	case u.UserName != "":
		return "@" + u.UserName
	}
	return name
}

// rejected reports a Bot API answer that retrying will not fix: a bad or
// revoked token.
func rejected(err error) bool {
	var te *tgbotapi.Error
	return errors.As(err, &te) && (te.Code == http.StatusUnauthorized || te.Code == http.StatusForbidden || te.Code == http.StatusNotFound)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
