package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// An Orchestrator object attaches to the GarraServer its spec.serverRef
// names, as an HTTPRoute attaches to a Gateway: the server decides whom it
// admits (spec.allowedOrchestrators.namespaces), and the Orchestrator's
// Accepted condition says whether it was. The decision is one pure
// function of the server, the Orchestrator and its namespace's labels,
// used both where the server builds its model and where the Orchestrator's
// status is written, so the two never disagree.

// allowedField names the rule in messages.
const allowedField = "spec.allowedOrchestrators.namespaces"

// serverRefIndex indexes Orchestrators by the server they name
// (NAMESPACE/NAME, the namespace defaulted).
const serverRefIndex = ".spec.serverRef"

// serverKey is the NAMESPACE/NAME of the server ob names.
func serverKey(ob *garrav1alpha1.Orchestrator) client.ObjectKey {
	ns := ob.Spec.ServerRef.Namespace
	if ns == "" {
		ns = ob.Namespace
	}
	return client.ObjectKey{Namespace: ns, Name: ob.Spec.ServerRef.Name}
}

// serverRefOf is the serverRefIndex of an Orchestrator.
func serverRefOf(o client.Object) []string {
	return []string{serverKey(o.(*garrav1alpha1.Orchestrator)).String()}
}

// orchestratorSecretRefs is the secretRefIndex of an Orchestrator: the
// Secret its tokenSecretRef names, in its namespace.
func orchestratorSecretRefs(o client.Object) []string {
	if ref := o.(*garrav1alpha1.Orchestrator).Spec.TokenSecretRef; ref != nil {
		return []string{ref.Name}
	}
	return nil
}

// admits says whether gs admits an Orchestrator of namespace ns, whose
// labels are nsLabels, and if not, why, naming the rule. Same (also when
// the rule is absent), All and Selector mean what they mean in Gateway
// API's allowedRoutes.namespaces.
func admits(gs *garrav1alpha1.GarraServer, ns string, nsLabels map[string]string) (bool, string) {
	from, sel := garrav1alpha1.NamespacesFromSame, (*metav1.LabelSelector)(nil)
	if a := gs.Spec.AllowedOrchestrators; a != nil && a.Namespaces != nil {
		if a.Namespaces.From != "" {
			from = a.Namespaces.From
		}
		sel = a.Namespaces.Selector
	}
	who := fmt.Sprintf("GarraServer %s/%s", gs.Namespace, gs.Name)
	switch from {
	case garrav1alpha1.NamespacesFromAll:
		return true, ""
	case garrav1alpha1.NamespacesFromSame:
		if ns == gs.Namespace {
			return true, ""
		}
		return false, fmt.Sprintf("%s of %s is from: Same, which admits Orchestrators of namespace %s only, not %s",
			allowedField, who, gs.Namespace, ns)
	case garrav1alpha1.NamespacesFromSelector:
		if sel == nil {
			return false, fmt.Sprintf("%s of %s is from: Selector without a selector, which admits no namespace", allowedField, who)
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return false, fmt.Sprintf("%s.selector of %s is not a valid label selector (%v): it admits no namespace", allowedField, who, err)
		}
		if s.Matches(k8slabels.Set(nsLabels)) {
			return true, ""
		}
		return false, fmt.Sprintf("%s of %s admits the namespaces whose labels match %s; namespace %s's do not",
			allowedField, who, s, ns)
	}
	return false, fmt.Sprintf("%s.from of %s is %q, which admits no namespace", allowedField, who, from)
}

// attachment is the Accepted condition of one Orchestrator.
type attachment struct {
	accepted        bool
	reason, message string
}

// decideAttachment is the chain of checks an Orchestrator passes to
// attach, stopping at the first that fails: its server exists (gs nil:
// not found), admits its namespace, has no inline entry the Orchestrator
// would be confused with, and its settings are usable.
func decideAttachment(gs *garrav1alpha1.GarraServer, ob *garrav1alpha1.Orchestrator, nsLabels map[string]string, defSandbox string) attachment {
	if gs == nil {
		k := serverKey(ob)
		return attachment{reason: garrav1alpha1.ReasonServerNotFound,
			message: fmt.Sprintf("spec.serverRef: no GarraServer %s in namespace %s", k.Name, k.Namespace)}
	}
	if ok, why := admits(gs, ob.Namespace, nsLabels); !ok {
		return attachment{reason: garrav1alpha1.ReasonNotAllowedByServer, message: why}
	}
	// Inline entries are known by their bare name, attached ones by
	// NAMESPACE/NAME, so the gateway can tell them apart; a person cannot
	// when both are ci in the server's own namespace.
	if ob.Namespace == gs.Namespace {
		for _, o := range gs.Spec.Orchestrators {
			if o.Name == ob.Name {
				return attachment{reason: garrav1alpha1.ReasonNameClash, message: fmt.Sprintf(
					"GarraServer %s/%s lists an inline orchestrator %s (spec.orchestrators[%s]) and this is Orchestrator %s: rename one, or remove the inline entry",
					gs.Namespace, gs.Name, o.Name, o.Name, OrchestratorID(ob))}
			}
		}
	}
	if p := memberProblem(attachedMember(gs, ob), defSandbox); p != "" {
		return attachment{reason: garrav1alpha1.ReasonInvalidSpec, message: p}
	}
	return attachment{accepted: true, reason: garrav1alpha1.ReasonAccepted,
		message: fmt.Sprintf("attached to GarraServer %s/%s as %s", gs.Namespace, gs.Name, OrchestratorID(ob))}
}

// namespaceLabels reads a namespace's labels; a namespace that cannot be
// read has none (a Selector rule then admits it only if it selects
// everything).
func namespaceLabels(ctx context.Context, c client.Reader, ns string) (map[string]string, error) {
	n := &corev1.Namespace{}
	switch err := c.Get(ctx, client.ObjectKey{Name: ns}, n); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get Namespace %s: %w", ns, err)
	}
	return n.Labels, nil
}

// attachedMembers lists the Orchestrators that name gs and are accepted,
// in the order of their NAMESPACE/NAME.
func (r *GarraServerReconciler) attachedMembers(ctx context.Context, gs *garrav1alpha1.GarraServer) ([]member, error) {
	var list garrav1alpha1.OrchestratorList
	if err := r.List(ctx, &list, client.MatchingFields{serverRefIndex: client.ObjectKeyFromObject(gs).String()}); err != nil {
		return nil, fmt.Errorf("list Orchestrators: %w", err)
	}
	var out []member
	for i := range list.Items {
		ob := &list.Items[i]
		if !ob.DeletionTimestamp.IsZero() {
			continue
		}
		lbl, err := r.namespaceLabels(ctx, gs, ob.Namespace)
		if err != nil {
			return nil, err
		}
		if decideAttachment(gs, ob, lbl, r.SandboxImage).accepted {
			out = append(out, attachedMember(gs, ob))
		}
	}
	// The cache lists in no set order; the rendered config must not
	// change with it.
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// namespaceLabels are ns's labels when the rule needs them: only a
// Selector reads the Namespace.
func (r *GarraServerReconciler) namespaceLabels(ctx context.Context, gs *garrav1alpha1.GarraServer, ns string) (map[string]string, error) {
	// A namespace-scoped manager may not read Namespaces: a Selector
	// then sees none of their labels.
	if a := gs.Spec.AllowedOrchestrators; a == nil || a.Namespaces == nil || a.Namespaces.From != garrav1alpha1.NamespacesFromSelector || len(r.WatchNamespaces) > 0 {
		return nil, nil
	}
	return namespaceLabels(ctx, r.Client, ns)
}
