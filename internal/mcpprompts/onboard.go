package mcpprompts

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/config"
)

// OnboardPrompt describes onboard_orchestrator.
func OnboardPrompt() *mcp.Prompt {
	return &mcp.Prompt{
		Name:  Onboard,
		Title: "Onboard an orchestrator",
		Description: "The GarraServer spec.orchestrators entry (and its config.yml equivalent) for a new orchestrator, " +
			"and the Streamable HTTP client configuration to paste into it, with the Authorization header as a placeholder.",
		Arguments: []*mcp.PromptArgument{
			{Name: "name", Title: "Orchestrator name", Required: true,
				Description: "A DNS label of at most 40 characters (lowercase letters, digits, '-'), e.g. badgood."},
			{Name: "tools", Title: "Tools wanted",
				Description: "Comma-separated, from: " + strings.Join(config.OrchestratorTools, ", ") + ". Default: status."},
			{Name: "endpoint", Title: "Gateway endpoint",
				Description: "The URL the orchestrator reaches POST /mcp at, e.g. http://team-a-gateway.agents.svc:3888/mcp. Default: this gateway's listen address."},
		},
	}
}

// OnboardInput is onboard_orchestrator's arguments, checked.
type OnboardInput struct {
	Name     string
	Tools    []string
	Endpoint string
}

// ParseOnboard checks onboard_orchestrator's arguments; defaultEndpoint
// fills an absent endpoint.
func ParseOnboard(args map[string]string, defaultEndpoint string) (OnboardInput, error) {
	if err := CheckArguments(OnboardPrompt(), args); err != nil {
		return OnboardInput{}, err
	}
	in := OnboardInput{Name: strings.TrimSpace(args["name"]), Endpoint: strings.TrimSpace(args["endpoint"])}
	if len(in.Name) > MaxNameLen || !dnsLabel().MatchString(in.Name) {
		return in, InvalidArgument("name", "%q must be a DNS label of at most %d characters (lowercase letters, digits and '-', starting and ending alphanumeric)", in.Name, MaxNameLen)
	}
	tools := args["tools"]
	if strings.TrimSpace(tools) == "" {
		tools = "status"
	}
	var err error
	if in.Tools, err = ParseTools(tools, config.OrchestratorTools); err != nil {
		return in, err
	}
	if in.Endpoint == "" {
		in.Endpoint = defaultEndpoint
	}
	u, err := url.Parse(in.Endpoint)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return in, InvalidArgument("endpoint", "%q is not an http(s) URL", in.Endpoint)
	case u.User != nil:
		// A credential in the URL would end up pasted in clear.
		return in, InvalidArgument("endpoint", "must not carry credentials; the token goes in the Authorization header")
	}
	return in, nil
}

// KeyEnv is the environment variable the config.yml entry names for an
// orchestrator's token: BADGOOD_MCP_KEY for badgood.
func KeyEnv(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_MCP_KEY"
}

