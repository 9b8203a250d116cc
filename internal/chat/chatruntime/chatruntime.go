// Package chatruntime runs the gateway's conversations besides HTTP: it
// opens the conversation store the config names (SQLite in data_dir, or a
// shared PostgreSQL) and starts the chat channels that have a token
// (Telegram), answering from the shared ask core. `garra pair` opens the
// same store to approve and revoke users.
package chatruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/pgstore"
	"github.com/garraia/garra/internal/chat/sqlitestore"
	"github.com/garraia/garra/internal/chat/telegram"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/leader"
	"github.com/garraia/garra/internal/redact"
)

// pollerLock names the advisory lock of the Telegram poller.
const pollerLock = "telegram-poller"

// Store is a chat store that can be closed.
type Store interface {
	chat.ChannelStore
	Close() error
}

// OpenStore opens the store of cfg: <data_dir>/garra.db with the sqlite
// driver, the database of store.dsn_env / store.dsn_file with postgres.
// Both `garra gateway` and `garra pair` use it.
func OpenStore(ctx context.Context, cfg *config.Config, getenv func(string) string) (Store, error) {
	allow := map[string][]string{chat.ChannelTelegram: cfg.Channels.Telegram.Allowlist}
	if cfg.Store.Driver == config.StorePostgres {
		dsn, err := cfg.StoreDSN(getenv, config.ReadSecretFile)
		if err != nil {
			return nil, err
		}
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{Allowlists: allow})
		if err != nil {
			return nil, fmt.Errorf("store (postgres): %w", err)
		}
		return s, nil
	}
	if d := cfg.Store.Driver; d != "" && d != config.StoreSQLite {
		return nil, fmt.Errorf("store.driver: %q is not sqlite or postgres", d)
	}
	s, err := sqlitestore.OpenDataDir(ctx, cfg.DataDirPath(), sqlitestore.Options{Allowlists: allow})
	if err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", cfg.DataDir, err)
	}
	return s, nil
}

// Runtime is what `garra gateway` runs besides HTTP: the conversation
// store and the channels that have a token.
type Runtime struct {
	Store  Store
	Sender chat.Sender // the Telegram channel, or chat.Empty{} without a token
	// Pool is the shared store's connections (nil with SQLite), for the
	// budgets that replicas share.
	Pool   *pgxpool.Pool
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start opens the store and starts the Telegram channel when the
// variable named by channels.telegram.bot_token_env is set. With a shared
// store only the elected replica polls Telegram. Close stops the channel
// and then closes the store.
func Start(ctx context.Context, cfg *config.Config, getenv func(string) string, log *slog.Logger) (*Runtime, error) {
	store, err := OpenStore(ctx, cfg, getenv)
	if err != nil {
		return nil, fmt.Errorf("chat store: %w", err)
	}
	rt := &Runtime{Store: store, Sender: chat.Empty{}}
	var elector leader.Elector
	switch s := store.(type) {
	case *sqlitestore.Store:
		log.Info("conversation store open", "driver", config.StoreSQLite, "path", s.Path())
	case *pgstore.Store:
		rt.Pool = s.Pool()
		cc := s.Pool().Config().ConnConfig
		log.Info("conversation store open", "driver", config.StorePostgres, "host", cc.Host, "database", cc.Database)
		elector = pollerElector(s.Pool(), log)
	}
	ctx, cancel := context.WithCancel(ctx)
	rt.cancel = cancel
	tg := cfg.Channels.Telegram
	ch, err := telegram.New(telegram.Options{
		Config: tg, Getenv: getenv, Store: store, Logger: log, Elector: elector,
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

// pollerElector elects the Telegram poller among the replicas through an
// advisory lock in the shared database: replicas need that database
// anyway, so the election asks nothing more of the cluster (no Lease, no
// Role) and works the same off it.
func pollerElector(pool *pgxpool.Pool, log *slog.Logger) leader.Elector {
	log.Info("telegram poller elected by a PostgreSQL advisory lock", "lock", pollerLock)
	return &leader.PGLock{Config: pool.Config().ConnConfig, Name: pollerLock, Logger: log}
}

// Close stops the channels, waits for them, and closes the store.
func (rt *Runtime) Close() error {
	rt.cancel()
	rt.wg.Wait()
	return rt.Store.Close()
}
