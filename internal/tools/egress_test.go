package tools

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDestinationRefusal(t *testing.T) {
	tests := []struct {
		ip   string
		want string
	}{
		// IPv4
		{"127.0.0.1", refusedLoopback},
		{"127.255.255.254", refusedLoopback},
		{"0.0.0.0", refusedUnspecified},
		{"0.1.2.3", refusedReserved},
		{"10.0.0.1", refusedPrivate},
		{"10.255.255.255", refusedPrivate},
		{"172.16.0.1", refusedPrivate},
		{"172.31.255.255", refusedPrivate},
		{"192.168.1.1", refusedPrivate},
		{"100.64.0.1", refusedShared},
		{"100.127.255.255", refusedShared},
		{"169.254.169.254", refusedLinkLocal},
		{"169.254.0.1", refusedLinkLocal},
		{"192.0.0.170", refusedReserved},
		{"192.0.2.1", refusedReserved},
		{"198.51.100.7", refusedReserved},
		{"203.0.113.9", refusedReserved},
		{"192.88.99.1", refusedReserved},
		{"198.18.0.1", refusedBenchmark},
		{"198.19.255.255", refusedBenchmark},
		{"224.0.0.1", refusedMulticast},
		{"239.255.255.250", refusedMulticast},
		{"240.0.0.1", refusedReserved},
		{"255.255.255.255", refusedBroadcast},
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.15.255.255", ""}, // just below 172.16/12
		{"172.32.0.0", ""},     // just above
		{"100.63.255.255", ""}, // just below 100.64/10
		{"100.128.0.0", ""},
		{"169.253.255.255", ""},
		{"11.0.0.1", ""},
		{"198.17.255.255", ""},
		{"223.255.255.255", ""},
		// IPv6
		{"::1", refusedLoopback},
		{"::", refusedUnspecified},
		{"fe80::1", refusedLinkLocal},
		{"fe80::1%eth0", refusedLinkLocal},
		{"febf:ffff::1", refusedLinkLocal},
		{"fc00::1", refusedPrivate},
		{"fd12:3456:789a::1", refusedPrivate},
		{"fec0::1", refusedPrivate},
		{"ff02::1", refusedMulticast},
		{"ff05::2", refusedMulticast},
		{"2001:db8::1", refusedReserved},
		{"3fff::1", refusedReserved},
		{"100::1", refusedReserved},
		{"2001:2::1", refusedBenchmark},
		{"2001:10::1", refusedReserved},
		{"::2", refusedReserved},              // IPv4-compatible, deprecated
		{"1234::1", refusedReserved},          // outside 2000::/3
		{"::ffff:0:7f00:1", refusedReserved},  // IPv4-translated (SIIT), outside 2000::/3
		{"2606:4700:4700::1111", ""},          // public
		{"2a00:1450:4001:80b::200e", ""},      // public
		{"::ffff:127.0.0.1", refusedLoopback}, // IPv4-mapped
		{"::ffff:7f00:1", refusedLoopback},    // the same, in hex
		{"::ffff:169.254.169.254", refusedLinkLocal},
		{"::ffff:10.1.2.3", refusedPrivate},
		{"::ffff:8.8.8.8", ""},
		{"::127.0.0.1", refusedLoopback}, // IPv4-compatible
		{"::10.0.0.1", refusedPrivate},
		{"::8.8.8.8", refusedReserved},
		{"64:ff9b::127.0.0.1", refusedLoopback}, // NAT64 of loopback
		{"64:ff9b::a9fe:a9fe", refusedLinkLocal},
		{"64:ff9b::10.0.0.1", refusedPrivate},
		{"64:ff9b::192.168.0.1", refusedPrivate},
		{"64:ff9b::8.8.8.8", ""}, // NAT64 of a public address
		{"64:ff9b:1::8.8.8.8", refusedPrivate},
		{"2002:7f00:1::1", refusedLoopback}, // 6to4 of 127.0.0.1
		{"2002:a00:1::", refusedPrivate},
		{"2002:808:808::1", ""},
		{"2001:0:a00:1::1", refusedPrivate},            // Teredo server 10.0.0.1
		{"2001:0:808:808::80ff:fffe", refusedLoopback}, // Teredo client ^0x7f000001
		{"2001:0:808:808::f7f7:f7f7", ""},              // Teredo, client 8.8.8.8
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			ip, err := netip.ParseAddr(tt.ip)
			if err != nil {
				t.Fatal(err)
			}
			if got := destinationRefusal(ip); got != tt.want {
				t.Errorf("destinationRefusal(%s) = %q, want %q", tt.ip, got, tt.want)
			}
		})
	}
	if got := destinationRefusal(netip.Addr{}); got == "" {
		t.Error("the zero Addr is not refused")
	}
}

func TestAllowKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"example.com:8443", "example.com:8443"},
		{"Example.com.:8443", "example.com:8443"},
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1:80", "127.0.0.1:80"},
		{"::1", "::1"},
		{"[::1]", "::1"},
		{"[0:0::1]:8080", "[::1]:8080"},
		{" 10.0.0.5 ", "10.0.0.5"},
		{"", ""},
		{"host:", ""},
	}
	for _, tt := range tests {
		got, ok := allowKey(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("allowKey(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

// loopbackOnly makes a guard's dials fail (and the test with them) for any
// address that is not loopback, so that a bug in the guard or in a test
// can never send a packet off this machine.
func loopbackOnly(t *testing.T, g *EgressGuard) *[]netip.AddrPort {
	t.Helper()
	var mu sync.Mutex
	var seen []netip.AddrPort
	g.connected = func(ap netip.AddrPort) error {
		mu.Lock()
		seen = append(seen, ap)
		mu.Unlock()
		if !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the guard let a connection go to %s", ap)
			return errors.New("test: only loopback may be contacted")
		}
		return nil
	}
	return &seen
}

// ipv6Sockets reports whether this machine can open an IPv6 socket.
func ipv6Sockets() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// dnsDouble is a resolver whose every A query for any name answers ip and
// every other query answers no records. It speaks DNS over the in-memory
// stream the resolver dials, so no socket is opened.
func dnsDouble(t *testing.T, ip netip.Addr) *net.Resolver {
	t.Helper()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				for {
					var n uint16
					if err := binary.Read(server, binary.BigEndian, &n); err != nil {
						return
					}
					q := make([]byte, n)
					if _, err := io.ReadFull(server, q); err != nil {
						return
					}
					resp := dnsAnswer(q, ip)
					if resp == nil {
						return
					}
					_ = binary.Write(server, binary.BigEndian, uint16(len(resp)))
					if _, err := server.Write(resp); err != nil {
						return
					}
				}
			}()
			return client, nil
		},
	}
}

// dnsAnswer builds the reply to query q: its id and question, and one A
// record (ip) when the question is for A.
func dnsAnswer(q []byte, ip netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	end := 12
	for end < len(q) && q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5 // the root label, QTYPE, QCLASS
	if end > len(q) {
		return nil
	}
	question := q[12:end]
	qtype := binary.BigEndian.Uint16(q[end-4:])
	resp := append([]byte{}, q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0)
	resp = append(resp, question...)
	if qtype == 1 && ip.Is4() {
		resp[7] = 1 // ANCOUNT
		a := ip.As4()
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		resp = append(resp, a[:]...)
	}
	return resp
}

