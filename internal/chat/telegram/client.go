package telegram

import (
	"context"
	"errors"
	"net/http"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// ctxClient is the library's HTTPClient with a context: the library builds
// requests without one, so this is how a long poll ends when the channel
// stops and how a send honours its caller's deadline.
type ctxClient struct {
	ctx context.Context
	hc  *http.Client
	c   *Channel
}

func (x ctxClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := x.hc.Do(req.WithContext(x.ctx)) //nolint:gosec // G704: the Bot API URL is the operator's channels.telegram.api_base_url
	if err != nil {
		return nil, x.c.scrub(err)
	}
	return resp, nil
}

func (c *Channel) client(ctx context.Context) tgbotapi.HTTPClient {
	return ctxClient{ctx: ctx, hc: c.hc, c: c}
}

// with returns a shallow copy of bot whose requests carry ctx. BotAPI holds
// no lock; the copy shares the token, endpoint and identity.
func (c *Channel) with(ctx context.Context, bot *tgbotapi.BotAPI) *tgbotapi.BotAPI {
	b := *bot
	b.Client = c.client(ctx)
	return &b
}

// scrubbedError hides the bot token, which the library puts in every URL
// (and so in every transport error), keeping the context cause and the Bot
// API's *tgbotapi.Error reachable with errors.Is and errors.As.
type scrubbedError struct {
	msg   string
	cause error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.cause }

func (c *Channel) scrub(err error) error {
	if err == nil || !strings.Contains(err.Error(), c.token) {
		return err // *tgbotapi.Error carries only the description
	}
	var cause error
	switch {
	case errors.Is(err, context.Canceled):
		cause = context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		cause = context.DeadlineExceeded
	}
	return &scrubbedError{msg: strings.ReplaceAll(err.Error(), c.token, "<bot-token>"), cause: cause}
}
