package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/sandboxz"
)

// The owner's chat API (the Web Console's routes):
//
//	GET  /api/sessions[?channel=telegram|web]  the rows of garra_list_chats
//	GET  /api/sessions/{id}/messages[?limit=N]  the last N messages, oldest first
//	POST /api/sessions/{id}/messages            {"text": "..."}: talk to the assistant
//
// The routes exist only when gateway.api_key (or GARRAIA_GATEWAY_API_KEY) is
// set, whether or not the MCP bridge is enabled, and sit behind the same
// layers as /mcp: per-IP rate limit, origin guard, Host guard and the bearer
// gate (401). They are the owner's: an orchestrator's valid token gets 403.
// The owner reads conversations unredacted (they are the owner's own); the
// redaction of garra_read_history is for what leaves the machine.
//
// POST speaks only to web conversations: {id} is "new" (a "web:<uuid>" is
// created and returned) or "web:<1-64 of A-Z a-z 0-9 _ ->", created on its
// first message (201) and continued afterwards (200). The user's message is
// stored first, then the model is asked with the conversation's recent
// history and the reply is stored and returned. A model failure answers 502
// with the garra.ask.v1 error kind; the user's message stays stored.

const (
	// chatAPIMaxBody bounds a POST body (413 beyond).
	chatAPIMaxBody = ask.MaxMessageBytes + 4<<10
	// chatAPIMaxLimit bounds ?limit= of GET messages.
	chatAPIMaxLimit = 1000
	// NewSessionID is the {id} that creates a web conversation.
	NewSessionID = "new"
)

var webChatID = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
})

// chatAPIRoutes are the chat API's patterns, registered once; each
// request finds its handler in the policy in force (404 without a key).
var chatAPIRoutes = []string{"GET /api/sessions", "GET /api/sessions/{id}/messages", "POST /api/sessions/{id}/messages"}

// sandboxzRoute serves the last sandbox verdicts to the owner.
const sandboxzRoute = "GET " + sandboxz.Path

// chatAPI builds this policy's chat API handlers (nil without a key).
func (g *policy) chatAPI() map[string]http.Handler {
	if g.cfg.Gateway.APIKey == "" {
		g.log.Info("chat API not mounted: /api/sessions needs a credential", "fix", "set gateway.api_key or GARRAIA_GATEWAY_API_KEY")
		return nil
	}
	return map[string]http.Handler{
		chatAPIRoutes[0]: g.ownerOnly(http.HandlerFunc(g.apiListSessions)),
		chatAPIRoutes[1]: g.ownerOnly(http.HandlerFunc(g.apiReadMessages)),
		chatAPIRoutes[2]: g.ownerOnly(http.HandlerFunc(g.apiPostMessage)),
	}
}

// ownerOnly is h behind the guards of the owner's HTTP routes: rate
// limit, origin, Host, a bearer, and that bearer being the gateway key.
// Nil without a key: the route answers 404.
func (g *policy) ownerOnly(h http.Handler) http.Handler {
	if g.cfg.Gateway.APIKey == "" {
		return nil
	}
	cs := g.callers
	if cs == nil { // the MCP bridge is off: the static credentials, quietly
		cs = callersFrom(g.cfg, g.getenv, slog.New(slog.DiscardHandler), callerDeps{})
	}
	refused := g.metrics.refused
	x := requireOwner(refused, h)
	x = requireBearer(cs, nil, refused, g.log, x)
	x = hostGuard(g.cfg.Gateway.AllowedHosts, refused, x)
	x = originGuard(refused, x)
	return g.limiter.middleware(refused, x)
}

