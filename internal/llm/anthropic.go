package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicProvider speaks the Anthropic messages API, whose conversation
// shape differs from chat completions: the system prompt is a top-level
// field, tool calls are content blocks, and tool results travel in user
// turns.
type anthropicProvider struct {
	msgs anthropic.MessageService
}

func newAnthropic(o Options) *anthropicProvider {
	opts := []option.RequestOption{
		// No ANTHROPIC_* variable, profile file or federation chain: the
		// caller already chose the key.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(o.BaseURL),
		// x-api-key is the header the API documents for API keys; the
		// SDK's WithAPIKey would send it as a Bearer token instead.
		option.WithHeader("X-Api-Key", o.APIKey),
		option.WithMaxRetries(o.MaxRetries),
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	c := anthropic.NewClient(opts...)
	return &anthropicProvider{msgs: c.Messages}
}

func (a *anthropicProvider) Kind() Kind { return KindAnthropic }

func (a *anthropicProvider) Complete(ctx context.Context, req Request) (*Response, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return nil, err
	}
	var res *http.Response
	msg, err := a.msgs.New(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		return nil, a.fail(ctx, err, res)
	}
	resp := &Response{Usage: Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens},
		ResponseModel: msg.Model}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			// Blocks split around citations belong to one answer.
			text.WriteString(b.Text)
		case "tool_use":
			input := b.Input
			if len(input) == 0 || string(input) == "null" {
				input = json.RawMessage("{}")
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: input})
		}
	}
	resp.Text = text.String()
	return resp, nil
}

func anthropicParams(req Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{
		Model:     req.Model,
		MaxTokens: maxTokens(req),
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	msgs, err := anthropicMessages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		schema, err := anthropicSchema(t)
		if err != nil {
			return p, fmt.Errorf("%s: %w", KindAnthropic, err)
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return p, nil
}

// anthropicMessages maps the history. Tool results become tool_result
// blocks of a user turn, and every result answering the same assistant turn
// shares one user message, since the API wants them all in the turn right
// after the tool_use blocks. Empty text is dropped: the API rejects empty
// text blocks.
func anthropicMessages(in []Message) ([]anthropic.MessageParam, error) {
	var out []anthropic.MessageParam
	// lastUser is the user turn still open for merging, nil otherwise;
	// onlyResults says it holds tool_result blocks only.
	var lastUser *anthropic.UserMessageParam
	onlyResults := false
	for i, m := range in {
		switch m.Role {
		case RoleUser:
			if m.Content == "" {
				continue
			}
			block := anthropic.NewTextBlock(m.Content)
			if lastUser != nil {
				// Text may follow tool results in the same turn.
				lastUser.Content = append(lastUser.Content, block)
			} else {
				out = append(out, anthropic.NewUserMessage(block))
				lastUser = out[len(out)-1].OfUser
			}
			onlyResults = false
		case RoleTool:
			result := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				result.Content = []anthropic.ToolResultBlockParamContentUnion{
					{OfText: &anthropic.TextBlockParam{Text: m.Content}},
				}
			}
			if m.IsError {
				result.IsError = anthropic.Bool(true)
			}
			block := anthropic.ContentBlockParamUnion{OfToolResult: &result}
			if lastUser != nil && onlyResults {
				lastUser.Content = append(lastUser.Content, block)
			} else {
				out = append(out, anthropic.NewUserMessage(block))
				lastUser = out[len(out)-1].OfUser
				onlyResults = true
			}
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
			if len(blocks) == 0 {
				continue
			}
			out = append(out, anthropic.NewAssistantMessage(blocks...))
			lastUser, onlyResults = nil, false
		default:
			return nil, fmt.Errorf("%s: message %d: unknown role %q", KindAnthropic, i, m.Role)
		}
	}
	return out, nil
}

// toolInput is the tool_use input to replay; the API wants an object, so
// arguments that are not valid JSON are replaced by an empty one.
func toolInput(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// anthropicSchema splits a JSON Schema into the SDK's input_schema, whose
// type is always "object" and whose other keywords ride as extra fields.
func anthropicSchema(t ToolDef) (anthropic.ToolInputSchemaParam, error) {
	var s anthropic.ToolInputSchemaParam
	m, err := schemaObject(t)
	if err != nil {
		return s, err
	}
	if props, ok := m["properties"]; ok {
		s.Properties = props
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	for k, v := range m {
		if k == "type" || k == "properties" || k == "required" {
			continue
		}
		if s.ExtraFields == nil {
			s.ExtraFields = map[string]any{}
		}
		s.ExtraFields[k] = v
	}
	return s, nil
}

func (a *anthropicProvider) fail(ctx context.Context, err error, res *http.Response) error {
	var remote remoteError
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		remote.status = apiErr.StatusCode
		remote.message = apiErr.Message
		remote.body = apiErr.RawJSON()
		if res == nil {
			res = apiErr.Response
		}
	}
	return failure(ctx, KindAnthropic, err, res, remote)
}
