// Package errkinds is the one table of Garra's stable errors on every
// surface: the error.kind labels of the garra.ask.v1, garra.agent.v1 and
// garra.mcp.v1 envelopes (and of the audit file), the HTTP statuses of
// POST /mcp with their bodies, and the JSON-RPC codes both MCP servers
// answer with. Every surface writes the constants and rows of this
// package, so a label cannot drift from its documentation: there is no
// second copy to drift. docs/errors.md is generated from it, and every
// HTTP row is replayed against a real gateway.
//
// The package holds data only and imports nothing of the project, so that
// any package (and the docs) can use it without a cycle.
package errkinds

import (
	"fmt"
	"strings"
)

// Kind is one stable error.kind label. Its Go name is the label in
// CamelCase (provider_error is ProviderError): the docs derive one from
// the other.
type Kind string

// The labels of the envelopes and the audit file, in the order of the
// docs' first table.
const (
	ProviderError Kind = "provider_error"
	Timeout       Kind = "timeout"
	Cancelled     Kind = "cancelled"
	Usage         Kind = "usage"

	ToolNotAllowed     Kind = "tool_not_allowed"
	ToolDenied         Kind = "tool_denied"
	SendDisabled       Kind = "send_disabled"
	NoAllowlist        Kind = "no_allowlist"
	TargetNotAllowed   Kind = "target_not_allowed"
	ChannelUnsupported Kind = "channel_unsupported"
	// RateLimited is the shared send budget of garra_send_message; the
	// per-IP request limit is TooManyRequests.
	RateLimited        Kind = "rate_limited"
	TooManyRequests    Kind = "too_many_requests"
	Draining           Kind = "draining"
	ChannelOffline     Kind = "channel_offline"
	DeliveryFailed     Kind = "delivery_failed"
	AskDisabled        Kind = "ask_disabled"
	AgentDisabled      Kind = "agent_disabled"
	ModelNotAllowed    Kind = "model_not_allowed"
	OverBudget         Kind = "over_budget"
	NotFound           Kind = "not_found"
	InvalidParams      Kind = "invalid_params"
	Unavailable        Kind = "unavailable"
	Unauthorized       Kind = "unauthorized"
	InvalidToken       Kind = "invalid_token"
	TokenExpired       Kind = "token_expired"
	WrongAudience      Kind = "wrong_audience"
	IdentityNotAllowed Kind = "identity_not_allowed"
	AuthUnavailable    Kind = "auth_unavailable"
	Internal           Kind = "internal"
	// ConfinementUnavailable is bash refused because it cannot be
	// confined as agent.confinement requires.
	ConfinementUnavailable Kind = "confinement_unavailable"
)

// OverQuota is one orchestrator's own quota spent; OverBudget is the
// budget the whole bridge shares.
const OverQuota Kind = "over_quota"

// The kinds only the HTTP layer records (audit and metrics): no envelope
// carries them, so they have rows in HTTP only.
const (
	OriginRefused  Kind = "origin_refused"
	HostNotAllowed Kind = "host_not_allowed"
	NotAcceptable  Kind = "not_acceptable"
	// NotOwner is an orchestrator calling a route that is the owner's
	// alone (the chat API, /sandboxz).
	NotOwner Kind = "not_owner"
)

// The refusals of the gateway's egress proxy, which a sandbox with
// egress: gateway meets on its way out. Each names the rule that refused.
const (
	EgressProxyAuth             Kind = "egress_proxy_auth"
	EgressHostNotAllowed        Kind = "egress_host_not_allowed"
	EgressDestinationRefused    Kind = "egress_destination_refused"
	EgressPlaintext             Kind = "egress_plaintext"
	EgressCredentialUnavailable Kind = "egress_credential_unavailable" //nolint:gosec // G101: a label
	EgressUnredactable          Kind = "egress_unredactable"
	EgressUpstreamFailed        Kind = "egress_upstream_failed"
	EgressBadRequest            Kind = "egress_bad_request"
)

