package chat

import (
	"context"
	"errors"
	"time"
)

// Inbound is one update a polling channel received, committed atomically
// with the channel's cursor: either both the message and the new cursor are
// stored, or neither. A restarted channel resumes from the cursor, so an
// update is never processed twice and never acknowledged before it is
// stored.
type Inbound struct {
	Channel string
	// Cursor is where the channel resumes after this update (Telegram: the
	// update_id + 1). The stored cursor never moves backwards.
	Cursor int64
	// ConvID is the conversation the message belongs to; "" when the
	// update carries nothing to store (it only advances the cursor).
	ConvID string
	// Title, when not empty, names the conversation (the chat's title or
	// the user's name).
	Title string
	Msg   Message
}

// CursorStore keeps each polling channel's resume point.
type CursorStore interface {
	// Cursor is the channel's stored cursor, 0 when none.
	Cursor(ctx context.Context, channel string) (int64, error)
	// Ingest commits in (its message, if any, and its cursor) in one
	// transaction.
	Ingest(ctx context.Context, in Inbound) error
}

// PendingPairing is a stranger who asked for access and got a one-time
// code. Only the code's digest is ever stored.
type PendingPairing struct {
	Channel     string
	UserID      string
	ChatID      string
	DisplayName string
	CodeHash    string // HashPairingCode(code)
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// PairedUser is a user the owner admitted with `garra pair approve`.
type PairedUser struct {
	Channel     string
	UserID      string
	DisplayName string
	ApprovedAt  time.Time
}

// ErrNoPairing is returned by Approve for a code that is wrong, expired or
// already used (one error for all three: the code is the only secret).
var ErrNoPairing = errors.New("no pending pairing with that code (wrong, expired or already used)")

// ErrNotPaired is returned by Revoke for a user who is not approved.
var ErrNotPaired = errors.New("user is not approved")

// PairingStore keeps pairing state: pending codes and approved users. The
// operator's config allowlist is not stored; it is read from the config.
type PairingStore interface {
	// IsApproved reports whether userID was approved on channel.
	IsApproved(ctx context.Context, channel, userID string) (bool, error)
	// RequestPairing stores p, in the same transaction as in (which
	// carries no message, only the cursor), unless the user already has an
	// unexpired pending code or the channel has MaxPendingPairings of
	// them; created says whether p was stored. Expired codes are purged.
	RequestPairing(ctx context.Context, p PendingPairing, in Inbound) (created bool, err error)
	// CancelPairing drops userID's pending code (the code could not be
	// delivered).
	CancelPairing(ctx context.Context, channel, userID string) error
	// Approve admits the user holding code and consumes the code, or
	// returns ErrNoPairing.
	Approve(ctx context.Context, code string) (PairedUser, error)
	// Revoke removes an approved user, or returns ErrNotPaired.
	Revoke(ctx context.Context, channel, userID string) error
	// Pairings lists the unexpired pending pairings and the approved users
	// of channel ("" = all), oldest first.
	Pairings(ctx context.Context, channel string) ([]PendingPairing, []PairedUser, error)
}

// ChannelStore is everything a polling channel needs from the store.
type ChannelStore interface {
	Store
	Recorder
	CursorStore
	PairingStore
}
