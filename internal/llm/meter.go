package llm

import "context"

// A Meter is a token allowance that model calls are charged against: each
// call reserves its bound before it is sent and settles to what the
// provider reports after. The gateway hands one per tool call of an
// orchestrator with a token quota.
type Meter interface {
	// Reserve holds n tokens, or returns why not; nothing is held then.
	Reserve(n int64) error
	// Settle replaces a reservation of reserved tokens with used.
	Settle(reserved, used int64)
}

type meterKey struct{}

// WithMeter returns ctx whose model calls are charged to m.
func WithMeter(ctx context.Context, m Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// Metered charges each Complete to the Meter in its context, if any. A
// call the meter refuses is not sent: its error is the meter's.
func Metered(p Provider) Provider { return metered{p} }

type metered struct{ Provider }

func (m metered) Complete(ctx context.Context, req Request) (*Response, error) {
	mt, _ := ctx.Value(meterKey{}).(Meter)
	if mt == nil {
		return m.Provider.Complete(ctx, req)
	}
	n := Bound(req)
	if err := mt.Reserve(n); err != nil {
		return nil, err
	}
	resp, err := m.Provider.Complete(ctx, req)
	switch {
	case err != nil:
		// The provider answered with an error or not at all; it reports
		// no usage, and an error is not billed.
		mt.Settle(n, 0)
	case resp.Usage.InputTokens+resp.Usage.OutputTokens > 0:
		mt.Settle(n, resp.Usage.InputTokens+resp.Usage.OutputTokens)
	default:
		// No usage reported: the reservation stands, the bound being
		// all that is known of the cost.
	}
	return resp, err
}

// Bound is an upper bound of the tokens req can cost: its output cap plus
// its input counted in bytes (no tokenizer makes more tokens than bytes
// of UTF-8) and a few tokens of framing per message.
func Bound(req Request) int64 {
	const perMessage = 8
	n := maxTokens(req) + int64(len(req.System)) + perMessage
	for _, msg := range req.Messages {
		n += perMessage + int64(len(msg.Content)+len(msg.ToolCallID))
		for _, tc := range msg.ToolCalls {
			n += perMessage + int64(len(tc.ID)+len(tc.Name)+len(tc.Arguments))
		}
	}
	for _, t := range req.Tools {
		n += perMessage + int64(len(t.Name)+len(t.Description)+len(t.Parameters))
	}
	return n
}
