package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// hostName is a DNS name: dot-separated labels of letters, digits, hyphens
// (not at either end) and underscores, with an optional trailing dot.
var hostName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^([a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9_])?\.?$`)
})

// ParseWebFetchHost checks one gateway.mcp_http.web_fetch_allowed_hosts
// entry: a host name or IP address (any port), or host:port ([v6]:port
// for IPv6). Schemes, paths, user info and wildcards are refused: the
// entry is compared with the host of the URL web_fetch is asked for, not
// resolved or pattern-matched.
func ParseWebFetchHost(entry string) error {
	s := strings.TrimSpace(entry)
	if s == "" {
		return errors.New("empty entry")
	}
	if strings.ContainsAny(s, "/?#@*") || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("%q is not a host or host:port: write example.internal, 10.0.0.5 or example.internal:8443, without scheme, path or wildcard", entry)
	}
	host := s
	if h, port, err := net.SplitHostPort(s); err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not a number in [1, 65535]", entry, port)
		}
		host = h
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("%q: an IPv6 zone is not allowed", entry)
		}
		return nil
	}
	if len(host) > 253 || !hostName().MatchString(host) {
		return fmt.Errorf("%q is not a host or host:port: write example.internal, 10.0.0.5 or example.internal:8443, without scheme, path or wildcard", entry)
	}
	return nil
}

// checkWebFetchAllowedHosts reports each entry of
// gateway.mcp_http.web_fetch_allowed_hosts that ParseWebFetchHost refuses.
func checkWebFetchAllowedHosts(hosts []string) []Problem {
	var ps []Problem
	for i, h := range hosts {
		if err := ParseWebFetchHost(h); err != nil {
			ps = append(ps, Problem{Field: fmt.Sprintf("gateway.mcp_http.web_fetch_allowed_hosts[%d]", i), Message: err.Error()})
		}
	}
	return ps
}