// OnboardResult renders onboard_orchestrator.
func OnboardResult(in OnboardInput) *mcp.GetPromptResult {
	tools := "[" + strings.Join(in.Tools, ", ") + "]"
	needsChats := slices.ContainsFunc(in.Tools, func(t string) bool {
		return t == "list_chats" || t == "read_history" || t == "send_message"
	})
	var b strings.Builder
	fmt.Fprintf(&b, "Help the operator connect a new orchestrator, %q, to a Garra gateway. Walk them through the three steps below, in order; do not invent other fields.\n\n", in.Name)

	b.WriteString("## 1. Declare the orchestrator\n\n")
	b.WriteString("With the Garra operator, add this entry to the GarraServer's `spec.orchestrators` list (kubectl edit, or the manifest you apply):\n\n```yaml\nspec:\n  orchestrators:\n")
	fmt.Fprintf(&b, "    - name: %s\n      tools: %s\n", in.Name, tools)
	if needsChats {
		b.WriteString("      chats: []                  # conversation ids this orchestrator may see, e.g. \"telegram:123456\"\n")
	}
	b.WriteString("      workspace: {size: 1Gi, retain: false}\n      sandbox: {egress: none}      # none | internet\n```\n\n")
	b.WriteString("Without the operator (`garra gateway --config config.yml`), the same entry is:\n\n```yaml\ngateway:\n  mcp_http:\n    orchestrators:\n")
	fmt.Fprintf(&b, "      - name: %s\n        key_env: %s\n        tools: %s\n", in.Name, KeyEnv(in.Name), tools)
	if needsChats {
		b.WriteString("        chats: []\n")
	}
	b.WriteString("```\n\n")
	if notes := switchNotes(in.Tools); len(notes) > 0 {
		b.WriteString("The gateway-wide switches these tools also need (each is off by default; without it every call is refused with the kind shown):\n\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
		b.WriteString("\n")
	}

	b.WriteString("## 2. Get the token\n\n")
	fmt.Fprintf(&b, "With the operator, the token is generated once into the Secret `<garraserver>-orch-%s`, key `token` (or comes from the orchestrator's `tokenSecretRef`):\n\n", in.Name)
	fmt.Fprintf(&b, "```sh\nkubectl get secret <garraserver>-orch-%s -o jsonpath='{.data.token}' | base64 -d\n```\n\n", in.Name)
	fmt.Fprintf(&b, "Without the operator, generate a long random token and set it as %s in the gateway's environment. Never paste the token into this conversation or into a file under version control.\n\n", KeyEnv(in.Name))

	b.WriteString("## 3. Configure the orchestrator's MCP client\n\n")
	b.WriteString("The endpoint is Streamable HTTP, stateless, with JSON responses; every request carries the token as a bearer. For clients that take a JSON server list (Claude Code's `.mcp.json`, and most others), paste:\n\n")
	b.WriteString("```json\n" + ClientConfig(in) + "\n```\n\n")
	fmt.Fprintf(&b, "`${%s}` is expanded from the client's environment by clients that support it; otherwise replace it with the token in the client's secret store. Clients with a form (n8n's MCP Client node) take the URL %s and the header `Authorization: Bearer <token>`. ", KeyEnv(in.Name), in.Endpoint)
	b.WriteString("Requests must send `Accept: application/json, text/event-stream` (MCP clients do); the Host must be loopback or one of `gateway.allowed_hosts`.\n\n")
	b.WriteString("Finally, have the orchestrator call `tools/list`: it must show exactly the tools granted above (a tool switched off gateway-wide does not appear), and it can read `garra://policy` to see its own limits.")

	return userText(fmt.Sprintf("Onboarding %s with tools %s", in.Name, tools), b.String())
}

// ClientConfig is the client configuration block of OnboardResult.
func ClientConfig(in OnboardInput) string {
	return jsonBlock(map[string]any{
		"mcpServers": map[string]any{
			"garra": map[string]any{
				"type":    "http",
				"url":     in.Endpoint,
				"headers": map[string]string{"Authorization": "Bearer ${" + KeyEnv(in.Name) + "}"},
			},
		},
	})
}

func switchNotes(tools []string) []string {
	var out []string
	for _, t := range tools {
		switch t {
		case "ask":
			out = append(out, "ask: `spec.gateway.allowAsk: true` (config.yml `gateway.mcp_http.allow_ask`); models are limited by `askAllowedModels`. Off: ask_disabled.")
		case "agent":
			out = append(out, "agent: `spec.gateway.allowAgent: true` (config.yml `gateway.mcp_http.allow_agent`); runs are capped by `agentMaxSeconds` and `agentBudgetPerMinute`. Off: agent_disabled.")
		case "send_message":
			out = append(out, "send_message: `spec.gateway.allowSend: true` and at least one destination in `spec.channels.telegram.proactiveChatIDs` (config.yml `allow_send` and `channels.telegram.proactive_chat_ids`). Off: send_disabled; no destination: no_allowlist.")
		}
	}
	return out
}
