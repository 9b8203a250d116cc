package llmdouble

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// This file holds the two wire formats: reading the convenience fields out
// of a request, and writing success and error bodies shaped like the real
// APIs' so the official SDKs decode them.

func fillConvenience(r *Recorded) {
	b := r.Body
	r.Model, _ = b["model"].(string)
	if n, ok := b["max_tokens"].(float64); ok {
		r.MaxTokens = int(n)
	} else if n, ok := b["max_completion_tokens"].(float64); ok {
		r.MaxTokens = int(n)
	}
	for _, t := range asSlice(b["tools"]) {
		tool, _ := t.(map[string]any)
		name, _ := tool["name"].(string) // Anthropic
		if fn, ok := tool["function"].(map[string]any); ok {
			name, _ = fn["name"].(string) // OpenAI
		}
		r.ToolNames = append(r.ToolNames, name)
	}
	msgs := asSlice(b["messages"])
	if r.Protocol == ProtocolAnthropic {
		r.System = textOf(b["system"])
	} else {
		var sys []string
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			if role := mm["role"]; role == "system" || role == "developer" {
				sys = append(sys, textOf(mm["content"]))
			}
		}
		r.System = strings.Join(sys, "\n")
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		mm, _ := msgs[i].(map[string]any)
		if mm["role"] != "user" {
			continue
		}
		if t := textOf(mm["content"]); t != "" {
			r.LastUserText = t
			break
		}
	}
}

// textOf reads message content that is either a string or an array of
// parts/blocks, joining the text ones.
func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			pm, _ := p.(map[string]any)
			if pm["type"] == "text" {
				if t, ok := pm["text"].(string); ok {
					parts = append(parts, t)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// estimateTokens is a rough, deterministic usage figure.
func estimateTokens(n int) int { return n/4 + 1 }

func openAIReply(rec Recorded, st Step, seq int) map[string]any {
	msg := map[string]any{
		"role":        "assistant",
		"content":     nil,
		"refusal":     nil,
		"annotations": []any{},
	}
	if st.Text != "" || len(st.ToolCalls) == 0 {
		msg["content"] = st.Text
	}
	finish := "stop"
	if len(st.ToolCalls) > 0 {
		finish = "tool_calls"
		calls := make([]any, 0, len(st.ToolCalls))
		for i, c := range st.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_dbl%d_%d", seq, i)
			}
			calls = append(calls, map[string]any{
				"id":   id,
				"type": "function",
				"function": map[string]any{
					"name":      c.Name,
					"arguments": c.Args,
				},
			})
		}
		msg["tool_calls"] = calls
	}
	in, out := estimateTokens(len(rec.RawBody)), estimateTokens(len(st.Text)+len(fmt.Sprint(st.ToolCalls)))
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-dbl%d", seq),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   rec.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       msg,
			"logprobs":      nil,
			"finish_reason": finish,
		}},
		"usage": map[string]any{
			"prompt_tokens":     in,
			"completion_tokens": out,
			"total_tokens":      in + out,
			"prompt_tokens_details": map[string]any{
				"cached_tokens": 0, "audio_tokens": 0,
			},
			"completion_tokens_details": map[string]any{
				"reasoning_tokens": 0, "audio_tokens": 0,
				"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
			},
		},
		"service_tier":       "default",
		"system_fingerprint": nil,
	}
}

func anthropicReply(rec Recorded, st Step, seq int) map[string]any {
	content := []any{}
	if st.Text != "" || len(st.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": st.Text})
	}
	stop := "end_turn"
	for i, c := range st.ToolCalls {
		stop = "tool_use"
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_dbl%d_%d", seq, i)
		}
		var input any = map[string]any{}
		if strings.TrimSpace(c.Args) != "" {
			if json.Valid([]byte(c.Args)) {
				input = json.RawMessage(c.Args)
			} else {
				input = c.Args // let a client see what a broken model sends
			}
		}
		content = append(content, map[string]any{
			"type":  "tool_use",
			"id":    id,
			"name":  c.Name,
			"input": input,
		})
	}
	in, out := estimateTokens(len(rec.RawBody)), estimateTokens(len(st.Text)+len(fmt.Sprint(st.ToolCalls)))
	return map[string]any{
		"id":            fmt.Sprintf("msg_dbl%d", seq),
		"type":          "message",
		"role":          "assistant",
		"model":         rec.Model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                in,
			"output_tokens":               out,
			"cache_creation_input_tokens": 0,
			"cache_read_input_tokens":     0,
			"service_tier":                "standard",
		},
	}
}

// writeError answers with the provider's own error envelope.
func writeError(w http.ResponseWriter, p Protocol, status int, msg string, seq int) {
	if p == ProtocolAnthropic {
		reqID := fmt.Sprintf("req_dbl%d", seq)
		w.Header().Set("request-id", reqID)
		writeJSON(w, status, map[string]any{
			"type":       "error",
			"error":      map[string]any{"type": anthropicErrorType(status), "message": msg},
			"request_id": reqID,
		})
		return
	}
	typ, code := openAIErrorType(status)
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code},
	})
}

func openAIErrorType(status int) (typ string, code any) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "invalid_request_error", "unsupported_country_region_territory"
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", nil
	}
	return "invalid_request_error", nil
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
