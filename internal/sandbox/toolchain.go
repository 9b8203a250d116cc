package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/toolchain"
)

// toolchainCache serves the last discovery and runs a new one, in the
// background, once that is older than its TTL: a read never waits for a
// discovery except the very first (bounded by the reader's context). One
// discovery runs at a time, whoever asks.
type toolchainCache struct {
	opts toolchain.Options
	ttl  time.Duration
	base context.Context // the server's life: a discovery ends with it

	mu      sync.Mutex
	report  *toolchain.Report
	at      time.Time
	running chan struct{} // closed when the discovery in flight ends; nil = none
}

func newToolchainCache(o Options) *toolchainCache {
	path := o.ToolchainPATH
	if path == "" {
		path = os.Getenv("PATH")
	}
	ttl := o.ToolchainTTL
	if ttl <= 0 {
		ttl = DefaultToolchainTTL
	}
	return &toolchainCache{
		opts: toolchain.Options{PATH: path, Home: os.Getenv("HOME"), Required: o.RequiredTools},
		ttl:  ttl,
		base: context.Background(),
	}
}

// refresh starts a discovery unless one runs; the caller holds mu. It
// returns the channel closed when that discovery ends.
func (c *toolchainCache) refresh() chan struct{} {
	if c.running != nil {
		return c.running
	}
	done := make(chan struct{})
	c.running = done
	go func() {
		rep := toolchain.Discover(c.base, c.opts)
		c.mu.Lock()
		if c.base.Err() == nil {
			c.report, c.at = &rep, time.Now()
		}
		c.running = nil
		c.mu.Unlock()
		close(done)
	}()
	return done
}

// errDiscovering answers a first read that gave up waiting.
var errDiscovering = errors.New("the toolchain is still being discovered: read it again shortly")

func (c *toolchainCache) get(ctx context.Context) (toolchain.Report, error) {
	c.mu.Lock()
	rep := c.report
	if rep == nil || time.Since(c.at) >= c.ttl {
		done := c.refresh()
		if rep == nil {
			c.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return toolchain.Report{}, errDiscovering
			}
			c.mu.Lock()
			rep = c.report
		}
	}
	c.mu.Unlock()
	if rep == nil {
		return toolchain.Report{}, errDiscovering
	}
	return *rep, nil
}

// warm starts the first discovery, so that the first read does not wait
// for all of it.
func (c *toolchainCache) warm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.report == nil {
		c.refresh()
	}
}

// addToolchainResource serves what the image offers as
// garra://sandbox/toolchain: JSON, the toolchain.Report.
func (s *Server) addToolchainResource() {
	s.mcp.AddResource(&mcp.Resource{
		URI:         toolchain.URI,
		Name:        "toolchain",
		Title:       "The sandbox's toolchain",
		Description: "The programs on this sandbox's PATH with their versions: well-known build tools and the orchestrator's required tools, with the required ones that are missing.",
		MIMEType:    "application/json",
	}, func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		ctx, stop := s.untilShutdown(ctx)
		defer stop()
		rep, err := s.toolchain.get(ctx)
		if err != nil {
			s.log.Info("resource read", "uri", toolchain.URI, "outcome", "pending")
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		data, err := json.Marshal(rep)
		if err != nil {
			return nil, fmt.Errorf("encode the toolchain: %w", err)
		}
		s.log.Info("resource read", "uri", toolchain.URI, "tools", len(rep.Tools), "missing", len(rep.Missing))
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: toolchain.URI, MIMEType: "application/json", Text: string(data)},
		}}, nil
	})
}
