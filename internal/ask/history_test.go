package ask_test

import (
	"context"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

func TestAskWithHistorySendsTheTurnsOnBothWireFamilies(t *testing.T) {
	history := []llm.Message{
		{Role: llm.RoleAssistant, Content: "a greeting nobody asked for"}, // dropped: leading assistant
		{Role: llm.RoleUser, Content: "my name is Ana"},
		{Role: llm.RoleAssistant, Content: "hello Ana"},
		{Role: llm.RoleUser, Content: "unanswered"}, // joined with the question
	}
	for _, provider := range []string{"openrouter", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			d := llmdouble.New(t, llmdouble.Step{Text: "you are Ana"})
			base := d.OpenAIBaseURL()
			if provider == "anthropic" {
				base = d.AnthropicBaseURL()
			}
			core := coreFor(t, "llm: {provider: "+provider+", base_url: "+base+"}",
				map[string]string{"OPENROUTER_API_KEY": "k1", "ANTHROPIC_API_KEY": "k2"})
			env := core.AskWithHistory(context.Background(), ask.Request{Message: "who am I?", Provider: provider}, history)
			if !env.OK || env.Answer != "you are Ana" {
				t.Fatalf("envelope %+v", env)
			}
			msgs, _ := d.Requests()[0].Body["messages"].([]any)
			var roles []string
			for _, m := range msgs {
				roles = append(roles, m.(map[string]any)["role"].(string))
			}
			if provider == "openrouter" && roles[0] == "system" {
				roles = roles[1:]
			}
			if strings.Join(roles, ",") != "user,assistant,user" {
				t.Fatalf("roles %v", roles)
			}
			if got := d.Requests()[0].LastUserText; !strings.Contains(got, "unanswered") || !strings.HasSuffix(got, "who am I?") {
				t.Fatalf("last user text %q", got)
			}
		})
	}
}

func TestAskWithHistoryUsageAndEmptyHistory(t *testing.T) {
	d := llmdouble.New(t) // echo
	core := coreFor(t, "llm: {provider: openrouter, base_url: "+d.OpenAIBaseURL()+"}", map[string]string{"OPENROUTER_API_KEY": "k"})
	if env := core.AskWithHistory(context.Background(), ask.Request{Message: "  "}, nil); env.OK || env.Error.Kind != errkinds.Usage {
		t.Fatalf("empty message: %+v", env)
	}
	if env := core.AskWithHistory(context.Background(), ask.Request{Message: "ping"}, nil); !env.OK || env.Answer != "echo: ping" {
		t.Fatalf("no history: %+v", env)
	}
}

func TestConversationKeepsTheNewestTurnsWithinTheBudget(t *testing.T) {
	big := strings.Repeat("x", ask.MaxHistoryBytes/2)
	history := []llm.Message{
		{Role: llm.RoleUser, Content: "oldest " + big},
		{Role: llm.RoleAssistant, Content: "old " + big},
		{Role: llm.RoleUser, Content: "recent"},
		{Role: llm.RoleAssistant, Content: "reply"},
		{Role: llm.RoleTool, Content: "ignored"},
	}
	got := ask.Conversation(history, "now")
	// "oldest" is over the budget; "old" then leads as an assistant turn and is dropped.
	if len(got) != 3 || got[0].Content != "recent" || got[1].Content != "reply" || got[2].Content != "now" {
		t.Fatalf("conversation %+v", got)
	}
}
