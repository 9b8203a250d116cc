// Package telegram is a Telegram Bot API double: a local HTTP server that
// speaks the real wire protocol (https://core.telegram.org/bots/api) for
// the methods Garra uses, so the real client library can be driven end to
// end without the internet:
//
//   - POST|GET /bot<token>/getMe
//   - getUpdates with offset (confirming every update below it), limit,
//     timeout (long polling) and allowed_updates; a second concurrent poll
//     terminates the first with 409 Conflict, as Telegram does
//   - sendMessage (chat_id, text), refusing unknown chats, empty and
//     over-long texts
//
// Parameters are read from the query string, form bodies
// (application/x-www-form-urlencoded, multipart/form-data) or JSON bodies.
// Every reply is {"ok":true,"result":...} or
// {"ok":false,"error_code":N,"description":"..."}; a wrong token gets 401
// Unauthorized and an unknown method 404 Not Found.
//
// It lives in non-test files so other packages' tests can use it.
package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// User is a Telegram user as the Bot API shows it.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is a Telegram chat.
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"` // private | group | supergroup | channel
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
}

// Message is a Telegram message.
type Message struct {
	MessageID int    `json:"message_id"`
	From      *User  `json:"from,omitempty"`
	Chat      Chat   `json:"chat"`
	Date      int64  `json:"date"`
	Text      string `json:"text,omitempty"`
}

// Update is one getUpdates item.
type Update struct {
	UpdateID      int      `json:"update_id"`
	Message       *Message `json:"message,omitempty"`
	EditedMessage *Message `json:"edited_message,omitempty"`
}

// Sent is one message the bot sent through sendMessage.
type Sent struct {
	ChatID    int64
	Text      string
	MessageID int
}

// Poll is one getUpdates request, as received.
type Poll struct {
	Offset  int
	Limit   int
	Timeout int
}

// Bot is the identity getMe returns.
var Bot = User{ID: 7000000001, IsBot: true, FirstName: "Garra Test", Username: "garra_test_bot"}

// FirstUpdateID is the id of the first update queued.
const FirstUpdateID = 800000

// MaxTextLen is sendMessage's limit in UTF-16 code units.
const MaxTextLen = 4096

// Server is a running double. Its methods are safe for concurrent use.
type Server struct {
	srv *http.Server
	url string

	mu        sync.Mutex
	token     string
	updates   []Update
	confirmed int // updates with a lower id were confirmed (and are dropped unless redelivered)
	nextID    int
	msgIDs    map[int64]int
	chats     map[int64]Chat
	sent      []Sent
	polls     []Poll
	calls     map[string]int
	sendFail  *apiError
	arrived   chan struct{} // closed and replaced when an update is queued
	pollGen   int
	terminate map[int]chan struct{}
	conflicts int
	closed    bool
	closing   chan struct{}
}

type apiError struct {
	code int
	desc string
}

// New starts a double on 127.0.0.1 with a free port, accepting token. t may
// be nil; when set, a failure to start is fatal and the server is closed in
// t.Cleanup.
func New(t testing.TB, token string) *Server {
	if t != nil {
		t.Helper()
	}
	s, err := NewListener("127.0.0.1:0", token)
	if err != nil {
		if t != nil {
			t.Fatalf("telegram double: %v", err)
		}
		panic("telegram double: " + err.Error())
	}
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// NewListener starts a double listening on addr.
func NewListener(addr, token string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		url:       "http://" + ln.Addr().String(),
		token:     token,
		nextID:    FirstUpdateID,
		confirmed: FirstUpdateID,
		msgIDs:    map[int64]int{},
		chats:     map[int64]Chat{},
		calls:     map[string]int{},
		arrived:   make(chan struct{}),
		terminate: map[int]chan struct{}{},
		closing:   make(chan struct{}),
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the API base to give as channels.telegram.api_base_url: requests
// go to URL()+"/bot<token>/<method>".
func (s *Server) URL() string { return s.url }

// Close stops the server and ends pending long polls. It is idempotent.
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
}

// SetToken changes the token the server accepts: the old one gets 401 from
// then on (a token revoked with @BotFather).
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// PrivateMessage queues a message from a user in their private chat with
// the bot (chat id = user id) and returns its update_id.
func (s *Server) PrivateMessage(from User, text string) int {
	return s.queue(Chat{ID: from.ID, Type: "private", Username: from.Username, FirstName: from.FirstName, LastName: from.LastName}, &from, text)
}

// GroupMessage queues a message from a user in a group and returns its
// update_id.
func (s *Server) GroupMessage(chatID int64, title string, from User, text string) int {
	return s.queue(Chat{ID: chatID, Type: "group", Title: title}, &from, text)
}

// QueueUpdate queues an arbitrary update (its update_id is assigned) and
// returns its id; the chat of its message, if any, becomes known.
func (s *Server) QueueUpdate(u Update) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []*Message{u.Message, u.EditedMessage} {
		if m != nil {
			s.chats[m.Chat.ID] = m.Chat
		}
	}
	return s.appendLocked(u)
}

