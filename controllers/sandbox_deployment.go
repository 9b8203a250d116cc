package controllers

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// SandboxCommand is what m's sandbox container runs; bin is the garra
// binary (on PATH in the operator's sandbox image, BinDir's copy in any
// other). The required tools are a flag, present only when there are
// some, so that a spec without them keeps the pod it had.
func SandboxCommand(gs *garrav1alpha1.GarraServer, m member, bin string) []string {
	cmd := []string{bin, "sandbox", "--workspace", WorkspaceDir, "--listen", ":" + strconv.Itoa(SandboxPort),
		"--token-file", SandboxTokenPath, "--drain-seconds", strconv.Itoa(drainSeconds(gs))}
	if len(m.Sandbox.RequiredTools) > 0 {
		cmd = append(cmd, "--required-tools="+strings.Join(m.Sandbox.RequiredTools, ","))
	}
	return cmd
}

// Where a sandbox pod in a bring-your-own image finds garra and its home.
const (
	// BinDir is the emptyDir the init container copies garra into; the
	// sandbox container mounts it read-only, so bash cannot swap the
	// binary the next start would run.
	BinDir = "/garra/bin"
	// ToolchainHome is HOME there: an emptyDir, because the root file
	// system is read-only and a toolchain (go, npm, pip) writes its caches
	// under HOME. The operator's own image keeps HOME=/tmp as before.
	ToolchainHome = "/home/garra"
	// CopyContainer names the init container.
	CopyContainer = "copy-garra"
)

// sandboxImages is what a sandbox pod is made of: the image its container
// runs and, for an image of the user's, the garra image an init container
// copies the binary from.
type sandboxImages struct {
	Sandbox string
	// Garra is "" when Sandbox is the operator's own sandbox image, which
	// has garra on PATH: the pod is exactly what it was before images of
	// one's own existed.
	Garra string
}

// resolveSandboxImages picks o's image (its own, then spec.sandboxImage,
// then the manager's --sandbox-image) and decides whether garra must be
// brought in. The rule: any image other than the manager's --sandbox-image
// gets the binary copied in. The operator knows that one image has garra
// on PATH; of any other (golang:..., node:..., a company's build image,
// even a retag of ours) it knows nothing, and guessing wrong means a pod
// that crash-loops on "executable not found". Copying into an image that
// has garra anyway costs one file copy at start and runs the garra that
// matches the gateway's version, so the rule errs that way rather than
// asking the user for one more field to get right.
func resolveSandboxImages(gs *garrav1alpha1.GarraServer, m member, defSandbox, defGarra string) sandboxImages {
	img := sandboxImage(gs, m, defSandbox)
	if img == defSandbox {
		return sandboxImages{Sandbox: img}
	}
	return sandboxImages{Sandbox: img, Garra: gatewayImage(gs, defGarra)}
}

