package controllers

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestNextTokenSet(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	grace := 5 * time.Minute
	until := now.Add(grace)
	tests := []struct {
		name   string
		live   tokenSet
		source string
		want   tokenSet
	}{
		{"nothing yet: the source alone", tokenSet{}, "a", tokenSet{Current: "a"}},
		{"unchanged, no overlap", tokenSet{Current: "a"}, "a", tokenSet{Current: "a"}},
		{"changed: the old one overlaps", tokenSet{Current: "a"}, "b", tokenSet{Current: "b", Previous: []string{"a"}, Until: until}},
		{"unchanged in grace: kept as it is", tokenSet{Current: "b", Previous: []string{"a"}, Until: now.Add(time.Second)}, "b",
			tokenSet{Current: "b", Previous: []string{"a"}, Until: now.Add(time.Second)}},
		{"grace over: the old one retires", tokenSet{Current: "b", Previous: []string{"a"}, Until: now}, "b", tokenSet{Current: "b"}},
		{"unreadable expiry (zero): retired", tokenSet{Current: "b", Previous: []string{"a"}}, "b", tokenSet{Current: "b"}},
		{"changed again in grace: both earlier ones overlap, the grace restarts",
			tokenSet{Current: "b", Previous: []string{"a"}, Until: now.Add(time.Minute)}, "c",
			tokenSet{Current: "c", Previous: []string{"b", "a"}, Until: until}},
		{"changed a third time in grace: at most two previous",
			tokenSet{Current: "c", Previous: []string{"b", "a"}, Until: now.Add(time.Minute)}, "d",
			tokenSet{Current: "d", Previous: []string{"c", "b"}, Until: until}},
		{"changed after the grace: only the last one overlaps",
			tokenSet{Current: "b", Previous: []string{"a"}, Until: now.Add(-time.Minute)}, "c",
			tokenSet{Current: "c", Previous: []string{"b"}, Until: until}},
		{"changed back to a previous one: it is not listed twice",
			tokenSet{Current: "b", Previous: []string{"a"}, Until: now.Add(time.Minute)}, "a",
			tokenSet{Current: "a", Previous: []string{"b"}, Until: until}},
		{"source missing: nothing accepted (fail closed)", tokenSet{Current: "a", Previous: []string{"z"}, Until: until}, "", tokenSet{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := nextTokenSet(tc.live, tc.source, now, grace)
			if got.Current != tc.want.Current || !slices.Equal(got.Previous, tc.want.Previous) || !got.Until.Equal(tc.want.Until) {
				t.Errorf("nextTokenSet = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTokenSetLines(t *testing.T) {
	ts := tokenSet{Current: "new", Previous: []string{"old"}, Until: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if got := string(ts.render(false)); got != "new\nold" {
		t.Errorf("caller lines = %q, want the current first", got)
	}
	if got := string(ts.render(true)); got != "old\nnew" {
		t.Errorf("sandbox lines = %q, want the old first (the gateway sends the first line)", got)
	}
	if got := string((tokenSet{Current: "only"}).render(true)); got != "only" {
		t.Errorf("one token = %q, want it alone, no newline", got)
	}
	if got := (tokenSet{}).render(false); got == nil || len(got) != 0 {
		t.Errorf("no token = %q, want an empty file", got)
	}
	for _, sandbox := range []bool{false, true} {
		back := parseTokenSet(ts.render(sandbox), sandbox, "2026-01-02T03:04:05Z")
		if back.Current != "new" || !slices.Equal(back.Previous, []string{"old"}) || !back.Until.Equal(ts.Until) {
			t.Errorf("sandbox=%v: parse(render) = %+v, want %+v", sandbox, back, ts)
		}
	}
	if back := parseTokenSet([]byte(" a \n\n b\n"), false, "not a time"); back.Current != "a" || !slices.Equal(back.Previous, []string{"b"}) || !back.Until.IsZero() {
		t.Errorf("blank lines and spaces, bad expiry: %+v", back)
	}
}

// TestTokensSecretData walks one orchestrator through a rotation as the
// reconciler sees it: generated, its source changed (a rotation replaced
// its Secret), in grace, grace over. The bring-your-own one beside it
// changes by hand in the same way.
func TestTokensSecretData(t *testing.T) {
	gs := testServer()
	gs.Spec.Gateway.TokenRotationGracePeriod = &metav1.Duration{Duration: 2 * time.Minute}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	values := map[string][]byte{
		"team-a-orch-badgood/token": []byte("b1"), "team-a-orch-badgood/sandbox-token": []byte("bs1"),
		"n8n-token/token": []byte("n1\n"), "team-a-orch-n8n-prod/sandbox-token": []byte("ns1"),
	}
	step := func(live *corev1.Secret, now time.Time) (*corev1.Secret, map[string]time.Time) {
		t.Helper()
		data, ann, until := tokensSecretData(gs, inlineMembers(gs), live, values, now)
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: ann}, Data: data}, until
	}
	want := func(s *corev1.Secret, kv map[string]string, ann map[string]string) {
		t.Helper()
		got := map[string]string{}
		for k, v := range s.Data {
			got[k] = string(v)
		}
		eqMap(t, "data", got, kv)
		eqMap(t, "annotations", s.Annotations, ann)
	}

	live, until := step(nil, t0)
	want(live, map[string]string{"badgood": "b1", "badgood.sandbox": "bs1", "n8n-prod": "n1", "n8n-prod.sandbox": "ns1"}, map[string]string{})
	if len(until) != 0 {
		t.Errorf("until = %v, want no overlap", until)
	}

	// A rotation of badgood, the n8n token edited by hand.
	values["team-a-orch-badgood/token"], values["team-a-orch-badgood/sandbox-token"] = []byte("b2"), []byte("bs2")
	values["n8n-token/token"] = []byte("n2")
	t1 := t0.Add(time.Minute)
	live, until = step(live, t1)
	exp := t1.Add(2 * time.Minute).Format(time.RFC3339)
	want(live, map[string]string{"badgood": "b2\nb1", "badgood.sandbox": "bs1\nbs2", "n8n-prod": "n2\nn1", "n8n-prod.sandbox": "ns1"},
		map[string]string{AnnotationRotationPrefix + "badgood": exp, AnnotationRotationPrefix + "badgood.sandbox": exp, AnnotationRotationPrefix + "n8n-prod": exp})
	if !until["badgood"].Equal(t1.Add(2*time.Minute)) || !until["n8n-prod"].Equal(t1.Add(2*time.Minute)) || len(until) != 2 {
		t.Errorf("until = %v", until)
	}

	// In grace: nothing moves.
	again, _ := step(live, t1.Add(time.Minute))
	want(again, map[string]string{"badgood": "b2\nb1", "badgood.sandbox": "bs1\nbs2", "n8n-prod": "n2\nn1", "n8n-prod.sandbox": "ns1"}, live.Annotations)

	// Grace over: only the new ones.
	done, until := step(live, t1.Add(2*time.Minute))
	want(done, map[string]string{"badgood": "b2", "badgood.sandbox": "bs2", "n8n-prod": "n2", "n8n-prod.sandbox": "ns1"}, map[string]string{})
	if len(until) != 0 {
		t.Errorf("until = %v, want none", until)
	}

	// A removed orchestrator loses its keys; a missing source is an empty key.
	gs.Spec.Orchestrators = gs.Spec.Orchestrators[:1]
	delete(values, "team-a-orch-badgood/token")
	gone, _ := step(done, t1.Add(3*time.Minute))
	want(gone, map[string]string{"badgood": "", "badgood.sandbox": "bs2"}, map[string]string{})
}

func TestTokensSecretCurrent(t *testing.T) {
	gs := testServer()
	data := map[string][]byte{"badgood": []byte("b")}
	ann := map[string]string{AnnotationRotationPrefix + "badgood": "2026-01-02T03:04:05Z"}
	live := func() *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Labels: labels(gs, ComponentGateway, ""), OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(gs, serverKind)},
				Annotations: map[string]string{AnnotationRotationPrefix + "badgood": "2026-01-02T03:04:05Z", "example.com/other": "x"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"badgood": []byte("b")},
		}
	}
	if !tokensSecretCurrent(gs, live(), data, ann) {
		t.Error("as desired (another's annotation aside): want current")
	}
	for name, change := range map[string]func(*corev1.Secret){
		"absent":             nil,
		"a value differs":    func(s *corev1.Secret) { s.Data["badgood"] = []byte("c") },
		"a key too many":     func(s *corev1.Secret) { s.Data["gone"] = []byte("x") },
		"an expiry differs":  func(s *corev1.Secret) { s.Annotations[AnnotationRotationPrefix+"badgood"] = "later" },
		"an expiry too many": func(s *corev1.Secret) { s.Annotations[AnnotationRotationPrefix+"gone"] = "x" },
		"a label lost":       func(s *corev1.Secret) { delete(s.Labels, LabelInstance) },
		"not controlled":     func(s *corev1.Secret) { s.OwnerReferences = nil },
	} {
		var s *corev1.Secret
		if change != nil {
			s = live()
			change(s)
		}
		if tokensSecretCurrent(gs, s, data, ann) {
			t.Errorf("%s: want a write", name)
		}
	}
}

func TestSourceToken(t *testing.T) {
	for in, want := range map[string]string{"a": "a", " a \n": "a", "\n\n b\nc": "b", "": "", " \n ": ""} {
		if got := sourceToken([]byte(in)); got != want {
			t.Errorf("sourceToken(%q) = %q, want %q", in, got, want)
		}
	}
	// A bring-your-own value of two lines settles: the second pass writes
	// what the first did.
	gs := testServer()
	values := map[string][]byte{"n8n-token/token": []byte("n1\nextra")}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	data, ann, _ := tokensSecretData(gs, inlineMembers(gs), nil, values, now)
	live := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: ann}, Data: data}
	data2, ann2, _ := tokensSecretData(gs, inlineMembers(gs), live, values, now.Add(time.Second))
	if string(data2["n8n-prod"]) != "n1" || len(ann2) != 0 || string(data["n8n-prod"]) != "n1" {
		t.Errorf("two-line source: %q then %q %v", data["n8n-prod"], data2["n8n-prod"], ann2)
	}
}

func TestRotateTokenNames(t *testing.T) {
	if got := rotateTokenNames(" a, b ,,a,c "); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("rotateTokenNames = %v", got)
	}
	if got := rotateTokenNames(""); len(got) != 0 {
		t.Errorf("empty = %v", got)
	}
}

func TestTokenGrace(t *testing.T) {
	gs := &garrav1alpha1.GarraServer{}
	if got := tokenGrace(gs); got != 5*time.Minute {
		t.Errorf("default grace = %s", got)
	}
	gs.Spec.Gateway.TokenRotationGracePeriod = &metav1.Duration{Duration: 2 * time.Second}
	if got := tokenGrace(gs); got != 2*time.Second {
		t.Errorf("grace = %s", got)
	}
}
