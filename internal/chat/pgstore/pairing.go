package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/garraia/garra/internal/chat"
)

// IsApproved implements chat.PairingStore.
func (s *Store) IsApproved(ctx context.Context, channel, userID string) (bool, error) {
	var one int
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM pairing_approved WHERE channel = $1 AND user_id = $2`, channel, userID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read pairing: %w", err)
	}
	return true, nil
}

// RequestPairing implements chat.PairingStore. A transaction lock per
// channel serialises requests, so the one-code-per-user and
// MaxPendingPairings checks hold across replicas as they do in SQLite's
// single writer.
func (s *Store) RequestPairing(ctx context.Context, p chat.PendingPairing, in chat.Inbound) (bool, error) {
	if p.Channel == "" || p.UserID == "" || len(p.CodeHash) != 64 {
		return false, errors.New("request pairing: channel, user and code digest are required")
	}
	if in.ConvID != "" {
		return false, errors.New("request pairing: a stranger's message is not stored")
	}
	created := false
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('garra.pairing:' || $1, 0))`, p.Channel); err != nil {
			return err
		}
		now := s.nowMS()
		if _, err := tx.Exec(ctx, `DELETE FROM pairing_pending WHERE expires_at <= $1`, now); err != nil {
			return err
		}
		var mine, all int
		if err := tx.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE user_id = $2), count(*) FROM pairing_pending WHERE channel = $1`, p.Channel, p.UserID).Scan(&mine, &all); err != nil {
			return err
		}
		if mine == 0 && all < chat.MaxPendingPairings {
			createdAt := p.CreatedAt
			if createdAt.IsZero() {
				createdAt = s.now()
			}
			if _, err := tx.Exec(ctx, `
INSERT INTO pairing_pending (channel, user_id, chat_id, display_name, code_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				p.Channel, p.UserID, p.ChatID, p.DisplayName, p.CodeHash, ms(createdAt), ms(p.ExpiresAt)); err != nil {
				return err
			}
			created = true
		}
		if in.Channel != "" {
			return s.setCursorTx(ctx, tx, in.Channel, in.Cursor)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("request pairing: %w", err)
	}
	return created, nil
}

// CancelPairing implements chat.PairingStore.
func (s *Store) CancelPairing(ctx context.Context, channel, userID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM pairing_pending WHERE channel = $1 AND user_id = $2`, channel, userID); err != nil {
		return fmt.Errorf("cancel pairing: %w", err)
	}
	return nil
}

// Approve implements chat.PairingStore. The code is consumed by one
// DELETE … RETURNING: of two approvals racing, the second waits for the
// first's row lock and then finds nothing, so a code admits once.
func (s *Store) Approve(ctx context.Context, code string) (chat.PairedUser, error) {
	if len(chat.NormalizePairingCode(code)) != chat.PairingCodeLen {
		return chat.PairedUser{}, chat.ErrNoPairing
	}
	var u chat.PairedUser
	found := false
	err := s.write(ctx, func(tx pgx.Tx) error {
		var expires int64
		err := tx.QueryRow(ctx, `DELETE FROM pairing_pending WHERE code_hash = $1 RETURNING channel, user_id, display_name, expires_at`,
			chat.HashPairingCode(code)).Scan(&u.Channel, &u.UserID, &u.DisplayName, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		now := s.now()
		if expires <= ms(now) {
			return nil // an expired code is gone too
		}
		u.ApprovedAt = fromMS(ms(now))
		if _, err := tx.Exec(ctx, `
INSERT INTO pairing_approved (channel, user_id, display_name, approved_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (channel, user_id) DO UPDATE SET display_name = excluded.display_name, approved_at = excluded.approved_at`,
			u.Channel, u.UserID, u.DisplayName, ms(now)); err != nil {
			return err
		}
		found = true
		return nil
	})
	if err != nil {
		return chat.PairedUser{}, fmt.Errorf("approve pairing: %w", err)
	}
	if !found {
		return chat.PairedUser{}, chat.ErrNoPairing
	}
	return u, nil
}

// Revoke implements chat.PairingStore.
func (s *Store) Revoke(ctx context.Context, channel, userID string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM pairing_approved WHERE channel = $1 AND user_id = $2`, channel, userID)
	if err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return chat.ErrNotPaired
	}
	return nil
}

// Pairings implements chat.PairingStore.
func (s *Store) Pairings(ctx context.Context, channel string) ([]chat.PendingPairing, []chat.PairedUser, error) {
	var pending []chat.PendingPairing
	var approved []chat.PairedUser
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
SELECT channel, user_id, chat_id, display_name, code_hash, created_at, expires_at FROM pairing_pending
WHERE expires_at > $1 AND ($2 = '' OR channel = $2) ORDER BY created_at, user_id`, s.nowMS(), channel)
		if err != nil {
			return err
		}
		pending, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (chat.PendingPairing, error) {
			var p chat.PendingPairing
			var created, expires int64
			err := r.Scan(&p.Channel, &p.UserID, &p.ChatID, &p.DisplayName, &p.CodeHash, &created, &expires)
			p.CreatedAt, p.ExpiresAt = fromMS(created), fromMS(expires)
			return p, err
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
SELECT channel, user_id, display_name, approved_at FROM pairing_approved
WHERE ($1 = '' OR channel = $1) ORDER BY approved_at, user_id`, channel)
		if err != nil {
			return err
		}
		approved, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (chat.PairedUser, error) {
			var u chat.PairedUser
			var at int64
			err := r.Scan(&u.Channel, &u.UserID, &u.DisplayName, &at)
			u.ApprovedAt = fromMS(at)
			return u, err
		})
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list pairings: %w", err)
	}
	if len(pending) == 0 {
		pending = nil
	}
	if len(approved) == 0 {
		approved = nil
	}
	return pending, approved, nil
}

// Pairing implements chat.Store (see chat.PairStatuses).
func (s *Store) Pairing(ctx context.Context) ([]chat.PairStatus, error) {
	pending, approved, err := s.Pairings(ctx, "")
	if err != nil {
		return nil, err
	}
	return chat.PairStatuses(s.allow, pending, approved), nil
}
