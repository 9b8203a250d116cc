package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/garraia/garra/internal/tools"
)

// withWebSearch is an orchestrator's sandbox tools plus web_search, which
// the gateway serves itself: the Brave key lives in the gateway and never
// reaches a sandbox pod (they have none), so without this a cluster agent
// would have no web_search at all.
type withWebSearch struct {
	sandbox tools.Executor
	search  tools.Executor
	tool    tools.Tool
}

var _ tools.Executor = (*withWebSearch)(nil)

// newWithWebSearch composes sandbox with a web_search run here with key
// (baseURL "" = the Brave Search API).
func newWithWebSearch(sandbox tools.Executor, key, baseURL string) (*withWebSearch, error) {
	search := tools.NewLocal(tools.LocalOptions{BraveAPIKey: key, BraveBaseURL: baseURL})
	list, err := search.Tools(context.Background())
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(list, func(t tools.Tool) bool { return t.Name == tools.ToolWebSearch })
	if i < 0 {
		return nil, errors.New("web_search is not available with this key")
	}
	return &withWebSearch{sandbox: sandbox, search: search, tool: list[i]}, nil
}

// Tools lists the sandbox's tools, then web_search. A web_search the
// sandbox itself listed is dropped: the gateway's is the one called.
func (w *withWebSearch) Tools(ctx context.Context) ([]tools.Tool, error) {
	list, err := w.sandbox.Tools(ctx)
	if err != nil {
		return nil, err
	}
	list = slices.DeleteFunc(slices.Clone(list), func(t tools.Tool) bool { return t.Name == tools.ToolWebSearch })
	return append(list, w.tool), nil
}

// Call runs web_search here and every other tool in the sandbox.
func (w *withWebSearch) Call(ctx context.Context, name string, args json.RawMessage) (tools.Result, error) {
	if name == tools.ToolWebSearch {
		return w.search.Call(ctx, name, args)
	}
	return w.sandbox.Call(ctx, name, args)
}