func (s *Server) queue(c Chat, from *User, text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats[c.ID] = c
	s.msgIDs[c.ID]++
	m := &Message{MessageID: s.msgIDs[c.ID], From: from, Chat: c, Date: time.Now().Unix(), Text: text}
	return s.appendLocked(Update{Message: m})
}

func (s *Server) appendLocked(u Update) int {
	u.UpdateID = s.nextID
	s.nextID++
	s.updates = append(s.updates, u)
	close(s.arrived)
	s.arrived = make(chan struct{})
	return u.UpdateID
}

// KnowChat makes chatID a chat the bot can write to (a user who once
// started the bot).
func (s *Server) KnowChat(chatID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.chats[chatID]; !ok {
		s.chats[chatID] = Chat{ID: chatID, Type: "private", FirstName: "User"}
	}
}

// ForgetConfirmations makes every queued update deliverable again, as
// Telegram does when a bot stopped before its next getUpdates confirmed
// what it had processed: a client that does not resume from its own
// stored offset would process them twice.
func (s *Server) ForgetConfirmations() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.confirmed = FirstUpdateID
}

// FailSendMessage makes every sendMessage fail with code and description
// until called with code 0.
func (s *Server) FailSendMessage(code int, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == 0 {
		s.sendFail = nil
		return
	}
	s.sendFail = &apiError{code, description}
}

// Sent returns every message sent so far, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// SentTo returns the texts sent to chatID, in order.
func (s *Server) SentTo(chatID int64) []string {
	var out []string
	for _, m := range s.Sent() {
		if m.ChatID == chatID {
			out = append(out, m.Text)
		}
	}
	return out
}

// WaitSent waits until at least n messages were sent and returns them all.
func (s *Server) WaitSent(t testing.TB, n int, timeout time.Duration) []Sent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		sent := s.Sent()
		if len(sent) >= n {
			return sent
		}
		if time.Now().After(deadline) {
			t.Fatalf("telegram double: %d messages sent after %v, want %d: %+v", len(sent), timeout, n, sent)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Conflicts is how many getUpdates were ended by a newer one (409): two
// instances polling the same bot at once.
func (s *Server) Conflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}

// Polls returns every getUpdates request received, in order.
func (s *Server) Polls() []Poll {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Poll(nil), s.polls...)
}

