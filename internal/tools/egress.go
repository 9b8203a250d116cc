package tools

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EgressGuard keeps web_fetch off the networks around the process: a
// connection to a loopback, unspecified, link-local, private, shared
// (CGNAT), multicast, broadcast or otherwise non-public address is refused.
// The gateway needs it because an agent's web_fetch runs there, next to its
// own /metrics, the cloud's metadata endpoint and the cluster's services.
//
// The check is made on the address a connection is about to use, in the
// dialer's Control hook, after name resolution and before connect. A
// redirect, a name that resolves to loopback, a DNS answer that changes
// between two requests (rebinding) or an IP written in an unusual form all
// end up as that address, so none of them gets past. Requests never go
// through a proxy from the environment, which would connect on the guard's
// behalf to wherever it is asked.
//
// Build it with NewEgressGuard; it is immutable and safe for concurrent
// use. One guard shares one connection pool among the executors using it.
type EgressGuard struct {
	allowed   map[string]bool // normalised host or host:port
	resolver  *net.Resolver   // nil = net.DefaultResolver
	transport *http.Transport
	// connected, when set, sees every address a connection is allowed to
	// reach, just before connect; an error aborts the dial. Tests use it
	// to make sure nothing but loopback is ever contacted.
	connected func(netip.AddrPort) error
}

// NewEgressGuard returns a guard that lets web_fetch reach the hosts in
// allowedHosts whatever they resolve to. An entry is a host name or IP
// address, which admits every port, or host:port, which admits that port
// only ([::1]:8080 for IPv6). Entries match the host of the URL being
// fetched (or redirected to), case-insensitively and ignoring a trailing
// dot; they are not resolved. Entries that cannot be parsed never match
// (config check reports them).
func NewEgressGuard(allowedHosts []string) *EgressGuard {
	g := &EgressGuard{allowed: map[string]bool{}}
	for _, h := range allowedHosts {
		if k, ok := allowKey(h); ok {
			g.allowed[k] = true
		}
	}
	g.transport = &http.Transport{
		// No Proxy: an environment proxy would make the connection for
		// us, to a destination this guard never sees.
		Proxy:                 nil,
		DialContext:           g.dialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return g
}

// client returns base with the guard's transport.
func (g *EgressGuard) client(base *http.Client) *http.Client {
	c := *base
	c.Transport = g.transport
	return &c
}

// allowKey normalises an allowlist entry or a dial address: lower case, no
// trailing dot, IPv6 in canonical form and bare unless a port follows.
func allowKey(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false
	}
	if host, port, err := net.SplitHostPort(s); err == nil {
		h := normHost(host)
		if h == "" || port == "" {
			return "", false
		}
		return net.JoinHostPort(h, port), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	h := normHost(s)
	return h, h != ""
}

func normHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.String()
	}
	return h
}

// allows reports whether addr (host:port, as the transport dials it) is on
// the allowlist, by host or by host and port.
func (g *EgressGuard) allows(addr string) bool {
	if len(g.allowed) == 0 {
		return false
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	h := normHost(host)
	return g.allowed[h] || g.allowed[net.JoinHostPort(h, port)]
}

// DialContext connects to addr (host:port) as web_fetch does: the host is
// resolved and each address checked just before connect, unless the
// allowlist names the host. The gateway's egress proxy dials its upstreams
// with it, so a sandbox's request through the proxy reaches no more of
// the gateway's networks than web_fetch does. A refusal is an error for
// which RefusedDestination reports true.
func (g *EgressGuard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return g.dialContext(ctx, network, addr)
}

// RefusedDestination reports whether err (or one it wraps) is the guard
// refusing a destination, and why ("a loopback address", …).
func RefusedDestination(err error) (string, bool) {
	var r *egressRefusal
	if errors.As(err, &r) {
		return r.reason, true
	}
	return "", false
}

func (g *EgressGuard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("web_fetch: dial address %q: %w", addr, err)
	}
	check := !g.allows(addr)
	d := &net.Dialer{
		Timeout:   webTimeout,
		KeepAlive: 30 * time.Second,
		Resolver:  g.resolver,
		// The dialer resolves host and calls Control once per address it
		// tries, with that address: the one connect would use.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &egressRefusal{host: host, reason: "an address that cannot be checked"}
			}
			if check {
				if why := destinationRefusal(ap.Addr()); why != "" {
					return &egressRefusal{host: host, reason: why}
				}
			}
			if g.connected != nil {
				return g.connected(ap)
			}
			return nil
		},
	}
	return d.DialContext(ctx, network, addr)
}

// egressRefusal is a destination the guard refused. Its message names the
// host the URL gave and the kind of address, nothing else: the address
// itself and the port stay out of what the model sees.
type egressRefusal struct {
	host   string
	reason string
}

func (e *egressRefusal) Error() string {
	host := strings.TrimSuffix(e.host, ".")
	if _, err := netip.ParseAddr(host); err == nil {
		return fmt.Sprintf("web_fetch refused: %s is %s", host, e.reason)
	}
	return fmt.Sprintf("web_fetch refused: %s resolves to %s", host, e.reason)
}

