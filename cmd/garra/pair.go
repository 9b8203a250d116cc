package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/chatruntime"
	"github.com/garraia/garra/internal/config"
)

func newPairCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pair",
		Short: "Admit or remove the people who may talk to the assistant on Telegram",
		Long: `A message from someone who is not in channels.telegram.allowlist gets a
one-time pairing code (valid for 1 hour) and no answer. They give you the code;
"garra pair approve CODE" admits them and their next message is answered.
Codes are stored only as digests: "garra pair list" never shows one.

These commands work on <data_dir>/garra.db and may run while the gateway is up.`,
		Example: `  garra pair list
  garra pair approve K7QX2MPA
  garra pair revoke 123456789`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newPairListCommand(o), newPairApproveCommand(o), newPairRevokeCommand(o))
	return cmd
}

// withStore loads the config, opens the store and runs fn.
func (o *rootOptions) withStore(cmd *cobra.Command, fn func(context.Context, *config.Config, chatruntime.Store) error) error {
	cfg, _, err := o.loadConfig()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := chatruntime.OpenStore(ctx, cfg, o.getenv)
	if err != nil {
		return err
	}
	err = fn(ctx, cfg, s)
	if cerr := s.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close chat store: %w", cerr)
	}
	return err
}

type pairListing struct {
	Channel   string       `json:"channel"`
	Allowlist []string     `json:"allowlist"`
	Approved  []pairedRow  `json:"approved"`
	Pending   []pendingRow `json:"pending"`
}

type pairedRow struct {
	UserID     string    `json:"user_id"`
	Name       string    `json:"name,omitempty"`
	ApprovedAt time.Time `json:"approved_at"`
}

type pendingRow struct {
	UserID    string    `json:"user_id"`
	Name      string    `json:"name,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

func newPairListCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show the allowlist, the approved users and the pending pairings (never the codes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withStore(cmd, func(ctx context.Context, cfg *config.Config, s chatruntime.Store) error {
				pending, approved, err := s.Pairings(ctx, chat.ChannelTelegram)
				if err != nil {
					return err
				}
				l := pairListing{Channel: chat.ChannelTelegram, Allowlist: cfg.Channels.Telegram.Allowlist,
					Approved: []pairedRow{}, Pending: []pendingRow{}}
				if l.Allowlist == nil {
					l.Allowlist = []string{}
				}
				for _, u := range approved {
					l.Approved = append(l.Approved, pairedRow{u.UserID, u.DisplayName, u.ApprovedAt})
				}
				for _, p := range pending {
					l.Pending = append(l.Pending, pendingRow{p.UserID, p.DisplayName, p.ExpiresAt})
				}
				out := cmd.OutOrStdout()
				if asJSON {
					b, _ := json.Marshal([]pairListing{l})
					_, err := fmt.Fprintln(out, string(b))
					return err
				}
				_, err = io.WriteString(out, formatListing(l, time.Now()))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the listing as JSON")
	return cmd
}

// formatListing renders the human listing; pair list writes it in one call
// so that a failed write is one error.
func formatListing(l pairListing, now time.Time) string {
	var w strings.Builder
	fmt.Fprintf(&w, "%s\n", l.Channel)
	allow := "(none)"
	if len(l.Allowlist) > 0 {
		allow = strings.Join(l.Allowlist, ", ")
	}
	fmt.Fprintf(&w, "  allowlist (config): %s\n", allow)
	fmt.Fprintf(&w, "  approved: %d\n", len(l.Approved))
	for _, u := range l.Approved {
		fmt.Fprintf(&w, "    %-14s %-28s approved %s\n", u.UserID, orDash(u.Name), u.ApprovedAt.Local().Format(time.RFC3339))
	}
	fmt.Fprintf(&w, "  pending: %d\n", len(l.Pending))
	for _, p := range l.Pending {
		fmt.Fprintf(&w, "    %-14s %-28s expires in %s\n", p.UserID, orDash(p.Name), p.ExpiresAt.Sub(now).Round(time.Minute))
	}
	return w.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newPairApproveCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "approve CODE",
		Short: "Admit the user who received CODE (one-time, valid for 1 hour)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("pair approve: exactly one CODE is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withStore(cmd, func(ctx context.Context, _ *config.Config, s chatruntime.Store) error {
				u, err := s.Approve(ctx, args[0])
				if errors.Is(err, chat.ErrNoPairing) {
					return &exitError{code: 1, msg: "pair approve: " + err.Error()}
				}
				if err != nil {
					return err
				}
				name := ""
				if u.DisplayName != "" {
					name = " (" + u.DisplayName + ")"
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "approved %s user %s%s: their next message is answered\n", u.Channel, u.UserID, name)
				return err
			})
		},
	}
}

func newPairRevokeCommand(o *rootOptions) *cobra.Command {
	var channel string
	cmd := &cobra.Command{
		Use:   "revoke USER",
		Short: "Remove an approved user (by user id, as `garra pair list` shows it)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
				return usageError("pair revoke: exactly one USER id is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if channel != chat.ChannelTelegram {
				return usageError("pair revoke: --channel: only telegram has pairing")
			}
			user := strings.TrimSpace(args[0])
			return o.withStore(cmd, func(ctx context.Context, cfg *config.Config, s chatruntime.Store) error {
				err := s.Revoke(ctx, channel, user)
				inConfig := slices.Contains(cfg.Channels.Telegram.Allowlist, user)
				switch {
				case errors.Is(err, chat.ErrNotPaired) && inConfig:
					return &exitError{code: 1, msg: fmt.Sprintf("pair revoke: user %s is in channels.telegram.allowlist: remove it from the config", user)}
				case errors.Is(err, chat.ErrNotPaired):
					return &exitError{code: 1, msg: fmt.Sprintf("pair revoke: user %s is not approved", user)}
				case err != nil:
					return err
				}
				msg := fmt.Sprintf("revoked %s user %s\n", channel, user)
				if inConfig {
					msg += fmt.Sprintf("note: user %s is still admitted by channels.telegram.allowlist\n", user)
				}
				_, err = io.WriteString(cmd.OutOrStdout(), msg)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&channel, "channel", chat.ChannelTelegram, "channel of the user")
	return cmd
}
