package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/garraia/garra/internal/authn"
	"github.com/garraia/garra/internal/errkinds"
)

// writeRefusal records a refusal of the HTTP layers and writes its row of
// the error table: status, code and message as documented.
func writeRefusal(w http.ResponseWriter, onRefuse func(errkinds.Kind), row errkinds.HTTPStatus) {
	onRefuse(row.Audit)
	writeJSONError(w, row.Status, row.Error, row.Body)
}

// writeJSONError writes the gateway's standard error body.
func writeJSONError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "message": message})
}

// requireBearer is the authentication gate of /mcp and /api/*: the
// bearer token is resolved to its caller (authn), which goes into the
// request context. A refusal is a 401 with the standard body, naming the
// check that failed and never the token, and a WWW-Authenticate challenge
// that points a client at the protected resource metadata (RFC 9728)
// when metadata is not nil. An identity provider that could not be asked
// is a 503: the token may well be good.
func requireBearer(cs *callers, metadata func(*http.Request) string, onRefuse func(errkinds.Kind), log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A refused request's body is read (up to a bound) before the
		// answer: a client that sent it whole with Connection: close would
		// otherwise see the kernel reset the connection for unread data
		// and lose the 401.
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			drainRefused(r)
			w.Header().Set("WWW-Authenticate", bearerChallenge(metadata, r))
			writeRefusal(w, onRefuse, errkinds.RefuseMissingBearer)
			return
		}
		caller, err := cs.authenticate(r.Context(), token)
		if err != nil {
			drainRefused(r)
			kind := authn.KindOf(err)
			if kind != errkinds.Unauthorized {
				// The reason is for the operator; it never holds the
				// token. A wrong opaque token is not logged: a flood of
				// guesses must not flood the log.
				log.Info("request refused", "kind", kind, "reason", err.Error(), "remote", clientIP(r))
			}
			row := errkinds.AuthRefusal(kind)
			if row.Status == http.StatusServiceUnavailable {
				w.Header().Set("Retry-After", "5")
			} else {
				w.Header().Set("WWW-Authenticate", bearerChallenge(metadata, r)+`, error="invalid_token"`)
			}
			writeRefusal(w, onRefuse, row)
			return
		}
		next.ServeHTTP(w, r.WithContext(withCaller(r.Context(), caller)))
	})
}

// bearerChallenge is the WWW-Authenticate value of a refusal. It is built
// only when one is written: the metadata URL costs a few allocations that
// an admitted request would throw away.
func bearerChallenge(metadata func(*http.Request) string, r *http.Request) string {
	challenge := `Bearer realm="garra"`
	if metadata != nil {
		challenge += fmt.Sprintf(", resource_metadata=%q", metadata(r))
	}
	return challenge
}

// refusedBodyLimit bounds what drainRefused reads of a refused request:
// an MCP request is far smaller, and a larger body is not worth reading.
const refusedBodyLimit = 64 << 10

func drainRefused(r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, refusedBodyLimit))
}

// hostGuard is the anti-DNS-rebinding check: the Host must be a loopback
// authority or one of gateway.allowed_hosts (in-cluster, the Service
// names). It applies whatever interface the request arrived on.
func hostGuard(allowed []string, onRefuse func(errkinds.Kind), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !HostAllowed(r.Host, allowed) {
			writeRefusal(w, onRefuse, errkinds.RefuseHost)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// HostAllowed reports whether a Host header value is a loopback authority
// or, without its port, one of allowed (case-insensitive).
func HostAllowed(host string, allowed []string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if name == "localhost" {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	return name != "" && slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "."), name) })
}

// originGuard refuses cross-origin browser requests (a page that fires a
// POST at the loopback gateway). MCP clients send no Origin and pass.
func originGuard(onRefuse func(errkinds.Kind), next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeRefusal(w, onRefuse, errkinds.RefuseCrossOrigin)
	}))
	return cop.Handler(next)
}

// acceptGuard enforces the Streamable HTTP rule that a POST accepts both
// application/json and text/event-stream, with 406 as the spec says (the
// SDK alone would answer 400).
func acceptGuard(onRefuse func(errkinds.Kind), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !acceptsBoth(r.Header.Values("Accept")) {
			writeRefusal(w, onRefuse, errkinds.RefuseNotAcceptable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func acceptsBoth(values []string) bool {
	jsonOK, sseOK := acceptedTypes(values)
	return jsonOK && sseOK
}

// acceptedTypes reports whether Accept values admit application/json and
// text/event-stream.
func acceptedTypes(values []string) (jsonOK, sseOK bool) {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "*/*":
				jsonOK, sseOK = true, true
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			}
		}
	}
	return jsonOK, sseOK
}

// RateLimiter is a per-IP sliding-window limit.
type RateLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	now     func() time.Time
	budgets map[string]Counter
	lastGC  time.Time
	// newBudget makes a client's budget; nil = in memory. shared says
	// the budgets keep no state in this process (it is in the shared
	// store), so forgetting a client's handle loses nothing.
	newBudget BudgetFactory
	shared    bool
}

