package chat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/llm"
)

// DefaultHistoryLimit is how many earlier messages of a conversation go with
// each question.
const DefaultHistoryLimit = 20

// Asker is the shared one-shot core as the chat surfaces use it
// (*ask.Core implements it).
type Asker interface {
	AskWithHistory(ctx context.Context, req ask.Request, history []llm.Message) ask.Envelope
}

// Assistant answers one user turn of a conversation, the same way on every
// channel: the conversation's recent history, the shared ask core, and the
// answer stored before anyone sees it.
type Assistant struct {
	Store    Store
	Recorder Recorder
	Asker    Asker
	// Request is the template of every question: provider, model, system
	// prompt, timeout. Message is filled per turn.
	Request ask.Request
	// HistoryLimit is how many earlier messages go with the question
	// (0 = DefaultHistoryLimit).
	HistoryLimit int
	Now          func() time.Time
}

// Reply answers text, the user's message already stored as the last
// message of convID (a concurrent writer may have appended more; the
// history stops before the user's message when it is found at the end). A
// model failure is an envelope with ok:false and nothing is stored; err is
// only for store failures. The stored reply is returned.
func (a *Assistant) Reply(ctx context.Context, convID, channel, text string) (Message, ask.Envelope, error) {
	limit := a.HistoryLimit
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	msgs, err := a.Store.History(ctx, convID, limit+1)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Message{}, ask.Envelope{}, fmt.Errorf("read history: %w", err)
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == RoleUser && msgs[n-1].Text == text {
		msgs = msgs[:n-1]
	}
	if len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	history := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		role := llm.RoleUser
		if m.Role == RoleAssistant {
			role = llm.RoleAssistant
		}
		history = append(history, llm.Message{Role: role, Content: m.Text})
	}
	req := a.Request
	req.Message = text
	env := a.Asker.AskWithHistory(ctx, req, history)
	if !env.OK {
		return Message{}, env, nil
	}
	reply := Message{Role: RoleAssistant, Text: env.Answer, At: a.now()}
	if err := a.Recorder.Append(ctx, convID, channel, reply); err != nil {
		return Message{}, env, fmt.Errorf("store reply: %w", err)
	}
	return reply, env, nil
}

func (a *Assistant) now() time.Time {
	if a.Now == nil {
		return time.Now().UTC()
	}
	return a.Now().UTC()
}
