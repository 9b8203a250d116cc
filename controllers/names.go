// Package controllers is the Garra operator's reconciler: it turns a
// GarraServer into the objects of the ARCHITECTURE.md table (a gateway with
// its config, key, volume and Service; per orchestrator a sandbox with its
// secret, workspace, ServiceAccount, Service and NetworkPolicy), applied
// with server-side apply under one field owner, and writes the status.
//
// Each owned object has one pure builder in the file of its concern
// (gateway_deployment.go, sandbox_networkpolicy.go, ...) with a table test;
// garraserver_controller.go reads as the list of steps that applies them.
package controllers

import (
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// FieldOwner is the server-side apply field manager of every write.
const FieldOwner = "garra-operator"

// Labels on every child (ARCHITECTURE.md).
const (
	LabelName         = "app.kubernetes.io/name"
	LabelInstance     = "app.kubernetes.io/instance"
	LabelComponent    = "app.kubernetes.io/component"
	LabelOrchestrator = "garra.garraia.io/orchestrator"

	// AppName is the value of LabelName.
	AppName = "garra"

	ComponentGateway = "gateway"
	ComponentSandbox = "sandbox"
)

// AnnotationInputsHash is on the pod templates: a SHA-256 of the rendered
// config and of the data of every Secret key the pod reads, so that a
// change to any of them rolls the Deployment.
const AnnotationInputsHash = "garra.garraia.io/inputs-hash"

// Ports, paths and keys the builders share.
const (
	GatewayPort  = 3888
	SandboxPort  = 8080
	PortName     = "mcp"
	ConfigKey    = "config.yml"
	ConfigDir    = "/etc/garra"
	DataDir      = "/var/lib/garra"
	WorkspaceDir = "/workspace"
	TmpDir       = "/tmp"

	// KeyAPIKey is the key of the generated gateway Secret.
	KeyAPIKey = "api-key"
	// KeyToken is the orchestrator's bearer for the gateway.
	KeyToken = "token"
	// KeySandboxToken is the gateway's bearer for the orchestrator's sandbox.
	KeySandboxToken = "sandbox-token"
)

// Environment variables the pods get. The secrets among them arrive from a
// Secret key reference; none is ever written into config.yml. They are
// names, not credentials, whatever gosec G101 guesses.
const (
	EnvLLMAPIKey     = "GARRA_LLM_API_KEY"  //nolint:gosec // G101: a variable name
	EnvTelegramToken = "TELEGRAM_BOT_TOKEN" //nolint:gosec // G101: a variable name
	EnvHome          = "HOME"
)

// SecretsDir is where the pods find their credentials, one read-only file
// per credential (never in the environment, where every process the gateway
// starts would inherit it and /proc keeps it for the life of the process).
const SecretsDir = "/var/run/garra" //nolint:gosec // G101: a directory, not a credential

// SecretFileMode is the mode of the credential files: readable by owner
// and group. The kubelet gives them the pod's fsGroup, which is how the
// non-root gateway may read them; nobody else may.
const SecretFileMode int32 = 0o440

// Directories of the gateway's credentials under SecretsDir: the owner key
// in its own volume (its reference is a pod template input), and every
// orchestrator's tokens in one directory from the Secret NAME-gateway-tokens,
// whose files the kubelet rewrites in place when the Secret changes, so an
// orchestrator added, removed or rotated needs no new pod.
const (
	ownerDir  = SecretsDir + "/owner"
	TokensDir = SecretsDir + "/tokens"
)

// SandboxKeySuffix names the keys of the Secret NAME-gateway-tokens: per
// orchestrator O, key O holds the lines of O's bearer tokens and key O +
// SandboxKeySuffix the lines of its sandbox tokens.
const SandboxKeySuffix = ".sandbox"

// SandboxTokenPath is the sandbox's own token lines in its pod.
const SandboxTokenPath = SecretsDir + "/" + KeySandboxToken

// APIKeyFile is the gateway's owner key in its pod.
func APIKeyFile() string { return ownerDir + "/" + KeyAPIKey }

// OrchTokenFile is orchestrator o's bearer token lines in the gateway's pod.
func OrchTokenFile(o string) string { return TokensDir + "/" + o }

// SandboxTokenFile is the lines of o's sandbox token in the gateway's pod
// (the gateway sends the first).
func SandboxTokenFile(o string) string { return TokensDir + "/" + o + SandboxKeySuffix }

// NonRootID is the UID and GID of every container (distroless "nonroot").
const NonRootID int64 = 65532

func gatewayName(gs *garrav1alpha1.GarraServer) string     { return gs.Name + "-gateway" }
func gatewayDataName(gs *garrav1alpha1.GarraServer) string { return gs.Name + "-gateway-data" }
func tokensName(gs *garrav1alpha1.GarraServer) string      { return gs.Name + "-gateway-tokens" }
func orchSecretName(gs *garrav1alpha1.GarraServer, o string) string {
	return gs.Name + "-orch-" + o
}
func workspaceName(gs *garrav1alpha1.GarraServer, o string) string { return gs.Name + "-ws-" + o }
func sandboxName(gs *garrav1alpha1.GarraServer, o string) string   { return gs.Name + "-sandbox-" + o }

// GatewayHosts are the Host values the gateway accepts besides loopback:
// the DNS names of its Service.
func GatewayHosts(gs *garrav1alpha1.GarraServer) []string {
	svc := gatewayName(gs)
	return []string{
		svc,
		svc + "." + gs.Namespace,
		svc + "." + gs.Namespace + ".svc",
		svc + "." + gs.Namespace + ".svc.cluster.local",
	}
}

// Endpoint is the in-cluster URL of the gateway's MCP bridge.
func Endpoint(gs *garrav1alpha1.GarraServer) string {
	return "http://" + gatewayName(gs) + "." + gs.Namespace + ".svc:3888/mcp"
}

// SandboxURL is the in-cluster URL of orchestrator o's sandbox.
func SandboxURL(gs *garrav1alpha1.GarraServer, o string) string {
	return "http://" + sandboxName(gs, o) + "." + gs.Namespace + ".svc:8080/mcp"
}

// labels are the labels of a child; orch is "" for the gateway's objects.
func labels(gs *garrav1alpha1.GarraServer, component, orch string) map[string]string {
	l := map[string]string{
		LabelName:      AppName,
		LabelInstance:  gs.Name,
		LabelComponent: component,
	}
	if orch != "" {
		l[LabelOrchestrator] = orch
	}
	return l
}

// serverKind is the GarraServer's group, version and kind, as owner
// references name it.
var serverKind = garrav1alpha1.GroupVersion.WithKind("GarraServer")

// ownerRefs makes gs the controller of a child, so deleting gs cascades.
func ownerRefs(gs *garrav1alpha1.GarraServer) []*metav1ac.OwnerReferenceApplyConfiguration {
	return serverPlacement(gs).ownerRefs()
}
