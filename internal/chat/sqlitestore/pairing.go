package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/garraia/garra/internal/chat"
)

// IsApproved implements chat.PairingStore.
func (s *Store) IsApproved(ctx context.Context, channel, userID string) (bool, error) {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM pairing_approved WHERE channel = ? AND user_id = ?`, channel, userID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read pairing: %w", err)
	}
	return true, nil
}

// RequestPairing implements chat.PairingStore.
func (s *Store) RequestPairing(ctx context.Context, p chat.PendingPairing, in chat.Inbound) (bool, error) {
	if p.Channel == "" || p.UserID == "" || len(p.CodeHash) != 64 {
		return false, errors.New("request pairing: channel, user and code digest are required")
	}
	if in.ConvID != "" {
		return false, errors.New("request pairing: a stranger's message is not stored")
	}
	created := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := s.nowMS()
		if _, err := tx.ExecContext(ctx, `DELETE FROM pairing_pending WHERE expires_at <= ?`, now); err != nil {
			return err
		}
		var mine, all int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pairing_pending WHERE channel = ? AND user_id = ?`, p.Channel, p.UserID).Scan(&mine); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pairing_pending WHERE channel = ?`, p.Channel).Scan(&all); err != nil {
			return err
		}
		if mine == 0 && all < chat.MaxPendingPairings {
			createdAt := p.CreatedAt
			if createdAt.IsZero() {
				createdAt = s.now()
			}
			if _, err := tx.ExecContext(ctx, `
INSERT INTO pairing_pending (channel, user_id, chat_id, display_name, code_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
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
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM pairing_pending WHERE channel = ? AND user_id = ?`, channel, userID)
		return err
	})
	if err != nil {
		return fmt.Errorf("cancel pairing: %w", err)
	}
	return nil
}

// Approve implements chat.PairingStore.
func (s *Store) Approve(ctx context.Context, code string) (chat.PairedUser, error) {
	if len(chat.NormalizePairingCode(code)) != chat.PairingCodeLen {
		return chat.PairedUser{}, chat.ErrNoPairing
	}
	var u chat.PairedUser
	found := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		var expires int64
		hash := chat.HashPairingCode(code)
		err := tx.QueryRowContext(ctx, `SELECT channel, user_id, display_name, expires_at FROM pairing_pending WHERE code_hash = ?`, hash).
			Scan(&u.Channel, &u.UserID, &u.DisplayName, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		// A used or expired code is gone either way.
		if _, err := tx.ExecContext(ctx, `DELETE FROM pairing_pending WHERE code_hash = ?`, hash); err != nil {
			return err
		}
		now := s.now()
		if expires <= ms(now) {
			return nil
		}
		u.ApprovedAt = fromMS(ms(now))
		if _, err := tx.ExecContext(ctx, `
INSERT INTO pairing_approved (channel, user_id, display_name, approved_at) VALUES (?, ?, ?, ?)
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
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM pairing_approved WHERE channel = ? AND user_id = ?`, channel, userID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	if n == 0 {
		return chat.ErrNotPaired
	}
	return nil
}

// Pairings implements chat.PairingStore.
func (s *Store) Pairings(ctx context.Context, channel string) ([]chat.PendingPairing, []chat.PairedUser, error) {
	var pending []chat.PendingPairing
	var approved []chat.PairedUser
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `
SELECT channel, user_id, chat_id, display_name, code_hash, created_at, expires_at FROM pairing_pending
WHERE expires_at > ? AND (? = '' OR channel = ?) ORDER BY created_at, user_id`, s.nowMS(), channel, channel)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p chat.PendingPairing
			var created, expires int64
			if err := rows.Scan(&p.Channel, &p.UserID, &p.ChatID, &p.DisplayName, &p.CodeHash, &created, &expires); err != nil {
				_ = rows.Close()
				return err
			}
			p.CreatedAt, p.ExpiresAt = fromMS(created), fromMS(expires)
			pending = append(pending, p)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `
SELECT channel, user_id, display_name, approved_at FROM pairing_approved
WHERE (? = '' OR channel = ?) ORDER BY approved_at, user_id`, channel, channel)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var u chat.PairedUser
			var at int64
			if err := rows.Scan(&u.Channel, &u.UserID, &u.DisplayName, &at); err != nil {
				return err
			}
			u.ApprovedAt = fromMS(at)
			approved = append(approved, u)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list pairings: %w", err)
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
