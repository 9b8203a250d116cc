// Package chatruntime runs the gateway's conversations besides HTTP: it
// opens the conversation store of data_dir and starts the chat channels
// that have a token (Telegram), answering from the shared ask core. `garra
// pair` opens the same store to approve and revoke users.
package chatruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/sqlitestore"
	"github.com/garraia/garra/internal/chat/telegram"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/redact"
)

// OpenStore opens <data_dir>/garra.db, the store `garra gateway` and
// `garra pair` share.
func OpenStore(ctx context.Context, cfg *config.Config) (*sqlitestore.Store, error) {
	s, err := sqlitestore.OpenDataDir(ctx, cfg.DataDirPath(), sqlitestore.Options{
		Allowlists: map[string][]string{chat.ChannelTelegram: cfg.Channels.Telegram.Allowlist},
	})
	if err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", cfg.DataDir, err)
	}
	return s, nil
}

// Runtime is what `garra gateway` runs besides HTTP: the conversation
// store and the channels that have a token.
type Runtime struct {
	Store  *sqlitestore.Store
	Sender chat.Sender // the Telegram channel, or chat.Empty{} without a token
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start opens <data_dir>/garra.db and starts the Telegram channel when
// the variable named by channels.telegram.bot_token_env is set. Close stops
// the channel and then closes the store.
func Start(ctx context.Context, cfg *config.Config, getenv func(string) string, log *slog.Logger) (*Runtime, error) {
	store, err := OpenStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("chat store: %w", err)
	}
	log.Info("conversation store open", "path", store.Path())
	ctx, cancel := context.WithCancel(ctx)
	rt := &Runtime{Store: store, Sender: chat.Empty{}, cancel: cancel}
	tg := cfg.Channels.Telegram
	ch, err := telegram.New(telegram.Options{
		Config: tg, Getenv: getenv, Store: store, Logger: log,
		Asker:   &ask.Core{Config: cfg, Redactor: redact.Default().WithSecrets(cfg.SecretValues(getenv)...), Getenv: getenv, Retries: ask.DefaultRetries},
		Request: ask.Request{Provider: cfg.LLM.Provider, Model: cfg.LLM.Model},
	})
	switch {
	case errors.Is(err, telegram.ErrNoToken):
		log.Info("telegram channel disabled: no bot token", "enable", "set "+tg.BotTokenEnv)
	case err != nil:
		cancel()
		_ = store.Close()
		return nil, err
	default:
		rt.Sender = ch
		rt.wg.Go(func() { _ = ch.Run(ctx) })
	}
	return rt, nil
}

// Close stops the channels, waits for them, and closes the store.
func (rt *Runtime) Close() error {
	rt.cancel()
	rt.wg.Wait()
	return rt.Store.Close()
}
