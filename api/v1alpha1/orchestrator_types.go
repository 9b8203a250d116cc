package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Orchestrator is one external caller of a GarraServer's gateway, owned by
// a team in its own namespace: it attaches to the server its serverRef
// names when that server's spec.allowedOrchestrators admits the namespace,
// and its sandbox, workspace, ServiceAccount, NetworkPolicy and token
// Secret then live in this namespace. The gateway knows it as
// NAMESPACE/NAME.
//
// The name prefixes its child objects (NAME-sandbox is a Service): a
// DNS-1035 label of at most 40 characters, as an inline entry's name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=orch,categories=garra
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.spec.serverRef.name`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`,description="whether the server admits this Orchestrator"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.conditions[?(@.type=="Verified")].status`,description="whether the gateway's handshake with its sandbox works"
// +kubebuilder:printcolumn:name="Token",type=string,JSONPath=`.status.tokenSecret`,priority=1
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits, '-', starting with a letter) of at most 40 characters: it prefixes the Service NAME-sandbox"
type Orchestrator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AttachedOrchestratorSpec   `json:"spec"`
	Status AttachedOrchestratorStatus `json:"status,omitempty"`
}

// OrchestratorList is a list of Orchestrators.
//
// +kubebuilder:object:root=true
type OrchestratorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Orchestrator `json:"items"`
}

// AttachedOrchestratorSpec is the server to attach to and the same
// settings an inline entry of spec.orchestrators has. Secrets it names
// (tokenSecretRef) are in the Orchestrator's namespace.
type AttachedOrchestratorSpec struct {
	// ServerRef names the GarraServer to attach to.
	ServerRef ServerReference `json:"serverRef"`

	OrchestratorSettings `json:",inline"`
}

// ServerReference names a GarraServer.
type ServerReference struct {
	// Name of the GarraServer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=55
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Namespace of the GarraServer; empty means the Orchestrator's own.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// AttachedOrchestratorStatus is what the team can read about its
// orchestrator without any right in the server's namespace.
type AttachedOrchestratorStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Accepted (the server admits it), Ready (its sandbox
	// has an available replica), ConfigApplied (the gateway reports
	// having loaded a config with this generation of it) and Verified
	// (the gateway's last MCP handshake with its sandbox worked).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Identity is the name the gateway knows this orchestrator by
	// (NAMESPACE/NAME), in its audit lines and policy.
	// +optional
	Identity string `json:"identity,omitempty"`

	// Endpoint is the in-cluster URL of the gateway's MCP bridge, where
	// this orchestrator calls.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// TokenSecret is the Secret in this namespace holding the bearer
	// token (key token, or the key tokenSecretRef names).
	// +optional
	TokenSecret string `json:"tokenSecret,omitempty"`

	// WorkspaceClaim is its workspace PersistentVolumeClaim, in this
	// namespace.
	// +optional
	WorkspaceClaim string `json:"workspaceClaim,omitempty"`

	// SandboxEndpoint is the in-cluster URL of its sandbox.
	// +optional
	SandboxEndpoint string `json:"sandboxEndpoint,omitempty"`

	// Suspended is true while an idle sandbox is scaled to zero; its next
	// call wakes it.
	// +optional
	Suspended bool `json:"suspended,omitempty"`

	// LastCall is when the gateway last started a call in this sandbox
	// (with idleTimeout only).
	// +optional
	LastCall *metav1.Time `json:"lastCall,omitempty"`

	// Toolchain names the programs its sandbox found on its PATH, as the
	// gateway last reported them.
	// +listType=atomic
	// +optional
	Toolchain []string `json:"toolchain,omitempty"`

	// TokenRotation is set while a replaced token of this orchestrator
	// (its bearer or its sandbox token) is still accepted.
	// +optional
	TokenRotation *TokenRotationStatus `json:"tokenRotation,omitempty"`

	// Quota is the allowance in force: spec.quota over the server's
	// spec.gateway.quota field by field, as the gateway applies it; absent
	// when unlimited. What remains of it changes on every call, so it is
	// in the gateway's metrics and garra_status, not here.
	// +optional
	Quota *QuotaSpec `json:"quota,omitempty"`
}
