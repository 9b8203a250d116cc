package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// ConfigMap is what garra reads of a ConfigMap: its metadata and data.
// The core API group's own type would link that group's package init
// into every command (see the package doc).
type ConfigMap struct {
	metav1.ObjectMeta `json:"metadata"`
	Data              map[string]string `json:"data,omitempty"`
}

// Secret is what garra reads of a Secret: its metadata and data (the
// JSON's base64 decoded).
type Secret struct {
	metav1.ObjectMeta `json:"metadata"`
	Data              map[string][]byte `json:"data,omitempty"`
}

// Watch options' defaults.
const (
	// DefaultWatchTimeout is how long one watch request lasts before it
	// is renewed from the last resourceVersion (the API server ends it).
	DefaultWatchTimeout = 5 * time.Minute
	// DefaultBackoffFloor and DefaultBackoffCeiling bound the wait between
	// attempts after a failure; it doubles from the first to the second.
	DefaultBackoffFloor   = 200 * time.Millisecond
	DefaultBackoffCeiling = 10 * time.Second
)

// WatchOptions are the object one Watch follows and how.
type WatchOptions struct {
	// Resource is the plural name in the core group: "configmaps" or
	// "secrets".
	Resource  string
	Namespace string
	Name      string
	// Timeout is one watch request's length; 0 means DefaultWatchTimeout.
	Timeout time.Duration
	// BackoffFloor and BackoffCeiling; 0 means the defaults.
	BackoffFloor, BackoffCeiling time.Duration
}

// WatchState is what Watch reports: the object as the API server holds it
// now (Raw nil when it does not exist), or Err when the API server could
// not be reached or refused the list, in which case what was reported
// before is no longer known to be current.
type WatchState struct {
	Raw             json.RawMessage
	ResourceVersion string
	Err             error
}

// Watch follows one object by name until ctx ends, calling on (never
// concurrently) with its state: once after each list, and on every change
// the watch delivers, with no delay of its own. It asks only for that
// object (fieldSelector metadata.name), so a Role limited to it by
// resourceNames is enough: get, list and watch of that name. A watch that
// ends is renewed from the last resourceVersion; one the API server no
// longer has (410 Gone) is replaced by a new list; a failure is reported
// through on and retried with a growing, jittered delay.
func (c *Client) Watch(ctx context.Context, o WatchOptions, on func(WatchState)) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultWatchTimeout
	}
	if o.BackoffFloor <= 0 {
		o.BackoffFloor = DefaultBackoffFloor
	}
	if o.BackoffCeiling <= 0 {
		o.BackoffCeiling = DefaultBackoffCeiling
	}
	w := &watcher{c: c, o: o, on: on}
	w.run(ctx)
}

type watcher struct {
	c  *Client
	o  WatchOptions
	on func(WatchState)
	// delivered is the resourceVersion last reported ("" for absent), so
	// that a relist that finds nothing new says nothing; lost says the
	// last report was an error, after which the state is reported again.
	delivered string
	reported  bool
	lost      bool
}

func (w *watcher) run(ctx context.Context) {
	backoff := w.o.BackoffFloor
	fail := func(err error) {
		if ctx.Err() != nil {
			return
		}
		w.lost = true
		w.on(WatchState{Err: err})
		sleep(ctx, jitter(backoff))
		backoff = min(2*backoff, w.o.BackoffCeiling)
	}
	for ctx.Err() == nil {
		rv, err := w.list(ctx)
		if err != nil {
			fail(err)
			continue
		}
		backoff = w.o.BackoffFloor
		// Watch from rv until the API server no longer has it.
		for ctx.Err() == nil {
			next, err := w.watch(ctx, rv)
			if err == nil {
				rv = next
				continue
			}
			if isGone(err) {
				break // relist
			}
			if ctx.Err() != nil {
				return
			}
			// A broken stream: look again with a list, after a pause so
			// that an API server that is going away is not hammered.
			sleep(ctx, jitter(backoff))
			backoff = min(2*backoff, w.o.BackoffCeiling)
			break
		}
	}
}

// path is the collection the object lives in.
func (w *watcher) path() []string {
	return []string{"/api/v1/namespaces", w.o.Namespace, w.o.Resource}
}

