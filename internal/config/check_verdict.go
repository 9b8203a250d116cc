package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
)

// Severities of a problem: what the gateway does with a config that has
// it. `garra config check`, the gateway's start and its live reload all
// take them from here, so the same file gets the same verdict everywhere.
const (
	// SeverityError: the gateway refuses the config (it does not start
	// with it, and a reload keeps the last good one).
	SeverityError = "error"
	// SeverityDisabled: the gateway applies the config with the part the
	// message names turned off (it fails closed around it).
	SeverityDisabled = "disabled"
	// SeverityWarning: the config works as written; the message names a risk.
	SeverityWarning = "warning"
)

// Severity is one of SeverityError, SeverityDisabled, SeverityWarning.
func (p Problem) Severity() string {
	switch {
	case p.Warning:
		return SeverityWarning
	case p.FailsClosed:
		return SeverityDisabled
	}
	return SeverityError
}

// Refused reports whether the gateway refuses a config with these problems.
func Refused(ps []Problem) bool {
	for _, p := range ps {
		if p.Severity() == SeverityError {
			return true
		}
	}
	return false
}

// checkEndpoints lists the URLs and the listen address that do not parse
// into what their use needs: a client given "localhost:11434" (no scheme)
// fails on every call with an error far from the key that caused it.
func (c *Config) checkEndpoints() []Problem {
	var ps []Problem
	endpoint := func(field, v string) {
		if v == "" {
			return
		}
		if err := checkHTTPURL(v); err != nil {
			ps = append(ps, Problem{Field: field, Message: fmt.Sprintf("%q %v", v, err)})
		}
	}
	endpoint("llm.base_url", c.LLM.BaseURL)
	for _, name := range slices.Sorted(maps.Keys(c.LLM.Aliases)) {
		endpoint("llm.aliases."+name+".base_url", c.LLM.Aliases[name].BaseURL)
	}
	endpoint("llm.brave.base_url", c.LLM.Brave.BaseURL)
	endpoint("channels.telegram.api_base_url", c.Channels.Telegram.APIBaseURL)
	if err := checkListen(c.Gateway.Listen); err != nil {
		ps = append(ps, Problem{Field: "gateway.listen", Message: fmt.Sprintf("%q %v", c.Gateway.Listen, err)})
	}
	return ps
}

// checkHTTPURL accepts an absolute http or https URL with a host.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // without the URL, which the message quotes already
		}
		return fmt.Errorf("is not a URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("is not an http(s) URL: write it as http://host:port/path")
	case u.Host == "":
		return fmt.Errorf("has no host")
	case u.Port() != "":
		if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("has port %q, not one from 1 to 65535", u.Port())
		}
	}
	return nil
}

// checkListen accepts host:port with a port from 0 (any free one) to
// 65535, as net.Listen does; an empty host listens on every address.
func checkListen(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
			err = errors.New(ae.Err)
		}
		return fmt.Errorf("is not host:port (%w)", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("has port %q, not a number from 0 to 65535", port)
	}
	return nil
}
