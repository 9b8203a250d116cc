package v1alpha1

// QuotaSpec is one orchestrator's own allowance on the gateway, inside the
// bridge-wide budgets; a field left out is unlimited at its level. Kept
// apart from OrchestratorSpec so that every kind naming an orchestrator
// reuses it.
type QuotaSpec struct {
	// AskPerMinute bounds garra_ask calls in any one-minute window.
	// +kubebuilder:validation:Minimum=1
	// +optional
	AskPerMinute *int32 `json:"askPerMinute,omitempty"`

	// AgentPerMinute bounds garra_agent calls in any one-minute window.
	// +kubebuilder:validation:Minimum=1
	// +optional
	AgentPerMinute *int32 `json:"agentPerMinute,omitempty"`

	// SendPerMinute bounds garra_send_message calls in any one-minute
	// window.
	// +kubebuilder:validation:Minimum=1
	// +optional
	SendPerMinute *int32 `json:"sendPerMinute,omitempty"`

	// AgentConcurrent bounds the garra_agent runs in flight at once.
	// +kubebuilder:validation:Minimum=1
	// +optional
	AgentConcurrent *int32 `json:"agentConcurrent,omitempty"`

	// LLMTokensPerDay bounds the model tokens (input and output) of
	// garra_ask and garra_agent in one UTC day.
	// +kubebuilder:validation:Minimum=1
	// +optional
	LLMTokensPerDay *int64 `json:"llmTokensPerDay,omitempty"`
}
