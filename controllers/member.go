package controllers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// member is one orchestrator of a GarraServer as the builders see it,
// whether an inline entry of spec.orchestrators or an attached
// Orchestrator object: its settings, the name the gateway knows it by,
// and where its objects live and who owns them. Every per-orchestrator
// builder takes a member, so both forms are rendered by the same code.
type member struct {
	garrav1alpha1.OrchestratorSettings
	// Name is the entry's or the object's name: the orchestrator label's
	// value.
	Name string
	// ID is its name to the gateway (config, tokens, audit lines): Name
	// inline, NAMESPACE/NAME attached, so two teams may both have a ci.
	ID string
	// Field is the path of its settings in messages: inline the entry in
	// the GarraServer's spec; attached "spec", since those messages are
	// read on the Orchestrator itself.
	Field string
	// gs is the server it belongs to.
	gs *garrav1alpha1.GarraServer
	// at is where its objects live: the server's namespace, owned by the
	// server; or the Orchestrator's, owned by the Orchestrator.
	at placement
	// attached is set for an Orchestrator object.
	attached bool
	// ob is the Orchestrator object of an attached member.
	ob *garrav1alpha1.Orchestrator
}

// placement is a child's namespace and controller.
type placement struct {
	Namespace string
	Owner     metav1.OwnerReference
}

// orchestratorKind is the Orchestrator's group, version and kind, as owner
// references name it.
var orchestratorKind = garrav1alpha1.GroupVersion.WithKind("Orchestrator")

// serverPlacement is in gs's namespace, controlled by gs.
func serverPlacement(gs *garrav1alpha1.GarraServer) placement {
	return placement{Namespace: gs.Namespace, Owner: *metav1.NewControllerRef(gs, serverKind)}
}

// ownerRefs is the controller reference as an apply configuration.
func (p placement) ownerRefs() []*metav1ac.OwnerReferenceApplyConfiguration {
	ref := p.Owner
	return []*metav1ac.OwnerReferenceApplyConfiguration{metav1ac.OwnerReference().
		WithAPIVersion(ref.APIVersion).
		WithKind(ref.Kind).
		WithName(ref.Name).
		WithUID(ref.UID).
		WithController(*ref.Controller).
		WithBlockOwnerDeletion(*ref.BlockOwnerDeletion)}
}

// inlineMember is the entry o of gs.Spec.Orchestrators.
func inlineMember(gs *garrav1alpha1.GarraServer, o garrav1alpha1.OrchestratorSpec) member {
	return member{
		OrchestratorSettings: o.OrchestratorSettings,
		Name:                 o.Name,
		ID:                   o.Name,
		Field:                "spec.orchestrators[" + o.Name + "]",
		gs:                   gs,
		at:                   serverPlacement(gs),
	}
}

// attachedMember is the Orchestrator ob attached to gs.
func attachedMember(gs *garrav1alpha1.GarraServer, ob *garrav1alpha1.Orchestrator) member {
	return member{
		OrchestratorSettings: ob.Spec.OrchestratorSettings,
		Name:                 ob.Name,
		ID:                   OrchestratorID(ob),
		Field:                "spec",
		gs:                   gs,
		at:                   placement{Namespace: ob.Namespace, Owner: *metav1.NewControllerRef(ob, orchestratorKind)},
		attached:             true,
		ob:                   ob,
	}
}

// nameField is the path of its name in messages.
func (m member) nameField() string {
	if m.attached {
		return "metadata.name"
	}
	return m.Field + ".name"
}

// OrchestratorID is the name the gateway knows an Orchestrator object by.
func OrchestratorID(ob *garrav1alpha1.Orchestrator) string { return ob.Namespace + "/" + ob.Name }

// inlineMembers are gs's inline entries, in spec order.
func inlineMembers(gs *garrav1alpha1.GarraServer) []member {
	out := make([]member, 0, len(gs.Spec.Orchestrators))
	for _, o := range gs.Spec.Orchestrators {
		out = append(out, inlineMember(gs, o))
	}
	return out
}

// The names of a member's objects. Inline ones keep the names they have
// always had, prefixed by the server's; an attached one's are prefixed by
// its own name, unique in its namespace.
func (m member) sandboxName() string {
	if m.attached {
		return m.Name + "-sandbox"
	}
	return sandboxName(m.gs, m.Name)
}

func (m member) workspaceName() string {
	if m.Workspace.ClaimName != "" {
		return m.Workspace.ClaimName
	}
	if m.attached {
		return m.Name + "-ws"
	}
	return workspaceName(m.gs, m.Name)
}

// orchSecretName is the generated Secret of its credentials.
func (m member) orchSecretName() string {
	if m.attached {
		return attachedTokenSecretName(m.Name)
	}
	return orchSecretName(m.gs, m.Name)
}

// attachedTokenSecretName is the generated Secret of Orchestrator name.
func attachedTokenSecretName(name string) string { return name + "-token" }

// sandboxTokenName is the Secret the sandbox pod reads its token lines
// from: the Deployment's name, in the member's namespace.
func (m member) sandboxTokenName() string { return m.sandboxName() }

// tokenKey is the member's bearer key in NAME-gateway-tokens (and, with
// SandboxKeySuffix, its sandbox key). Secret keys take no '/', so an
// attached one's is NAMESPACE_NAME: '_' is in no DNS label, so it clashes
// with no inline name.
func (m member) tokenKey() string {
	if m.attached {
		return m.at.Namespace + "_" + m.Name
	}
	return m.Name
}

// sandboxURL is the in-cluster URL of its sandbox.
func (m member) sandboxURL() string {
	return "http://" + m.sandboxName() + "." + m.at.Namespace + ".svc:8080/mcp"
}

// labels are the labels of the member's objects. An attached one's carry
// the server's namespace too, since they live elsewhere.
func (m member) labels() map[string]string {
	l := labels(m.gs, ComponentSandbox, m.Name)
	if m.attached {
		l[LabelNamespace] = m.gs.Namespace
	}
	return l
}
