package ask

import (
	"context"
	"strings"
	"time"

	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
)

// MaxHistoryBytes bounds the earlier turns sent with a question; the oldest
// turns are dropped first.
const MaxHistoryBytes = 128 << 10

// AskWithHistory is Ask with the earlier turns of a conversation sent
// before req.Message: the same validation, provider, deadline, redaction and
// envelope. history is oldest first and holds user and assistant turns only
// (other roles and tool calls are ignored). It is normalized for every
// provider family: leading assistant turns are dropped, consecutive turns of
// one role are joined, and the oldest turns go first when the history is
// over MaxHistoryBytes. An empty history asks exactly what Ask asks.
func (c *Core) AskWithHistory(ctx context.Context, req Request, history []llm.Message) Envelope {
	req, err := c.Normalize(req)
	if err != nil {
		return c.fail(errkinds.Usage, err.Error())
	}
	start := c.now()
	provider, err := c.Provider(req.Provider)
	if err != nil {
		return c.fail(errkinds.ProviderError, err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.TimeoutSecs)*time.Second)
	defer cancel()
	system := req.SystemPrompt
	if system == "" {
		system = DefaultSystemPrompt
	}
	resp, err := provider.Complete(ctx, llm.Request{
		Model:    req.Model,
		System:   system,
		Messages: Conversation(history, req.Message),
	})
	if err != nil {
		return c.failFromError(err, req.TimeoutSecs)
	}
	return Envelope{
		OK:        true,
		Answer:    c.redactor().String(resp.Text),
		Provider:  req.Provider,
		Model:     req.Model,
		LatencyMS: c.now().Sub(start).Milliseconds(),
	}
}

// Conversation builds the messages of one model turn: the normalized
// history followed by the user's message. The result alternates user and
// assistant turns, starts with a user turn and ends with one.
func Conversation(history []llm.Message, message string) []llm.Message {
	turns := make([]llm.Message, 0, len(history)+1)
	for _, m := range history {
		if (m.Role != llm.RoleUser && m.Role != llm.RoleAssistant) || strings.TrimSpace(m.Content) == "" {
			continue
		}
		turns = append(turns, llm.Message{Role: m.Role, Content: m.Content})
	}
	// Keep the newest turns within the byte budget.
	size, first := 0, len(turns)
	for first > 0 && size+len(turns[first-1].Content) <= MaxHistoryBytes {
		first--
		size += len(turns[first].Content)
	}
	turns = turns[first:]
	turns = append(turns, llm.Message{Role: llm.RoleUser, Content: message})

	out := make([]llm.Message, 0, len(turns))
	for _, m := range turns {
		if len(out) == 0 && m.Role != llm.RoleUser {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content += "\n\n" + m.Content
			continue
		}
		out = append(out, m)
	}
	return out
}
