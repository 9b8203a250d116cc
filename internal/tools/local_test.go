package tools

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/strictargs"
)

func allTools(t *testing.T) *Local {
	t.Helper()
	root := canonTempDir(t)
	return NewLocal(LocalOptions{Jail: newJail(t, root), WorkingDir: root, Bash: &fakeRunner{}, BraveAPIKey: "k"})
}

func TestToolsStableOrder(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		o    LocalOptions
		want []string
	}{
		{LocalOptions{Bash: &fakeRunner{}, BraveAPIKey: "k"}, []string{"bash", "file_read", "file_write", "git_diff", "web_fetch", "web_search"}},
		{LocalOptions{}, []string{"file_read", "file_write", "git_diff", "web_fetch"}},
		{LocalOptions{BraveAPIKey: "k"}, []string{"file_read", "file_write", "git_diff", "web_fetch", "web_search"}},
	}
	for _, c := range cases {
		l := NewLocal(c.o)
		for range 3 {
			ts, err := l.Tools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := Names(ts); !slices.Equal(got, c.want) {
				t.Fatalf("Names(Tools) = %q, want %q", got, c.want)
			}
		}
	}
	// The returned slice is the caller's.
	l := NewLocal(LocalOptions{})
	ts, _ := l.Tools(ctx)
	ts[0].Name = "mutated"
	if ts2, _ := l.Tools(ctx); ts2[0].Name != ToolFileRead {
		t.Fatal("Tools returned shared state")
	}
}

// Every schema is an object schema with additionalProperties false whose
// properties are exactly the fields the tool decodes.
func TestSchemas(t *testing.T) {
	argTypes := map[string]any{
		ToolBash: &bashArgs{}, ToolFileRead: &fileReadArgs{}, ToolFileWrite: &fileWriteArgs{},
		ToolGitDiff: &gitDiffArgs{}, ToolWebFetch: &webFetchArgs{}, ToolWebSearch: &webSearchArgs{},
	}
	ts, _ := allTools(t).Tools(context.Background())
	for _, tool := range ts {
		var s struct {
			Type                 string                     `json:"type"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatalf("%s: schema: %v", tool.Name, err)
		}
		if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: schema %s", tool.Name, tool.InputSchema)
		}
		fields := slices.Sorted(maps.Keys(strictargs.FieldNames(argTypes[tool.Name])))
		if props := slices.Sorted(maps.Keys(s.Properties)); !slices.Equal(props, fields) {
			t.Errorf("%s: schema properties %q, decoded fields %q", tool.Name, props, fields)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tool.Name, r)
			}
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
	}
}

func TestStrictArguments(t *testing.T) {
	l := allTools(t)
	tests := []struct {
		tool, args, want string
	}{
		{ToolBash, `{"command":"ls","extra":1}`, "extra: unknown field"},
		{ToolBash, `{"Command":"ls"}`, "Command: unknown field"},
		{ToolBash, `{"command":5}`, "command: must be a string, got number"},
		{ToolBash, `{"command":"ls","timeout_secs":"10"}`, "timeout_secs: must be an integer, got string"},
		{ToolBash, `{"command":"ls","timeout_secs":1.5}`, "timeout_secs: must be an integer"},
		{ToolBash, `{"command":"ls","timeout_secs":0}`, "timeout_secs: must be between 1 and 600, got 0"},
		{ToolBash, `{}`, "command: required"},
		{ToolBash, `{"command":""}`, "command: must not be empty"},
		{ToolBash, `{"command":"ls"} {}`, "unexpected data after the JSON object"},
		{ToolBash, `["ls"]`, "arguments: must be a JSON object"},
		{ToolBash, `{"command":"a\u0000b"}`, "command: must not contain NUL"},
		{ToolFileRead, `{"path":"x","max_bytes":-1}`, "max_bytes: must be between"},
		{ToolFileRead, `{"path":["x"]}`, "path: must be a string, got array"},
		{ToolFileRead, `{"path":""}`, "path: must not be empty"},
		{ToolFileWrite, `{"path":"x"}`, "content: required"},
		{ToolFileWrite, `{"path":"x","content":null,"mode":"0777"}`, "mode: unknown field"},
		{ToolGitDiff, `{"staged":"yes"}`, "staged: must be a boolean, got string"},
		{ToolGitDiff, `{"paths":["a"]}`, "paths: unknown field"},
		{ToolWebFetch, `{"url":"https://x","method":"POST"}`, "method: unknown field"},
		{ToolWebFetch, `{}`, "url: required"},
		{ToolWebFetch, `{"url":"https://x","max_bytes":0}`, "max_bytes: must be between 1 and"},
		{ToolWebSearch, `{"query":"q","count":21}`, "count: must be between 1 and 20, got 21"},
		{ToolWebSearch, `{"query":"  "}`, "query: must not be empty"},
		{ToolWebSearch, `{"q":"x"}`, "q: unknown field"},
	}
	for _, tt := range tests {
		res, err := l.Call(context.Background(), tt.tool, json.RawMessage(tt.args))
		if err != nil {
			t.Errorf("%s %s: Call error %v", tt.tool, tt.args, err)
			continue
		}
		if !res.IsError || !strings.HasPrefix(res.Output, tt.tool+": invalid arguments: ") || !strings.Contains(res.Output, tt.want) {
			t.Errorf("%s %s = %+v, want an argument error containing %q", tt.tool, tt.args, res, tt.want)
		}
	}
}

func TestUnknownTool(t *testing.T) {
	l := allTools(t)
	for _, name := range []string{"", "Bash", "shell", "garra_agent"} {
		_, err := l.Call(context.Background(), name, json.RawMessage(`{}`))
		if !errors.Is(err, ErrUnknownTool) {
			t.Errorf("Call(%q) err = %v, want ErrUnknownTool", name, err)
		}
	}
}

func TestNames(t *testing.T) {
	if got := Names(nil); len(got) != 0 {
		t.Fatalf("Names(nil) = %q", got)
	}
	if got := Names([]Tool{{Name: "b"}, {Name: "a"}}); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("Names = %q", got)
	}
}

func TestCapOutput(t *testing.T) {
	if got := capOutput("short", 10); got != "short" {
		t.Fatalf("capOutput = %q", got)
	}
	got := capOutput("ééé", 3) // cut inside the second é
	if got != "é\n[output truncated: first 2 of 6 bytes shown]" {
		t.Fatalf("capOutput = %q", got)
	}
	w := newCapWriter(4)
	w.Write([]byte("ab"))
	w.Write([]byte("cdef"))
	if got := w.String(); got != "abcd\n[output truncated: first 4 of 6 bytes shown]" {
		t.Fatalf("capWriter = %q", got)
	}
}

func TestScrubPaths(t *testing.T) {
	got := scrubPaths("open /srv/ws/a/b.txt: denied; cwd /srv/ws/a; root /srv/ws", "/srv/ws", "/srv/ws/a", "", "/")
	if got != "open b.txt: denied; cwd .; root ." {
		t.Fatalf("scrubPaths = %q", got)
	}
}
