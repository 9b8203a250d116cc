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

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/mcphttp"
)

// gatewayClient POSTs JSON-RPC to a gateway's /mcp the way curl does, at
// the gateway Service's in-cluster URL (the gateway accepts loopback and its
// Service names as Host), through the suite's serviceDialer.
type gatewayClient struct{ mcphttp.Client }

func newGatewayClient(base string, hc *http.Client) *gatewayClient {
	return &gatewayClient{mcphttp.Client{Base: base, HTTP: hc}}
}

// toolNames is the sorted tools/list the holder of token sees.
func (g *gatewayClient) toolNames(ctx context.Context, token string) ([]string, error) {
	res, err := g.Result(ctx, token, "tools/list", map[string]any{})
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

// agentBash has the agent of the caller holding token run one bash
// command, as the double scripts it, and returns what the model was sent
// back: every model request (the second holds the command's output).
func agentBash(ctx context.Context, gw *gatewayClient, token, prompt, command string) llmdouble.RequestsResponse {
	GinkgoHelper()
	Expect(double.script(ctx,
		toolCall("bash", map[string]string{"command": command}),
		llmdouble.ScriptStep{Text: "done"},
	)).To(Succeed())
	env, raw, isErr, err := gw.Agent(ctx, token, prompt)
	Expect(err).NotTo(HaveOccurred())
	Expect(isErr).To(BeFalse(), raw)
	Expect(env.ToolCalls).To(HaveLen(1), raw)
	Expect(env.ToolCalls[0].Success).To(BeTrue(), raw)
	reqs, err := double.requests(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(reqs.Requests).To(HaveLen(2))
	return reqs
}
