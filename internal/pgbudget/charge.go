package pgbudget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/garraia/garra/internal/pgmigrate"
	"github.com/garraia/garra/internal/quota"
)

// A call's whole charge in one round trip: garra_quota_charge locks the
// rows of the parts it is given in one fixed order (the run slots', the
// window's, the token day's), so that two charges never wait on each
// other in a cycle and each part is serialised with every other user of
// its row exactly as when charged alone (garra_budget_lock is a budget's
// ensure-and-lock). Being volatile functions, each of their statements
// sees what the previous holder of a lock committed. It checks every part
// before it charges any, so a refused call holds nothing; the token refund
// it is handed (settlements of earlier calls not yet written) is applied
// either way, as a settlement is never refused. It answers an empty
// string when admitted, else the part that refused ('slot', 'tokens',
// 'window') and, for the window, the ms until its oldest take leaves it.
var chargeMigration = pgmigrate.Migration{Version: 3, Name: "quota charge", SQL: `
CREATE FUNCTION garra_budget_lock(p_name TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM garra_budgets WHERE name = p_name FOR UPDATE;
	IF NOT FOUND THEN
		INSERT INTO garra_budgets (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
		PERFORM 1 FROM garra_budgets WHERE name = p_name FOR UPDATE;
	END IF;
END
$$;
CREATE FUNCTION garra_quota_charge(
	p_slots TEXT, p_holder TEXT, p_lease_ms BIGINT, p_slots_limit INTEGER,
	p_tokens TEXT, p_n BIGINT, p_tokens_limit BIGINT, p_refund BIGINT,
	p_window TEXT, p_window_ms BIGINT, p_window_limit INTEGER,
	p_now BIGINT, p_day DATE,
	OUT refused TEXT, OUT wait_ms BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
	t_now BIGINT := COALESCE(p_now, (extract(epoch FROM now()) * 1000)::bigint);
	t_day DATE := COALESCE(p_day, (now() AT TIME ZONE 'UTC')::date);
	t_used BIGINT;
BEGIN
	refused := '';
	wait_ms := 0;
	IF p_slots IS NOT NULL THEN
		PERFORM garra_budget_lock(p_slots);
		DELETE FROM garra_quota_slots WHERE name = p_slots AND expires <= t_now;
	END IF;
	IF p_window IS NOT NULL THEN
		PERFORM garra_budget_lock(p_window);
		DELETE FROM garra_budget_spends WHERE name = p_window AND at <= t_now - p_window_ms;
	END IF;
	IF p_tokens IS NOT NULL THEN
		SELECT used INTO t_used FROM garra_quota_tokens WHERE name = p_tokens AND day = t_day FOR UPDATE;
		IF NOT FOUND THEN
			-- A new day's row: the days before yesterday go.
			INSERT INTO garra_quota_tokens (name, day, used) VALUES (p_tokens, t_day, 0) ON CONFLICT (name, day) DO NOTHING;
			DELETE FROM garra_quota_tokens WHERE name = p_tokens AND day < t_day - 1;
			SELECT used INTO t_used FROM garra_quota_tokens WHERE name = p_tokens AND day = t_day FOR UPDATE;
		END IF;
		t_used := GREATEST(t_used + p_refund, 0);
	END IF;

	IF p_slots IS NOT NULL AND (SELECT count(*) FROM garra_quota_slots WHERE name = p_slots) >= p_slots_limit THEN
		refused := 'slot';
	ELSIF p_tokens IS NOT NULL AND p_n > 0 AND t_used + p_n > p_tokens_limit THEN
		refused := 'tokens';
	ELSIF p_window IS NOT NULL AND (SELECT COALESCE(sum(n), 0) FROM garra_budget_spends WHERE name = p_window) + 1 > p_window_limit THEN
		refused := 'window';
		SELECT COALESCE(min(at) + p_window_ms - t_now, 0) INTO wait_ms FROM garra_budget_spends WHERE name = p_window;
	END IF;

	IF refused = '' THEN
		IF p_slots IS NOT NULL THEN
			INSERT INTO garra_quota_slots (holder, name, expires) VALUES (p_holder, p_slots, t_now + p_lease_ms);
		END IF;
		IF p_window IS NOT NULL THEN
			INSERT INTO garra_budget_spends (name, at, n) VALUES (p_window, t_now, 1);
		END IF;
		t_used := t_used + p_n;
	END IF;
	IF p_tokens IS NOT NULL AND (p_refund <> 0 OR (refused = '' AND p_n > 0)) THEN
		UPDATE garra_quota_tokens SET used = t_used WHERE name = p_tokens AND day = t_day;
	END IF;
END
$$;
`}

