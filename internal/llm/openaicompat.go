package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openAICompat speaks OpenAI chat completions, which OpenRouter and Ollama
// implement too; the three kinds differ only in endpoint, key and the name
// of the token cap.
type openAICompat struct {
	kind Kind
	chat openai.ChatCompletionService
}

func newOpenAICompat(o Options) *openAICompat {
	// The service is built directly rather than through openai.NewClient so
	// that no OPENAI_* environment variable (key, base URL, organization,
	// project, custom headers) reaches OpenRouter or Ollama.
	opts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL),
		option.WithAPIKey(o.APIKey), // "" sends no Authorization header
		option.WithMaxRetries(o.MaxRetries),
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	return &openAICompat{kind: o.Kind, chat: openai.NewChatCompletionService(opts...)}
}

func (c *openAICompat) Kind() Kind { return c.kind }

func (c *openAICompat) Complete(ctx context.Context, req Request) (*Response, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	var res *http.Response
	out, err := c.chat.New(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		return nil, c.fail(ctx, err, res)
	}
	if len(out.Choices) == 0 {
		// OpenRouter can answer 200 with an error object instead of choices.
		if raw, ok := out.JSON.ExtraFields["error"]; ok {
			var e struct {
				Message string `json:"message"`
			}
			if json.Unmarshal([]byte(raw.Raw()), &e) == nil && e.Message != "" {
				return nil, badResponse(c.kind, res, "%s", e.Message)
			}
		}
		return nil, badResponse(c.kind, res, "response has no choices")
	}
	msg := out.Choices[0].Message
	resp := &Response{Text: msg.Content, ResponseModel: out.Model,
		Usage: Usage{InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens}}
	if resp.Text == "" && msg.Refusal != "" {
		resp.Text = msg.Refusal
	}
	for i, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered, so never expected
		}
		id := tc.ID
		if id == "" {
			// Some local servers omit ids; the tool result must still
			// name one, and the history round-trips it.
			id = fmt.Sprintf("call_%d", i)
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{
			ID:        id,
			Name:      tc.Function.Name,
			Arguments: rawArgs(tc.Function.Arguments),
		})
	}
	return resp, nil
}

// params maps a Request onto the chat completions body.
func (c *openAICompat) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: req.Model}
	// OpenAI deprecated max_tokens and rejects it for its reasoning models;
	// OpenRouter and Ollama document max_tokens.
	if c.kind == KindOpenAI {
		p.MaxCompletionTokens = openai.Int(maxTokens(req))
	} else {
		p.MaxTokens = openai.Int(maxTokens(req))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: argsString(tc.Arguments),
						},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			content := m.Content
			if m.IsError {
				// The wire format has no error flag for tool results.
				content = "Error: " + content
			}
			p.Messages = append(p.Messages, openai.ToolMessage(content, m.ToolCallID))
		default:
			return p, fmt.Errorf("%s: message %d: unknown role %q", c.kind, i, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return p, fmt.Errorf("%s: %w", c.kind, err)
		}
		fd := openai.FunctionDefinitionParam{Name: t.Name, Parameters: openai.FunctionParameters(schema)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	return p, nil
}

func (c *openAICompat) fail(ctx context.Context, err error, res *http.Response) error {
	var remote remoteError
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		remote.status = apiErr.StatusCode
		remote.message = apiErr.Message
		if res == nil {
			res = apiErr.Response
		}
	}
	return failure(ctx, c.kind, err, res, remote)
}

// rawArgs turns the model's argument string into raw JSON; models send ""
// for a call without arguments.
func rawArgs(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}

// argsString is the inverse of rawArgs for history sent back to the model.
func argsString(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	return string(raw)
}

// schemaObject decodes a tool's JSON Schema; a tool without one takes no
// arguments.
func schemaObject(t ToolDef) (map[string]any, error) {
	if len(bytes.TrimSpace(t.Parameters)) == 0 || string(bytes.TrimSpace(t.Parameters)) == "null" {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Parameters, &m); err != nil || m == nil {
		return nil, fmt.Errorf("tool %q: parameters must be a JSON Schema object", t.Name)
	}
	return m, nil
}