// served is a loopback HTTP server counting its requests.
func served(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func hostPort(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestEgressGuardRefusesInternalDestinations(t *testing.T) {
	metrics, metricsHits := served(t, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "garra_requests_total 42\n")
	})
	port := metrics.Listener.Addr().(*net.TCPAddr).Port
	g := NewEgressGuard(nil)
	seen := loopbackOnly(t, g)
	l := NewLocal(LocalOptions{Egress: g})

	tests := []struct {
		name, url, want string
	}{
		{"loopback", metrics.URL + "/metrics", "web_fetch refused: 127.0.0.1 is a loopback address"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/", "web_fetch refused: 169.254.169.254 is a link-local address"},
		{"private", "http://10.0.0.1/", "web_fetch refused: 10.0.0.1 is a private address"},
		{"private 192.168", "https://192.168.1.1/admin", "web_fetch refused: 192.168.1.1 is a private address"},
		{"cgnat", "http://100.64.0.1/", "web_fetch refused: 100.64.0.1 is a shared (CGNAT) address"},
		{"multicast", "http://224.0.0.1/", "web_fetch refused: 224.0.0.1 is a multicast address"},
		{"unspecified", fmt.Sprintf("http://0.0.0.0:%d/metrics", port), "web_fetch refused: 0.0.0.0 is an unspecified address"},
		{"ipv6 loopback", fmt.Sprintf("http://[::1]:%d/metrics", port), "web_fetch refused: ::1 is a loopback address"},
		{"ipv4-mapped loopback", fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/metrics", port), "web_fetch refused: ::ffff:127.0.0.1 is a loopback address"},
		{"ipv6 link-local", "http://[fe80::1]/", "web_fetch refused: fe80::1 is a link-local address"},
		{"ipv6 unique local", "http://[fd00:ec2::254]/", "web_fetch refused: fd00:ec2::254 is a private address"},
		{"localhost", fmt.Sprintf("http://localhost:%d/metrics", port), "web_fetch refused: localhost resolves to a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.url, "[") && !strings.Contains(tt.url, "::ffff:") && !ipv6Sockets() {
				t.Skip("no IPv6 sockets on this machine: the dial fails before the guard is asked")
			}
			t0 := time.Now()
			res := call(t, l, ToolWebFetch, map[string]any{"url": tt.url})
			if !res.IsError {
				t.Fatalf("fetched: %s", res.Output)
			}
			if tt.want != "" && res.Output != tt.want {
				t.Errorf("output %q, want %q", res.Output, tt.want)
			}
			if strings.Contains(res.Output, fmt.Sprint(port)) || strings.Contains(res.Output, "dial") {
				t.Errorf("the refusal shows dial details: %q", res.Output)
			}
			// Refused in Control, before connect: no connect timeout is
			// ever waited for, even for addresses nothing answers on.
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("refusal took %s", d)
			}
		})
	}
	if n := metricsHits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
	if len(*seen) != 0 {
		t.Errorf("connections got past the check: %v", *seen)
	}
}

func TestEgressGuardNameResolvingToLoopback(t *testing.T) {
	metrics, hits := served(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "secret metrics") })
	port := metrics.Listener.Addr().(*net.TCPAddr).Port
	for _, ip := range []string{"127.0.0.1", "169.254.169.254", "10.1.2.3"} {
		t.Run(ip, func(t *testing.T) {
			g := NewEgressGuard(nil)
			g.resolver = dnsDouble(t, netip.MustParseAddr(ip))
			seen := loopbackOnly(t, g)
			l := NewLocal(LocalOptions{Egress: g})
			res := call(t, l, ToolWebFetch, map[string]any{"url": fmt.Sprintf("http://rebind.example.test:%d/metrics", port)})
			want := "web_fetch refused: rebind.example.test resolves to " + destinationRefusal(netip.MustParseAddr(ip))
			if !res.IsError || res.Output != want {
				t.Fatalf("got %q (error %v), want %q", res.Output, res.IsError, want)
			}
			if len(*seen) != 0 {
				t.Errorf("connections got past the check: %v", *seen)
			}
		})
	}
	if hits.Load() != 0 {
		t.Error("the loopback server was reached")
	}

	// The same double with the name allowlisted does connect, which shows
	// the refusals above came from the resolved address.
	g := NewEgressGuard([]string{"rebind.example.test"})
	g.resolver = dnsDouble(t, netip.MustParseAddr("127.0.0.1"))
	seen := loopbackOnly(t, g)
	res := call(t, NewLocal(LocalOptions{Egress: g}), ToolWebFetch, map[string]any{"url": fmt.Sprintf("http://rebind.example.test:%d/metrics", port)})
	if res.IsError || !strings.Contains(res.Output, "secret metrics") {
		t.Fatalf("allowlisted name: %s", res.Output)
	}
	if len(*seen) != 1 || (*seen)[0].Port() != uint16(port) {
		t.Errorf("connections: %v", *seen)
	}
}

