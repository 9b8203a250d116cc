// Package mcpprompts renders the MCP prompts of the Garra servers
// (onboard_orchestrator and delegate_task on both surfaces; diagnose_gateway
// on the gateway's). It keeps the prompts' texts and argument checks apart
// from the server that registers them. Prompts only render text from their
// arguments: they read no state and spend nothing.
//
// Prompt arguments are strings (MCP says so). Every argument is checked:
// an unknown one, a missing required one or a value out of its set is a
// JSON-RPC invalid params error (-32602) whose message starts with the
// argument's name, like the tools' errors.
package mcpprompts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompt names.
const (
	Onboard  = "onboard_orchestrator"
	Diagnose = "diagnose_gateway"
	Delegate = "delegate_task"
)

// InvalidArgument is the -32602 error for one argument.
func InvalidArgument(arg, format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: arg + ": " + fmt.Sprintf(format, a...)}
}

// CheckArguments refuses arguments p does not declare and required ones
// that are missing or blank.
func CheckArguments(p *mcp.Prompt, got map[string]string) error {
	declared := map[string]bool{}
	var names []string
	for _, a := range p.Arguments {
		declared[a.Name] = true
		names = append(names, a.Name)
	}
	var unknown []string
	for k := range got {
		if !declared[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return InvalidArgument(unknown[0], "unknown argument; %s takes %s", p.Name, strings.Join(names, ", "))
	}
	for _, a := range p.Arguments {
		if a.Required && strings.TrimSpace(got[a.Name]) == "" {
			return InvalidArgument(a.Name, "required")
		}
	}
	return nil
}

// userText is a prompt result of one user message.
func userText(description, text string) *mcp.GetPromptResult {
	return &mcp.GetPromptResult{
		Description: description,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}
}

// jsonBlock renders v as indented JSON without HTML escaping, so that a
// goal containing < or & reads as written.
func jsonBlock(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // only strings, ints and maps
	return strings.TrimSuffix(b.String(), "\n")
}

// dnsLabel is an orchestrator name's shape, compiled on first use.
var dnsLabel = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
})

// MaxNameLen bounds an orchestrator's name (a DNS label of at most 40).
const MaxNameLen = 40

// ParseTools reads a tools argument: names of the closed set separated by
// commas or spaces, optionally in brackets and quotes ("status, agent",
// "[status, agent]", `["status","agent"]`). Duplicates are dropped.
func ParseTools(raw string, closed []string) ([]string, error) {
	s := strings.NewReplacer("[", " ", "]", " ", `"`, " ", "'", " ", ",", " ").Replace(raw)
	var out []string
	for _, t := range strings.Fields(s) {
		if !slices.Contains(closed, t) {
			return nil, InvalidArgument("tools", "%q is not one of %s", t, strings.Join(closed, ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, InvalidArgument("tools", "list at least one of %s", strings.Join(closed, ", "))
	}
	return out, nil
}
