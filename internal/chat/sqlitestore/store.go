// Package sqlitestore is the SQLite implementation of the chat store:
// conversations, messages, channel cursors and pairing in one file,
// <data_dir>/garra.db, through the pure-Go modernc.org/sqlite driver.
//
// The database runs in WAL mode with synchronous=FULL, so a committed
// message survives a crash or a power cut, and readers never wait for the
// writer. Writes go through one connection per process and every write
// transaction is BEGIN IMMEDIATE with a busy timeout, so concurrent writers
// in this process queue and writers in other processes (garra pair) wait
// instead of failing. The schema is versioned in code (schema_migrations).
//
// Everything the gateway and the channels use goes through the interfaces
// of package chat, so a PostgreSQL store can replace this one.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"modernc.org/sqlite" // also the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/garraia/garra/internal/chat"
)

// FileName is the database file inside data_dir.
const FileName = "garra.db"

// DefaultBusyTimeout is how long a writer waits for another process's
// write lock before failing.
const DefaultBusyTimeout = 10 * time.Second

// maxReaders bounds the read connections of one process.
const maxReaders = 4

// Options configures a Store.
type Options struct {
	// Allowlists are the operator's allowlists by channel
	// (channels.<name>.allowlist); Pairing counts them with the approved
	// users. They are never written to the database.
	Allowlists map[string][]string
	// BusyTimeout is how long a write waits for another process's lock
	// (0 = DefaultBusyTimeout).
	BusyTimeout time.Duration
	Now         func() time.Time
}

// Store is a chat store in one SQLite file. It implements chat.Store,
// chat.Recorder and chat.ChannelStore, and is safe for concurrent use.
type Store struct {
	path  string
	w     *sql.DB // one connection: in-process writes queue here
	r     *sql.DB // read-only connections
	allow map[string][]string
	now   func() time.Time
}

var _ chat.ChannelStore = (*Store)(nil)

// OpenDataDir opens (creating if needed) <dataDir>/garra.db. dataDir is
// created with mode 0700.
func OpenDataDir(ctx context.Context, dataDir string, o Options) (*Store, error) {
	if dataDir == "" {
		return nil, errors.New("chat store: data_dir is empty")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("chat store: %w", err)
	}
	return Open(ctx, filepath.Join(dataDir, FileName), o)
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date.
func Open(ctx context.Context, path string, o Options) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("chat store: unusable database path %q", path)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	busy := o.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	// Conversations are private: create the file 0600 before SQLite does
	// (its -wal and -shm files copy the mode).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("chat store: %w", err)
	}
	_ = f.Close()
	common := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=on", busy.Milliseconds())
	w, err := sql.Open("sqlite", path+"?"+common+"&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("chat store: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{path: path, w: w, allow: o.Allowlists, now: o.Now}
	if err := untilNotBusy(ctx, busy, func() error {
		if err := w.PingContext(ctx); err != nil {
			return err
		}
		return s.migrate(ctx)
	}); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("chat store %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+"?"+common+"&_query_only=on")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("chat store: %w", err)
	}
	r.SetMaxOpenConns(maxReaders)
	r.SetMaxIdleConns(maxReaders)
	s.r = r
	return s, nil
}

// untilNotBusy runs fn again while it fails with SQLITE_BUSY, for up to
// busy. Two processes opening a new database at once (the gateway and
// `garra pair`) race to switch it to WAL, and SQLite answers the loser
// BUSY without waiting on its busy handler (waiting could deadlock); the
// switch is done once the winner is, so trying again is enough. fn must be
// safe to repeat (connecting and migrating are).
func untilNotBusy(ctx context.Context, busy time.Duration, fn func() error) error {
	deadline := time.Now().Add(busy)
	for {
		err := fn()
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. In-flight calls finish first.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// write runs fn in one immediate transaction.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// read runs fn in one read transaction: a consistent snapshot.
func (s *Store) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

// Times are stored as Unix milliseconds.
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
	if err := s.write(ctx, func(tx *sql.Tx) error { return s.appendTx(ctx, tx, convID, channel, "", msg) }); err != nil {
		return fmt.Errorf("append to %s: %w", convID, err)
	}
	return nil
}

func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, convID, channel, title string, m chat.Message) error {
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
	if _, err := tx.ExecContext(ctx, `
INSERT INTO conversations (id, channel, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET title = CASE WHEN excluded.title <> '' THEN excluded.title ELSE conversations.title END`,
		convID, channel, title, ms(at), ms(at)); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO messages (conversation_id, role, text, at) VALUES (?, ?, ?, ?)`,
		convID, m.Role, m.Text, ms(at))
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
UPDATE conversations SET messages = messages + 1, updated_at = max(updated_at, ?), last_message_id = ? WHERE id = ?`,
		ms(at), id, convID)
	return err
}

// Conversations implements chat.Store: newest activity first.
func (s *Store) Conversations(ctx context.Context, channel string) ([]chat.Conversation, error) {
	q := `SELECT id, channel, title, messages, updated_at FROM conversations`
	var args []any
	if channel != "" {
		q += ` WHERE channel = ?`
		args = append(args, channel)
	}
	q += ` ORDER BY last_message_id DESC`
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []chat.Conversation
	for rows.Next() {
		var c chat.Conversation
		var updated int64
		if err := rows.Scan(&c.ID, &c.Channel, &c.Title, &c.Messages, &updated); err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		c.UpdatedAt = fromMS(updated)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

// History implements chat.Store: the last limit messages, oldest first
// (limit < 1 = all of them), or chat.ErrNotFound.
func (s *Store) History(ctx context.Context, id string, limit int) ([]chat.Message, error) {
	if limit < 1 {
		limit = -1
	}
	var out []chat.Message
	err := s.read(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ?`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return chat.ErrNotFound
		} else if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT role, text, at FROM messages WHERE conversation_id = ? ORDER BY id DESC LIMIT ?`, id, limit)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var m chat.Message
			var at int64
			if err := rows.Scan(&m.Role, &m.Text, &at); err != nil {
				return err
			}
			m.At = fromMS(at)
			out = append(out, m)
		}
		return rows.Err()
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
	err := s.r.QueryRowContext(ctx, `SELECT next_offset FROM channel_cursors WHERE channel = ?`, channel).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
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
	err := s.write(ctx, func(tx *sql.Tx) error {
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
func (s *Store) setCursorTx(ctx context.Context, tx *sql.Tx, channel string, cursor int64) error {
	_, err := tx.ExecContext(ctx, `
INSERT INTO channel_cursors (channel, next_offset, updated_at) VALUES (?, ?, ?)
ON CONFLICT (channel) DO UPDATE SET next_offset = max(next_offset, excluded.next_offset), updated_at = excluded.updated_at`,
		channel, cursor, s.nowMS())
	return err
}