func TestEgressGuardAllowlistAndRedirects(t *testing.T) {
	metrics, metricsHits := served(t, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "garra_requests_total 42\n") })
	metricsHost := hostPort(t, metrics.URL)
	var allowed *httptest.Server
	allowed, _ = served(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "allowed page")
		case "/to-metrics":
			http.Redirect(w, r, metrics.URL+"/metrics", http.StatusFound)
		case "/to-localhost":
			// Same server, but named by a host the allowlist does not hold.
			http.Redirect(w, r, "http://localhost:"+fmt.Sprint(allowed.Listener.Addr().(*net.TCPAddr).Port)+"/page", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/", http.StatusMovedPermanently)
		case "/to-self":
			http.Redirect(w, r, "/page", http.StatusFound)
		}
	})
	allowedHost := hostPort(t, allowed.URL)

	g := NewEgressGuard([]string{allowedHost})
	seen := loopbackOnly(t, g)
	l := NewLocal(LocalOptions{Egress: g})
	tests := []struct {
		name, path string
		isError    bool
		want       string
	}{
		{"allowlisted host passes", "/page", false, "allowed page"},
		{"redirect within the allowed host", "/to-self", false, "allowed page"},
		{"redirect to another loopback port refused", "/to-metrics", true, "web_fetch refused: 127.0.0.1 is a loopback address"},
		{"redirect to an unlisted name refused", "/to-localhost", true, "web_fetch refused: localhost resolves to a loopback address"},
		{"redirect to metadata refused", "/to-metadata", true, "web_fetch refused: 169.254.169.254 is a link-local address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, l, ToolWebFetch, map[string]any{"url": allowed.URL + tt.path})
			if res.IsError != tt.isError || !strings.Contains(res.Output, tt.want) {
				t.Fatalf("got %q (error %v), want %q", res.Output, res.IsError, tt.want)
			}
			if tt.isError && res.Output != tt.want {
				t.Errorf("refusal %q, want exactly %q", res.Output, tt.want)
			}
		})
	}
	if metricsHits.Load() != 0 {
		t.Error("the redirect reached the metrics server")
	}
	for _, ap := range *seen {
		if ap.String() == metricsHost {
			t.Errorf("connected to %s", ap)
		}
	}

	// A host entry without a port admits every port of that host; a
	// host:port entry only its port.
	for _, tt := range []struct {
		entries []string
		ok      bool
	}{
		{[]string{"127.0.0.1"}, true},
		{[]string{metricsHost}, true},
		{[]string{"127.0.0.1:1"}, false},
		{[]string{"localhost"}, false}, // names are not resolved to match
		{[]string{"127.0.0.2"}, false},
	} {
		g := NewEgressGuard(tt.entries)
		loopbackOnly(t, g)
		res := call(t, NewLocal(LocalOptions{Egress: g}), ToolWebFetch, map[string]any{"url": metrics.URL + "/metrics"})
		if res.IsError == tt.ok {
			t.Errorf("allowlist %v: got %q", tt.entries, res.Output)
		}
	}
}

func TestEgressGuardIgnoresEnvironmentProxy(t *testing.T) {
	// A proxy would make the connection for us, to a destination the
	// Control hook never sees.
	if p := NewEgressGuard(nil).transport.Proxy; p != nil {
		t.Fatal("the guarded transport uses a proxy function")
	}
	g := NewEgressGuard(nil)
	loopbackOnly(t, g)
	base := &http.Client{Timeout: 7 * time.Second, Transport: http.DefaultTransport}
	c := g.client(base)
	if c.Transport != g.transport || c.Timeout != base.Timeout || base.Transport != http.DefaultTransport {
		t.Fatal("client: the guard's transport must replace (a copy of) the base client's")
	}
}

func TestWebFetchDescriptionSaysWhenGuarded(t *testing.T) {
	desc := func(l *Local) string {
		ts, _ := l.Tools(context.Background())
		for _, tl := range ts {
			if tl.Name == ToolWebFetch {
				return tl.Description
			}
		}
		t.Fatal("no web_fetch")
		return ""
	}
	if d := desc(NewLocal(LocalOptions{})); strings.Contains(d, "refused") {
		t.Errorf("unguarded description: %s", d)
	}
	if d := desc(NewLocal(LocalOptions{Egress: NewEgressGuard(nil)})); !strings.Contains(d, "loopback, private and link-local ones are refused") {
		t.Errorf("guarded description: %s", d)
	}
}
