package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/filewatch"
)

// Reload outcomes, the result label of garra_config_reload_total.
const (
	ReloadApplied   = "applied"
	ReloadRejected  = "rejected"
	ReloadUnchanged = "unchanged"
)

// Response headers of GET /readyz.
const (
	HeaderConfigHash     = "X-Garra-Config-Hash"
	HeaderConfigRejected = "X-Garra-Config-Rejected"
)

// reloadState is the outcome of the last reload. mu serialises reloads
// and is held for all of one, however long its reads take; /readyz reads
// only the published copy, so it never waits on a reload.
type reloadState struct {
	mu         sync.Mutex
	ok         bool
	problems   []string
	rejectedFP string // fingerprint of the last rejected files, logged once
	published  atomic.Pointer[reloadOutcome]
}

// reloadOutcome is what /readyz reports of the last reload.
type reloadOutcome struct {
	ok       bool
	problems []string
}

func (s *reloadState) set(ok bool, problems []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ok, s.problems = ok, problems
	if ok {
		s.rejectedFP = ""
	}
	s.publish()
}

// publish makes the outcome under mu the one /readyz reports.
func (s *reloadState) publish() {
	s.published.Store(&reloadOutcome{ok: s.ok, problems: slices.Clone(s.problems)})
}

func (s *reloadState) get() (bool, []string) {
	o := s.published.Load()
	if o == nil {
		return true, nil
	}
	return o.ok, slices.Clone(o.problems)
}