// NewRateLimiter allows limit requests per window from each client IP.
func NewRateLimiter(limit int, window time.Duration, now func() time.Time) *RateLimiter {
	if now == nil {
		now = time.Now
	}
	return &RateLimiter{limit: limit, window: window, now: now, budgets: map[string]Counter{}}
}

// SetLimit changes the per-IP limit of every client, keeping what each
// has spent in its window.
func (l *RateLimiter) SetLimit(limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = limit
	for _, b := range l.budgets {
		b.SetLimit(limit)
	}
}

// Allow takes one request from ip's budget.
func (l *RateLimiter) Allow(ip string) bool { return l.AllowN(ip, 1) }

// AllowN takes n requests from ip's budget, all or none.
func (l *RateLimiter) AllowN(ip string, n int) bool {
	l.mu.Lock()
	b, ok := l.budgets[ip]
	if !ok {
		if l.newBudget != nil {
			b = l.newBudget("ip:"+ip, l.limit, l.window)
		} else {
			b = NewBudget(l.limit, l.window, l.now)
		}
		l.budgets[ip] = b
	}
	if t := l.now(); t.Sub(l.lastGC) > l.window {
		// Forget idle clients so the map cannot grow without bound.
		for k, v := range l.budgets {
			if k != ip && (l.shared || v.Remaining() == v.Limit()) {
				delete(l.budgets, k)
			}
		}
		l.lastGC = t
	}
	l.mu.Unlock()
	return b.TakeN(n)
}

func clientIP(r *http.Request) string {
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return ip
}

func (l *RateLimiter) middleware(onRefuse func(errkinds.Kind), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ip := clientIP(r); !l.Allow(ip) {
			l.refuse(w, r, ip, onRefuse, errkinds.RefuseTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wait is how long until ip's window has room for one more request.
func (l *RateLimiter) wait(ip string) time.Duration {
	l.mu.Lock()
	b := l.budgets[ip]
	l.mu.Unlock()
	if w, ok := b.(interface{ Wait() time.Duration }); ok {
		return w.Wait()
	}
	return l.window
}

// tooManyRequests is the body of a 429 on POST /mcp: a JSON-RPC error
// response, so that an MCP client reads it as its call's error (with the
// limit and the wait) and not as a server speaking another protocol.
type tooManyRequests struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Kind           errkinds.Kind `json:"kind"`
			Limit          int           `json:"limit"`
			WindowSecs     int           `json:"window_secs"`
			RetryAfterSecs int           `json:"retry_after_secs"`
		} `json:"data"`
	} `json:"error"`
}

// refuse answers a request the per-IP limit refused: 429 with the limit in
// force and a Retry-After of when ip's window has room again. The message
// names both; on /mcp the body is a JSON-RPC error (with the request's id
// when it has one), elsewhere the gateway's standard body.
func (l *RateLimiter) refuse(w http.ResponseWriter, r *http.Request, ip string, onRefuse func(errkinds.Kind), row errkinds.HTTPStatus) {
	onRefuse(row.Audit)
	l.mu.Lock()
	limit, window := l.limit, l.window
	l.mu.Unlock()
	secs := max(1, int((l.wait(ip)+time.Second-1)/time.Second))
	per := "a minute"
	if window != time.Minute {
		per = "per " + window.String()
	}
	msg := fmt.Sprintf("%s: this gateway allows %d requests %s per client address (gateway.rate_limit.requests_per_minute); try again in %d s",
		row.Body, limit, per, secs)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	if r.URL.Path != "/mcp" {
		writeJSONError(w, row.Status, row.Error, msg)
		return
	}
	id := json.RawMessage("null")
	if r.Method == http.MethodPost && r.Body != nil {
		head, _ := io.ReadAll(io.LimitReader(r.Body, refusedBodyLimit))
		if req, ok := decodeRequest(head); ok && req.id.IsValid() {
			if b, err := json.Marshal(req.id.Raw()); err == nil {
				id = b
			}
		}
	}
	var body tooManyRequests
	body.JSONRPC, body.ID = "2.0", id
	body.Error.Code, body.Error.Message = errkinds.RPCTooManyRequests.Code, msg
	body.Error.Data.Kind, body.Error.Data.Limit = row.Audit, limit
	body.Error.Data.WindowSecs, body.Error.Data.RetryAfterSecs = int(window/time.Second), secs
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(row.Status)
	_ = json.NewEncoder(w).Encode(body)
}

// batchCharge makes a JSON-RPC batch count each of its requests against the
// per-IP limit (the outer limiter already took one for the POST).
//
// Why count rather than refuse: the go-sdk's stateless handler accepts a
// batch whenever the request's protocol version is before 2025-06-18, and
// a request without an MCP-Protocol-Version header counts as 2025-03-26,
// whose clients may legitimately batch. Left alone, one POST of N calls
// would cost one unit of the limit. Newer versions are refused by the SDK
// (400) after this charge.
//
// It runs behind the bearer gate, so only an authenticated body is read
// here; the SDK still applies its own size cap (413) to the same bytes.
func (l *RateLimiter) batchCharge(onRefuse func(errkinds.Kind), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		r, body := readBody(r)
		if ip := clientIP(r); body.batch > 1 && !l.AllowN(ip, body.batch-1) {
			l.refuse(w, r, ip, onRefuse, errkinds.RefuseBatchTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}
