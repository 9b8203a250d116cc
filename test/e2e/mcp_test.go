//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

// gatewayClient POSTs JSON-RPC to a gateway's /mcp the way curl does, at
// the gateway Service's in-cluster URL (the gateway accepts loopback and its
// Service names as Host), through the suite's serviceDialer.
type gatewayClient struct {
	base string
	http *http.Client
}

func newGatewayClient(base string, hc *http.Client) *gatewayClient {
	return &gatewayClient{base: base, http: hc}
}

// post sends one request and returns the HTTP status and body.
func (g *gatewayClient) post(ctx context.Context, token, method string, params any) (int, []byte, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/mcp", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := g.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// rpc is post that insists on a JSON-RPC result.
func (g *gatewayClient) rpc(ctx context.Context, token, method string, params any) (json.RawMessage, error) {
	code, raw, err := g.post(ctx, token, method, params)
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

// toolNames is the sorted tools/list the holder of token sees.
func (g *gatewayClient) toolNames(ctx context.Context, token string) ([]string, error) {
	res, err := g.rpc(ctx, token, "tools/list", map[string]any{})
	if err != nil {
		return nil, err
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return nil, err
	}
	names := []string{}
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names, nil
}

// envelope is the part of garra.agent.v1 (and of a refusal's garra.mcp.v1)
// the suite reads.
type envelope struct {
	Schema    string `json:"schema"`
	OK        bool   `json:"ok"`
	Answer    string `json:"answer"`
	SessionID string `json:"session_id"`
	ToolCalls []struct {
		Name    string `json:"name"`
		Success bool   `json:"success"`
		Summary string `json:"summary"`
	} `json:"tool_calls"`
	Error *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// agent calls garra_agent and returns the envelope, its raw text and isError.
func (g *gatewayClient) agent(ctx context.Context, token, message string) (envelope, string, bool, error) {
	res, err := g.rpc(ctx, token, "tools/call", map[string]any{"name": "garra_agent", "arguments": map[string]any{"message": message}})
	if err != nil {
		return envelope{}, "", false, err
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 || r.Content[0].Type != "text" {
		return envelope{}, "", false, fmt.Errorf("garra_agent result %s: %v", res, err)
	}
	var env envelope
	if err := json.Unmarshal([]byte(r.Content[0].Text), &env); err != nil {
		return envelope{}, "", false, fmt.Errorf("envelope %s: %w", r.Content[0].Text, err)
	}
	return env, r.Content[0].Text, r.IsError, nil
}

// doubleClient drives the in-cluster LLM double through its control API.
type doubleClient struct {
	base string
	http *http.Client
}

func (d *doubleClient) script(ctx context.Context, steps ...llmdouble.ScriptStep) error {
	body, err := json.Marshal(llmdouble.ScriptRequest{Steps: steps})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, d.base+llmdouble.AdminPrefix+"script", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		raw, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("script: HTTP %d %s", resp.StatusCode, raw)
	}
	return nil
}

func (d *doubleClient) requests(ctx context.Context) (llmdouble.RequestsResponse, error) {
	var out llmdouble.RequestsResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+llmdouble.AdminPrefix+"requests", nil)
	if err != nil {
		return out, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out, err
}

// toolCall is a scripted step asking for one tool call.
func toolCall(name string, args any) llmdouble.ScriptStep {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return llmdouble.ScriptStep{ToolCalls: []llmdouble.ScriptCall{{Name: name, Args: string(b)}}}
}