// sandboxDeployment is m's sandbox (NAME-sandbox-O inline): one replica of
// `garra sandbox` under the restricted Pod Security Standard, with
// /workspace from m's claim, /tmp an emptyDir, no API token, and as its
// only secret the lines of its own sandbox token, from a Secret of its own
// in its own namespace (sandboxTokenSecret): never the gateway's tokens
// Secret, which holds every orchestrator's, so that a node running this pod
// is given no other orchestrator's token to read.
//
// The token is a file, not a variable, so that a rotation reaches the
// running server (it re-reads the file) without cutting the agent runs in
// flight. bash in this pod runs as the server's uid and can read that
// file; what it learns is the token that lets a caller run commands in
// this same sandbox, which bash already does. No other credential is here.
//
// In an image of the user's (img.Garra set) an init container from the
// garra image copies the static binary into BinDir, the sandbox runs it
// from there, HOME is an emptyDir of its own and the working directory
// is the workspace; uid, fsGroup and the security context are the same
// operator-chosen ones whatever USER the image names.
//
// With egress: gateway it also gets the proxy's address and the gateway
// CA's certificate (from the same Secret of its own), and its template
// carries that certificate's hash: the sandbox builds its trust bundle at
// start. The credentials themselves never come here.
func sandboxDeployment(gs *garrav1alpha1.GarraServer, m member, img sandboxImages, egressCA []byte) *appsv1ac.DeploymentApplyConfiguration {
	lbl := m.labels()
	byo := img.Garra != ""

	bin, home := "garra", TmpDir
	if byo {
		bin, home = BinDir+"/garra", ToolchainHome
	}
	container := corev1ac.Container().
		WithName(ComponentSandbox).
		WithImage(img.Sandbox).
		WithCommand(SandboxCommand(gs, m, bin)...).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(SandboxPort).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(append([]*corev1ac.EnvVarApplyConfiguration{corev1ac.EnvVar().WithName(EnvHome).WithValue(home)},
			telemetryEnv(gs, ServiceSandbox)...)...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("workspace").WithMountPath(WorkspaceDir),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath(TmpDir),
			corev1ac.VolumeMount().WithName("token").WithMountPath(SecretsDir).WithReadOnly(true),
		).
		WithReadinessProbe(readinessProbe("/readyz", "", SandboxReadinessPeriodSeconds)).
		WithLivenessProbe(livenessProbe("/healthz", "")).
		WithSecurityContext(restrictedContainerSecurity())
	if res := resources(m.Sandbox.Resources); res != nil {
		container.WithResources(res)
	}
	tokenFiles := []*corev1ac.KeyToPathApplyConfiguration{corev1ac.KeyToPath().WithKey(KeySandboxToken).WithPath(KeySandboxToken)}
	hash := ""
	if egressGateway(m) {
		container.WithEnv(
			corev1ac.EnvVar().WithName(EnvEgressProxy).WithValue(EgressProxyURL(gs)),
			corev1ac.EnvVar().WithName(EnvEgressCAFile).WithValue(EgressCAFile))
		tokenFiles = append(tokenFiles, corev1ac.KeyToPath().WithKey(KeyEgressCA).WithPath(KeyEgressCA))
		hash = egressCAHash(egressCA)
	}

	pod := corev1ac.PodSpec().
		WithServiceAccountName(m.sandboxName()).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(restrictedPodSecurity()).
		WithVolumes(
			corev1ac.Volume().WithName("workspace").WithPersistentVolumeClaim(
				corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(m.workspaceName())),
			corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			corev1ac.Volume().WithName("token").WithProjected(corev1ac.ProjectedVolumeSource().
				WithDefaultMode(SecretFileMode).
				WithSources(corev1ac.VolumeProjection().WithSecret(corev1ac.SecretProjection().
					WithName(m.sandboxTokenName()).
					WithItems(tokenFiles...)))),
		).
		WithTerminationGracePeriodSeconds(terminationGrace(gs))
	if byo {
		container.
			WithWorkingDir(WorkspaceDir).
			WithVolumeMounts(
				corev1ac.VolumeMount().WithName("garra-bin").WithMountPath(BinDir).WithReadOnly(true),
				corev1ac.VolumeMount().WithName("home").WithMountPath(ToolchainHome),
			)
		pod.WithInitContainers(corev1ac.Container().
			WithName(CopyContainer).
			WithImage(img.Garra).
			WithCommand("garra", "copy-binary", BinDir).
			WithVolumeMounts(corev1ac.VolumeMount().WithName("garra-bin").WithMountPath(BinDir)).
			WithSecurityContext(restrictedContainerSecurity())).
			WithVolumes(
				corev1ac.Volume().WithName("garra-bin").WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(binDirLimit)),
				corev1ac.Volume().WithName("home").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			)
	}
	pod.WithContainers(container)
	placeSandbox(pod, m.Sandbox)

	// No inputs hash but the egress CA's: nothing else this pod reads only
	// at start comes from a Secret, so a rotation, a credential or a
	// policy change never restarts it.
	dep := singlePodDeployment(m.at, m.sandboxName(), lbl, hash, pod)
	if idleTimeout(m.OrchestratorSettings) > 0 {
		// Replicas belong to the idle clock (suspendIdle, the gateway's
		// wake), not to the apply.
		dep.Spec.Replicas = nil
	}
	return dep
}

// binDirLimit bounds the binary's emptyDir: one static garra (under 100
// MB) with room for the temporary copy a restarted init container writes
// beside it.
var binDirLimit = resource.MustParse("256Mi")

// sandboxImage resolves m's image: its own, then spec.sandboxImage, then
// the manager's default.
func sandboxImage(gs *garrav1alpha1.GarraServer, m member, def string) string {
	switch {
	case m.Sandbox.Image != "":
		return m.Sandbox.Image
	case gs.Spec.SandboxImage != "":
		return gs.Spec.SandboxImage
	}
	return def
}

// placeSandbox passes the orchestrator's scheduling choices through to its
// pod: a RuntimeClass (a gVisor or Kata runtime for stronger isolation),
// a node selector and tolerations (a node pool kept for sandboxes).
// validate has checked them; nothing is set when they are empty, so the
// pod of a spec that names none is the same as before they existed.
func placeSandbox(pod *corev1ac.PodSpecApplyConfiguration, sb garrav1alpha1.SandboxSpec) {
	if sb.RuntimeClassName != nil && *sb.RuntimeClassName != "" {
		pod.WithRuntimeClassName(*sb.RuntimeClassName)
	}
	if len(sb.NodeSelector) > 0 {
		pod.WithNodeSelector(sb.NodeSelector)
	}
	for _, t := range sb.Tolerations {
		ac := corev1ac.Toleration()
		if t.Key != "" {
			ac.WithKey(t.Key)
		}
		if t.Operator != "" {
			ac.WithOperator(t.Operator)
		}
		if t.Value != "" {
			ac.WithValue(t.Value)
		}
		if t.Effect != "" {
			ac.WithEffect(t.Effect)
		}
		if t.TolerationSeconds != nil {
			ac.WithTolerationSeconds(*t.TolerationSeconds)
		}
		pod.WithTolerations(ac)
	}
}
