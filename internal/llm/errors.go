package llm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxErrorBody bounds how much of a remote error body lands in a
// ProviderError message: enough to diagnose, not enough to flood logs.
const maxErrorBody = 500

// remoteError is what an SDK's API error type tells us, if anything.
type remoteError struct {
	status  int
	message string // the provider's own error.message
	body    string // the raw error body, when the SDK kept it
}

// failure turns whatever an SDK call returned into this package's error
// contract: context errors stay detectable with errors.Is, everything else
// becomes a *ProviderError. res is the last HTTP response the SDK saw (nil
// when none was received); remote is filled from the SDK's API error type.
func failure(ctx context.Context, kind Kind, err error, res *http.Response, remote remoteError) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", kind, ctxErr)
	}
	pe := &ProviderError{Kind: kind, StatusCode: remote.status, Err: err}
	if pe.StatusCode == 0 && res != nil {
		pe.StatusCode = res.StatusCode
	}
	body := remote.body
	if body == "" && res != nil && res.StatusCode >= 400 {
		// Both SDKs put the error body back into res.Body after reading
		// it; this covers bodies their error decoders did not accept.
		body = readBody(res)
	}
	switch {
	case strings.TrimSpace(remote.message) != "":
		pe.Message = strings.TrimSpace(remote.message)
	case strings.TrimSpace(body) != "":
		pe.Message = truncate(strings.TrimSpace(body), maxErrorBody)
	case err != nil:
		pe.Message = err.Error()
	default:
		pe.Message = "request failed"
	}
	return pe
}

func readBody(res *http.Response) string {
	if res == nil || res.Body == nil {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, 4*maxErrorBody))
	if err != nil {
		return ""
	}
	return string(b)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// badResponse reports a 2xx reply that decoded but cannot be used.
func badResponse(kind Kind, res *http.Response, format string, args ...any) error {
	pe := &ProviderError{Kind: kind, Message: fmt.Sprintf(format, args...)}
	if res != nil {
		pe.StatusCode = res.StatusCode
	}
	return pe
}
