package kube_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/garraia/garra/internal/kube"
	"github.com/garraia/garra/test/kubetest"
)

// states collects what a Watch reports.
type states struct {
	mu  sync.Mutex
	got []string
}

func (s *states) on(st kube.WatchState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case st.Err != nil:
		s.got = append(s.got, "lost")
	case st.Raw == nil:
		s.got = append(s.got, "absent")
	default:
		var cm kube.ConfigMap
		if err := json.Unmarshal(st.Raw, &cm); err != nil {
			s.got = append(s.got, "undecodable")
			return
		}
		s.got = append(s.got, cm.Data["v"])
	}
}

func (s *states) wait(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := strings.Join(s.got, " ")
		s.mu.Unlock()
		if got == strings.Join(want, " ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reported %q, want %q", got, strings.Join(want, " "))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The watch protocol as the API server speaks it, scripted: a watch whose
// resourceVersion expired (410 Gone, as an ERROR event and as the
// response's status) is replaced by a new list, and a list that fails is
// reported as lost, then the state again once a list succeeds.
func TestWatchRelistsAndRecovers(t *testing.T) {
	var mu sync.Mutex
	var log []string
	step := 0
	cm := func(v, rv string) string {
		return fmt.Sprintf(`{"metadata":{"name":"g","namespace":"ns","resourceVersion":%q},"data":{"v":%q}}`, rv, v)
	}
	list := func(w http.ResponseWriter, rv, item string) {
		fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":%q},"items":[%s]}`, rv, item)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		step++
		n := step
		q := r.URL.Query()
		log = append(log, fmt.Sprintf("%s watch=%s rv=%s fs=%s", r.URL.Path, q.Get("watch"), q.Get("resourceVersion"), q.Get("fieldSelector")))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch n {
		case 1:
			list(w, "10", cm("one", "9"))
		case 2: // the watch from 10: expired
			fmt.Fprintf(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}`+"\n")
		case 3:
			list(w, "20", cm("two", "19"))
		case 4: // the watch from 20: a change, then the stream ends
			fmt.Fprintln(w, `{"type":"MODIFIED","object":`+cm("three", "21")+`}`)
			fmt.Fprintln(w, `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"25"}}}`)
		case 5: // renewed from the bookmark, refused as expired outright
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Gone","code":410}`)
		case 6: // the relist fails
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`)
		case 7: // back, unchanged: reported again after the loss
			list(w, "25", cm("three", "21"))
		case 8:
			fmt.Fprintln(w, `{"type":"DELETED","object":`+cm("three", "30")+`}`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	c, err := kube.New(&rest.Config{Host: srv.URL}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &states{}
	go c.Watch(ctx, kube.WatchOptions{Resource: "configmaps", Namespace: "ns", Name: "g", BackoffFloor: time.Millisecond, BackoffCeiling: 5 * time.Millisecond}, s.on)
	s.wait(t, "one", "two", "three", "lost", "three", "absent")
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"/api/v1/namespaces/ns/configmaps watch= rv= fs=metadata.name=g",
		"/api/v1/namespaces/ns/configmaps watch=true rv=10 fs=metadata.name=g",
		"/api/v1/namespaces/ns/configmaps watch= rv= fs=metadata.name=g",
		"/api/v1/namespaces/ns/configmaps watch=true rv=20 fs=metadata.name=g",
		"/api/v1/namespaces/ns/configmaps watch=true rv=25 fs=metadata.name=g",
		"/api/v1/namespaces/ns/configmaps watch= rv= fs=metadata.name=g",
		"/api/v1/namespaces/ns/configmaps watch= rv= fs=metadata.name=g",
		"/api/v1/namespaces/ns/configmaps watch=true rv=25 fs=metadata.name=g",
	}
	if strings.Join(log[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// Against a real API server: the list and watch of one Secret by name,
// every change reported as it happens, its deletion as absent.
func TestWatchAgainstAPIServer(t *testing.T) {
	rc := kubetest.Start(t)
	admin := kubernetes.NewForConfigOrDie(rc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cms := admin.CoreV1().ConfigMaps("default")
	c, err := kube.New(rc, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := &states{}
	go c.Watch(ctx, kube.WatchOptions{Resource: "configmaps", Namespace: "default", Name: "g"}, s.on)
	s.wait(t, "absent")
	obj, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Data: map[string]string{"v": "one"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Another object of the kind is not reported.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Data: map[string]string{"v": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wait(t, "absent", "one")
	obj.Data["v"] = "two"
	if _, err := cms.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wait(t, "absent", "one", "two")
	if err := cms.Delete(ctx, "g", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wait(t, "absent", "one", "two", "absent")
}
