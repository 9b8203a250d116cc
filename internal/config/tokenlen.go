package config

import (
	"fmt"
	"strings"
)

// MinTokenBytes is the shortest owner key or orchestrator token Check
// accepts. A bearer token is the whole of a caller's proof: one short
// enough to guess, or to recognise in pieces, is no proof at all.
const MinTokenBytes = 32

// checkTokenLengths names every owner key and orchestrator token shorter
// than MinTokenBytes by the field that holds it, never by its value.
func (c *Config) checkTokenLengths(getenv func(string) string, readFile func(string) (string, error)) []Problem {
	var ps []Problem
	short := func(field string, n int, where string) {
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf(
			"%s is %d bytes, fewer than %d: use a random one of at least %d bytes (openssl rand -hex 32)", where, n, MinTokenBytes, MinTokenBytes)})
	}
	g := c.Gateway
	switch {
	case getenv(EnvGatewayAPIKey) != "":
		if n := len(strings.TrimSpace(getenv(EnvGatewayAPIKey))); n < MinTokenBytes {
			short("gateway.api_key", n, "the owner key in "+EnvGatewayAPIKey)
		}
	case g.APIKey != "" && g.APIKeyFile != "":
		// Check names the two sources; which one holds the key is moot.
	case g.APIKey != "":
		if n := len(strings.TrimSpace(g.APIKey)); n < MinTokenBytes {
			short("gateway.api_key", n, "the owner key")
		}
	case g.APIKeyFile != "":
		if v, err := readFile(g.APIKeyFile); err == nil && len(v) < MinTokenBytes {
			short("gateway.api_key_file", len(v), "the owner key in "+g.APIKeyFile)
		}
	}
	for i, o := range g.MCPHTTP.Orchestrators {
		if o.AuthMode() != AuthToken {
			continue
		}
		field := fmt.Sprintf("gateway.mcp_http.orchestrators[%d]", i)
		if o.Name != "" {
			field = "gateway.mcp_http.orchestrators[" + o.Name + "]"
		}
		switch {
		case o.KeyFile != "" && o.KeyEnv != "":
			// Check names the two sources.
		case o.KeyFile != "":
			v, err := readFile(o.KeyFile)
			if err != nil {
				continue // Check names the unreadable file
			}
			for n, line := range strings.Split(v, "\n") {
				if l := len(strings.TrimSpace(line)); l > 0 && l < MinTokenBytes {
					short(field+".key_file", l, fmt.Sprintf("the token on line %d of %s", n+1, o.KeyFile))
				}
			}
		case o.KeyEnv != "":
			if l := len(strings.TrimSpace(getenv(o.KeyEnv))); l > 0 && l < MinTokenBytes {
				short(field+".key_env", l, "the token in "+o.KeyEnv)
			}
		}
	}
	return ps
}

// readOnce wraps readFile so that each path is read once per Check, however
// many checks look at it.
func readOnce(readFile func(string) (string, error)) func(string) (string, error) {
	type read struct {
		v   string
		err error
	}
	seen := map[string]read{}
	return func(path string) (string, error) {
		r, ok := seen[path]
		if !ok {
			r.v, r.err = readFile(path)
			seen[path] = r
		}
		return r.v, r.err
	}
}