// Message is the fixed sentence a refusal envelope of kind k carries. None
// names the requested destination or anything the caller did not already
// send. A kind whose message is written where it happens (a provider's
// redacted error, a timeout) has none here and answers its label.
func (k Kind) Message() string {
	switch k {
	case ToolNotAllowed:
		return "this caller may not use this tool"
	case ToolDenied:
		return "this tool is in this caller's deny_tools"
	case SendDisabled:
		return "sending is disabled on this gateway (gateway.mcp_http.allow_send)"
	case NoAllowlist:
		return "no destination is approved for sending (channels.telegram.proactive_chat_ids)"
	case TargetNotAllowed:
		return "the destination is not approved for this caller"
	case ChannelUnsupported:
		return "only the telegram channel can be sent to"
	case RateLimited:
		return "the shared send budget is exhausted; try again in a minute"
	case ChannelOffline:
		return "the channel is not running"
	case DeliveryFailed:
		return "the channel refused the message; the gateway log has the reason"
	case AskDisabled:
		return "garra_ask is disabled on this gateway (gateway.mcp_http.allow_ask)"
	case AgentDisabled:
		return "garra_agent is disabled on this gateway (gateway.mcp_http.allow_agent)"
	case ModelNotAllowed:
		return "the model is not in gateway.mcp_http.ask_allowed_models"
	case OverBudget:
		return "the per-minute budget for this tool is exhausted; try again later"
	case OverQuota:
		return "this orchestrator's quota is spent; try again later"
	case NotFound:
		return "no such conversation"
	case Unavailable:
		return "the conversation store is unavailable"
	case ConfinementUnavailable:
		return "bash cannot be confined on this host and agent.confinement is required"
	case EgressProxyAuth:
		return "the egress proxy needs this sandbox's own proxy credentials (HTTPS_PROXY as garra sandbox sets it)"
	case EgressHostNotAllowed:
		return "the host is in neither this orchestrator's egress hosts nor the hosts of one of its credentials"
	case EgressDestinationRefused:
		return "the host resolves to a loopback, private, link-local or otherwise non-public address"
	case EgressPlaintext:
		return "a credential is sent over https only: use an https URL"
	case EgressCredentialUnavailable:
		return "the credential for this request cannot be read by the gateway (revoked or not mounted)"
	case EgressUnredactable:
		return "the upstream answered with a content encoding the proxy cannot inspect for the credential"
	case EgressUpstreamFailed:
		return "the upstream could not be reached or did not prove its identity (TLS verification)"
	case EgressBadRequest:
		return "the egress proxy serves CONNECT host:port and absolute http:// requests only"
	}
	return string(k)
}

