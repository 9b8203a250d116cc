package gateway

import (
	"encoding/json"
	"fmt"
)

// Input schemas of the seven tools, written out so that tools/list is
// exactly what the decoders accept (a test checks they agree).
var (
	statusSchema    = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	pairSchema      = statusSchema
	listChatsSchema = json.RawMessage(`{"type":"object","properties":{
  "channel":{"type":"string","enum":["telegram","web"],"description":"Only conversations of this channel."}},
  "additionalProperties":false}`)
	sendSchema = json.RawMessage(`{"type":"object","properties":{
  "channel":{"type":"string","enum":["telegram"],"default":"telegram","description":"The channel to send on. Only telegram has approved destinations."},
  "chat_id":{"type":"string","maxLength":32,"description":"The destination chat id; it must be listed in the operator's proactive_chat_ids."},
  "text":{"type":"string","maxLength":4096,"description":"The message text (Telegram's limit, 4096 characters)."},
  "dry_run":{"type":"boolean","default":false,"description":"Check the call and return the exact text that would be sent (redacted) and the resolved destination, without sending or spending the send budget."}},
  "required":["chat_id","text"],"additionalProperties":false}`)
)

// askSchema is garra_ask's schema; provider and model are the defaults in
// force (llm.provider and llm.model), what a call that omits them gets.
func askSchema(provider, model string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{
  "message":{"type":"string","maxLength":65536,"description":"The question. Max 64 KiB; trimmed; must not be empty."},
  "provider":{"type":"string","enum":["ollama","anthropic","openai","openrouter"],"default":%s,"description":"LLM provider kind."},
  "model":{"type":"string","default":%s,"description":"Model id; it must be allowed by the gateway's ask_allowed_models."},
  "timeout_secs":{"type":"integer","minimum":1,"maximum":600,"default":60,"description":"Wall-clock limit, in seconds."},
  "system_prompt":{"type":"string","maxLength":8192,"description":"Optional system prompt (max 8 KiB)."}},
  "required":["message"],"additionalProperties":false}`, jsonString(provider), jsonString(model)))
}

// jsonString is s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// readHistorySchema bounds limit by max_history_messages.
func readHistorySchema(maxHistory int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{
  "chat":{"type":"string","maxLength":256,"description":"A conversation handle: the chat field of a garra_list_chats row."},
  "limit":{"type":"integer","minimum":1,"maximum":%d,"default":%d,"description":"How many of the most recent messages to return."}},
  "required":["chat"],"additionalProperties":false}`, maxHistory, maxHistory))
}

// agentSchema bounds timeout_secs by agent_max_seconds: a caller may ask for
// less, never more. provider and model are the defaults in force.
func agentSchema(maxSeconds int, provider, model string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{
  "message":{"type":"string","maxLength":65536,"description":"The task for the agent. Max 64 KiB."},
  "provider":{"type":"string","enum":["ollama","anthropic","openai","openrouter"],"default":%s,"description":"LLM provider kind."},
  "model":{"type":"string","default":%s,"description":"Model id; it must be allowed by the gateway's ask_allowed_models."},
  "timeout_secs":{"type":"integer","minimum":5,"maximum":%d,"default":%d,"description":"Wall-clock cap for the whole agent run, LLM and tools."},
  "system_prompt":{"type":"string","maxLength":8192,"description":"Optional system prompt (max 8 KiB)."}},
  "required":["message"],"additionalProperties":false}`, jsonString(provider), jsonString(model), maxSeconds, maxSeconds))
}

type noArgs struct{}

type listChatsArgs struct {
	Channel *string `json:"channel"`
}

type readHistoryArgs struct {
	Chat  *string `json:"chat"`
	Limit *int    `json:"limit"`
}

type sendArgs struct {
	Channel *string `json:"channel"`
	ChatID  *string `json:"chat_id"`
	Text    *string `json:"text"`
	DryRun  *bool   `json:"dry_run"`
}

type askArgs struct {
	Message      *string `json:"message"`
	Provider     *string `json:"provider"`
	Model        *string `json:"model"`
	TimeoutSecs  *int    `json:"timeout_secs"`
	SystemPrompt *string `json:"system_prompt"`
}
