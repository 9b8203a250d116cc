package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
)

// migration is one versioned step of the schema. A migration is never
// edited once released: a change is a new migration.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are applied in order, each in its own transaction together
// with its schema_migrations row.
var migrations = []migration{
	{1, "conversations and messages", `
CREATE TABLE conversations (
	id              TEXT PRIMARY KEY,
	channel         TEXT NOT NULL,
	title           TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	messages        INTEGER NOT NULL DEFAULT 0,
	last_message_id INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversations_by_activity ON conversations (last_message_id DESC);
CREATE INDEX conversations_by_channel ON conversations (channel, last_message_id DESC);
CREATE TABLE messages (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
	text            TEXT NOT NULL,
	at              INTEGER NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, id);
`},
	{2, "channel cursors and pairing", `
CREATE TABLE channel_cursors (
	channel     TEXT PRIMARY KEY,
	next_offset INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);
CREATE TABLE pairing_pending (
	channel      TEXT NOT NULL,
	user_id      TEXT NOT NULL,
	chat_id      TEXT NOT NULL,
	display_name TEXT NOT NULL DEFAULT '',
	code_hash    TEXT NOT NULL UNIQUE,
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	PRIMARY KEY (channel, user_id)
);
CREATE TABLE pairing_approved (
	channel      TEXT NOT NULL,
	user_id      TEXT NOT NULL,
	display_name TEXT NOT NULL DEFAULT '',
	approved_at  INTEGER NOT NULL,
	PRIMARY KEY (channel, user_id)
);
`},
}

// LatestSchemaVersion is the schema this build writes.
var LatestSchemaVersion = migrations[len(migrations)-1].version

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at INTEGER NOT NULL
)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	current, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if current > LatestSchemaVersion {
		return fmt.Errorf("database schema version %d is newer than this garra (%d): upgrade garra", current, LatestSchemaVersion)
	}
	for _, m := range migrations {
		err := s.write(ctx, func(tx *sql.Tx) error {
			// Another process may have applied it since we looked: the
			// immediate transaction makes this check and the apply atomic.
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, s.now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

// SchemaVersion is the highest applied migration, 0 for an empty database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := s.w.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return int(v.Int64), nil
}
