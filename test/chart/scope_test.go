package chart

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clusterScoped are the resources of config/rbac/role.yaml that only a
// ClusterRole can grant.
var clusterScoped = []string{"clusterroles", "clusterrolebindings", "namespaces", "tokenreviews"}

// namespacedRules are role.yaml's rules without the cluster-scoped
// resources (a rule left with none is dropped).
func namespacedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	var out []rbacv1.PolicyRule
	for _, r := range readRole(t, "role.yaml") {
		r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(res string) bool { return slices.Contains(clusterScoped, res) })
		if len(r.Resources) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func argWith(args []string, prefix string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			return v
		}
	}
	return ""
}

// TestNamespaceScope: rbac.scope namespace renders no ClusterRole or
// ClusterRoleBinding, and in each watched namespace a Role with the
// manager's namespaced rules bound to its ServiceAccount; the manager
// watches exactly those namespaces.
func TestNamespaceScope(t *testing.T) {
	r := render(t, "rbac: {scope: namespace}\nwatchNamespaces: [team-a, team-b]")
	if n := len(r.ofKind("ClusterRole")) + len(r.ofKind("ClusterRoleBinding")); n != 0 {
		t.Fatalf("%d cluster-scoped RBAC objects (kinds %v)", n, r.kinds())
	}
	sa := one[*corev1.ServiceAccount](t, r, "ServiceAccount")
	want := namespacedRules(t)
	managerRoles := map[string]*rbacv1.Role{}
	for _, m := range r.ofKind("Role") {
		role := m.obj.(*rbacv1.Role)
		if strings.HasSuffix(role.Name, "-manager") {
			managerRoles[role.Namespace] = role
		}
	}
	if got := slices.Sorted(maps.Keys(managerRoles)); !slices.Equal(got, []string{"team-a", "team-b"}) {
		t.Fatalf("manager Roles in %v, want team-a and team-b", got)
	}
	for ns, role := range managerRoles {
		if !reflect.DeepEqual(role.Rules, want) {
			t.Errorf("Role in %s: rules %+v\nwant %+v (role.yaml without %v)", ns, role.Rules, want, clusterScoped)
		}
	}
	bound := 0
	for _, m := range r.ofKind("RoleBinding") {
		rb := m.obj.(*rbacv1.RoleBinding)
		if role, ok := managerRoles[rb.Namespace]; ok && rb.RoleRef.Name == role.Name {
			assertBinding(t, rb.RoleRef, rb.Subjects, "Role", role.Name, sa)
			bound++
		}
	}
	if bound != 2 {
		t.Errorf("%d manager RoleBindings, want 2", bound)
	}
	args := managerContainer(t, one[*appsv1.Deployment](t, r, "Deployment")).Args
	if got := argWith(args, "--watch-namespace="); got != "team-a,team-b" {
		t.Errorf("--watch-namespace=%q, want team-a,team-b (args %q)", got, args)
	}
}

// TestNamespaceScopeDefaultsToRelease: with no watchNamespaces, a
// namespace-scoped release watches its own namespace.
func TestNamespaceScopeDefaultsToRelease(t *testing.T) {
	r := render(t, "rbac: {scope: namespace}")
	args := managerContainer(t, one[*appsv1.Deployment](t, r, "Deployment")).Args
	if got := argWith(args, "--watch-namespace="); got != releaseNS {
		t.Errorf("--watch-namespace=%q, want %s", got, releaseNS)
	}
	for _, m := range r.ofKind("Role") {
		if ns := m.obj.(*rbacv1.Role).Namespace; ns != releaseNS {
			t.Errorf("Role %s in %s", m.obj.(*rbacv1.Role).Name, ns)
		}
	}
	// watchNamespaces without rbac.scope namespace is refused: such a
	// manager manages nothing cluster-scoped, so a ClusterRole is wrong.
	if _, err := renderRaw(t, "watchNamespaces: [team-a]"); err == nil || !strings.Contains(err.Error(), "rbac.scope: namespace") {
		t.Errorf("watchNamespaces with cluster scope: err = %v", err)
	}
	// A cluster-scoped release passes no --watch-namespace (all).
	args = managerContainer(t, one[*appsv1.Deployment](t, render(t, ""), "Deployment")).Args
	if got := argWith(args, "--watch-namespace="); got != "" {
		t.Errorf("cluster scope: --watch-namespace=%q", got)
	}
}

// TestTwoNamespacedReleasesDoNotClash: two namespace-scoped releases, one
// per team namespace and even of the same release name, render no object
// that the other renders too (kind, namespace, name), and their Leases
// differ.
func TestTwoNamespacedReleasesDoNotClash(t *testing.T) {
	type key struct{ kind, ns, name string }
	seen := map[key]string{}
	type lease struct{ ns, id string }
	leases := map[lease]string{}
	for _, rel := range []struct{ name, ns string }{{"garra", "team-a"}, {"garra", "team-b"}, {"other", "team-b"}} {
		values := "rbac: {scope: namespace}"
		if rel.name == "other" {
			values += "\nwatchNamespaces: [team-c]"
		}
		r := renderAs(t, rel.name, rel.ns, values)
		who := rel.ns + "/" + rel.name
		for _, m := range r.objs {
			o := m.obj.(metav1.Object)
			k := key{m.gvk.Kind, o.GetNamespace(), o.GetName()}
			if other, dup := seen[k]; dup {
				t.Errorf("%s %s/%s rendered by both %s and %s", k.kind, k.ns, k.name, other, who)
			}
			seen[k] = who
		}
		args := managerContainer(t, one[*appsv1.Deployment](t, r, "Deployment")).Args
		l := lease{argWith(args, "--leader-election-namespace="), argWith(args, "--leader-election-id=")}
		if l.ns == "" {
			l.ns = rel.ns // the manager's default: its pod's namespace
		}
		if l.id == "" {
			t.Errorf("%s: no --leader-election-id (args %q)", who, args)
		}
		if other, dup := leases[l]; dup {
			t.Errorf("Lease %s/%s used by both %s and %s", l.ns, l.id, other, who)
		}
		leases[l] = who
	}
}

// TestTeamRoles: with cluster scope the chart installs the aggregated
// Orchestrator roles of config/rbac, same rules and aggregation labels;
// with namespace scope (an installer without cluster rights) or
// rbac.teamRoles false, none.
func TestTeamRoles(t *testing.T) {
	got := clusterRoles(render(t, ""))
	for name, file := range map[string]string{
		"garra-orchestrator-editor": "orchestrator_editor_role.yaml",
		"garra-orchestrator-viewer": "orchestrator_viewer_role.yaml",
	} {
		cr, ok := got[name]
		if !ok {
			t.Errorf("no ClusterRole %s", name)
			continue
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "rbac", file))
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := strict.Decode(data, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := obj.(*rbacv1.ClusterRole)
		if !reflect.DeepEqual(cr.Rules, want.Rules) {
			t.Errorf("%s rules %+v, want config/rbac/%s's %+v", name, cr.Rules, file, want.Rules)
		}
		for k, v := range want.Labels {
			if strings.HasPrefix(k, "rbac.authorization.k8s.io/") && cr.Labels[k] != v {
				t.Errorf("%s label %s = %q, want %q", name, k, cr.Labels[k], v)
			}
		}
	}
	for _, values := range []string{"rbac: {scope: namespace}", "rbac: {teamRoles: false}"} {
		for name := range clusterRoles(render(t, values)) {
			if strings.HasPrefix(name, "garra-orchestrator-") {
				t.Errorf("%s: ClusterRole %s rendered", values, name)
			}
		}
	}
}
