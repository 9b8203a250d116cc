package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/toolchain"
)

// toolchainCache serves one discovery for its TTL. Reads that find it
// stale wait for one new discovery between them rather than each running
// their own.
type toolchainCache struct {
	opts toolchain.Options
	ttl  time.Duration

	mu     sync.Mutex
	report *toolchain.Report
	at     time.Time
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
	}
}

func (c *toolchainCache) get(ctx context.Context) toolchain.Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.report != nil && time.Since(c.at) < c.ttl {
		return *c.report
	}
	rep := toolchain.Discover(ctx, c.opts)
	if ctx.Err() == nil {
		// A discovery cut short by its caller is answered but not kept.
		c.report, c.at = &rep, time.Now()
	}
	return rep
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
		rep := s.toolchain.get(ctx)
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
