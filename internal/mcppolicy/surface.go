package mcppolicy

import "slices"

// The resources. Each gateway resource is filtered by the same policy as
// the tools: a caller lists and reads only what its tools would show it.
const (
	ResourceStatus = "garra://status"       // what garra_status returns; with garra_status
	ResourcePolicy = "garra://policy"       // the caller's own policy; everyone
	ResourceChats  = "garra://chats"        // what garra_list_chats returns; with garra_list_chats
	ResourceChat   = "garra://chats/{chat}" // one redacted history; with garra_read_history

	// ResourceToolchain is the caller's own sandbox toolchain, read from
	// its sandbox; with garra_agent and a sandbox (toolchain.URI).
	ResourceToolchain = "garra://sandbox/toolchain"
)

// AllResources lists the resources and the template in garra://policy
// order.
var AllResources = []string{ResourceStatus, ResourcePolicy, ResourceChats, ResourceChat, ResourceToolchain}

// resourceTool is the tool a resource stands for.
var resourceTool = map[string]string{ResourceStatus: ToolStatus, ResourceChats: ToolListChats, ResourceChat: ToolReadHistory}

// ResourceOnSurface reports whether the surface c talks to knows the
// resource (a URI, or ResourceChat for the template): the stdio server
// has garra://policy alone.
func ResourceOnSurface(c Caller, resource string) bool {
	if c.Kind == Local {
		return resource == ResourcePolicy
	}
	return slices.Contains(AllResources, resource)
}

// ResourceVisible reports whether c may list and read a resource: exactly
// when it may call its tool. garra://policy is everyone's; the toolchain
// belongs to a caller whose agent runs in its own sandbox.
func ResourceVisible(c Caller, l Limits, resource string) bool {
	if !ResourceOnSurface(c, resource) {
		return false
	}
	switch resource {
	case ResourcePolicy:
		return true
	case ResourceToolchain:
		return c.HasSandbox() && CanCall(c, l, ToolAgent)
	}
	return CanCall(c, l, resourceTool[resource])
}

// VisibleResources lists the resources c may list and read, in
// AllResources order.
func VisibleResources(c Caller, l Limits) []string {
	var out []string
	for _, r := range AllResources {
		if ResourceVisible(c, l, r) {
			out = append(out, r)
		}
	}
	return out
}

// The prompts (mcpprompts renders them).
const (
	PromptOnboard  = "onboard_orchestrator"
	PromptDiagnose = "diagnose_gateway"
	PromptDelegate = "delegate_task"
)

// PromptVisible reports whether c is offered a prompt. onboard_orchestrator
// renders configuration text and reads nothing, so everyone has it;
// diagnose_gateway walks the gateway's read tools, which only gateway
// callers have; delegate_task goes only to a caller that can call
// garra_agent, so no caller is handed a call it would see refused.
func PromptVisible(c Caller, l Limits, prompt string) bool {
	switch prompt {
	case PromptOnboard:
		return true
	case PromptDiagnose:
		return c.Kind != Local
	case PromptDelegate:
		return CanCall(c, l, ToolAgent)
	}
	return false
}
