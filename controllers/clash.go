package controllers

import (
	"fmt"
	"slices"
	"strings"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// An attached Orchestrator names its objects after itself, in its own
// namespace; an inline entry after its server, in the server's. When the
// two namespaces are one, the two schemes can meet (inline sandbox of
// server garra is garra-sandbox-sandbox, and so is the sandbox of an
// Orchestrator named garra-sandbox), and two writers would then take the
// same Deployment from each other on every pass. The same goes for the
// objects of another server of that namespace, and for a token the gateway
// already takes for another caller, which would make it refuse its whole
// config. The checks below find these before anything is applied; the
// later caller (an Orchestrator, after every inline entry and every
// Orchestrator attached before it) is the one refused, naming both.

// objectRef is one object the operator writes: kind, namespace and name.
type objectRef struct{ Kind, Namespace, Name string }

func (o objectRef) String() string { return o.Kind + " " + o.Namespace + "/" + o.Name }

// objects are the objects written for m, as its builders name them.
func (m member) objects() []objectRef {
	ns, sb := m.at.Namespace, m.sandboxName()
	out := []objectRef{
		{"Deployment", ns, sb}, {"Service", ns, sb}, {"ServiceAccount", ns, sb},
		{"NetworkPolicy", ns, sb}, {"Secret", ns, m.sandboxTokenName()},
		{"Secret", ns, m.orchSecretName()}, {"PersistentVolumeClaim", ns, m.workspaceName()},
	}
	if m.at.Namespace != m.gs.Namespace {
		out = append(out, objectRef{"Role", ns, memberWakeRoleName(m)}, objectRef{"RoleBinding", ns, memberWakeRoleName(m)})
	}
	return out
}

// serverObjects are the objects written for gs's gateway, in its namespace.
func serverObjects(gs *garrav1alpha1.GarraServer) []objectRef {
	ns, gw := gs.Namespace, gatewayName(gs)
	return []objectRef{
		{"Deployment", ns, gw}, {"Service", ns, gw}, {"ServiceAccount", ns, gw}, {"ConfigMap", ns, gw},
		{"Secret", ns, gw}, {"Secret", ns, tokensName(gs)}, {"PersistentVolumeClaim", ns, gatewayDataName(gs)},
		{"PodDisruptionBudget", ns, gw}, {"Role", ns, wakeRoleName(gs)}, {"RoleBinding", ns, wakeRoleName(gs)},
		{"Role", ns, policyRoleName(gs)}, {"RoleBinding", ns, policyRoleName(gs)},
	}
}

// tokenKeys are m's keys in the server's tokens Secret.
func (m member) tokenKeys() []string { return []string{m.tokenKey(), m.tokenKey() + SandboxKeySuffix} }

// describe names m for a message: an inline entry by its field, an
// Orchestrator by its identity.
func (m member) describe() string {
	if m.attached {
		return "Orchestrator " + m.ID
	}
	return fmt.Sprintf("GarraServer %s/%s's inline orchestrator %s (%s)", m.gs.Namespace, m.gs.Name, m.Name, m.Field)
}

// placed indexes the callers already placed, by what they write: object,
// token key and identity, each with a phrase naming the writer. A pass
// places a thousand Orchestrators; each is checked against the index, not
// against every one before it.
type placed struct {
	objects map[objectRef]string
	keys    map[string]string
	ids     map[string]string
	// servers are the GarraServers whose objects are in.
	servers map[string]bool
}

func newPlaced() *placed {
	return &placed{objects: map[objectRef]string{}, keys: map[string]string{}, ids: map[string]string{}, servers: map[string]bool{}}
}

// add places m.
func (p *placed) add(m member) {
	who := m.describe()
	for _, o := range m.objects() {
		if _, ok := p.objects[o]; !ok {
			p.objects[o] = who
		}
	}
	for _, k := range m.tokenKeys() {
		p.keys[k] = who
	}
	p.ids[m.ID] = who
}

// addServer places gs's gateway objects and, unless withInline is false
// (its inline entries are placed as members), its inline entries' objects.
func (p *placed) addServer(gs *garrav1alpha1.GarraServer, withInline bool) {
	key := gs.Namespace + "/" + gs.Name
	if p.servers[key] {
		return
	}
	p.servers[key] = true
	who := fmt.Sprintf("GarraServer %s/%s's gateway", gs.Namespace, gs.Name)
	for _, o := range serverObjects(gs) {
		if _, ok := p.objects[o]; !ok {
			p.objects[o] = who
		}
	}
	if !withInline {
		return
	}
	for _, e := range inlineMembers(gs) {
		for _, o := range e.objects() {
			if _, ok := p.objects[o]; !ok {
				p.objects[o] = e.describe()
			}
		}
	}
}

// clash is the first way m would be confused with a placed caller, or "".
func (p *placed) clash(m member) string {
	if who, ok := p.ids[m.ID]; ok {
		return fmt.Sprintf("%s and %s are both known to the gateway as %s: rename one", m.describe(), who, m.ID)
	}
	for _, k := range m.tokenKeys() {
		if who, ok := p.keys[k]; ok {
			return fmt.Sprintf("%s and %s would share the key %s of Secret %s: rename one", m.describe(), who, k, tokensName(m.gs))
		}
	}
	for _, o := range m.objects() {
		if who, ok := p.objects[o]; ok {
			return fmt.Sprintf("%s would write %s, which %s writes: rename one", m.describe(), o, who)
		}
	}
	return ""
}

// clashOf is the first way m, an Orchestrator about to attach, would be
// confused with a caller already placed, or "": the same identity or
// token key as one of earlier (its server's inline entries and the
// Orchestrators attached before it), or an object name any of those,
// its server's gateway or neighbours (the other GarraServers of m's
// namespace, with their inline entries) already writes. A claim m adopts
// (workspace.claimName) counts as one of its objects, so it cannot adopt a
// claim in use.
func clashOf(m member, earlier []member, neighbours []*garrav1alpha1.GarraServer) string {
	p := newPlaced()
	for _, e := range earlier {
		p.add(e)
	}
	p.addServer(m.gs, false)
	for _, gs := range neighbours {
		p.addServer(gs, true)
	}
	return p.clash(m)
}

// sharesKey: m and e would write the same key of the tokens Secret. The
// key schemes keep them apart ('_' is in no name), which this checks
// rather than assumes.
func sharesKey(m, e member) bool {
	for _, k := range m.tokenKeys() {
		if slices.Contains(e.tokenKeys(), k) {
			return true
		}
	}
	return false
}

// placedTokens indexes the bearer tokens the gateway already takes, by
// value, with a phrase naming whose: the owner key first, then each caller
// placed. Only the names ever reach a message.
type placedTokens struct {
	values map[string][]byte
	by     map[string]string
}

func newPlacedTokens(gs *garrav1alpha1.GarraServer, values map[string][]byte) *placedTokens {
	p := &placedTokens{values: values, by: map[string]string{}}
	if t := sourceToken(values[gatewayAPIKeyRef(gs).valueKey()]); t != "" {
		p.by[t] = fmt.Sprintf("the owner key of GarraServer %s/%s", gs.Namespace, gs.Name)
	}
	return p
}

// token is m's bearer token as read, "" when it has none or it is not
// read yet.
func (p *placedTokens) token(m member) string {
	if !usesToken(m.OrchestratorSettings) {
		return ""
	}
	return sourceToken(p.values[orchTokenRef(m).valueKey()])
}

func (p *placedTokens) add(m member) {
	if t := p.token(m); t != "" {
		if _, ok := p.by[t]; !ok {
			p.by[t] = m.describe()
		}
	}
}

// clash names whose token m's equals, or "".
func (p *placedTokens) clash(m member) string {
	t := p.token(m)
	if t == "" {
		return ""
	}
	who, ok := p.by[t]
	if !ok {
		return ""
	}
	ref := orchTokenRef(m)
	if strings.HasPrefix(who, "the owner key") {
		return fmt.Sprintf("spec.tokenSecretRef: %s holds %s: give the Orchestrator a token of its own", ref.Secret, who)
	}
	return fmt.Sprintf("spec.tokenSecretRef: %s holds the same token as %s: a token proves one caller; remove the other, or give this one a token of its own",
		ref.Secret, who)
}

// tokenClash names the caller whose bearer token m's equals, or "": the
// gateway's owner key, or the token of one of earlier. values are the
// Secrets' values as read (secretRef.valueKey); a token not read yet
// clashes with nothing. Only the names are in the message, never a token.
func tokenClash(m member, earlier []member, values map[string][]byte) string {
	p := newPlacedTokens(m.gs, values)
	for _, e := range earlier {
		p.add(e)
	}
	return p.clash(m)
}

// refusal is an Orchestrator that names a server and is not attached, for
// the server's summary.
type refusal struct {
	ID, Reason string
}

// sortRefusals orders refusals by identity.
func sortRefusals(rs []refusal) {
	slices.SortFunc(rs, func(a, b refusal) int { return strings.Compare(a.ID, b.ID) })
}