// Kinds of refused destination, as egressRefusal names them.
const (
	refusedLoopback    = "a loopback address"
	refusedUnspecified = "an unspecified address"
	refusedLinkLocal   = "a link-local address"
	refusedPrivate     = "a private address"
	refusedShared      = "a shared (CGNAT) address"
	refusedMulticast   = "a multicast address"
	refusedBroadcast   = "a broadcast address"
	refusedBenchmark   = "a benchmarking address"
	refusedReserved    = "a reserved address"
)

type refusedRange struct {
	p   netip.Prefix
	why string
}

func ranges(rs ...string) []refusedRange {
	out := make([]refusedRange, 0, len(rs)/2)
	for i := 0; i < len(rs); i += 2 {
		out = append(out, refusedRange{netip.MustParsePrefix(rs[i]), rs[i+1]})
	}
	return out
}

// refusedV4 lists the IPv4 ranges that are not the public internet, first
// match wins. Both tables are parsed on first use.
var refusedV4 = sync.OnceValue(func() []refusedRange {
	return ranges(
		"0.0.0.0/32", refusedUnspecified, // connect() to it reaches this host
		"0.0.0.0/8", refusedReserved, // "this network"
		"10.0.0.0/8", refusedPrivate,
		"100.64.0.0/10", refusedShared,
		"127.0.0.0/8", refusedLoopback,
		"169.254.0.0/16", refusedLinkLocal, // cloud metadata lives here
		"172.16.0.0/12", refusedPrivate,
		"192.0.0.0/24", refusedReserved, // IETF protocol assignments
		"192.0.2.0/24", refusedReserved, // documentation
		"192.88.99.0/24", refusedReserved, // former 6to4 relay anycast
		"192.168.0.0/16", refusedPrivate,
		"198.18.0.0/15", refusedBenchmark,
		"198.51.100.0/24", refusedReserved, // documentation
		"203.0.113.0/24", refusedReserved, // documentation
		"224.0.0.0/4", refusedMulticast,
		"255.255.255.255/32", refusedBroadcast,
		"240.0.0.0/4", refusedReserved,
	)
})

// refusedV6 lists the IPv6 ranges refused outright, first match wins.
// Ranges that embed an IPv4 address are judged by that address (see
// destinationRefusal), and anything outside 2000::/3 is refused as
// reserved.
var refusedV6 = sync.OnceValue(func() []refusedRange {
	return ranges(
		"::/128", refusedUnspecified,
		"::1/128", refusedLoopback,
		"64:ff9b:1::/48", refusedPrivate, // local-use NAT64
		"100::/64", refusedReserved, // discard-only
		"2001:2::/48", refusedBenchmark,
		"2001:10::/28", refusedReserved, // ORCHID
		"2001:20::/28", refusedReserved, // ORCHIDv2
		"2001:db8::/32", refusedReserved, // documentation
		"3fff::/20", refusedReserved, // documentation
		"fc00::/7", refusedPrivate, // unique local
		"fe80::/10", refusedLinkLocal,
		"fec0::/10", refusedPrivate, // site-local, deprecated
		"ff00::/8", refusedMulticast,
	)
})

var (
	v4Compatible  = netip.MustParsePrefix("::/96")        // deprecated ::a.b.c.d
	nat64         = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64
	teredo        = netip.MustParsePrefix("2001::/32")    // server and client IPv4 inside
	sixToFour     = netip.MustParsePrefix("2002::/16")    // 2002:AABB:CCDD::
	globalUnicast = netip.MustParsePrefix("2000::/3")     // all of today's public IPv6
)

// destinationRefusal says why web_fetch must not connect to ip ("a
// loopback address", …), or "" for a public address. IPv4-mapped IPv6
// addresses are judged as the IPv4 address they map; NAT64, 6to4 and
// Teredo addresses by the IPv4 address they carry, since a translator or
// relay would deliver the connection there.
func destinationRefusal(ip netip.Addr) string {
	ip = ip.WithZone("") // a zoned address matches no prefix
	if !ip.IsValid() {
		return refusedReserved
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return rangeRefusal(refusedV4(), ip)
	}
	if why := rangeRefusal(refusedV6(), ip); why != "" {
		return why
	}
	b := ip.As16()
	switch {
	case v4Compatible.Contains(ip):
		if why := destinationRefusal(v4(b[12:16], 0)); why != "" {
			return why
		}
		return refusedReserved
	case nat64.Contains(ip):
		return destinationRefusal(v4(b[12:16], 0))
	case teredo.Contains(ip):
		if why := destinationRefusal(v4(b[4:8], 0)); why != "" {
			return why
		}
		return destinationRefusal(v4(b[12:16], 0xff)) // the client address is stored inverted
	case sixToFour.Contains(ip):
		return destinationRefusal(v4(b[2:6], 0))
	case !globalUnicast.Contains(ip):
		return refusedReserved
	}
	return ""
}

func rangeRefusal(rs []refusedRange, ip netip.Addr) string {
	for _, r := range rs {
		if r.p.Contains(ip) {
			return r.why
		}
	}
	return ""
}

// v4 reads an IPv4 address from four bytes, each XORed with mask.
func v4(b []byte, mask byte) netip.Addr {
	return netip.AddrFrom4([4]byte{b[0] ^ mask, b[1] ^ mask, b[2] ^ mask, b[3] ^ mask})
}
