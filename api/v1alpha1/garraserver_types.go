package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GarraServer is one Garra gateway with its orchestrators: the gateway
// Deployment (which holds the LLM key and runs the agent loop) and, per
// orchestrator, a sandbox pod that is the agent's hands on its own workspace.
//
// The name prefixes every child object, whose Services are DNS labels:
// it must be a DNS-1035 label of at most 55 characters, and together with
// each orchestrator name at most 54 (NAME-sandbox-O is at most 63).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=garra;gs,categories=garra
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Orchestrators",type=string,JSONPath=`.status.orchestratorsReady`,description="ready/total sandboxes"
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.conditions[?(@.type=="Verified")].status`,description="whether the gateway's handshake with every sandbox works"
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.status.conditions[?(@.type=="ConfigApplied")].reason`,description="whether the gateway runs the rendered config"
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 55 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits, '-', starting with a letter) of at most 55 characters: it prefixes the Service NAME-gateway"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.orchestrators) || self.spec.orchestrators.all(o, size(self.metadata.name) + size(o.name) <= 54)",message="metadata.name and an orchestrator name together must be at most 54 characters: the Service NAME-sandbox-O is a DNS label of at most 63"
type GarraServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GarraServerSpec   `json:"spec"`
	Status GarraServerStatus `json:"status,omitempty"`
}

// GarraServerList is a list of GarraServers.
//
// +kubebuilder:object:root=true
type GarraServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GarraServer `json:"items"`
}

// GarraServerSpec is the desired gateway and its orchestrators.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.gateway) && has(self.gateway.allowSend) && self.gateway.allowSend) || (has(self.channels) && has(self.channels.telegram) && has(self.channels.telegram.proactiveChatIDs) && size(self.channels.telegram.proactiveChatIDs) > 0)",fieldPath=".gateway.allowSend",message="allowSend needs at least one approved destination in channels.telegram.proactiveChatIDs (with none, every send is refused)"
type GarraServerSpec struct {
	// Image of the gateway container. Empty means the manager's --garra-image.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// SandboxImage is the default image of the orchestrators' sandbox
	// containers. Empty means the manager's --sandbox-image.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	SandboxImage string `json:"sandboxImage,omitempty"`

	// LLM is the provider the gateway's ask and agent tools call.
	LLM LLMSpec `json:"llm"`

	// Gateway holds the knobs of the gateway's POST /mcp bridge.
	// +kubebuilder:default={}
	// +optional
	Gateway GatewaySpec `json:"gateway,omitempty"`

	// Channels configures the chat channels (Telegram).
	// +optional
	Channels *ChannelsSpec `json:"channels,omitempty"`

	// Orchestrators are the external callers of the gateway; each gets its
	// own bearer token, sandbox pod and workspace volume.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Orchestrators []OrchestratorSpec `json:"orchestrators,omitempty"`

	// AllowedOrchestrators says which Orchestrator objects may attach to
	// this server through their spec.serverRef, as a Gateway's
	// allowedRoutes says which routes may attach to it. Absent means
	// those of this GarraServer's own namespace only.
	// +kubebuilder:default={namespaces:{from: Same}}
	// +optional
	AllowedOrchestrators *AllowedOrchestrators `json:"allowedOrchestrators,omitempty"`

	// Telemetry points the gateway and the sandboxes at an OpenTelemetry
	// collector for traces. Absent means no tracing at all.
	// +optional
	Telemetry *TelemetrySpec `json:"telemetry,omitempty"`
}

// AllowedOrchestrators governs attachment of Orchestrator objects.
type AllowedOrchestrators struct {
	// Namespaces are the namespaces whose Orchestrators may attach.
	// +kubebuilder:default={from: Same}
	// +optional
	Namespaces *OrchestratorNamespaces `json:"namespaces,omitempty"`
}

// FromNamespaces is where attaching Orchestrators may come from.
// +kubebuilder:validation:Enum=All;Same;Selector
type FromNamespaces string

