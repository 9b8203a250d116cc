// Package pgstore is the PostgreSQL implementation of the chat store, for
// gateways with several replicas: conversations, messages, channel cursors
// and pairing in one database every replica shares, through a pgx pool.
//
// It keeps the SQLite store's schema and semantics: the same versioned
// migrations (applied under an advisory lock, so replicas starting
// together migrate once), a message and its channel cursor committed in
// one transaction, pairing codes stored as digests and consumed once even
// when approvals race. Reads that span statements run in one
// repeatable-read snapshot.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/pgmigrate"
)

// Options configures a Store.
type Options struct {
	// Allowlists are the operator's allowlists by channel; Pairing counts
	// them with the approved users. They are never written to the
	// database.
	Allowlists map[string][]string
	// MaxConns bounds the pool (0 = pgx's default).
	MaxConns int32
	Now      func() time.Time
}

// Store is a chat store in a PostgreSQL database. It implements
// chat.ChannelStore and is safe for concurrent use by any number of
// processes.
type Store struct {
	pool  *pgxpool.Pool
	allow map[string][]string
	now   func() time.Time
}

var _ chat.ChannelStore = (*Store)(nil)

// Open connects to dsn and brings the schema up to date. Errors never
// carry the DSN (it may hold a password).
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	pool, err := NewPool(ctx, dsn, o.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("chat store: %w", err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := pgmigrate.Run(ctx, pool, migrationsTable, migrations); err != nil {
		pool.Close()
		return nil, fmt.Errorf("chat store: %w", err)
	}
	return &Store{pool: pool, allow: o.Allowlists, now: o.Now}, nil
}

// NewPool opens a pool on dsn and checks that the server answers.
func NewPool(ctx context.Context, dsn string, maxConns int32) (*pgxpool.Pool, error) {
	if dsn == "" {
		return nil, errors.New("postgres DSN is empty")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN: say only that it is malformed.
		return nil, errors.New("postgres DSN is malformed (want postgres://user:password@host:port/db or key=value pairs)")
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// Pool is the store's connection pool, for what shares its database
// (budgets, the poller lock).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool. In-flight calls finish first.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// SchemaVersion is the highest applied migration, 0 for an empty database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return pgmigrate.Version(ctx, s.pool, migrationsTable)
}

func (s *Store) write(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// read runs fn in one read-only snapshot.
func (s *Store) read(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// Times are stored as Unix milliseconds, as in the SQLite store.
func ms(t time.Time) int64     { return t.UnixMilli() }
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }
func (s *Store) nowMS() int64  { return ms(s.now()) }

func validRole(role string) bool { return role == chat.RoleUser || role == chat.RoleAssistant }

func sameChannel(id, ch string) bool {
	c, _, ok := chat.SplitConvID(id)
	return ok && c == ch
}

// Append implements chat.Recorder.
func (s *Store) Append(ctx context.Context, convID, channel string, msg chat.Message) error {
	if err := s.write(ctx, func(tx pgx.Tx) error { return s.appendTx(ctx, tx, convID, channel, "", msg) }); err != nil {
		return fmt.Errorf("append to %s: %w", convID, err)
	}
	return nil
}

func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, convID, channel, title string, m chat.Message) error {
	switch {
	case !sameChannel(convID, channel):
		return fmt.Errorf("conversation id %q is not <%s>:<chat id>", convID, channel)
	case !validRole(m.Role):
		return fmt.Errorf("role %q is not user or assistant", m.Role)
	case !utf8.ValidString(m.Text) || !utf8.ValidString(title):
		return errors.New("text is not valid UTF-8")
	}
	at := m.At
	if at.IsZero() {
		at = s.now()
	}
	// The upsert locks the conversation's row until commit, so appends to
	// one conversation from any replica are serialised and its counter
	// stays exact.
	if _, err := tx.Exec(ctx, `
INSERT INTO conversations (id, channel, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
ON CONFLICT (id) DO UPDATE SET title = CASE WHEN excluded.title <> '' THEN excluded.title ELSE conversations.title END`,
		convID, channel, title, ms(at)); err != nil {
		return err
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO messages (conversation_id, role, text, at) VALUES ($1, $2, $3, $4) RETURNING id`,
		convID, m.Role, m.Text, ms(at)).Scan(&id); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `
UPDATE conversations SET messages = messages + 1, updated_at = GREATEST(updated_at, $1), last_message_id = $2 WHERE id = $3`,
		ms(at), id, convID)
	return err
}

// Conversations implements chat.Store: newest activity first.
func (s *Store) Conversations(ctx context.Context, channel string) ([]chat.Conversation, error) {
	rows, err := s.pool.Query(ctx, `
SELECT id, channel, title, messages, updated_at FROM conversations
WHERE $1 = '' OR channel = $1 ORDER BY last_message_id DESC`, channel)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chat.Conversation, error) {
		var c chat.Conversation
		var updated int64
		err := r.Scan(&c.ID, &c.Channel, &c.Title, &c.Messages, &updated)
		c.UpdatedAt = fromMS(updated)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// History implements chat.Store: the last limit messages, oldest first
// (limit < 1 = all of them), or chat.ErrNotFound.
func (s *Store) History(ctx context.Context, id string, limit int) ([]chat.Message, error) {
	var lim *int
	if limit >= 1 {
		lim = &limit
	}
	var out []chat.Message
	err := s.read(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1`, id).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return chat.ErrNotFound
		} else if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT role, text, at FROM messages WHERE conversation_id = $1 ORDER BY id DESC LIMIT $2`, id, lim)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (chat.Message, error) {
			var m chat.Message
			var at int64
			err := r.Scan(&m.Role, &m.Text, &at)
			m.At = fromMS(at)
			return m, err
		})
		return err
	})
	if errors.Is(err, chat.ErrNotFound) {
		return nil, chat.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	slices.Reverse(out)
	if out == nil {
		out = []chat.Message{}
	}
	return out, nil
}

// Cursor implements chat.CursorStore.
func (s *Store) Cursor(ctx context.Context, channel string) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT next_offset FROM channel_cursors WHERE channel = $1`, channel).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s cursor: %w", channel, err)
	}
	return v, nil
}

// Ingest implements chat.CursorStore: the message (if any) and the cursor
// in one transaction.
func (s *Store) Ingest(ctx context.Context, in chat.Inbound) error {
	if in.Channel == "" {
		return errors.New("ingest: no channel")
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		if in.ConvID != "" {
			if err := s.appendTx(ctx, tx, in.ConvID, in.Channel, in.Title, in.Msg); err != nil {
				return err
			}
		}
		return s.setCursorTx(ctx, tx, in.Channel, in.Cursor)
	})
	if err != nil {
		return fmt.Errorf("ingest %s update: %w", in.Channel, err)
	}
	return nil
}

// setCursorTx stores the cursor; it never moves backwards.
func (s *Store) setCursorTx(ctx context.Context, tx pgx.Tx, channel string, cursor int64) error {
	_, err := tx.Exec(ctx, `
INSERT INTO channel_cursors (channel, next_offset, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (channel) DO UPDATE SET next_offset = GREATEST(channel_cursors.next_offset, excluded.next_offset), updated_at = excluded.updated_at`,
		channel, cursor, s.nowMS())
	return err
}
