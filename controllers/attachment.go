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
// Secrets its tokenSecretRef and its credentials name, in its namespace.
func orchestratorSecretRefs(o client.Object) []string {
	spec := o.(*garrav1alpha1.Orchestrator).Spec
	var names []string
	if ref := spec.TokenSecretRef; ref != nil {
		names = append(names, ref.Name)
	}
	for _, c := range spec.Credentials {
		if !slices.Contains(names, c.SecretRef.Name) {
			names = append(names, c.SecretRef.Name)
		}
	}
	return names
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

// selectorUnreadable says why a namespace-scoped operator (watched not
// empty) cannot apply gs's rule, or "": it may not read Namespaces, so a
// Selector rule cannot be evaluated, and it refuses rather than admitting
// none without a word.
func selectorUnreadable(gs *garrav1alpha1.GarraServer, watched []string) string {
	a := gs.Spec.AllowedOrchestrators
	if len(watched) == 0 || a == nil || a.Namespaces == nil || a.Namespaces.From != garrav1alpha1.NamespacesFromSelector {
		return ""
	}
	return fmt.Sprintf("%s of GarraServer %s/%s is from: Selector, but the operator watches only the namespaces %s and may not read namespace labels: "+
		"use from: Same or All (an install that watches every namespace can use Selector)",
		allowedField, gs.Namespace, gs.Name, strings.Join(watched, ","))
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
func decideAttachment(gs *garrav1alpha1.GarraServer, ob *garrav1alpha1.Orchestrator, nsLabels map[string]string, defSandbox string, watched []string) attachment {
	if gs == nil {
		k := serverKey(ob)
		if len(watched) > 0 && !slices.Contains(watched, k.Namespace) {
			return attachment{reason: garrav1alpha1.ReasonServerNotFound,
				message: fmt.Sprintf("spec.serverRef: namespace %s is not one the operator watches (%s), so it sees no GarraServer there",
					k.Namespace, strings.Join(watched, ","))}
		}
		return attachment{reason: garrav1alpha1.ReasonServerNotFound,
			message: fmt.Sprintf("spec.serverRef: no GarraServer %s in namespace %s", k.Name, k.Namespace)}
	}
	if why := selectorUnreadable(gs, watched); why != "" {
		return attachment{reason: garrav1alpha1.ReasonNotAllowedByServer, message: why}
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

// attachedMembers gathers the Orchestrators that name gs: those the pure
// decision admits are placed in the order they came (creation time, then
// NAMESPACE/NAME), each after gs's inline entries and the ones before it,
// and refused if it clashes with any of them or with another server of its
// namespace (clashOf) or adopts a claim something else controls. It
// returns the members in NAMESPACE/NAME order, and records in s every
// refused one for the server's summary and the clashes for the
// Orchestrators' status.
func (r *GarraServerReconciler) attachedMembers(ctx context.Context, s *reconcileState) ([]member, error) {
	gs := s.gs
	var list garrav1alpha1.OrchestratorList
	if err := r.List(ctx, &list, client.MatchingFields{serverRefIndex: client.ObjectKeyFromObject(gs).String()}); err != nil {
		return nil, fmt.Errorf("list Orchestrators: %w", err)
	}
	var cands []*garrav1alpha1.Orchestrator
	for i := range list.Items {
		ob := &list.Items[i]
		if !ob.DeletionTimestamp.IsZero() {
			continue
		}
		lbl, err := r.namespaceLabels(ctx, gs, ob.Namespace)
		if err != nil {
			return nil, err
		}
		if att := decideAttachment(gs, ob, lbl, r.SandboxImage, r.WatchNamespaces); !att.accepted {
			s.refused = append(s.refused, refusal{ID: OrchestratorID(ob), Reason: att.reason})
			continue
		}
		cands = append(cands, ob)
	}
	slices.SortFunc(cands, func(a, b *garrav1alpha1.Orchestrator) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(OrchestratorID(a), OrchestratorID(b))
	})
	p := newPlaced()
	for _, m := range inlineMembers(gs) {
		p.add(m)
	}
	p.addServer(gs, false)
	seen := map[string]bool{}
	var out []member
	for _, ob := range cands {
		m := attachedMember(gs, ob)
		if !seen[ob.Namespace] {
			// Another server's objects of this namespace, once.
			seen[ob.Namespace] = true
			nb, err := r.otherServers(ctx, gs, ob.Namespace)
			if err != nil {
				return nil, err
			}
			for _, o := range nb {
				p.addServer(o, true)
			}
		}
		why := p.clash(m)
		if why == "" {
			var err error
			if why, err = r.claimInUse(ctx, m); err != nil {
				return nil, err
			}
		}
		if why != "" {
			s.refuse(m, garrav1alpha1.ReasonNameClash, why)
			continue
		}
		p.add(m)
		out = append(out, m)
	}
	// The cache lists in no set order; the rendered config must not
	// change with it.
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// refuse records that m is not attached after all, and why.
func (s *reconcileState) refuse(m member, reason, msg string) {
	if s.clashes == nil {
		s.clashes = map[string]attachment{}
	}
	s.clashes[m.ID] = attachment{reason: reason, message: msg}
	s.refused = append(s.refused, refusal{ID: m.ID, Reason: reason})
}

// otherServers are the GarraServers of namespace ns other than gs.
func (r *GarraServerReconciler) otherServers(ctx context.Context, gs *garrav1alpha1.GarraServer, ns string) ([]*garrav1alpha1.GarraServer, error) {
	var list garrav1alpha1.GarraServerList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list GarraServers of %s: %w", ns, err)
	}
	var out []*garrav1alpha1.GarraServer
	for i := range list.Items {
		if o := &list.Items[i]; o.UID != gs.UID {
			out = append(out, o)
		}
	}
	return out, nil
}

// claimInUse says why m may not adopt the claim its workspace.claimName
// names, or "": one of the operator's claims (the cache holds only those)
// that another owner controls. A claim without a controller (a retained
// workspace, or one the team made) may be adopted.
func (r *GarraServerReconciler) claimInUse(ctx context.Context, m member) (string, error) {
	if m.Workspace.ClaimName == "" {
		return "", nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: m.at.Namespace, Name: m.Workspace.ClaimName}, pvc); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get claim %s: %w", m.Workspace.ClaimName, err)
	}
	if ref := metav1.GetControllerOfNoCopy(pvc); ref != nil && ref.UID != m.at.Owner.UID {
		return fmt.Sprintf("spec.workspace.claimName: claim %s is controlled by %s %s: only a claim without a controller (a retained workspace) can be adopted",
			pvc.Name, ref.Kind, ref.Name), nil
	}
	return "", nil
}

// namespaceLabels are ns's labels when the rule needs them: only a
// Selector reads the Namespace.
func (r *GarraServerReconciler) namespaceLabels(ctx context.Context, gs *garrav1alpha1.GarraServer, ns string) (map[string]string, error) {
	// A namespace-scoped manager may not read Namespaces: a Selector
	// then refuses (decideAttachment says why).
	if a := gs.Spec.AllowedOrchestrators; a == nil || a.Namespaces == nil || a.Namespaces.From != garrav1alpha1.NamespacesFromSelector || len(r.WatchNamespaces) > 0 {
		return nil, nil
	}
	return namespaceLabels(ctx, r.Client, ns)
}