// The three FromNamespaces values, with Gateway API's meaning.
const (
	// NamespacesFromAll admits Orchestrators of every namespace.
	NamespacesFromAll FromNamespaces = "All"
	// NamespacesFromSame admits only those of the GarraServer's namespace.
	NamespacesFromSame FromNamespaces = "Same"
	// NamespacesFromSelector admits those of the namespaces whose labels
	// match selector.
	NamespacesFromSelector FromNamespaces = "Selector"
)

// OrchestratorNamespaces is Gateway API's RouteNamespaces for
// Orchestrators: from, and the selector when from is Selector.
// +kubebuilder:validation:XValidation:rule="!has(self.from) || self.from != 'Selector' || has(self.selector)",fieldPath=".selector",message="from Selector needs selector: the labels of the namespaces whose Orchestrators may attach"
type OrchestratorNamespaces struct {
	// From is All, Same (default) or Selector.
	// +kubebuilder:default=Same
	// +optional
	From FromNamespaces `json:"from,omitempty"`

	// Selector must match a namespace's labels for its Orchestrators to
	// attach; only with from Selector.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// TelemetrySpec is rendered as the standard OTEL_* variables of the gateway
// and sandbox containers. Sandboxes reach the collector only where a
// NetworkPolicy allows it: their own denies all egress by default, and
// NetworkPolicies add up, so one more selecting them can open the way.
type TelemetrySpec struct {
	// OTLPEndpoint is the collector's OTLP/HTTP base URL (protobuf;
	// usually port 4318): spans are POSTed to <otlpEndpoint>/v1/traces.
	// Rendered as OTEL_EXPORTER_OTLP_ENDPOINT.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="otlpEndpoint must be an http or https URL"
	OTLPEndpoint string `json:"otlpEndpoint"`

	// Sampler is OTEL_TRACES_SAMPLER. Empty means parentbased_always_on.
	// +kubebuilder:validation:Enum=always_on;always_off;traceidratio;parentbased_always_on;parentbased_always_off;parentbased_traceidratio
	// +optional
	Sampler string `json:"sampler,omitempty"`

	// SamplerRatio is OTEL_TRACES_SAMPLER_ARG, the fraction of traces the
	// ratio samplers keep, from 0 to 1 ("0.25"). Empty means 1.
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]+)?|1(\.0+)?)$`
	// +optional
	SamplerRatio string `json:"samplerRatio,omitempty"`
}

// Provider is an LLM provider kind.
// +kubebuilder:validation:Enum=ollama;anthropic;openai;openrouter
type Provider string

// The four provider kinds.
const (
	ProviderOllama     Provider = "ollama"
	ProviderAnthropic  Provider = "anthropic"
	ProviderOpenAI     Provider = "openai"
	ProviderOpenRouter Provider = "openrouter"
)

// LLMSpec selects the provider, the model and how to reach them.
//
// +kubebuilder:validation:XValidation:rule="self.provider == 'ollama' || has(self.apiKeySecretRef)",fieldPath=".apiKeySecretRef",message="apiKeySecretRef is required unless provider is ollama"
type LLMSpec struct {
	// Provider is the provider kind.
	// +kubebuilder:default=openrouter
	// +optional
	Provider Provider `json:"provider,omitempty"`

	// Model is the default model. Empty means the gateway's project default.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Model string `json:"model,omitempty"`

	// BaseURL overrides the provider's endpoint (a local ollama, a proxy).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == '' || (isURL(self) && url(self).getScheme() in ['http', 'https'])",message="baseURL must be an http or https URL"
	// +optional
	BaseURL string `json:"baseURL,omitempty"`

	// APIKeySecretRef names the Secret key holding the provider's API key. It
	// reaches the gateway only as the environment variable GARRA_LLM_API_KEY.
	// +optional
	APIKeySecretRef *SecretKeySelector `json:"apiKeySecretRef,omitempty"`
}

// SecretKeySelector names one key of a Secret in the GarraServer's namespace.
// The operator reads such a Secret (to roll pods when it changes) and never
// writes it.
type SecretKeySelector struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key within the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// GatewaySpec holds the gateway's knobs. Names, defaults and bounds are those
// of gateway.mcp_http in the gateway's config.yml; the bridge itself is
// always enabled by the operator.
//
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas <= 1 || (has(self.store) && has(self.store.driver) && self.store.driver == 'postgres')",fieldPath=".replicas",message="replicas above 1 need a shared store: set spec.gateway.store.driver to postgres (with dsnSecretRef), or spec.gateway.replicas to 1 (SQLite lives on one ReadWriteOnce volume)"
type GatewaySpec struct {
	// Replicas of the gateway. Above 1 needs store.driver postgres.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Store is where conversations, pairing, the Telegram offset and,
	// with postgres, the budgets are kept.
	// +kubebuilder:default={}
	// +optional
	Store GatewayStoreSpec `json:"store,omitempty"`

	// APIKeySecretRef names an existing Secret key with the owner's bearer
	// credential (mounted in the gateway pod as its gateway.api_key_file).
	// When absent the operator generates one (32 random bytes, base64url) in
	// the Secret NAME-gateway, key api-key, once.
	// +optional
	APIKeySecretRef *SecretKeySelector `json:"apiKeySecretRef,omitempty"`

	// AllowSend unlocks garra_send_message. It needs at least one
	// channels.telegram.proactiveChatIDs entry: the list is the approval.
	// +kubebuilder:default=false
	// +optional
	AllowSend bool `json:"allowSend,omitempty"`

	// AllowAsk unlocks garra_ask, which spends LLM tokens.
	// +kubebuilder:default=false
	// +optional
	AllowAsk bool `json:"allowAsk,omitempty"`

	// AskAllowedModels is the model allowlist shared by garra_ask and
	// garra_agent. Empty means only the project default model.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	AskAllowedModels []string `json:"askAllowedModels,omitempty"`

	// AskBudgetPerMinute is garra_ask's budget for the whole bridge.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +optional
	AskBudgetPerMinute int32 `json:"askBudgetPerMinute,omitempty"`

	// AllowAgent unlocks garra_agent for the orchestrators that list agent.
	// +kubebuilder:default=false
	// +optional
	AllowAgent bool `json:"allowAgent,omitempty"`

	// AgentBudgetPerMinute is garra_agent's budget for the whole bridge.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +optional
	AgentBudgetPerMinute int32 `json:"agentBudgetPerMinute,omitempty"`

	// Quota is every orchestrator's default quota (each orchestrator's own
	// quota overrides it field by field); absent = unlimited.
	// +optional
	Quota *QuotaSpec `json:"quota,omitempty"`

	// AgentMaxSeconds is the wall-clock ceiling of one agent run.
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=600
	// +optional
	AgentMaxSeconds int32 `json:"agentMaxSeconds,omitempty"`

	// MaxHistoryMessages caps garra_read_history.
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxHistoryMessages int32 `json:"maxHistoryMessages,omitempty"`

	// RedactPatterns are extra regexes redacted on top of the built-ins
	// (RE2/Rust syntax, linear time). A pattern that does not compile or that
	// matches the empty string is ignored by the gateway and reported as a
	// Warning event.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +optional
	RedactPatterns []string `json:"redactPatterns,omitempty"`

	// WebFetchAllowedHosts are hosts (a name or IP, any port) or host:port
	// pairs that web_fetch may reach from the gateway even though they
	// resolve to a loopback, private or link-local address
	// (gateway.mcp_http.web_fetch_allowed_hosts). It applies to agent runs
	// whose tools run in the gateway (the owner's) and to the gateway's
	// egress proxy (sandboxes with egress: gateway, which still reach only
	// their allowed hosts); other sandbox pods are governed by their
	// NetworkPolicy alone. An entry that is not a host or host:port is
	// ignored by the gateway and reported as a Warning event.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=261
	// +optional
	WebFetchAllowedHosts []string `json:"webFetchAllowedHosts,omitempty"`

	// RateLimitPerMinute is the per-IP request limit (gateway.rate_limit).
	// +kubebuilder:default=120
	// +kubebuilder:validation:Minimum=1
	// +optional
	RateLimitPerMinute int32 `json:"rateLimitPerMinute,omitempty"`

	// WebSearch gives garra_agent the web_search tool (Brave Search). The
	// gateway serves it itself, next to the tools of each orchestrator's
	// sandbox: the key never reaches a sandbox pod.
	// +optional
	WebSearch *WebSearchSpec `json:"webSearch,omitempty"`

	// Storage is the gateway's data volume (conversations, audit).
	// +kubebuilder:default={}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// Resources of the gateway container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// DrainSeconds is how long the gateway and the sandboxes let in-flight
	// calls and agent runs finish after SIGTERM. The pods'
	// terminationGracePeriodSeconds is this plus 10, so the kubelet does
	// not kill a process that is still draining.
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	// +optional
	DrainSeconds int32 `json:"drainSeconds,omitempty"`

	// Audience is the audience the orchestrators' projected
	// ServiceAccount tokens must be issued for (auth.serviceAccount), and
	// the resource the gateway names in its OAuth protected resource
	// metadata. Empty = status.endpoint.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Audience string `json:"audience,omitempty"`

	// TokenRotationGracePeriod is how long a replaced orchestrator or
	// sandbox token stays valid next to its successor (a rotation, or a
	// bring-your-own token Secret whose value changed), so callers can
	// switch without an outage. (The default is written as Go prints a
	// duration, so a client that reads and writes back the spec does not
	// change it.)
	// +kubebuilder:default="5m0s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="tokenRotationGracePeriod must be between 1s and 24h"
	// +optional
	TokenRotationGracePeriod *metav1.Duration `json:"tokenRotationGracePeriod,omitempty"`

	// Egress tunes the gateway's egress proxy, which serves the
	// orchestrators whose sandbox has egress: gateway.
	// +optional
	Egress *GatewayEgressSpec `json:"egress,omitempty"`
}

// GatewayEgressSpec tunes the egress proxy. The proxy itself runs
// whenever some orchestrator has sandbox.egress: gateway; its CA, which
// the sandboxes trust, is generated by the operator into the Secret
// NAME-gateway-egress-ca.
type GatewayEgressSpec struct {
	// TrustedCASecretRef names a Secret key (in the GarraServer's
	// namespace) holding PEM certificates of CAs the gateway trusts for
	// upstream TLS besides the system's: a registry or git server inside
	// the company with a private CA. The gateway reads it at start, so a
	// change rolls it. A private address is still refused unless
	// spec.gateway.webFetchAllowedHosts lists the host.
	// +optional
	TrustedCASecretRef *SecretKeySelector `json:"trustedCASecretRef,omitempty"`
}

// Gateway store drivers.
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// GatewayStoreSpec selects the gateway's store: SQLite on the gateway's
// data claim (one replica), or a PostgreSQL you run (managed, or an
// in-cluster operator such as CloudNativePG) that every replica shares.
//
// +kubebuilder:validation:XValidation:rule="!has(self.driver) || self.driver != 'postgres' || has(self.dsnSecretRef)",fieldPath=".dsnSecretRef",message="store.driver postgres needs dsnSecretRef: the Secret key holding the PostgreSQL DSN (postgres://user:password@host:5432/db)"
// +kubebuilder:validation:XValidation:rule="(has(self.driver) && self.driver == 'postgres') || !has(self.dsnSecretRef)",fieldPath=".dsnSecretRef",message="dsnSecretRef is used only with store.driver postgres: set the driver, or remove dsnSecretRef"
type GatewayStoreSpec struct {
	// Driver is sqlite or postgres.
	// +kubebuilder:validation:Enum=sqlite;postgres
	// +kubebuilder:default=sqlite
	// +optional
	Driver string `json:"driver,omitempty"`

	// DSNSecretRef names the Secret key holding the PostgreSQL DSN. It
	// reaches the gateway only as the environment variable
	// GARRA_STORE_DSN.
	// +optional
	DSNSecretRef *SecretKeySelector `json:"dsnSecretRef,omitempty"`
}

// WebSearchSpec configures the gateway's web_search tool.
type WebSearchSpec struct {
	// APIKeySecretRef names the Secret key with the Brave Search API key.
	// It reaches the gateway only as the environment variable
	// BRAVE_API_KEY.
	APIKeySecretRef SecretKeySelector `json:"apiKeySecretRef"`

	// BaseURL overrides the Brave Search API endpoint (a proxy).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == '' || (isURL(self) && url(self).getScheme() in ['http', 'https'])",message="baseURL must be an http or https URL"
	// +optional
	BaseURL string `json:"baseURL,omitempty"`
}

// StorageSpec sizes a PersistentVolumeClaim. Kubernetes allows only growing
// a bound claim (when its class allows expansion); other changes after the
// claim exists are not applied.
type StorageSpec struct {
	// Size of the claim; it must be positive (checked by the controller: a
	// CEL rule over a quantity in a list of 32 exceeds the cost budget).
	// +kubebuilder:default="1Gi"
	// +optional
	Size resource.Quantity `json:"size,omitzero"`

	// StorageClassName of the claim. Empty means the cluster's default class.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
}

// ChannelsSpec configures the chat channels.
type ChannelsSpec struct {
	// Telegram configures the Telegram channel.
	// +optional
	Telegram *TelegramSpec `json:"telegram,omitempty"`
}

// TelegramSpec configures the Telegram channel.
type TelegramSpec struct {
	// BotTokenSecretRef names the Secret key with the bot token; it reaches
	// the gateway only as TELEGRAM_BOT_TOKEN.
	// +optional
	BotTokenSecretRef *SecretKeySelector `json:"botTokenSecretRef,omitempty"`

	// ProactiveChatIDs are the approved destinations of garra_send_message.
	// Strings, because Telegram chat ids are 64-bit and may be negative.
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^-?[0-9]{1,19}$`
	// +optional
	ProactiveChatIDs []string `json:"proactiveChatIDs,omitempty"`

	// Allowlist are the Telegram users allowed to talk to the bot.
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	Allowlist []string `json:"allowlist,omitempty"`
}

