// Package mcphttp is a raw JSON-RPC client of a gateway's POST /mcp for
// tests that check the wire as curl sees it: one request per call, the
// caller's bearer token, no MCP session. Tests that want the MCP client
// library use go-sdk's instead.
package mcphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Client posts to Base+"/mcp" with HTTP (http.DefaultClient when nil).
type Client struct {
	Base string
	HTTP *http.Client
}

// Post sends one JSON-RPC request and returns the HTTP status and body.
func (c Client) Post(ctx context.Context, token, method string, params any) (int, []byte, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/mcp", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// Result is Post that insists on HTTP 200 and a JSON-RPC result.
func (c Client) Result(ctx context.Context, token, method string, params any) (json.RawMessage, error) {
	code, raw, err := c.Post(ctx, token, method, params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d %s", method, code, raw)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, fmt.Errorf("%s: not JSON-RPC: %w: %s", method, err, raw)
	}
	if msg.Error != nil {
		return nil, fmt.Errorf("%s: JSON-RPC error %d %s", method, msg.Error.Code, msg.Error.Message)
	}
	return msg.Result, nil
}

// ToolText calls tool and returns its one text content and isError.
func (c Client) ToolText(ctx context.Context, token, tool string, args any) (string, bool, error) {
	res, err := c.Result(ctx, token, "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", false, err
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", false, fmt.Errorf("%s result %s: %w", tool, res, err)
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		return "", false, fmt.Errorf("%s result %s: want one text content", tool, res)
	}
	return r.Content[0].Text, r.IsError, nil
}

// AgentEnvelope is garra.agent.v1 (and a refusal's garra.mcp.v1) as a test
// reads it; the pointers tell an absent field from a zero.
type AgentEnvelope struct {
	Schema    string `json:"schema"`
	OK        bool   `json:"ok"`
	Answer    string `json:"answer"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	LatencyMS *int64 `json:"latency_ms"`
	SessionID string `json:"session_id"`
	ToolCalls []struct {
		Name       string `json:"name"`
		DurationMS *int64 `json:"duration_ms"`
		Success    bool   `json:"success"`
		Summary    string `json:"summary"`
	} `json:"tool_calls"`
	Error *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// Agent calls garra_agent with message and returns the envelope, its raw
// text and the result's isError.
func (c Client) Agent(ctx context.Context, token, message string) (AgentEnvelope, string, bool, error) {
	text, isErr, err := c.ToolText(ctx, token, "garra_agent", map[string]any{"message": message})
	if err != nil {
		return AgentEnvelope{}, "", false, err
	}
	var env AgentEnvelope
	if err := json.Unmarshal([]byte(text), &env); err != nil {
		return AgentEnvelope{}, "", false, fmt.Errorf("envelope %s: %w", text, err)
	}
	return env, text, isErr, nil
}
