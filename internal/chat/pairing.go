package chat

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
)

// Pairing defaults.
const (
	// PairingCodeLen is the length of a pairing code.
	PairingCodeLen = 8
	// PairingTTL is how long a pairing code can be approved.
	PairingTTL = time.Hour
	// MaxPendingPairings bounds the unexpired codes per channel, so
	// strangers cannot grow the database without bound.
	MaxPendingPairings = 100
)

// pairingAlphabet has 32 symbols without the look-alikes 0/O and 1/I, so a
// code read aloud or retyped survives. 8 symbols carry 40 bits.
const pairingAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// NewPairingCode returns a fresh random pairing code.
func NewPairingCode() string {
	b := make([]byte, PairingCodeLen)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	for i := range b {
		b[i] = pairingAlphabet[b[i]%byte(len(pairingAlphabet))] // 256 is a multiple of 32: unbiased
	}
	return string(b)
}

// NormalizePairingCode is how a typed code is compared: upper case, without
// spaces or dashes.
func NormalizePairingCode(code string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '\t' {
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(code)))
}

// HashPairingCode is the digest stored for a code: the store never holds a
// usable code, and `garra pair list` cannot show one.
func HashPairingCode(code string) string {
	sum := sha256.Sum256([]byte("garra-pairing-v1:" + NormalizePairingCode(code)))
	return hex.EncodeToString(sum[:])
}

// PairStatuses is what Store.Pairing reports from a store's pairings and
// the config's allowlists: per channel, how many users may talk to the
// assistant (the allowlist plus approved users, counted once) and who is
// waiting for approval. Codes are never part of it. Telegram is always
// reported.
func PairStatuses(allow map[string][]string, pending []PendingPairing, approved []PairedUser) []PairStatus {
	channels := []string{ChannelTelegram}
	for ch := range allow {
		channels = append(channels, ch)
	}
	for _, p := range pending {
		channels = append(channels, p.Channel)
	}
	for _, u := range approved {
		channels = append(channels, u.Channel)
	}
	slices.Sort(channels)
	channels = slices.Compact(channels)
	out := make([]PairStatus, 0, len(channels))
	for _, ch := range channels {
		admitted := map[string]bool{}
		for _, id := range allow[ch] {
			admitted[id] = true
		}
		for _, u := range approved {
			if u.Channel == ch {
				admitted[u.UserID] = true
			}
		}
		st := PairStatus{Channel: ch, AllowlistSize: len(admitted)}
		for _, p := range pending {
			if p.Channel == ch {
				st.PendingPairings++
				name := p.DisplayName
				if name == "" {
					name = "user " + p.UserID
				}
				st.Pending = append(st.Pending, name)
			}
		}
		out = append(out, st)
	}
	return out
}