// Tool is one gateway tool an orchestrator may call.
// +kubebuilder:validation:Enum=status;list_chats;read_history;pair_status;send_message;ask;agent
type Tool string

// The closed set of orchestrator tools.
const (
	ToolStatus      Tool = "status"
	ToolListChats   Tool = "list_chats"
	ToolReadHistory Tool = "read_history"
	ToolPairStatus  Tool = "pair_status"
	ToolSendMessage Tool = "send_message"
	ToolAsk         Tool = "ask"
	ToolAgent       Tool = "agent"
)

// OrchestratorSpec is one external caller of the gateway with its sandbox,
// listed inline in the GarraServer: a name and the settings an Orchestrator
// object has too.
type OrchestratorSpec struct {
	// Name identifies the orchestrator: a DNS label of at most 40 characters.
	// "owner" is reserved: the gateway gives that name to the holder of its
	// api key in logs, audit lines and garra://policy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'owner'",message="owner is reserved by the gateway (it names the holder of the gateway api key): choose another name"
	Name string `json:"name"`

	OrchestratorSettings `json:",inline"`
}

// OrchestratorSettings are everything an orchestrator is besides its name
// and where it attaches, shared by the inline entries of a GarraServer and
// the Orchestrator kind, so that both are one model to the operator.
// +kubebuilder:validation:XValidation:rule="!has(self.tokenSecretRef) || !has(self.auth) || has(self.auth.token)",message="tokenSecretRef is the token mode's: remove it, or use auth.token"
type OrchestratorSettings struct {
	// Tools this orchestrator may call. Listing agent while
	// gateway.allowAgent is false is allowed (allowAgent is the bridge-wide
	// kill switch) and reported as a Warning event.
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	// +optional
	Tools []Tool `json:"tools,omitempty"`

	// DenyTools are refused to this orchestrator even when Tools lists
	// them: deny wins. A call to a denied tool gets tool_denied.
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	// +optional
	DenyTools []Tool `json:"denyTools,omitempty"`

	// Chats this orchestrator may read; empty means none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	Chats []string `json:"chats,omitempty"`

	// TokenSecretRef names an existing Secret key with this orchestrator's
	// bearer token (bring your own). When absent the token is key token of
	// the generated Secret NAME-orch-O. Only for the token mode.
	// +optional
	TokenSecretRef *SecretKeySelector `json:"tokenSecretRef,omitempty"`

	// Auth is how the orchestrator proves who it is to the gateway:
	// token (the default: a static bearer token), serviceAccount (its
	// pod's projected ServiceAccount token, reviewed by the API server) or
	// oidc (a JWT from an OIDC issuer). Exactly one.
	// +optional
	Auth *OrchestratorAuth `json:"auth,omitempty"`

	// Workspace is the orchestrator's own volume, mounted at /workspace in
	// its sandbox and nowhere else.
	// +kubebuilder:default={}
	// +optional
	Workspace WorkspaceSpec `json:"workspace,omitempty"`

	// Sandbox is the orchestrator's tool runtime pod.
	// +kubebuilder:default={}
	// +optional
	Sandbox SandboxSpec `json:"sandbox,omitempty"`

	// Quota is this orchestrator's own allowance, over
	// spec.gateway.quota field by field.
	// +optional
	Quota *QuotaSpec `json:"quota,omitempty"`

	// Credentials are secrets the gateway adds to the sandbox's outbound
	// requests (sandbox.egress: gateway); the sandbox never holds them.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Credentials []CredentialSpec `json:"credentials,omitempty"`
}