// requireOwner refuses every caller but the gateway key's holder.
func requireOwner(onRefuse func(errkinds.Kind), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := callerFrom(r.Context()); !ok || !c.IsOwner() {
			onRefuse(errkinds.NotOwner)
			writeJSONError(w, http.StatusForbidden, "forbidden", "this route is the owner's: use the gateway key")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// chatRecorder is the writer behind Options.Store, when it has one (the
// SQLite store does; chat.Empty does not).
func (g *policy) chatRecorder() chat.Recorder {
	r, _ := g.store.(chat.Recorder)
	return r
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (g *policy) apiListSessions(w http.ResponseWriter, r *http.Request) {
	channel := r.URL.Query().Get("channel")
	if channel != "" && channel != chat.ChannelTelegram && channel != chat.ChannelWeb {
		writeJSONError(w, http.StatusBadRequest, string(errkinds.InvalidParams), "channel: must be telegram or web")
		return
	}
	convs, err := g.store.Conversations(r.Context(), channel)
	if err != nil {
		g.log.Error("conversation store", "error", err)
		writeJSONError(w, http.StatusServiceUnavailable, string(errkinds.Unavailable), "conversation store unavailable")
		return
	}
	if convs == nil {
		convs = []chat.Conversation{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": convs})
}

func (g *policy) apiReadMessages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	limit := g.cfg.Gateway.MCPHTTP.MaxHistoryMessages
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > chatAPIMaxLimit {
			writeJSONError(w, http.StatusBadRequest, string(errkinds.InvalidParams), "limit: must be in [1, "+strconv.Itoa(chatAPIMaxLimit)+"]")
			return
		}
		limit = n
	}
	msgs, err := g.store.History(r.Context(), id, limit)
	if errors.Is(err, chat.ErrNotFound) {
		writeJSONError(w, http.StatusNotFound, string(errkinds.NotFound), "no such conversation")
		return
	}
	if err != nil {
		g.log.Error("conversation store", "error", err)
		writeJSONError(w, http.StatusServiceUnavailable, string(errkinds.Unavailable), "conversation store unavailable")
		return
	}
	if msgs == nil {
		msgs = []chat.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"chat": id, "messages": msgs})
}

func (g *policy) apiPostMessage(w http.ResponseWriter, r *http.Request) {
	rec := g.chatRecorder()
	if rec == nil {
		writeJSONError(w, http.StatusServiceUnavailable, string(errkinds.Unavailable), "no conversation store is configured")
		return
	}
	id := r.PathValue("id")
	if id == NewSessionID {
		id = chat.ConvID(chat.ChannelWeb, uuid.NewString())
	}
	channel, chatID, ok := chat.SplitConvID(id)
	switch {
	case ok && channel != chat.ChannelWeb:
		writeJSONError(w, http.StatusBadRequest, string(errkinds.ChannelUnsupported), "only web conversations take messages here")
		return
	case !ok || !webChatID().MatchString(chatID):
		writeJSONError(w, http.StatusBadRequest, string(errkinds.InvalidParams), `id: "new" or "web:" followed by 1-64 of A-Z a-z 0-9 _ -`)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeJSONError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
		return
	}
	var body struct {
		Text *string `json:"text"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, chatAPIMaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSONError(w, http.StatusRequestEntityTooLarge, "too_large", "body too large")
			return
		}
		writeJSONError(w, http.StatusBadRequest, string(errkinds.InvalidParams), "body: want {\"text\": \"...\"}")
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		writeJSONError(w, http.StatusBadRequest, string(errkinds.InvalidParams), "body: want one JSON object")
		return
	}
	switch {
	case body.Text == nil || strings.TrimSpace(*body.Text) == "":
		writeJSONError(w, http.StatusBadRequest, string(errkinds.InvalidParams), "text: required and not empty")
		return
	case len(*body.Text) > ask.MaxMessageBytes:
		writeJSONError(w, http.StatusBadRequest, string(errkinds.InvalidParams), "text: at most "+strconv.Itoa(ask.MaxMessageBytes)+" bytes")
		return
	case !utf8.ValidString(*body.Text):
		writeJSONError(w, http.StatusBadRequest, string(errkinds.InvalidParams), "text: must be valid UTF-8")
		return
	}
	text := strings.TrimSpace(*body.Text)

	ctx := r.Context()
	_, err := g.store.History(ctx, id, 1)
	created := errors.Is(err, chat.ErrNotFound)
	if err != nil && !created {
		g.log.Error("conversation store", "error", err)
		writeJSONError(w, http.StatusServiceUnavailable, string(errkinds.Unavailable), "conversation store unavailable")
		return
	}
	if err := rec.Append(ctx, id, chat.ChannelWeb, chat.Message{Role: chat.RoleUser, Text: text, At: g.now().UTC()}); err != nil {
		g.log.Error("conversation store", "error", err)
		writeJSONError(w, http.StatusServiceUnavailable, string(errkinds.Unavailable), "conversation store unavailable")
		return
	}
	a := &chat.Assistant{Store: g.store, Recorder: rec, Asker: g.askCore, Now: g.now,
		Request: ask.Request{Provider: g.cfg.LLM.Provider, Model: g.cfg.LLM.Model}}
	reply, env, err := a.Reply(ctx, id, chat.ChannelWeb, text)
	if err != nil {
		g.log.Error("conversation store", "error", err)
		writeJSONError(w, http.StatusServiceUnavailable, string(errkinds.Unavailable), "conversation store unavailable")
		return
	}
	if !env.OK {
		// Neither the question nor the answer goes to the log.
		g.log.Warn("chat API: no answer from the model", "error_kind", env.Error.Kind)
		writeJSON(w, http.StatusBadGateway, map[string]any{"error": env.Error.Kind, "message": g.red.String(env.Error.Message), "chat": id})
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/sessions/"+id+"/messages")
	}
	writeJSON(w, status, map[string]any{"chat": id, "created": created, "reply": reply, "provider": env.Provider, "model": env.Model})
}
