// Package audit is the append-only record of what MCP callers did: one JSON
// line per tool call, resource read and refusal, written by both servers
// (`garra mcp-server` on stdio, `garra gateway` on HTTP) to a size-rotated
// file. It exists so that an operator can answer "who called what, when,
// and how did it end" after the fact, without the record itself becoming a
// leak: a line never carries a token, a prompt, an answer, a tool's output
// or a conversation id in clear. Destinations are written as a keyed hash
// (HMAC-SHA256 under a random key kept next to the file), so that the same
// conversation always maps to the same pseudonym on this machine and to
// nothing anywhere else.
//
// The audit is best effort by design: a file that cannot be written never
// fails a call. The first failure is logged once (to stderr, through the
// caller's logger) and the server keeps serving; a later success logs the
// recovery.
package audit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/garraia/garra/internal/errkinds"
)

// Surfaces: which server wrote the line.
const (
	SurfaceStdio = "stdio"
	SurfaceHTTP  = "http"
	// SurfaceEgress is the gateway's egress proxy: a sandbox's request
	// out, with the credential it was given, if any.
	SurfaceEgress = "egress"
)

// Outcomes of an audited event.
const (
	OutcomeOK            = "ok"             // the call or read succeeded
	OutcomeError         = "error"          // it ran and failed (provider_error, timeout)
	OutcomeRefused       = "refused"        // policy said no (error.kind says why)
	OutcomeInvalidParams = "invalid_params" // the arguments were rejected (JSON-RPC -32602)
	OutcomeNotFound      = "not_found"      // no such tool, resource or conversation
	OutcomeCancelled     = "cancelled"      // its caller cancelled it before it finished
)

// Outcomes lists every outcome a line may carry.
var Outcomes = []string{OutcomeOK, OutcomeError, OutcomeRefused, OutcomeInvalidParams, OutcomeNotFound, OutcomeCancelled}

// Defaults of the `audit:` config section.
const (
	FileName        = "audit.jsonl"
	KeyFileName     = "audit.key"
	DefaultMaxBytes = 10 << 20
	DefaultMaxFiles = 5
	keySize         = 32
)

// Record is one event. Every field but Target is written as given, so it
// must not hold caller-chosen text: names of tools and resources, stable
// kinds, the provider and model an allowlist accepted. Target is the
// caller-chosen destination (a conversation id, an unknown URI or tool
// name) and is only ever written as its pseudonym.
type Record struct {
	Time     time.Time // zero = now
	Surface  string    // SurfaceStdio | SurfaceHTTP
	Caller   string    // "owner", an orchestrator's name, or the stdio client
	Tool     string    // the tool called, or ""
	Resource string    // the resource read (a fixed URI or a URI template), or ""
	Target   string    // written as Pseudonym(Target)
	Outcome  string
	Kind     errkinds.Kind // the stable error kind, or ""
	Provider string
	Model    string
	Latency  time.Duration
	// DryRun marks a call that was checked and not carried out (a
	// garra_send_message dry run), so an "ok" is not read as a send.
	DryRun bool
	// KindOnly writes a failure as its kind alone: no provider, model or
	// latency_ms (a failed garra_ask over HTTP).
	KindOnly bool
	// Auth is how the caller proved who it is (token, serviceAccount,
	// oidc), or "".
	Auth string
	// Identity is what it proved: a ServiceAccount's user name as given,
	// or, when IdentityPersonal (an OIDC subject, which may name a
	// person), only its pseudonym.
	Identity         string
	IdentityPersonal bool
	// Egress describes a request through the egress proxy; nil for
	// other events.
	Egress *Egress
}

