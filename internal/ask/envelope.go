package ask

import (
	"encoding/json"

	"github.com/garraia/garra/internal/errkinds"
)

// Schema is the envelope's schema tag.
const Schema = "garra.ask.v1"

// Envelope is the garra.ask.v1 result. On success it carries answer,
// provider, model and latency_ms; on failure only error. Marshal it with
// encoding/json: the field set and order are the spec's.
type Envelope struct {
	OK        bool
	Answer    string
	Provider  string
	Model     string
	LatencyMS int64
	Error     *Error
}

// Error is the failure half of an envelope. Message is already redacted.
type Error struct {
	Kind    errkinds.Kind `json:"kind"`
	Message string        `json:"message"`
	// Quota and RetryAfterSecs are an over_quota refusal's: which of the
	// caller's quotas is spent and when to try again.
	Quota          string `json:"quota,omitempty"`
	RetryAfterSecs int    `json:"retry_after_secs,omitempty"`
}

// MarshalJSON writes the two shapes the spec shows, field for field.
func (e Envelope) MarshalJSON() ([]byte, error) {
	if e.OK {
		return json.Marshal(struct {
			Schema    string `json:"schema"`
			OK        bool   `json:"ok"`
			Answer    string `json:"answer"`
			Provider  string `json:"provider"`
			Model     string `json:"model"`
			LatencyMS int64  `json:"latency_ms"`
		}{Schema, true, e.Answer, e.Provider, e.Model, e.LatencyMS})
	}
	errPart := e.Error
	if errPart == nil {
		errPart = &Error{Kind: errkinds.ProviderError, Message: "unknown failure"}
	}
	return json.Marshal(struct {
		Schema string `json:"schema"`
		OK     bool   `json:"ok"`
		Error  *Error `json:"error"`
	}{Schema, false, errPart})
}

// JSON is the envelope as a string, as it travels in a text content block.
func (e Envelope) JSON() string {
	b, err := json.Marshal(e)
	if err != nil { // cannot happen: only strings, bools and ints
		return `{"schema":"garra.ask.v1","ok":false,"error":{"kind":"provider_error","message":"encode envelope"}}`
	}
	return string(b)
}
