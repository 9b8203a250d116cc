package llmdouble

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The control API lets a test that cannot hold the Server value (the double
// runs in a pod of a test cluster, the test on the host) script it and read
// what it received, over the same listener:
//
//	PUT /_double/script    body ScriptRequest: replace the script, forget the requests
//	GET /_double/requests  the RequestsResponse so far
//	GET /_double/healthz   200, for a readiness probe
//
// It is off unless EnableAdmin is called; the standalone command turns it on
// with -admin.

// AdminPrefix is the path prefix of the control API.
const AdminPrefix = "/_double/"

// ScriptRequest is the body of PUT /_double/script. No steps means echo mode.
type ScriptRequest struct {
	Steps []ScriptStep `json:"steps"`
}

// ScriptStep is Step on the wire.
type ScriptStep struct {
	Text         string       `json:"text,omitempty"`
	ToolCalls    []ScriptCall `json:"tool_calls,omitempty"`
	Status       int          `json:"status,omitempty"`
	ErrorMessage string       `json:"error_message,omitempty"`
	DelayMS      int          `json:"delay_ms,omitempty"`
}

// ScriptCall is Call on the wire; Args is the arguments as a JSON string.
type ScriptCall struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	Args string `json:"args,omitempty"`
}

// RequestsResponse is the body of GET /_double/requests.
type RequestsResponse struct {
	// Remaining is how many scripted steps have not been replayed.
	Remaining int            `json:"remaining"`
	Requests  []RecordedWire `json:"requests"`
}

// RecordedWire is Recorded on the wire, without the headers except the
// credential (the test checks which key the caller sent).
type RecordedWire struct {
	Protocol     Protocol `json:"protocol"`
	Path         string   `json:"path"`
	Model        string   `json:"model"`
	APIKey       string   `json:"api_key"`
	System       string   `json:"system"`
	ToolNames    []string `json:"tool_names"`
	LastUserText string   `json:"last_user_text"`
	RawBody      string   `json:"raw_body"`
	Exhausted    bool     `json:"exhausted"`
}

// EnableAdmin turns the control API on.
func (s *Server) EnableAdmin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admin = true
}

func (s *Server) adminEnabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admin
}

// SetScript replaces the script and forgets every recorded request; no
// steps means echo mode.
func (s *Server) SetScript(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append([]Step(nil), steps...)
	s.next = 0
	s.echo = len(steps) == 0
	s.reqs = nil
}

func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == AdminPrefix+"script" && r.Method == http.MethodPut:
		var req ScriptRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, 4<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, "script: "+err.Error(), http.StatusBadRequest)
			return
		}
		steps := make([]Step, 0, len(req.Steps))
		for i, st := range req.Steps {
			if st.DelayMS < 0 {
				http.Error(w, fmt.Sprintf("script: steps[%d].delay_ms is negative", i), http.StatusBadRequest)
				return
			}
			step := Step{Text: st.Text, Status: st.Status, ErrorMessage: st.ErrorMessage, Delay: time.Duration(st.DelayMS) * time.Millisecond}
			for j, c := range st.ToolCalls {
				if c.Name == "" {
					http.Error(w, fmt.Sprintf("script: steps[%d].tool_calls[%d].name is empty", i, j), http.StatusBadRequest)
					return
				}
				step.ToolCalls = append(step.ToolCalls, Call(c))
			}
			steps = append(steps, step)
		}
		s.SetScript(steps...)
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == AdminPrefix+"requests" && r.Method == http.MethodGet:
		out := RequestsResponse{Remaining: s.Remaining(), Requests: []RecordedWire{}}
		for _, rec := range s.Requests() {
			out.Requests = append(out.Requests, RecordedWire{
				Protocol: rec.Protocol, Path: rec.Path, Model: rec.Model, APIKey: rec.APIKey(),
				System: rec.System, ToolNames: rec.ToolNames, LastUserText: rec.LastUserText,
				RawBody: string(rec.RawBody), Exhausted: rec.Exhausted,
			})
		}
		writeJSON(w, http.StatusOK, out)
	case r.URL.Path == AdminPrefix+"healthz" && r.Method == http.MethodGet:
		_, _ = io.WriteString(w, "ok\n")
	default:
		http.Error(w, fmt.Sprintf("no control route for %s %s", r.Method, r.URL.Path), http.StatusNotFound)
	}
}