const charge = `SELECT refused, wait_ms FROM garra_quota_charge($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// Store is a quota.Joint for the counters it made.
var _ quota.Joint = (*Store)(nil)

// Charge charges c's slot, tokens and take in one statement, all or none,
// refusing in quota.Sequential's order. A part that is not this store's
// (a counter kept in memory) makes it charge part by part instead. A
// charge the database cannot decide is refused (logged): the quotas fail
// closed, naming the first part the call would have charged.
func (s *Store) Charge(c quota.Charge) (func(), quota.Part, time.Duration) {
	sl, okS := c.Slots.(*Slots)
	tk, okT := c.Tokens.(*Tokens)
	if c.N <= 0 {
		c.Tokens, tk = nil, nil
	}
	w, okW := c.Window.(*Budget)
	if (c.Slots != nil && (!okS || sl.s != s)) || (c.Tokens != nil && (!okT || tk.s != s)) || (c.Window != nil && (!okW || w.s != s)) {
		return quota.Sequential{}.Charge(c)
	}
	var (
		slotName, holder, tokName, winName *string
		lease, winMS, n, tokLimit, refund  int64
		slotLimit, winLimit                int
		nowMS                              *int64
		day                                *string
	)
	if sl != nil {
		var b [16]byte
		_, _ = rand.Read(b[:]) // never fails
		h := hex.EncodeToString(b[:])
		slotName, holder, lease, slotLimit = &sl.name, &h, sl.lease.Milliseconds(), sl.Limit()
	}
	if tk != nil {
		if c.N > tk.Limit() {
			return nil, quota.RefusedTokens, 0
		}
		tokName, n, tokLimit, refund = &tk.name, c.N, tk.Limit(), tk.takeOwed()
	}
	if sl == nil && tk == nil && w == nil {
		return nil, quota.Admitted, 0
	}
	if w != nil {
		winName, winMS, winLimit = &w.name, w.window.Milliseconds(), w.Limit()
	}
	if s.now != nil {
		t := s.now()
		ms, d := t.UnixMilli(), t.UTC().Format(time.DateOnly)
		nowMS, day = &ms, &d
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	var refused string
	var waitMS int64
	err := s.pool.QueryRow(ctx, charge, slotName, holder, lease, slotLimit, tokName, n, tokLimit, refund,
		winName, winMS, winLimit, nowMS, day).Scan(&refused, &waitMS)
	if err != nil {
		s.log.Error("quota refused: the shared quota store did not answer", "err", err)
		if refund != 0 {
			s.log.Error("quota: a token settlement was not recorded; the reservation stands", "quota", tk.name, "tokens", -refund)
		}
		switch {
		case sl != nil:
			return nil, quota.RefusedSlot, 0
		case tk != nil:
			return nil, quota.RefusedTokens, 0
		default:
			return nil, quota.RefusedWindow, 0
		}
	}
	switch refused {
	case "slot":
		return nil, quota.RefusedSlot, 0
	case "tokens":
		return nil, quota.RefusedTokens, 0
	case "window":
		return nil, quota.RefusedWindow, time.Duration(max(waitMS, 1)) * time.Millisecond
	}
	if sl == nil {
		return nil, quota.Admitted, 0
	}
	var once sync.Once
	h := *holder
	return func() { once.Do(func() { sl.release(h) }) }, quota.Admitted, 0
}
