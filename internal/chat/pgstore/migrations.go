package pgstore

import "github.com/garraia/garra/internal/pgmigrate"

// migrations mirror the SQLite store's, version for version: the same
// tables, columns and meaning (times in Unix milliseconds), in
// PostgreSQL's dialect.
var migrations = []pgmigrate.Migration{
	{Version: 1, Name: "conversations and messages", SQL: `
CREATE TABLE conversations (
	id              TEXT PRIMARY KEY,
	channel         TEXT NOT NULL,
	title           TEXT NOT NULL DEFAULT '',
	created_at      BIGINT NOT NULL,
	updated_at      BIGINT NOT NULL,
	messages        INTEGER NOT NULL DEFAULT 0,
	last_message_id BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX conversations_by_activity ON conversations (last_message_id DESC);
CREATE INDEX conversations_by_channel ON conversations (channel, last_message_id DESC);
CREATE TABLE messages (
	id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
	text            TEXT NOT NULL,
	at              BIGINT NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, id);
`},
	{Version: 2, Name: "channel cursors and pairing", SQL: `
CREATE TABLE channel_cursors (
	channel     TEXT PRIMARY KEY,
	next_offset BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL
);
CREATE TABLE pairing_pending (
	channel      TEXT NOT NULL,
	user_id      TEXT NOT NULL,
	chat_id      TEXT NOT NULL,
	display_name TEXT NOT NULL DEFAULT '',
	code_hash    TEXT NOT NULL UNIQUE,
	created_at   BIGINT NOT NULL,
	expires_at   BIGINT NOT NULL,
	PRIMARY KEY (channel, user_id)
);
CREATE TABLE pairing_approved (
	channel      TEXT NOT NULL,
	user_id      TEXT NOT NULL,
	display_name TEXT NOT NULL DEFAULT '',
	approved_at  BIGINT NOT NULL,
	PRIMARY KEY (channel, user_id)
);
`},
}

// migrationsTable is the SQLite store's name for the same record.
const migrationsTable = "schema_migrations"

// LatestSchemaVersion is the schema this build writes.
var LatestSchemaVersion = pgmigrate.Latest(migrations)