func (w *watcher) selector() string {
	return fields.OneTermEqualSelector("metadata.name", w.o.Name).String()
}

// list reads the object's current state, reports it when it changed (or
// after a failure), and returns the list's resourceVersion to watch from.
func (w *watcher) list(ctx context.Context) (string, error) {
	var out struct {
		Metadata metav1.ListMeta   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	req := w.c.rest.Get().AbsPath(w.path()...).Param("fieldSelector", w.selector())
	if err := w.c.do(ctx, req, &out); err != nil {
		return "", fmt.Errorf("list %s %s/%s: %w", w.o.Resource, w.o.Namespace, w.o.Name, err)
	}
	var raw json.RawMessage
	if len(out.Items) > 0 {
		raw = out.Items[0]
	}
	if err := w.report(raw); err != nil {
		return "", err
	}
	return out.Metadata.ResourceVersion, nil
}

// report hands on the object raw (nil: absent) unless it is what was
// last reported.
func (w *watcher) report(raw json.RawMessage) error {
	rv := ""
	if raw != nil {
		var m struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("decode %s %s/%s: %w", w.o.Resource, w.o.Namespace, w.o.Name, err)
		}
		rv = m.Metadata.ResourceVersion
		if rv == "" {
			rv = "?" // present, whatever its version
		}
	}
	if w.reported && !w.lost && rv == w.delivered {
		return nil
	}
	w.reported, w.lost, w.delivered = true, false, rv
	w.on(WatchState{Raw: raw, ResourceVersion: rv})
	return nil
}

// watchEvent is one line of a watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// errGone says the resourceVersion watched from is no longer served.
var errGone = errors.New("resourceVersion expired")

func isGone(err error) bool {
	return errors.Is(err, errGone) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// watch follows the object from rv for one watch request and returns the
// resourceVersion to go on from when the request ended normally.
func (w *watcher) watch(ctx context.Context, rv string) (string, error) {
	// The API server ends the request after timeoutSeconds; the deadline
	// beyond it catches a connection that died without saying so (a
	// bookmark comes about once a minute on a healthy one).
	wctx, cancel := context.WithTimeout(ctx, w.o.Timeout+30*time.Second)
	defer cancel()
	req := w.c.watchRest.Get().AbsPath(w.path()...).
		Param("fieldSelector", w.selector()).
		Param("watch", "true").
		Param("resourceVersion", rv).
		Param("allowWatchBookmarks", "true").
		Param("timeoutSeconds", fmt.Sprint(int(w.o.Timeout/time.Second)))
	body, err := req.Stream(wctx)
	if err != nil {
		return rv, fmt.Errorf("watch %s %s/%s: %w", w.o.Resource, w.o.Namespace, w.o.Name, err)
	}
	defer func() { _ = body.Close() }()
	dec := json.NewDecoder(body)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) && wctx.Err() == nil {
				return rv, nil // the API server's timeout: renew
			}
			return rv, fmt.Errorf("watch %s %s/%s: %w", w.o.Resource, w.o.Namespace, w.o.Name, err)
		}
		switch ev.Type {
		case "ADDED", "MODIFIED":
			if err := w.report(ev.Object); err != nil {
				return rv, err
			}
			rv = w.delivered
		case "DELETED":
			if err := w.report(nil); err != nil {
				return rv, err
			}
			if v := objectVersion(ev.Object); v != "" {
				rv = v
			}
		case "BOOKMARK":
			if v := objectVersion(ev.Object); v != "" {
				rv = v
			}
		case "ERROR":
			var st metav1.Status
			if err := json.Unmarshal(ev.Object, &st); err == nil && (st.Code == http.StatusGone || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone) {
				return rv, errGone
			}
			return rv, fmt.Errorf("watch %s %s/%s: the API server sent an error: %s", w.o.Resource, w.o.Namespace, w.o.Name, string(ev.Object))
		}
	}
}

// objectVersion is the resourceVersion in an event's object.
func objectVersion(raw json.RawMessage) string {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	return m.Metadata.ResourceVersion
}

// jitter spreads d over [d/2, d], so that replicas that lost the API
// server together do not come back in step.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1) //nolint:gosec // G404: spreading retries, no secret
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
