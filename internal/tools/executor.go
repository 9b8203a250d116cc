// Package tools is the agent's hands: the Executor seam the agent loop calls,
// and the local tools behind it (bash, file_read, file_write, git_diff,
// web_fetch, web_search). The gateway adds a remote Executor that runs the
// same tools in an orchestrator's pod, so callers must never assume the
// tools run in this process.
package tools

import (
	"context"
	"encoding/json"
	"errors"
)

// Tool describes one tool as the model sees it.
type Tool struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema object with additionalProperties false.
	InputSchema json.RawMessage
}

// Result is what a tool call produced. A refused or failed call is a Result
// with IsError set and Output saying why (safe to show to the model); the
// agent feeds it back to the model rather than aborting.
type Result struct {
	Output  string
	IsError bool
}

// Executor lists and runs tools. Implementations must be safe for
// concurrent use.
type Executor interface {
	// Tools lists the tools available now, in a stable order.
	Tools(ctx context.Context) ([]Tool, error)
	// Call runs one tool. A returned error means the executor itself failed
	// (unreachable sandbox, cancelled context), not that the tool refused.
	Call(ctx context.Context, name string, args json.RawMessage) (Result, error)
}

// ErrUnknownTool is returned by Call for a name Tools did not list.
var ErrUnknownTool = errors.New("unknown tool")