// Calls is how many requests each method received (wrong tokens included).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" {
		writeErr(w, http.StatusNotFound, "Not Found")
		return
	}
	s.mu.Lock()
	s.calls[method]++
	valid := token == s.token && token != ""
	s.mu.Unlock()
	if !valid {
		writeErr(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		writeErr(w, http.StatusBadRequest, "Bad Request: unsupported HTTP method")
		return
	}
	params, err := readParams(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	switch strings.ToLower(method) {
	case "getme":
		writeOK(w, Bot)
	case "getupdates":
		s.getUpdates(w, r, params)
	case "sendmessage":
		s.sendMessage(w, params)
	default:
		writeErr(w, http.StatusNotFound, "Not Found")
	}
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, err1 := intParam(p, "offset", 0)
	limit, err2 := intParam(p, "limit", 100)
	timeout, err3 := intParam(p, "timeout", 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		writeErr(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	if limit < 1 || limit > 100 {
		limit = 100
	}
	if timeout < 0 {
		timeout = 0
	}
	allowed := map[string]bool{}
	if v := p["allowed_updates"]; v != "" && v != "null" {
		var list []string
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			writeErr(w, http.StatusBadRequest, "Bad Request: can't parse allowed_updates JSON array")
			return
		}
		for _, k := range list {
			allowed[k] = true
		}
	}

	s.mu.Lock()
	s.polls = append(s.polls, Poll{Offset: offset, Limit: limit, Timeout: timeout})
	// A newer poll terminates the one waiting.
	for gen, ch := range s.terminate {
		close(ch)
		delete(s.terminate, gen)
	}
	s.pollGen++
	gen := s.pollGen
	term := make(chan struct{})
	s.terminate[gen] = term
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.terminate, gen)
		s.mu.Unlock()
	}()

	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got := s.pendingLocked(offset, limit, allowed)
		arrived := s.arrived
		s.mu.Unlock()
		if len(got) > 0 || timeout == 0 {
			writeOK(w, got)
			return
		}
		select {
		case <-arrived:
		case <-deadline.C:
			writeOK(w, []Update{})
			return
		case <-term:
			s.mu.Lock()
			s.conflicts++
			s.mu.Unlock()
			writeErr(w, http.StatusConflict, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running")
			return
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// pendingLocked applies offset (confirming and dropping what is below it)
// and returns up to limit deliverable updates.
func (s *Server) pendingLocked(offset, limit int, allowed map[string]bool) []Update {
	switch {
	case offset > 0:
		s.confirmed = max(s.confirmed, offset)
	case offset < 0:
		// -N: the last N updates; everything before them is confirmed.
		if n := len(s.updates); n > 0 {
			from := max(0, n+offset)
			s.confirmed = max(s.confirmed, s.updates[from].UpdateID)
		}
	}
	out := []Update{}
	for _, u := range s.updates {
		if u.UpdateID < s.confirmed || len(out) == limit {
			continue
		}
		if len(allowed) > 0 && !(u.Message != nil && allowed["message"] || u.EditedMessage != nil && allowed["edited_message"]) {
			continue
		}
		out = append(out, u)
	}
	return out
}

func (s *Server) sendMessage(w http.ResponseWriter, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sendFail != nil {
		writeErr(w, s.sendFail.code, s.sendFail.desc)
		return
	}
	raw := p["chat_id"]
	if raw == "" {
		writeErr(w, http.StatusBadRequest, "Bad Request: chat_id is empty")
		return
	}
	chatID, err := strconv.ParseInt(raw, 10, 64)
	c, known := s.chats[chatID]
	if err != nil || !known {
		writeErr(w, http.StatusBadRequest, "Bad Request: chat not found")
		return
	}
	text := p["text"]
	switch {
	case strings.TrimSpace(text) == "":
		writeErr(w, http.StatusBadRequest, "Bad Request: message text is empty")
		return
	case len(utf16.Encode([]rune(text))) > MaxTextLen:
		writeErr(w, http.StatusBadRequest, "Bad Request: message is too long")
		return
	}
	s.msgIDs[chatID]++
	bot := Bot
	m := Message{MessageID: s.msgIDs[chatID], From: &bot, Chat: c, Date: time.Now().Unix(), Text: text}
	s.sent = append(s.sent, Sent{ChatID: chatID, Text: text, MessageID: m.MessageID})
	writeOK(w, m)
}

// maxRequestBody bounds what the double reads of a request, as Telegram's
// own servers do.
const maxRequestBody = 1 << 20

// readParams merges the query string with a form or JSON body.
func readParams(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range r.URL.Query() {
		out[k] = v[0]
	}
	if r.Body == nil || r.Method == http.MethodGet {
		return out, nil
	}
	r.Body = http.MaxBytesReader(nil, r.Body, maxRequestBody)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		if len(strings.TrimSpace(string(body))) == 0 {
			return out, nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, errors.New("can't parse JSON object")
		}
		for k, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				out[k] = s
			} else {
				out[k] = string(v)
			}
		}
	case "multipart/form-data":
		if err := r.ParseMultipartForm(maxRequestBody); err != nil { //nolint:gosec // G120: the body is a MaxBytesReader (readParams)
			return nil, err
		}
		for k, v := range r.MultipartForm.Value {
			out[k] = v[0]
		}
	default:
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, v := range r.PostForm {
			out[k] = v[0]
		}
	}
	return out, nil
}

func intParam(p map[string]string, key string, def int) (int, error) {
	v, ok := p[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s is not a number", key)
	}
	return n, nil
}

func writeOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeErr(w http.ResponseWriter, code int, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": code, "description": desc})
}
