// Package unbuffered marks server-sent event streams so that a reverse
// proxy in front of Garra (nginx, and ingress controllers built on it)
// passes each event on as it is written instead of holding the response
// in its buffer: with buffering, a client would see a listen stream's
// notifications, or a call's progress, only when the stream ends.
package unbuffered

import (
	"mime"
	"net/http"
	"strings"
)

// Header is the response header nginx reads to turn off buffering for one
// response.
const Header = "X-Accel-Buffering"

// SSE wraps next so that every text/event-stream response it sends carries
// "X-Accel-Buffering: no". Other responses are left as they are: buffering
// a JSON answer costs nothing.
func SSE(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&writer{ResponseWriter: w}, r)
	})
}

// writer decides when the headers are about to go out, which is the last
// moment the Content-Type is known and the header can still be added.
type writer struct {
	http.ResponseWriter
	sent bool
}

func (w *writer) mark() {
	if w.sent {
		return
	}
	w.sent = true
	if isEventStream(w.Header().Get("Content-Type")) {
		w.Header().Set(Header, "no")
	}
}

func (w *writer) WriteHeader(code int) {
	if code >= http.StatusOK { // 1xx responses leave the headers open
		w.mark()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(p []byte) (int, error) {
	w.mark()
	return w.ResponseWriter.Write(p)
}

// FlushError sends the headers too, so it must mark them first; a
// ResponseController prefers it to Unwrap.
func (w *writer) FlushError() error {
	w.mark()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's other
// abilities (deadlines, hijacking).
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
	}
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}