// GoName is the constant's name: the label in CamelCase.
func (k Kind) GoName() string {
	var b strings.Builder
	for w := range strings.SplitSeq(string(k), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// Row is one line of the docs' error.kind table.
type Row struct {
	Kind Kind
	// Where says which envelopes (or records) carry it and on which surface.
	Where string
	// Meaning says when it happens and what fixes it.
	Meaning string
}

// HTTPStatus is one status POST /mcp can answer before (or instead of) a
// JSON-RPC exchange.
type HTTPStatus struct {
	Status int
	// Error is the "error" field of the gateway's JSON body
	// {"error":..., "message":...}; "" for a plain-text body written by the
	// router or the MCP SDK.
	Error string
	// Body is the message (JSON body) or the start of the plain-text body.
	Body string
	// Audit is the kind recorded in garra_mcp_refusals_total and the audit
	// file, or "" when the status is not recorded.
	Audit Kind
	When  string
}

// RPCCode is one JSON-RPC error code the MCP servers answer with.
type RPCCode struct {
	Code int
	// Name is the go-sdk constant (jsonrpc.CodeInvalidParams).
	Name    string
	Message string
	When    string
}

// Kinds are the error.kind labels, grouped: the shared ask/agent labels,
// then the gateway's.
var Kinds = []Row{
	{ProviderError, "garra.ask.v1, garra.agent.v1 (stdio, http)",
		"The LLM provider failed or could not be reached (bad key, network, HTTP error). The message is redacted. Check the key with `garra config check`; retry later."},
	{Timeout, "garra.ask.v1, garra.agent.v1 (stdio, http)",
		"The call did not finish within timeout_secs (for garra_agent: the whole run). Ask for more time within the bounds, or split the task."},
	{Cancelled, "garra.ask.v1, garra.agent.v1 (http); audit; metrics",
		"The caller cancelled the call (notifications/cancelled naming it, or, over HTTP, a disconnect) before it finished; its model request and tool command were stopped. Nothing to fix. On stdio the cancelled request gets no response at all, as MCP asks; the audit line still records this kind."},
	{Usage, "`garra ask` (exit 2); stdio audit lines",
		"Bad arguments. The MCP servers answer these with JSON-RPC -32602 naming the field instead of an envelope; the stdio audit line records the kind `usage`."},

	{ToolNotAllowed, "every envelope (http); audit",
		"The caller's `tools` list does not grant this tool (the owner never has garra_agent). Also the audit kind of a resource read the caller's tools do not allow."},
	{ToolDenied, "every envelope (http); audit",
		"The orchestrator's `deny_tools` lists this tool. Deny wins over its `tools` list; remove the entry to allow it."},
	{SendDisabled, "garra.mcp.v1 (http)",
		"gateway.mcp_http.allow_send is false."},
	{NoAllowlist, "garra.mcp.v1 (http)",
		"Sending is on but channels.telegram.proactive_chat_ids is empty: nothing is approved."},
	{TargetNotAllowed, "garra.mcp.v1 (http)",
		"The destination is not in proactive_chat_ids, or outside the orchestrator's `chats`. The chat id is never echoed."},
	{ChannelUnsupported, "garra.mcp.v1 (http)",
		"Only telegram can be sent to."},
	{RateLimited, "garra.mcp.v1 (http)",
		"The shared send budget of garra_send_message (5 per minute for the whole gateway) is spent. The message says so and when to try again; `error.retry_after_secs` holds the wait (and the response's Retry-After header when the answer is plain JSON)."},
	{TooManyRequests, "HTTP 429 body (http); metrics",
		"The per-IP request limit gateway.rate_limit.requests_per_minute is spent (a JSON-RPC batch counts each of its requests). Not the send budget, which is rate_limited. Wait for Retry-After."},
	{Draining, "HTTP 503 body (http); audit",
		"The gateway is shutting down (SIGTERM): calls in flight finish up to gateway.drain_seconds, new requests are refused. Retry; a restarted or other replica answers."},
	{ChannelOffline, "garra.mcp.v1 (http)",
		"The channel is not running (e.g. no Telegram bot token)."},
	{DeliveryFailed, "garra.mcp.v1 (http)",
		"The channel refused the message; its own text is in the gateway log, never in the response."},
	{AskDisabled, "garra.ask.v1 (http)",
		"gateway.mcp_http.allow_ask is false."},
	{AgentDisabled, "garra.agent.v1 (http)",
		"gateway.mcp_http.allow_agent is false."},
	{ModelNotAllowed, "garra.ask.v1, garra.agent.v1 (http)",
		"The model is not in gateway.mcp_http.ask_allowed_models (empty = the project default model only). Nothing left the machine."},
	{OverBudget, "garra.ask.v1, garra.agent.v1 (http)",
		"The per-minute budget of garra_ask or garra_agent for all callers together is spent; the provider was not called. The message names the limit in force and its setting (gateway.mcp_http.ask_budget_per_minute, agent_budget_per_minute); `error.retry_after_secs` says when the window has room (also the response's Retry-After header when the answer is plain JSON). garra://policy shows what is left."},
	{OverQuota, "garra.ask.v1, garra.agent.v1, garra.mcp.v1 (http); audit",
		"The calling orchestrator's own quota (gateway.mcp_http.quota or its entry's quota) is spent: `error.quota` names which (ask_per_minute, agent_per_minute, send_per_minute, agent_concurrent, llm_tokens_per_day) and `error.retry_after_secs` when to try again (also the response's Retry-After header when the answer is plain JSON). Refused before anything ran, nothing spent; llm_tokens_per_day can also end an agent run between model turns. garra_status shows what is left."},
	{NotFound, "garra.mcp.v1 (http); audit",
		"No such conversation, or one outside the caller's `chats` (the two read the same). In the audit file also an unknown tool, resource or URI."},
	{InvalidParams, "audit (http)",
		"Arguments rejected; the caller gets JSON-RPC -32602 naming the field, and the gateway's audit and metrics record this kind."},
	{Unavailable, "garra.mcp.v1 (http); audit",
		"The conversation store failed (the gateway log has why). Resource reads answer JSON-RPC -32603 instead."},
	{Unauthorized, "HTTP 401 body (http); audit; metrics",
		"No bearer token, or an opaque one that is neither the owner's key nor a token-mode orchestrator's. The WWW-Authenticate challenge points at the protected resource metadata."},
	{InvalidToken, "HTTP 401 body (http); audit; metrics",
		"A JWT that proved nothing: bad or unknown signature key, alg none, an HMAC algorithm, an issuer no orchestrator names, no exp, or a ServiceAccount token the API server did not authenticate (a deleted ServiceAccount, a deleted bound object). Get a fresh token from the right issuer."},
	{TokenExpired, "HTTP 401 body (http); audit; metrics",
		"The token's exp is past or its nbf ahead, beyond 30 s of clock skew (for a ServiceAccount token: the API server refused it and its exp is past). Refresh it; a projected token is refreshed by the kubelet, re-read the file."},
	{WrongAudience, "HTTP 401 body (http); audit; metrics",
		"A token for another service: its aud is not the orchestrator's oidc.audience, or not gateway.auth.audience (for ServiceAccount tokens, the projected volume's audience). Request the token for this gateway."},
	{IdentityNotAllowed, "HTTP 401 body (http); audit; metrics",
		"A valid token for this gateway whose identity is no orchestrator's: another ServiceAccount, or an OIDC subject or claims that match no entry (also another orchestrator's subject under an audience that entry does not use). Add an orchestrator for it, or use that orchestrator's own token."},
	{AuthUnavailable, "HTTP 503 body (http); audit; metrics",
		"The verdict could not be reached: the OIDC issuer's discovery or keys, or the API server's TokenReview, failed. Nothing is cached; retry after Retry-After. The gateway log says which."},
	{Internal, "garra.mcp.v1 (http)",
		"A result could not be encoded. A bug: report it with the gateway log."},
	{ConfinementUnavailable, "the bash tool's result inside garra_agent (stdio, http), as `refused: confinement_unavailable: …`",
		"agent.confinement is required (the gateway's default when local workspaces belong to more than one orchestrator) and the kernel offers no Landlock, so host bash does not run. Boot a kernel with Landlock (5.13 or later, `lsm=` including landlock), give the orchestrators sandbox pods, or set agent.confinement: best-effort to run bash unconfined. `garra config check` names the confinement in force."},

	{EgressProxyAuth, egressWhere,
		"No Proxy-Authorization, or one that is no orchestrator's sandbox's (garra:EGRESS_TOKEN, derived from the sandbox token). Run the command from the sandbox's bash, whose HTTPS_PROXY carries it; after a token rotation the gateway's copy must hold the sandbox's token."},
	{EgressHostNotAllowed, egressWhere,
		"The host is in neither the orchestrator's egress.hosts (egressHosts) nor the hosts of one of its credentials. Add it there if the agent should reach it."},
	{EgressDestinationRefused, egressWhere,
		"The host resolves to a loopback, private, link-local, shared or reserved address, which the gateway never connects to for a sandbox (the guard of web_fetch), unless gateway.mcp_http.web_fetch_allowed_hosts lists it."},
	{EgressPlaintext, egressWhere,
		"A credential matches this plain http:// request; credentials are sent over TLS only, so it is refused rather than sent in clear. Use the https URL."},
	{EgressCredentialUnavailable, egressWhere,
		"A credential matches, but its file cannot be read (emptied, removed, not mounted): it was revoked or is not deployed yet. The request is refused rather than sent without it. `garra config check` names the file."},
	{EgressUnredactable, egressWhere,
		"The upstream answered a request that carried a credential with a content encoding the proxy did not ask for (it asks for gzip and decodes it), so the proxy cannot make sure the credential is not echoed back. Ask the upstream for an identity or gzip answer."},
	{EgressUpstreamFailed, egressWhere,
		"The upstream could not be reached, or its certificate did not verify against the gateway's trust roots (the proxy never skips verification). The gateway log has the cause."},
	{EgressBadRequest, egressWhere,
		"Not a CONNECT host:port nor an absolute-form http:// request, or a protocol upgrade on a request that carries a credential."},
}

// egressWhere is where the egress proxy's kinds appear.
const egressWhere = "egress proxy answer to the sandbox (header Garra-Egress-Refused and body); egress audit lines; metrics"

// Egress is every refusal of the egress proxy, with its HTTP status.
var Egress = []HTTPStatus{
	{407, string(EgressProxyAuth), EgressProxyAuth.Message(), EgressProxyAuth, "Proxy-Authenticate: Basic realm=\"garra egress\"."},
	{403, string(EgressHostNotAllowed), EgressHostNotAllowed.Message(), EgressHostNotAllowed, "CONNECT or http:// to a host outside the allowlist."},
	{403, string(EgressDestinationRefused), EgressDestinationRefused.Message(), EgressDestinationRefused, "An allowed name that resolves to a guarded address."},
	{403, string(EgressPlaintext), EgressPlaintext.Message(), EgressPlaintext, "http:// with a matching credential."},
	{503, string(EgressCredentialUnavailable), EgressCredentialUnavailable.Message(), EgressCredentialUnavailable, "Inside the intercepted TLS session: the credential's file is unreadable."},
	{502, string(EgressUnredactable), EgressUnredactable.Message(), EgressUnredactable, "Inside the intercepted TLS session."},
	{502, string(EgressUpstreamFailed), EgressUpstreamFailed.Message(), EgressUpstreamFailed, "Connect, DNS or TLS failure upstream."},
	{400, string(EgressBadRequest), EgressBadRequest.Message(), EgressBadRequest, "Origin-form requests to the proxy itself; upgrades with a credential."},
}

// The gateway's own refusals of POST /mcp: each is written from its row,
// so the status, body and audit kind are the ones documented.
var (
	RefuseDraining = HTTPStatus{503, string(Draining), "the gateway is shutting down: retry in a few seconds", Draining,
		"A request that arrives after SIGTERM, while the calls in flight drain (up to gateway.drain_seconds); /readyz answers 503 draining first. Retry-After: 5."}
	RefuseTooManyRequests = HTTPStatus{429, string(TooManyRequests), "too many requests", TooManyRequests,
		"The per-IP limit gateway.rate_limit.requests_per_minute is spent. The message names the limit and the wait, which Retry-After carries too (the seconds until the window has room). On POST /mcp the body is instead a JSON-RPC error response (code -32000, the request's id or null, data {kind, limit, window_secs, retry_after_secs}), which an MCP client reads as its call's error; on /api it is this body. Counted in metrics, not in the audit file (a flood must not rotate it away)."}
	RefuseBatchTooManyRequests = HTTPStatus{429, string(TooManyRequests), "too many requests: a JSON-RPC batch counts each of its requests", TooManyRequests,
		"An authenticated JSON-RPC batch needs more of the per-IP limit than is left: each request in it counts (the POST itself counts one, refused or not). Send fewer at once. The body, message and Retry-After are as for the row above."}
	RefuseCrossOrigin = HTTPStatus{403, "forbidden", "cross-origin request refused", OriginRefused,
		"A browser page fired the request (cross-site Origin). MCP clients send none."}
	RefuseHost = HTTPStatus{403, "forbidden", "invalid Host header", HostNotAllowed,
		"The Host is neither loopback nor one of gateway.allowed_hosts (anti DNS rebinding)."}
	RefuseMissingBearer = HTTPStatus{401, string(Unauthorized), "missing bearer token", Unauthorized,
		"No `Authorization: Bearer` header."}
	RefuseInvalidBearer = HTTPStatus{401, string(Unauthorized), "invalid bearer token", Unauthorized,
		"An opaque token that is neither the gateway's owner key nor a token-mode orchestrator's (from its key_file or key_env)."}
	RefuseInvalidToken = HTTPStatus{401, string(InvalidToken), "the token is not valid: bad signature, algorithm, issuer or format", InvalidToken,
		"A JWT no configured issuer or the API server verifies. WWW-Authenticate carries error=\"invalid_token\" for this row and the three below."}
	RefuseTokenExpired = HTTPStatus{401, string(TokenExpired), "the token has expired or is not valid yet", TokenExpired,
		"exp past or nbf ahead, beyond the clock skew."}
	RefuseWrongAudience = HTTPStatus{401, string(WrongAudience), "the token's audience is not this gateway", WrongAudience,
		"The token was issued for another audience."}
	RefuseIdentityNotAllowed = HTTPStatus{401, string(IdentityNotAllowed), "the token is valid but its identity is not an orchestrator of this gateway", IdentityNotAllowed,
		"Verified, for this gateway, but no orchestrator's ServiceAccount, subject or claims."}
	RefuseAuthUnavailable = HTTPStatus{503, string(AuthUnavailable), "the identity provider could not be reached: retry", AuthUnavailable,
		"The OIDC issuer or the API server could not be asked. Retry-After: 5."}
	RefuseNotAcceptable = HTTPStatus{406, string(NotAcceptable), "Accept must list both application/json and text/event-stream", NotAcceptable,
		"The Streamable HTTP Accept rule."}
)

// AuthRefusal is the refusal for a token that failed authentication with
// kind k (an authn verdict). A kind that is no authn verdict is the
// identity provider that could not answer: the token may well be good.
func AuthRefusal(k Kind) HTTPStatus {
	switch k {
	case Unauthorized:
		return RefuseInvalidBearer
	case InvalidToken:
		return RefuseInvalidToken
	case TokenExpired:
		return RefuseTokenExpired
	case WrongAudience:
		return RefuseWrongAudience
	case IdentityNotAllowed:
		return RefuseIdentityNotAllowed
	}
	return RefuseAuthUnavailable
}

// HTTP is every status of POST /mcp, in the order the layers run.
var HTTP = []HTTPStatus{
	{404, "", "404 page not found", "",
		"gateway.mcp_http.enabled is false, or there is no gateway.api_key: the route does not exist (not 403, which would confirm something is there)."},
	RefuseDraining,
	RefuseTooManyRequests,
	RefuseBatchTooManyRequests,
	RefuseCrossOrigin,
	RefuseHost,
	RefuseMissingBearer,
	RefuseInvalidBearer,
	RefuseInvalidToken,
	RefuseTokenExpired,
	RefuseWrongAudience,
	RefuseIdentityNotAllowed,
	RefuseAuthUnavailable,
	RefuseNotAcceptable,
	{405, "", "Method Not Allowed", "",
		"GET or DELETE: the transport is stateless, POST only."},
	{415, "", "Content-Type must be 'application/json'", "",
		"The body is not declared as JSON."},
	{413, "", "request body exceeds 4194304 bytes", "",
		"The body is over 4 MiB."},
	{400, "", "malformed payload", "",
		"The body is not JSON-RPC (also: an unsupported MCP-Protocol-Version header)."},
	{400, "", "JSON-RPC batching is not supported", "",
		"A batch sent with MCP-Protocol-Version 2025-06-18 or later, which have no batches. Without the header, or with an older version, a batch is served and counts each request against the rate limit."},
	{400, "", "JSON RPC not handled", "",
		"A method name the MCP SDK does not know at all (on stdio: -32601)."},
}

// The JSON-RPC errors whose whole message is fixed here.
var (
	RPCStoreUnavailable = RPCCode{-32603, "CodeInternalError", "the conversation store is unavailable", "A garra://chats read while the conversation store fails."}
	RPCParseError       = RPCCode{-32700, "CodeParseError", "Parse error: the line is not valid JSON", "On stdio, a line that is not JSON. The id is null; the server goes on reading the next line."}
	// RPCTooManyRequests is the JSON-RPC error of POST /mcp's 429 (the
	// per-IP limit, RefuseTooManyRequests): -32000, the server-error code
	// JSON-RPC leaves to implementations; the SDK names none.
	RPCTooManyRequests = RPCCode{-32000, "", "too many requests: …", "The body of POST /mcp's HTTP 429."}
)

// JSONRPC is every JSON-RPC error code the MCP servers answer with, on both
// surfaces.
var JSONRPC = []RPCCode{
	{-32601, "CodeMethodNotFound", `method not found: "…"`, "A known MCP method this server does not implement (resources/subscribe, completion/complete); on stdio also any unknown method name (over HTTP that is a 400)."},
	{-32602, "CodeInvalidParams", "`<field>: …`", "Invalid tool arguments (unknown property, wrong type, out of range, a model outside GARRAIA_MCP_MODEL_ALLOWLIST on stdio); invalid prompt arguments (the message starts with the argument's name)."},
	{-32602, "CodeInvalidParams", `unknown tool "…"` + ", " + `unknown prompt "…"`, "A tool or prompt this server does not offer to this caller (garra_agent on stdio without GARRAIA_MCP_ENABLE_TOOLS; delegate_task for a caller without garra_agent). A gateway tool that is only hidden is a refusal envelope instead."},
	{-32602, "CodeInvalidParams", "Resource not found", "An unknown resource URI, a resource the caller's tools do not allow, or a conversation outside its `chats`: identical, data {\"uri\": the URI asked for}, so it is no existence oracle."},
	RPCStoreUnavailable,
}

// StdioJSONRPC are the codes only `garra mcp-server` answers with: its line
// reader's replies to input that is not JSON-RPC (over HTTP such a body is
// a 400).
var StdioJSONRPC = []RPCCode{
	RPCParseError,
	{-32600, "CodeInvalidRequest", "Invalid Request: …", "On stdio, a JSON line that is not a JSON-RPC 2.0 message (no or wrong `jsonrpc`, an id that is neither a string nor a number, an empty batch), or a line over 16 MiB. The id is the line's when it has a usable one, else null; the server goes on reading. Also a request other than initialize or ping sent before initialize without a 2026-07-28 `_meta` protocol version (the message says so)."},
}

// Markdown renders docs/errors.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Errors\n\n")
	b.WriteString("<!-- Generated from internal/errkinds by `UPDATE_GOLDEN=1 go test ./internal/errkinds`. Do not edit by hand. -->\n\n")
	b.WriteString("Every error Garra returns is one of the stable labels or codes below, on every surface: `garra mcp-server` (stdio), `garra gateway` (`POST /mcp`) and the audit file. ")
	b.WriteString("Match on these, never on message text: messages may change, labels and codes do not.\n\n")

	b.WriteString("## `error.kind` labels\n\n")
	b.WriteString("A tool that runs and fails, or that the policy refuses, returns a tool result with `isError: true` whose text is an envelope ")
	b.WriteString("`{\"schema\":…,\"ok\":false,\"error\":{\"kind\":…,\"message\":…}}`. The same labels appear as `{\"error\":{\"kind\":…}}` in the audit file.\n\n")
	b.WriteString("| kind | defined by | where | meaning and fix |\n|---|---|---|---|\n")
	for _, k := range Kinds {
		fmt.Fprintf(&b, "| `%s` | `errkinds.%s` | %s | %s |\n", k.Kind, k.Kind.GoName(), cell(k.Where), cell(k.Meaning))
	}

	b.WriteString("\n## HTTP statuses of `POST /mcp`\n\n")
	b.WriteString("The gateway's own refusals carry the body `{\"error\":<code>,\"message\":<message>}`; the router and the MCP SDK answer in plain text. ")
	b.WriteString("The audit column is the kind in `garra_mcp_refusals_total` and the audit file. Rows are in the order the layers run.\n\n")
	b.WriteString("| status | body `error` | message / body | audit kind | when |\n|---|---|---|---|---|\n")
	for _, h := range HTTP {
		code, audit := "plain text", "—"
		if h.Error != "" {
			code = "`" + h.Error + "`"
		}
		if h.Audit != "" {
			audit = "`" + string(h.Audit) + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", h.Status, code, cell(h.Body), audit, cell(h.When))
	}

	b.WriteString("\n## Egress proxy refusals\n\n")
	b.WriteString("The gateway's egress proxy (gateway.egress.listen) answers a sandbox's refused request with the status below, the header `Garra-Egress-Refused: <kind>` and the body `{\"error\":<kind>,\"message\":<message>}`; ")
	b.WriteString("for a CONNECT the client may show the status only (curl and git: `CONNECT tunnel failed, response 403`), the gateway's egress audit line has the kind.\n\n")
	b.WriteString("| status | kind | message | when |\n|---|---|---|---|\n")
	for _, h := range Egress {
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s |\n", h.Status, h.Error, cell(h.Body), cell(h.When))
	}

	b.WriteString("\n## JSON-RPC error codes\n\n")
	b.WriteString("Protocol errors, answered instead of a result (both surfaces). Input that is not JSON-RPC 2.0 at all gets -32700 or -32600 on stdio, ")
	b.WriteString("and the session goes on; over HTTP it is the 400 above.\n\n")
	b.WriteString("| code | go-sdk constant | message | when |\n|---|---|---|---|\n")
	for _, r := range append(append([]RPCCode{}, StdioJSONRPC...), JSONRPC...) {
		fmt.Fprintf(&b, "| %d | `jsonrpc.%s` | %s | %s |\n", r.Code, r.Name, cell(r.Message), cell(r.When))
	}

	b.WriteString("\n## Audit outcomes\n\n")
	b.WriteString("Each audit line (`<data_dir>/audit.jsonl` by default) has one `outcome`; refusals and failures add `error.kind` from the first table.\n\n")
	b.WriteString("| outcome | meaning |\n|---|---|\n")
	for _, o := range Outcomes {
		fmt.Fprintf(&b, "| `%s` | %s |\n", o.Outcome, cell(o.Meaning))
	}
	return b.String()
}

// Outcome is one audit outcome.
type Outcome struct {
	Outcome string
	Meaning string
}

// Outcomes are the audit file's outcomes (internal/audit.Outcomes).
var Outcomes = []Outcome{
	{"ok", "The call or read succeeded."},
	{"error", "It ran and failed (provider_error, timeout, unavailable)."},
	{"refused", "The policy said no before anything ran; error.kind says why. HTTP-layer refusals (401, 403, 406) have no caller."},
	{"invalid_params", "The arguments were rejected (JSON-RPC -32602)."},
	{"not_found", "No such tool, resource or conversation. Caller-chosen names and URIs appear only as `target` pseudonyms."},
	{"cancelled", "Its caller cancelled it before it finished (error.kind `cancelled`); `garra_mcp_calls_total` counts it under this outcome, not as an error."},
}

// cell escapes a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
