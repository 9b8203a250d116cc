// Package llmdouble is a scripted stand-in for LLM providers. One local HTTP
// server speaks both wire families Garra uses, OpenAI-compatible chat
// completions and Anthropic messages, so the real SDK clients can be
// exercised end to end without reaching the internet. It records every
// request and replays a script of model turns; with no script it echoes the
// last user text, which suits benchmarks and conformance runs.
//
// It lives in non-test files so other packages' tests and a standalone
// command (cmd/llmdouble) can use it.
package llmdouble

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one tool call a scripted turn asks for.
type Call struct {
	// ID is the tool call id to return; "" generates a unique one.
	ID   string
	Name string
	// Args is the JSON arguments object; "" sends an empty argument
	// string (OpenAI) or {} (Anthropic).
	Args string
}

// Step is one scripted model turn.
type Step struct {
	Text      string
	ToolCalls []Call
	// Status, when non-zero and not 200, makes the reply an HTTP error
	// with a provider-shaped error body carrying ErrorMessage (or the
	// status text).
	Status       int
	ErrorMessage string
	// Malformed replies 200 with a JSON content type and a body that is
	// not valid JSON.
	Malformed bool
	// Delay is slept before replying; a cancelled request ends it early.
	Delay time.Duration
}

// ExhaustedText is the reply once the script has run out.
const ExhaustedText = "script exhausted"

// Protocol names the wire family of a recorded request.
type Protocol string

// Wire families the double speaks; ProtocolUnknown marks requests to any
// other path, answered 404.
const (
	ProtocolOpenAI    Protocol = "openai"
	ProtocolAnthropic Protocol = "anthropic"
	ProtocolUnknown   Protocol = ""
)

// Recorded is one request the double received.
type Recorded struct {
	Protocol Protocol
	Method   string
	Path     string
	Header   http.Header
	RawBody  []byte
	// Body is RawBody decoded, nil if it was not a JSON object.
	Body map[string]any

	// Convenience fields drawn from Body.
	Model     string
	MaxTokens int // max_tokens, or max_completion_tokens when that is sent
	System    string
	ToolNames []string
	// LastUserText is the text of the last user message that has any
	// (tool results are not user text).
	LastUserText string

	// Exhausted is set when the script had run out and the double
	// answered ExhaustedText.
	Exhausted bool
}

// APIKey is the credential the request carried: the Bearer token of
// Authorization, else the x-api-key header.
func (r Recorded) APIKey() string {
	if a := r.Header.Get("Authorization"); a != "" {
		return strings.TrimPrefix(a, "Bearer ")
	}
	return r.Header.Get("X-Api-Key")
}

// Server is a running double. Its methods are safe for concurrent use.
type Server struct {
	srv *http.Server
	url string

	mu      sync.Mutex
	steps   []Step
	next    int
	echo    bool
	reqs    []Recorded
	seq     int
	closed  bool
	closing chan struct{}
	active  sync.WaitGroup
	// admin serves the /_double/ control API (admin.go) when set.
	admin bool
}

// New starts a double on 127.0.0.1 with a free port. With no steps it runs in
// echo mode. t may be nil; when set, a failure to start is fatal and the
// server is closed in t.Cleanup.
func New(t testing.TB, steps ...Step) *Server {
	if t != nil {
		t.Helper()
	}
	s, err := NewListener("127.0.0.1:0", steps...)
	if err != nil {
		if t != nil {
			t.Fatalf("llmdouble: %v", err)
		}
		panic("llmdouble: " + err.Error())
	}
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// NewListener starts a double listening on addr (host:port), for running it
// as a standalone process. With no steps it runs in echo mode.
func NewListener(addr string, steps ...Step) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		steps:   append([]Step(nil), steps...),
		echo:    len(steps) == 0,
		closing: make(chan struct{}),
		url:     "http://" + ln.Addr().String(),
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the server's base, e.g. http://127.0.0.1:40123. The OpenAI base URL
// is URL()+"/v1"; the Anthropic base URL is URL() itself.
func (s *Server) URL() string { return s.url }

// OpenAIBaseURL is URL()+"/v1".
func (s *Server) OpenAIBaseURL() string { return s.url + "/v1" }

// AnthropicBaseURL is URL().
func (s *Server) AnthropicBaseURL() string { return s.url }

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.reqs...)
}

// Remaining is how many scripted steps have not been replayed yet.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.steps) {
		return 0
	}
	return len(s.steps) - s.next
}

// Close stops the server, ends pending delays and waits for in-flight
// handlers. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	_ = s.srv.Close()
	s.active.Wait()
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if s.adminEnabled() && strings.HasPrefix(r.URL.Path, AdminPrefix) {
		s.serveAdmin(w, r)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	s.active.Add(1)
	s.mu.Unlock()
	defer s.active.Done()

	raw, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	rec := Recorded{
		Protocol: protocolOf(r),
		Method:   r.Method,
		Path:     r.URL.Path,
		Header:   r.Header.Clone(),
		RawBody:  raw,
	}
	var body map[string]any
	if json.Unmarshal(raw, &body) == nil {
		rec.Body = body
		fillConvenience(&rec)
	}

	// Decide the reply and record the request atomically, so the
	// recorded order matches the script order.
	s.mu.Lock()
	var step Step
	consumed := false
	if rec.Protocol != ProtocolUnknown && rec.Body != nil {
		consumed = true
		switch {
		case s.echo:
			step = Step{Text: "echo: " + rec.LastUserText}
		case s.next < len(s.steps):
			step = s.steps[s.next]
			s.next++
		default:
			step = Step{Text: ExhaustedText}
			rec.Exhausted = true
		}
	}
	s.seq++
	seq := s.seq
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()

	switch {
	case rec.Protocol == ProtocolUnknown:
		writeError(w, ProtocolOpenAI, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path), seq)
		return
	case !consumed:
		writeError(w, rec.Protocol, http.StatusBadRequest, "request body is not a JSON object", seq)
		return
	}

	if step.Delay > 0 {
		timer := time.NewTimer(step.Delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
	switch {
	case step.Status != 0 && step.Status != http.StatusOK:
		msg := step.ErrorMessage
		if msg == "" {
			msg = http.StatusText(step.Status)
		}
		writeError(w, rec.Protocol, step.Status, msg, seq)
	case step.Malformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id":"broken","choices":[{"message":{"content":"trunc`)
	case rec.Protocol == ProtocolAnthropic:
		writeJSON(w, http.StatusOK, anthropicReply(rec, step, seq))
	default:
		writeJSON(w, http.StatusOK, openAIReply(rec, step, seq))
	}
}

// protocolOf routes by path suffix so any base URL prefix works (OpenRouter's
// is /api/v1, overrides may add their own).
func protocolOf(r *http.Request) Protocol {
	if r.Method != http.MethodPost {
		return ProtocolUnknown
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return ProtocolOpenAI
	case strings.HasSuffix(p, "/v1/messages"):
		return ProtocolAnthropic
	}
	return ProtocolUnknown
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