// OrchestratorAuth chooses one authentication mode.
// +kubebuilder:validation:XValidation:rule="[has(self.token), has(self.serviceAccount), has(self.oidc)].filter(x, x).size() == 1",message="auth sets exactly one of token, serviceAccount, oidc"
type OrchestratorAuth struct {
	// Token is the static bearer token (tokenSecretRef, or generated in
	// NAME-orch-O key token). Same as leaving auth out.
	// +optional
	Token *TokenAuth `json:"token,omitempty"`
	// ServiceAccount admits the projected tokens of one ServiceAccount,
	// issued for the gateway's audience (spec.gateway.audience, default
	// status.endpoint). No token Secret is generated for the caller.
	// +optional
	ServiceAccount *ServiceAccountAuth `json:"serviceAccount,omitempty"`
	// OIDC admits JWTs from an OIDC issuer.
	// +optional
	OIDC *OIDCAuth `json:"oidc,omitempty"`
}

// TokenAuth is the static token mode; it has no settings.
type TokenAuth struct{}

// ServiceAccountAuth names the ServiceAccount whose tokens prove the
// orchestrator: the reviewed user must be exactly
// system:serviceaccount:NAMESPACE:NAME.
type ServiceAccountAuth struct {
	// Namespace of the ServiceAccount; empty = the GarraServer's.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the ServiceAccount.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// OIDCAuth admits JWTs of Issuer for Audience that match Subject and
// Claims. The gateway fetches the issuer's discovery document and keys.
// +kubebuilder:validation:XValidation:rule="has(self.subject) || (has(self.claims) && size(self.claims) > 0)",message="oidc needs subject or claims: without either, every token the issuer mints for the audience would be this orchestrator"
type OIDCAuth struct {
	// Issuer is the issuer URL (https; discovery is at
	// ISSUER/.well-known/openid-configuration).
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https'",message="issuer must be an https URL"
	Issuer string `json:"issuer"`
	// Audience is the aud value the issuer puts in the orchestrator's tokens.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Audience string `json:"audience"`
	// Subject, when set, must equal the token's sub.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Subject string `json:"subject,omitempty"`
	// Claims must each be in the token: a string claim equal to the
	// value, or a list claim (groups, roles) containing it.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	Claims map[string]string `json:"claims,omitempty"`
}

// WorkspaceSpec is an orchestrator's workspace claim NAME-ws-O.
type WorkspaceSpec struct {
	StorageSpec `json:",inline"`

	// Retain keeps the claim when the orchestrator is removed from the spec
	// or the GarraServer is deleted: a retained claim carries no owner
	// reference (so deletion never cascades to it) and is adopted again by
	// an orchestrator of the same name.
	// +kubebuilder:default=false
	// +optional
	Retain bool `json:"retain,omitempty"`

	// ClaimName adopts an existing claim of the orchestrator's namespace
	// as its workspace instead of the one named after it: the way a
	// retained workspace follows an inline entry that becomes an
	// Orchestrator object. Empty means the orchestrator's own claim. A
	// claim another orchestrator uses, or that something else controls,
	// is refused.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	// +optional
	ClaimName string `json:"claimName,omitempty"`
}

// Egress is the network a sandbox may reach.
// +kubebuilder:validation:Enum=none;internet;gateway
type Egress string

const (
	// EgressNone denies all egress, DNS included: the sandbox only answers
	// the gateway.
	EgressNone Egress = "none"
	// EgressInternet allows public IPv4 addresses (no private, CGNAT or
	// link-local ranges, so no cloud metadata) and DNS to kube-dns.
	EgressInternet Egress = "internet"
	// EgressGateway allows only the gateway's egress proxy (and DNS to
	// kube-dns to find it): the proxy admits the hosts of
	// sandbox.egressHosts and of the orchestrator's credentials, and
	// injects the credentials.
	EgressGateway Egress = "gateway"
)

// SandboxSpec is an orchestrator's sandbox pod.
type SandboxSpec struct {
	// Image of the sandbox container. Empty means spec.sandboxImage, then
	// the manager's --sandbox-image.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// Resources of the sandbox container. Each request must not exceed
	// its limit (checked by the controller, which names the resource).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// RuntimeClassName runs the sandbox pod under that RuntimeClass (gVisor,
	// Kata Containers, where the cluster has one): a DNS-1123 subdomain.
	// Empty means the cluster's default runtime.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="runtimeClassName must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit), the name of a RuntimeClass"
	// +optional
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`

	// NodeSelector confines the sandbox pod to nodes with these labels
	// (keys are label keys, values label values; checked by the
	// controller).
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the sandbox pod onto tainted nodes (a pool kept for
	// sandboxes, a gVisor node group).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// RequiredTools are programs the sandbox's image must have on PATH
	// (go, node, make, ...). The sandbox reports what it finds, these and
	// a fixed list of well-known build tools, with their versions, in its
	// MCP resource garra://sandbox/toolchain, and lists the missing ones.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9][A-Za-z0-9._+-]*$`
	// +optional
	RequiredTools []string `json:"requiredTools,omitempty"`

	// Egress is what the sandbox may reach: none (default), internet, or
	// gateway (only through the gateway's egress proxy).
	// +kubebuilder:default=none
	// +optional
	Egress Egress `json:"egress,omitempty"`

	// EgressHosts are the hosts the sandbox may reach through the
	// gateway's egress proxy besides its credentials' hosts: exact host
	// names or a leading "*." wildcard. Only with egress: gateway.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	EgressHosts []string `json:"egressHosts,omitempty"`

	// IdleTimeout, when set, suspends the sandbox after that long without
	// a call: the operator scales its Deployment to zero (the workspace
	// claim and the Secret stay; status says suspended), and the
	// orchestrator's next garra_agent call wakes it, waiting within its
	// own timeout. Off by default; at least 10s, at most 720h.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('720h')",message="idleTimeout must be between 10s and 720h (e.g. 15m), or absent to keep the sandbox always running"
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`
}

// GarraServerStatus is derived afresh from the cluster on every reconcile.
type GarraServerStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, GatewayReady, OrchestratorsReady, ConfigApplied
	// and Verified.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Endpoint is the in-cluster URL of the gateway's MCP bridge.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// ConfigHash is "sha256:" and the hex SHA-256 of the config.yml the
	// operator rendered into the gateway's ConfigMap; ConfigApplied turns
	// True when the gateway reports having loaded exactly this.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`

	// OrchestratorsReady is "ready/total" sandboxes, for kubectl get.
	// +optional
	OrchestratorsReady string `json:"orchestratorsReady,omitempty"`

	// Orchestrators has one row per orchestrator of the spec.
	// +listType=map
	// +listMapKey=name
	// +optional
	Orchestrators []OrchestratorStatus `json:"orchestrators,omitempty"`

	// AttachedOrchestrators counts the Orchestrator objects that name
	// this server; each one's own status has the details. Absent while
	// none names it.
	// +optional
	AttachedOrchestrators *AttachedOrchestratorsStatus `json:"attachedOrchestrators,omitempty"`
}

// MaxAttachedSample bounds status.attachedOrchestrators.notReady: the
// status of a server with a thousand teams stays small.
const MaxAttachedSample = 10

// AttachedOrchestratorsStatus is a bounded summary of the attached
// Orchestrators: counts, and the first few that need a look.
type AttachedOrchestratorsStatus struct {
	// Accepted is how many the server admits and provisions.
	Accepted int32 `json:"accepted"`
	// Refused is how many name this server but are not accepted (their
	// Accepted condition says why).
	Refused int32 `json:"refused"`
	// Ready is how many accepted ones have an available sandbox (or one
	// suspended while idle).
	Ready int32 `json:"ready"`
	// Verified is how many accepted ones the gateway's last handshake
	// with their sandbox verified (or are suspended while idle).
	Verified int32 `json:"verified"`
	// ConfigApplied is how many accepted ones are, as their spec is now,
	// in a config the gateway reports having loaded.
	ConfigApplied int32 `json:"configApplied"`
	// NotReady names, by NAMESPACE/NAME in order, the first refused,
	// unready, unverified or not yet applied ones, with why.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	NotReady []AttachedOrchestratorProblem `json:"notReady,omitempty"`
}

// AttachedOrchestratorProblem is one Orchestrator that needs a look.
type AttachedOrchestratorProblem struct {
	// Name is its NAMESPACE/NAME.
	Name string `json:"name"`
	// Reason is the first thing wrong: the reason of its Accepted
	// (refused), Ready, Verified or ConfigApplied condition.
	Reason string `json:"reason"`
}

// OrchestratorStatus is the observed state of one orchestrator.
type OrchestratorStatus struct {
	// Name of the orchestrator.
	Name string `json:"name"`
	// Ready is true when its sandbox Deployment has an available replica.
	Ready bool `json:"ready"`
	// TokenSecret is the Secret holding its bearer token (key token, or the
	// key named by tokenSecretRef).
	// +optional
	TokenSecret string `json:"tokenSecret,omitempty"`
	// WorkspaceClaim is its workspace PersistentVolumeClaim.
	// +optional
	WorkspaceClaim string `json:"workspaceClaim,omitempty"`
	// SandboxEndpoint is the in-cluster URL of its sandbox.
	// +optional
	SandboxEndpoint string `json:"sandboxEndpoint,omitempty"`
	// TokenRotation is set while a replaced token of this orchestrator
	// (its bearer or its sandbox token) is still accepted.
	// +optional
	TokenRotation *TokenRotationStatus `json:"tokenRotation,omitempty"`
	// Verified is true when the gateway's last MCP handshake with its
	// sandbox, under the sandbox token, worked.
	Verified bool `json:"verified"`
	// VerifiedReason says why not: TokenRefused, Unreachable, NoTools,
	// NoToken, or NotChecked (the gateway has not reported on it yet).
	// +optional
	VerifiedReason string `json:"verifiedReason,omitempty"`
	// VerifiedMessage is the gateway's sentence about the last handshake.
	// +optional
	VerifiedMessage string `json:"verifiedMessage,omitempty"`
	// Toolchain names the programs the sandbox found on its PATH (the
	// well-known build tools and sandbox.requiredTools); a required one
	// missing makes the orchestrator not verified (MissingTools).
	// +listType=atomic
	// +optional
	Toolchain []string `json:"toolchain,omitempty"`
	// Suspended is true while an idle sandbox is scaled to zero; its next
	// call wakes it.
	// +optional
	Suspended bool `json:"suspended,omitempty"`
	// LastCall is when the gateway last started a call in this sandbox
	// (with idleTimeout only).
	// +optional
	LastCall *metav1.Time `json:"lastCall,omitempty"`
	// Quota is the allowance in force: the entry's quota over
	// spec.gateway.quota field by field, as the gateway applies it; absent
	// when unlimited. What remains of it is in the gateway's metrics.
	// +optional
	Quota *QuotaSpec `json:"quota,omitempty"`
}

// TokenRotationStatus is an overlap in progress.
type TokenRotationStatus struct {
	// PreviousValidUntil is when the replaced token stops being accepted.
	PreviousValidUntil metav1.Time `json:"previousValidUntil"`
}
