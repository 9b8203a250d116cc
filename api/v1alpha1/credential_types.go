package v1alpha1

// CredentialSpec is a secret the gateway adds to the sandbox's outbound
// HTTP requests for the hosts it names (sandbox.egress: gateway). The
// sandbox never holds it: the value goes only to the gateway.
type CredentialSpec struct {
	// Name identifies the credential in audit lines, metrics and
	// refusals: a lower-case DNS label, unique within the orchestrator.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// SecretRef names the Secret key that holds the value, in the
	// orchestrator's own namespace.
	SecretRef SecretKeySelector `json:"secretRef"`

	// Hosts the credential is sent to: exact host names or a leading
	// "*." wildcard (any name below that domain). They are allowed
	// destinations of the sandbox too.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Hosts []string `json:"hosts"`

	// Methods limits the credential to these HTTP methods; empty means
	// any.
	// +listType=set
	// +kubebuilder:validation:MaxItems=9
	// +kubebuilder:validation:items:Enum=GET;HEAD;POST;PUT;PATCH;DELETE;OPTIONS;CONNECT;TRACE
	// +optional
	Methods []string `json:"methods,omitempty"`

	// PathPrefixes limits the credential to request paths that start with
	// one of these (each starting with "/"); empty means any.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^/`
	// +optional
	PathPrefixes []string `json:"pathPrefixes,omitempty"`

	// Inject says where and how the value is sent.
	// +kubebuilder:default={}
	// +optional
	Inject CredentialInject `json:"inject,omitempty"`
}

// CredentialScheme is how a credential's value is written into its header.
// +kubebuilder:validation:Enum=Bearer;Basic;None
type CredentialScheme string

const (
	// CredentialBearer sends "Bearer VALUE".
	CredentialBearer CredentialScheme = "Bearer"
	// CredentialBasic sends "Basic base64(USERNAME:VALUE)", what git over
	// HTTPS and most package registries expect.
	CredentialBasic CredentialScheme = "Basic"
	// CredentialNone sends VALUE as is, for API-key headers.
	CredentialNone CredentialScheme = "None"
)

// CredentialInject is the header a credential is sent in.
// +kubebuilder:validation:XValidation:rule="!has(self.scheme) || self.scheme != 'Basic' || (has(self.username) && size(self.username) > 0)",message="inject.username is required with scheme Basic"
type CredentialInject struct {
	// Header is the request header; empty means Authorization.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	// +optional
	Header string `json:"header,omitempty"`

	// Scheme is Bearer (default), Basic or None.
	// +kubebuilder:default=Bearer
	// +optional
	Scheme CredentialScheme `json:"scheme,omitempty"`

	// Username is the user name of the Basic scheme (x-access-token for
	// a GitHub token).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Username string `json:"username,omitempty"`
}