// configHash is how the gateway and the operator name a config: the
// SHA-256 of the file's exact bytes.
func configHash(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// tokenFiles are the secret files cfg names, read into its policy.
func tokenFiles(cfg *config.Config) []string {
	var out []string
	if cfg.Gateway.APIKeyFile != "" {
		out = append(out, cfg.Gateway.APIKeyFile)
	}
	for _, o := range cfg.Gateway.MCPHTTP.Orchestrators {
		if o.KeyFile != "" {
			out = append(out, o.KeyFile)
		}
		if o.Sandbox != nil && o.Sandbox.TokenFile != "" {
			out = append(out, o.Sandbox.TokenFile)
		}
		// A credential rotated, emptied or removed in its file applies
		// without a config change.
		for _, c := range o.Credentials {
			if c.File != "" {
				out = append(out, c.File)
			}
		}
	}
	if e := cfg.Gateway.Egress; e.Listen != "" {
		for _, f := range []string{e.CACertFile, e.CAKeyFile} {
			if f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// fingerprint identifies what a policy was built from: the config's hash
// and the content of every token file it names, as read reads them (nil:
// the disk). A rotated token changes it without changing the config. Only
// a digest is kept, never a token.
func fingerprint(hash string, cfg *config.Config, read config.SecretReader) string {
	h := sha256.New()
	_, _ = h.Write([]byte(hash))
	for _, f := range tokenFiles(cfg) {
		_, _ = fmt.Fprintf(h, "\x00%s\x00", f)
		if lines, err := read.Lines(f); err == nil {
			_, _ = h.Write([]byte(strings.Join(lines, "\n")))
		} else {
			_, _ = h.Write([]byte("\x01unreadable"))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Reload re-reads the config file and the token files it names (from the
// watched objects instead, while a PolicyWatch is live). A config
// that parses and passes config.Check (warnings aside) replaces the policy
// for new requests; one that does not is not applied: the last good one
// keeps serving, each problem is logged once and /readyz reports it.
// Without a config file (Options.ConfigPath) it does nothing. It returns
// one of ReloadApplied, ReloadRejected, ReloadUnchanged.
func (g *Gateway) Reload() string {
	if g.configPath == "" {
		return ReloadUnchanged
	}
	g.reload.mu.Lock()
	defer g.reload.mu.Unlock()
	result, problems := g.reloadLocked()
	g.metrics.reloads.WithLabelValues(result).Inc()
	switch result {
	case ReloadApplied:
		g.reload.ok, g.reload.problems, g.reload.rejectedFP = true, nil, ""
	case ReloadRejected:
		g.reload.ok, g.reload.problems = false, problems
	}
	g.reload.publish()
	return result
}

// reloadLocked does Reload's work under reload.mu.
func (g *Gateway) reloadLocked() (string, []string) {
	cur := g.cur.Load()
	src := g.watched.get()
	read := src.reader()
	data, err := src.readConfig(g.configPath)
	if err != nil {
		return g.reject("read:"+err.Error(), []string{"config: " + err.Error()})
	}
	hash := configHash(data)
	cfg, err := config.FromBytes(data, g.getenv)
	if err != nil {
		return g.reject(hash, []string{"config " + g.configPath + ": " + err.Error()})
	}
	fp := fingerprint(hash, cfg, read)
	if fp == cur.fingerprint {
		// Back to what is serving: an earlier rejection no longer applies.
		g.reload.ok, g.reload.problems, g.reload.rejectedFP = true, nil, ""
		return ReloadUnchanged, nil
	}
	if fp == g.reload.rejectedFP {
		return ReloadUnchanged, g.reload.problems
	}
	var problems, degraded []string
	for _, p := range cfg.CheckSecrets(g.getenv, read) {
		switch p.Severity() {
		case config.SeverityWarning:
		case config.SeverityDisabled:
			degraded = append(degraded, cur.red.String(p.String()))
		default:
			problems = append(problems, cur.red.String(p.String()))
		}
	}
	if len(problems) > 0 {
		return g.reject(fp, problems)
	}
	// After Check, which reads the file itself and would take the key
	// filled in for the api_key the file must not also set.
	if err := cfg.ReadAPIKeyFileWith(g.getenv, read); err != nil {
		return g.reject(fp, []string{err.Error()})
	}
	keepProcessSettings(g, cur.cfg, cfg)
	p, err := g.newPolicy(cfg, hash, fp, read)
	if err != nil {
		return g.reject(fp, []string{err.Error()})
	}
	m := cfg.Gateway.MCPHTTP
	g.askBudget.SetLimit(m.AskBudgetPerMinute)
	g.agentBudget.SetLimit(m.AgentBudgetPerMinute)
	g.limiter.SetLimit(max(1, cfg.Gateway.RateLimit.RequestsPerMinute))
	g.cur.Store(p)
	g.verify.again()
	g.metrics.loaded(hash)
	g.log.Info("config reloaded", "hash", hash, "orchestrators", len(m.Orchestrators), "source", src.source())
	// Applied around them, failing closed: one orchestrator's missing token
	// disables that orchestrator, not everybody's onboarding.
	for _, d := range degraded {
		g.log.Warn("config reloaded with a part disabled", "severity", config.SeverityDisabled, "problem", d)
	}
	return ReloadApplied, nil
}

// reject records a rejected config, logging its problems the first time
// this content is seen (a periodic re-read of the same file stays quiet).
func (g *Gateway) reject(fp string, problems []string) (string, []string) {
	if fp == g.reload.rejectedFP {
		return ReloadUnchanged, g.reload.problems
	}
	g.reload.rejectedFP = fp
	for _, p := range problems {
		g.log.Error("config not applied; the last good one keeps serving", "severity", config.SeverityError, "problem", p, "fix", "run garra config check on the file")
	}
	return ReloadRejected, problems
}

// keepProcessSettings copies into next what only a new process can
// change (the listener, the data directory, the audit file, the Telegram
// connection), warning when next asked for something else: those are
// built once at start.
func keepProcessSettings(g *Gateway, cur, next *config.Config) {
	warn := func(field string) {
		g.log.Warn("config change needs a restart to apply; the running value is kept", "field", field)
	}
	if next.Gateway.Listen != cur.Gateway.Listen {
		warn("gateway.listen")
		next.Gateway.Listen = cur.Gateway.Listen
	}
	if next.Gateway.Egress.Listen != cur.Gateway.Egress.Listen {
		warn("gateway.egress.listen")
		next.Gateway.Egress.Listen = cur.Gateway.Egress.Listen
	}
	if next.DataDir != cur.DataDir {
		warn("data_dir")
		next.DataDir = cur.DataDir
	}
	if next.Audit != cur.Audit {
		warn("audit")
		next.Audit = cur.Audit
	}
	t, ct := &next.Channels.Telegram, cur.Channels.Telegram
	if t.BotTokenEnv != ct.BotTokenEnv || t.APIBaseURL != ct.APIBaseURL {
		warn("channels.telegram")
		t.BotTokenEnv, t.APIBaseURL = ct.BotTokenEnv, ct.APIBaseURL
	}
}

// watchPaths are the files a reload depends on: the config and every
// token file the policy in force names. A path whose directory does not
// exist is left out (it cannot be watched; the periodic re-read covers it).
func (g *Gateway) watchPaths() []string {
	paths := append([]string{g.configPath}, tokenFiles(g.cur.Load().cfg)...)
	return slices.DeleteFunc(paths, func(p string) bool {
		_, err := os.Stat(filepath.Dir(p))
		return err != nil
	})
}

// watch reloads on every change of the watched files until ctx ends. When
// a reload changes which token files the config names, the watch starts
// again on the new set.
func (g *Gateway) watch(ctx context.Context) {
	for ctx.Err() == nil {
		paths := g.watchPaths()
		wctx, cancel := context.WithCancel(ctx)
		// Each watch looks once as soon as it is set up: a change made
		// since the files were read (at start, or while the previous watch
		// was closing) would otherwise wait for the next event.
		o := filewatch.Options{Paths: paths, Resync: g.resync, Logger: g.log, Immediate: true}
		_ = filewatch.Run(wctx, o, func() {
			g.keptRelease()
			g.Reload()
			if !slices.Equal(g.watchPaths(), paths) {
				cancel()
			}
		})
		cancel()
	}
}

// readyz answers 200 when the gateway can serve (its store answers and
// it is not draining), 503 otherwise, with the loaded config's hash and
// the last reload's rejection in headers; ?verbose=1 adds a JSON body for
// the owner's bearer alone (it names files and every problem), anyone
// else gets the terse answer.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	p := g.cur.Load()
	ok, problems := g.reload.get()
	if p.hash != "" {
		w.Header().Set(HeaderConfigHash, p.hash)
	}
	if !ok && len(problems) > 0 {
		w.Header().Set(HeaderConfigRejected, oneLine(problems[0]))
	}
	status, text := http.StatusOK, "ok"
	g.flightMu.Lock()
	draining := g.draining
	g.flightMu.Unlock()
	switch {
	case draining:
		status, text = http.StatusServiceUnavailable, "draining"
	case g.handingOver.Load():
		status, text = http.StatusServiceUnavailable, "handing over"
	default:
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := g.store.Conversations(ctx, ""); err != nil {
			status, text = http.StatusServiceUnavailable, "conversation store unavailable"
		}
	}
	if r.URL.Query().Get("verbose") == "1" && isOwnerBearer(p.cfg.Gateway.APIKey, r) {
		if problems == nil {
			problems = []string{}
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, status, map[string]any{
			"status": text, "config_hash": p.hash,
			"reload": map[string]any{"ok": ok, "problems": problems},
		})
		return
	}
	if status != http.StatusOK {
		http.Error(w, text, status)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// isOwnerBearer reports whether r carries key as its bearer token,
// comparing digests so that the time taken says nothing of the key.
func isOwnerBearer(key string, r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(key))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// oneLine makes a problem fit in a header value.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
