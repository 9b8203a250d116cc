package v1alpha1

// Condition types of GarraServer status.
const (
	// ConditionReady is true when the gateway and every orchestrator's
	// sandbox have an available replica and the spec is usable.
	ConditionReady = "Ready"
	// ConditionGatewayReady is true when the gateway Deployment has an
	// available replica and every Secret it references exists.
	ConditionGatewayReady = "GatewayReady"
	// ConditionOrchestratorsReady is true when every orchestrator's sandbox
	// Deployment has an available replica (vacuously true with none).
	ConditionOrchestratorsReady = "OrchestratorsReady"
	// ConditionConfigApplied is true when the gateway reports (on /readyz)
	// that it runs the config.yml of status.configHash.
	ConditionConfigApplied = "ConfigApplied"
	// ConditionTokenReviewAccess is set only by a namespace-scoped operator
	// (--watch-namespace) for a GarraServer with an orchestrator that
	// authenticates with its ServiceAccount: such an operator cannot create
	// the cluster-scoped binding that lets the gateway create TokenReviews,
	// so it is Unknown, reason ClusterBindingExternal, and says what a
	// cluster admin must bind.
	ConditionTokenReviewAccess = "TokenReviewAccess"
	// ConditionVerified is true when the gateway reports (on /sandboxz)
	// that its last MCP handshake with every orchestrator's sandbox, under
	// that sandbox's token, worked. Ready says the pods are up; Verified
	// says the gateway can use them.
	ConditionVerified = "Verified"
	// ConditionAccepted, on an Orchestrator, is true when the GarraServer
	// its serverRef names exists and admits it (spec.allowedOrchestrators);
	// only an accepted Orchestrator is provisioned and known to the
	// gateway.
	ConditionAccepted = "Accepted"
)

// Condition reasons.
const (
	// ReasonReady: everything is available.
	ReasonReady = "Ready"
	// ReasonNotReady: some part is not available yet; the other conditions say which.
	ReasonNotReady = "NotReady"
	// ReasonInvalidSpec: the spec cannot be acted on until the user fixes it
	// (the message names the field); the controller does not retry.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonApplyFailed: a reconcile step failed (an API error, a denied
	// write); the message names the step and the error. The controller
	// retries with backoff.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonAvailable: the Deployment has an available replica.
	ReasonAvailable = "Available"
	// ReasonProgressing: the Deployment exists but has no available replica yet.
	ReasonProgressing = "Progressing"
	// ReasonSecretMissing: a Secret or key the spec references does not exist.
	ReasonSecretMissing = "SecretMissing"
	// ReasonNoOrchestrators: the spec lists no orchestrator.
	ReasonNoOrchestrators = "NoOrchestrators"
	// ReasonApplied: the gateway runs the rendered config.
	ReasonApplied = "Applied"
	// ReasonPending: the gateway runs another config (the kubelet has not
	// delivered the new one yet) or could not be asked.
	ReasonPending = "Pending"
	// ReasonRejected: the gateway refused the rendered config and keeps
	// serving the last good one; the message is its first problem.
	ReasonRejected = "Rejected"
	// ReasonNotProbed: the operator does not ask the gateway.
	ReasonNotProbed = "NotProbed"
	// ReasonClusterBindingExternal: the gateway's TokenReview binding is
	// cluster-scoped and a namespace-scoped operator neither creates nor
	// sees it; a cluster admin provides it (the message names the
	// orchestrator's field and the ServiceAccount to bind).
	ReasonClusterBindingExternal = "ClusterBindingExternal"
	// ReasonVerified: every sandbox answered the gateway's handshake.
	ReasonVerified = "Verified"
	// ReasonNotVerified: some sandbox did not; the message and each
	// orchestrator's status say which and why (TokenRefused, Unreachable,
	// NoTools, NoToken, or not checked yet).
	ReasonNotVerified = "NotVerified"
	// ReasonAccepted: the server admits the Orchestrator.
	ReasonAccepted = "Accepted"
	// ReasonNotAllowedByServer: the server's
	// spec.allowedOrchestrators.namespaces does not admit the
	// Orchestrator's namespace; the message names the rule.
	ReasonNotAllowedByServer = "NotAllowedByServer"
	// ReasonServerNotFound: no GarraServer has the name serverRef gives.
	ReasonServerNotFound = "ServerNotFound"
	// ReasonNameClash: the server already has an orchestrator by the
	// identity this one would take; the message names both.
	ReasonNameClash = "NameClash"
	// ReasonTokenClash: the Orchestrator's bearer token is one the
	// gateway already takes for another caller (the owner or another
	// orchestrator); the gateway would refuse the whole config, so this
	// one is refused instead. The message names the other, never the token.
	ReasonTokenClash = "TokenClash"
	// ReasonNotAccepted: Ready cannot be true for an Orchestrator the
	// server does not accept (see Accepted).
	ReasonNotAccepted = "NotAccepted"
)

// Event reasons, on the GarraServer.
const (
	// EventSecretGenerated: a Secret with generated credentials was created.
	EventSecretGenerated = "SecretGenerated"
	// EventOrchestratorAdded: an orchestrator appeared in the spec.
	EventOrchestratorAdded = "OrchestratorAdded"
	// EventOrchestratorRemoved: an orchestrator left the spec and its objects were deleted.
	EventOrchestratorRemoved = "OrchestratorRemoved"
	// EventInvalidSpec: the spec cannot be acted on (see the Ready condition).
	EventInvalidSpec = "InvalidSpec"
	// EventConfigWarning: the rendered config.yml has a problem the gateway
	// works around (fails closed), e.g. an orchestrator listing agent while
	// allowAgent is false, or a redact pattern that does not compile.
	EventConfigWarning = "ConfigWarning"
	// EventApplyFailed: a reconcile step failed (see the Ready condition).
	EventApplyFailed = "ApplyFailed"
	// EventSecretMissing: a referenced Secret or key does not exist.
	EventSecretMissing = "SecretMissing"
	// EventTokenRotated: an orchestrator's tokens were replaced; the old
	// ones stay valid for the grace period.
	EventTokenRotated = "TokenRotated"
)

// AnnotationRotateToken on a GarraServer asks for new tokens: its value
// is a comma-separated list of orchestrator names. On an Orchestrator,
// any value asks for its own. The operator removes it once the new tokens
// are generated.
const AnnotationRotateToken = "garra.garraia.io/rotate-token" //nolint:gosec // G101: an annotation name
