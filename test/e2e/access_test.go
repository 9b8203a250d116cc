//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Access modes (E2E_ACCESS): how the host reaches a Service.
const (
	// accessClusterIP dials the Service's ClusterIP: the host is the node,
	// or routes to the Service network (the local cluster).
	accessClusterIP = "clusterip"
	// accessPortForward dials a ready pod behind the Service through the
	// API server's port-forward, as `kubectl port-forward svc/…` does
	// (Kind, or any cluster whose Service network the host cannot reach).
	accessPortForward = "port-forward"
)

// connectTimeout bounds one TCP connect to a Service.
const connectTimeout = 3 * time.Second

// serviceURL is the in-cluster URL of Service ns/name. The suite's HTTP
// clients dial it through serviceDialer, so requests carry the Service's
// DNS name as Host, as an in-cluster caller's would.
func serviceURL(ns, name string, port int32) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", name, ns, port)
}

// serviceDialer resolves NAME.NS.svc:PORT to a connection into the cluster
// according to the access mode.
type serviceDialer struct {
	k    *cluster
	mode string

	mu       sync.Mutex
	forwards map[string]*forward // by "ns/pod:port"
}

// forward is one running port-forward to a pod's port.
type forward struct {
	local string        // 127.0.0.1:PORT
	stop  chan struct{} // closed to end it
	done  chan struct{} // closed when it has ended (the pod went away)
}

func newServiceDialer(k *cluster) *serviceDialer {
	return &serviceDialer{k: k, mode: k.p.Access, forwards: map[string]*forward{}}
}

// httpClient is an HTTP client whose connections go through d.
func (d *serviceDialer) httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// DialContext dials addr, which must be NAME.NS.svc:PORT.
func (d *serviceDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(host, ".")
	if len(parts) != 3 || parts[2] != "svc" {
		return nil, fmt.Errorf("dial %s: the suite dials Services only (NAME.NS.svc:PORT)", addr)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	name, ns := parts[0], parts[1]
	var target string
	switch d.mode {
	case accessPortForward:
		target, err = d.forwarded(ctx, ns, name, int32(port))
	default:
		target, err = d.k.serviceAddr(ctx, ns, name, int32(port))
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if err := inCluster(target); err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	// A connection whose SYN was translated to a pod that has just gone
	// keeps that translation in conntrack for as long as the SYN is
	// retransmitted (minutes): fail it fast, and the next attempt, on a new
	// source port, gets the Service's current endpoint.
	nd := net.Dialer{Timeout: connectTimeout}
	return nd.DialContext(ctx, network, target)
}

// forwarded is the local address of a port-forward to a ready pod behind
// Service ns/name, started on first use and restarted when that pod is
// gone (the gateway is deleted or rolled by some scenarios).
func (d *serviceDialer) forwarded(ctx context.Context, ns, name string, port int32) (string, error) {
	pod, podPort, err := d.readyEndpoint(ctx, ns, name, port)
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("%s/%s:%d", ns, pod, podPort)
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.forwards[key]; ok {
		select {
		case <-f.done:
			delete(d.forwards, key)
		default:
			return f.local, nil
		}
	}
	f, err := d.k.portForward(ns, pod, podPort)
	if err != nil {
		return "", err
	}
	d.forwards[key] = f
	return f.local, nil
}

// readyEndpoint is a ready pod of Service ns/name and the pod port its
// service port maps to, from the Service's EndpointSlices.
func (d *serviceDialer) readyEndpoint(ctx context.Context, ns, name string, port int32) (string, int32, error) {
	var svc corev1.Service
	if err := d.k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
		return "", 0, err
	}
	portName := ""
	found := false
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			portName, found = p.Name, true
		}
	}
	if !found {
		return "", 0, fmt.Errorf("Service %s/%s has no port %d", ns, name, port)
	}
	var slices discoveryv1.EndpointSliceList
	if err := d.k.c.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return "", 0, err
	}
	for _, s := range slices.Items {
		var podPort int32
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == portName && p.Port != nil {
				podPort = *p.Port
			}
		}
		for _, e := range s.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			if ready && podPort != 0 && e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
				return e.TargetRef.Name, podPort, nil
			}
		}
	}
	return "", 0, fmt.Errorf("Service %s/%s has no ready endpoint for port %d", ns, name, port)
}

// portForward starts forwarding a local port on 127.0.0.1 to port of pod
// ns/pod through the API server, as `kubectl port-forward` does.
func (k *cluster) portForward(ns, pod string, port int32) (*forward, error) {
	rt, upgrader, err := spdy.RoundTripperFor(k.cfg)
	if err != nil {
		return nil, err
	}
	url := k.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, url)
	f := &forward{stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, f.stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("port-forward %s/%s:%d: %w", ns, pod, port, err)
	}
	errc := make(chan error, 1)
	go func() {
		defer close(f.done)
		errc <- pf.ForwardPorts()
	}()
	select {
	case <-ready:
	case err := <-errc:
		return nil, fmt.Errorf("port-forward %s/%s:%d: %w", ns, pod, port, err)
	}
	ports, err := pf.GetPorts()
	if err == nil && len(ports) != 1 {
		err = fmt.Errorf("%d local ports", len(ports))
	}
	if err != nil {
		close(f.stop)
		return nil, fmt.Errorf("port-forward %s/%s:%d: local port: %w", ns, pod, port, err)
	}
	f.local = fmt.Sprintf("127.0.0.1:%d", ports[0].Local)
	return f, nil
}

// close ends every port-forward.
func (d *serviceDialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key, f := range d.forwards {
		close(f.stop)
		<-f.done
		delete(d.forwards, key)
	}
}

// inCluster refuses a target that is neither loopback (a port-forward) nor
// a private address (a ClusterIP or pod IP): the suite's traffic stays on
// the machine and its test cluster.
func inCluster(target string) error {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return err
	}
	if ip := ap.Addr().Unmap(); !ip.IsLoopback() && !ip.IsPrivate() {
		return fmt.Errorf("%s is neither loopback nor a private cluster address: refused", ip)
	}
	return nil
}