// Egress is one request a sandbox made through the gateway's egress
// proxy. Host is an allowlisted name (a refused host goes in Target, as
// its pseudonym); PathPrefix is the configured prefix that matched, not
// the path asked for; the credential's value is never here.
type Egress struct {
	Credential string `json:"credential,omitempty"`
	Host       string `json:"host,omitempty"`
	Method     string `json:"method,omitempty"`
	PathPrefix string `json:"path_prefix,omitempty"`
	Status     int    `json:"status,omitempty"`
	// BytesUp and BytesDown are the body bytes sent to the upstream and
	// returned from it (both ways of a tunnel).
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// line is the wire form of a Record, in the documented field order.
type line struct {
	Timestamp string     `json:"timestamp"`
	Surface   string     `json:"surface"`
	Caller    string     `json:"caller"`
	Auth      string     `json:"auth,omitempty"`
	Identity  string     `json:"identity,omitempty"`
	Tool      string     `json:"tool,omitempty"`
	Resource  string     `json:"resource,omitempty"`
	Target    string     `json:"target,omitempty"`
	Outcome   string     `json:"outcome"`
	DryRun    bool       `json:"dry_run,omitempty"`
	Error     *lineError `json:"error,omitempty"`
	Provider  string     `json:"provider,omitempty"`
	Model     string     `json:"model,omitempty"`
	LatencyMS *int64     `json:"latency_ms,omitempty"`
	Egress    *Egress    `json:"egress,omitempty"`
}

type lineError struct {
	Kind errkinds.Kind `json:"kind"`
}

// Options configures a Log.
type Options struct {
	// Path of the live file; rotated copies are Path.1 … Path.MaxFiles.
	Path string
	// MaxBytes is the size at which the file rotates (< 1 = DefaultMaxBytes).
	MaxBytes int64
	// MaxFiles is how many rotated copies are kept (< 1 = DefaultMaxFiles).
	MaxFiles int
	// Logger receives the one error of a broken audit file (stderr).
	Logger *slog.Logger
	Now    func() time.Time
	// Rand is the source of the pseudonym key (nil = crypto/rand).
	Rand io.Reader
}

// Log appends audit lines. It is safe for concurrent use: one mutex, and
// each line goes out in one write call on a file opened O_APPEND. A nil
// *Log records nothing, so servers run without an audit file unchanged.
type Log struct {
	mu     sync.Mutex
	o      Options
	f      *os.File
	size   int64
	key    []byte
	broken bool
}

// New returns a Log writing to o.Path. It never fails: the directory, the
// key and the file are made on first use, and a problem there is reported
// through o.Logger, once, without failing any call.
func New(o Options) *Log {
	if o.MaxBytes < 1 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFiles < 1 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Log{o: o}
}

// Path is the live file's path.
func (l *Log) Path() string {
	if l == nil {
		return ""
	}
	return l.o.Path
}

// Record appends one line. Errors are reported, never returned.
func (l *Log) Record(r Record) {
	if l == nil {
		return
	}
	if r.Time.IsZero() {
		r.Time = l.o.Now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.write(r); err != nil {
		if l.f != nil {
			_ = l.f.Close()
			l.f = nil
		}
		if !l.broken {
			l.broken = true
			l.o.Logger.Error("audit file not written; calls are served without it until it recovers",
				"path", l.o.Path, "error", err)
		}
		return
	}
	if l.broken {
		l.broken = false
		l.o.Logger.Info("audit file recovered", "path", l.o.Path)
	}
}

func (l *Log) write(r Record) error {
	if err := l.open(); err != nil {
		return err
	}
	ln := line{
		Timestamp: r.Time.UTC().Format(time.RFC3339Nano),
		Surface:   r.Surface,
		Caller:    r.Caller,
		Tool:      r.Tool,
		Resource:  r.Resource,
		Outcome:   r.Outcome,
		DryRun:    r.DryRun,
		Provider:  r.Provider,
		Model:     r.Model,
		Egress:    r.Egress,
	}
	if r.KindOnly {
		ln.Provider, ln.Model = "", ""
	} else {
		ms := r.Latency.Milliseconds()
		ln.LatencyMS = &ms
	}
	if r.Target != "" {
		ln.Target = pseudonym(l.key, r.Target)
	}
	ln.Auth, ln.Identity = r.Auth, r.Identity
	if r.IdentityPersonal && r.Identity != "" {
		ln.Identity = pseudonym(l.key, r.Identity)
	}
	if r.Kind != "" {
		ln.Error = &lineError{Kind: r.Kind}
	}
	b, err := json.Marshal(ln)
	if err != nil {
		return fmt.Errorf("encode audit line: %w", err)
	}
	b = append(b, '\n')
	if l.size > 0 && l.size+int64(len(b)) > l.o.MaxBytes {
		if err := l.rotate(); err != nil {
			return err
		}
		if err := l.open(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("write %s: %w", l.o.Path, err)
	}
	return nil
}

// open makes the directory, loads (or creates) the key and opens the file,
// as needed.
func (l *Log) open() error {
	if l.f != nil {
		return nil
	}
	if l.o.Path == "" {
		return errors.New("no audit path")
	}
	dir := filepath.Dir(l.o.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create audit directory: %w", err)
	}
	if l.key == nil {
		key, err := loadKey(filepath.Join(dir, KeyFileName), l.o.Rand)
		if err != nil {
			return err
		}
		l.key = key
	}
	f, err := os.OpenFile(l.o.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open audit file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("stat audit file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		// A file made by hand (or by an older build) is narrowed to 0600.
		if err := f.Chmod(0o600); err != nil {
			_ = f.Close()
			return fmt.Errorf("chmod audit file: %w", err)
		}
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// rotate shifts Path.i to Path.i+1, Path to Path.1, and drops what falls
// beyond MaxFiles.
func (l *Log) rotate() error {
	if err := l.f.Close(); err != nil {
		l.f = nil
		return fmt.Errorf("close audit file: %w", err)
	}
	l.f, l.size = nil, 0
	p := l.o.Path
	// Copies beyond MaxFiles (left by a larger max_files) go first.
	for i := l.o.MaxFiles + 1; ; i++ {
		if err := os.Remove(p + "." + strconv.Itoa(i)); err != nil {
			break
		}
	}
	for i := l.o.MaxFiles - 1; i >= 1; i-- {
		from := p + "." + strconv.Itoa(i)
		if err := os.Rename(from, p+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotate audit file: %w", err)
		}
	}
	if err := os.Rename(p, p+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotate audit file: %w", err)
	}
	return nil
}

// Close closes the file; a later Record reopens it.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Pseudonym is how Target values appear in the file: the first 16 hex
// digits of HMAC-SHA256(key, s). It returns "" while the key is not
// loaded (nothing has been written yet) or on a nil Log.
func (l *Log) Pseudonym(s string) string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.key == nil {
		return ""
	}
	return pseudonym(l.key, s)
}

func pseudonym(key []byte, s string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))[:16]
}
