package mcppolicy

import (
	"errors"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/errkinds"
)

func TestModelAllowed(t *testing.T) {
	const project = "z-ai/glm-5.3-flash"
	tests := []struct {
		allowed []string
		def     string
		model   string
		want    bool
	}{
		{nil, project, project, true},
		{nil, project, "openrouter/auto", false},
		{nil, "llama3.2", "llama3.2", true}, // the configured llm.model is the default
		{nil, "llama3.2", project, false},   // and the project's is then not
		{[]string{"openrouter/auto"}, project, "openrouter/auto", true},
		{[]string{"openrouter/auto"}, project, project, false}, // a list replaces the default
	}
	for _, tt := range tests {
		if got := ModelAllowed(tt.allowed, tt.def, tt.model); got != tt.want {
			t.Errorf("ModelAllowed(%v, %q, %q) = %v", tt.allowed, tt.def, tt.model, got)
		}
	}
}

func TestCheckModel(t *testing.T) {
	stdioList := Limits{Stdio: Stdio{ModelAllowlist: []string{"z-ai/glm-5.3-flash"}}}
	gw := Limits{DefaultModel: "z-ai/glm-5.3-flash"}
	tests := []struct {
		name    string
		caller  Caller
		limits  Limits
		model   string
		refused errkinds.Kind
		invalid string
	}{
		{"stdio, allowlisted", LocalUser(), stdioList, "z-ai/glm-5.3-flash", "", ""},
		{"stdio, off the allowlist is invalid params", LocalUser(), stdioList, "openrouter/auto", "", "model: \"openrouter/auto\" is not in GARRAIA_MCP_MODEL_ALLOWLIST"},
		{"stdio, an empty allowlist allows any model", LocalUser(), Limits{}, "anything", "", ""},
		{"gateway, the default", owner, gw, "z-ai/glm-5.3-flash", "", ""},
		{"gateway, another model is refused", Caller{Name: "n8n"}, gw, "openrouter/auto", errkinds.ModelNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckModel(tt.caller, tt.limits, tt.model)
			var r *Refused
			switch {
			case tt.refused != "":
				if !errors.As(err, &r) || r.Kind != tt.refused {
					t.Fatalf("err = %v, want refusal %s", err, tt.refused)
				}
			case tt.invalid != "":
				if err == nil || errors.As(err, &r) || err.Error() != tt.invalid {
					t.Fatalf("err = %v, want invalid params %q", err, tt.invalid)
				}
			case err != nil:
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestStdioTimeout(t *testing.T) {
	tests := []struct {
		name      string
		cap       int
		tool      string
		requested *int
		want      int
		wantErr   string
	}{
		{"omitted, no cap", 0, ToolAsk, nil, 60, ""},
		{"omitted, cap below default", 30, ToolAsk, nil, 30, ""},
		{"omitted, cap above default", 120, ToolAsk, nil, 60, ""},
		{"agent omitted, cap 100", 100, ToolAgent, nil, 100, ""},
		{"explicit within", 0, ToolAsk, ptr(600), 600, ""},
		{"explicit above schema", 0, ToolAsk, ptr(601), 0, "[1, 600]"},
		{"explicit zero", 0, ToolAsk, ptr(0), 0, "[1, 600]"},
		{"explicit above cap", 30, ToolAsk, ptr(31), 0, "operator cap of 30"},
		{"cap above schema clamps", 5000, ToolAgent, ptr(1800), 1800, ""},
		{"explicit equals cap", 30, ToolAsk, ptr(30), 30, ""},
		{"agent below its minimum", 0, ToolAgent, ptr(4), 0, "[5, 1800]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Timeout(LocalUser(), Limits{Stdio: Stdio{MaxTimeoutSecs: tt.cap}}, tt.tool, tt.requested)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "timeout_secs") {
					t.Fatalf("err = %v, want %q naming timeout_secs", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestGatewayTimeout(t *testing.T) {
	l := Limits{AgentMaxSeconds: 120}
	tests := []struct {
		name      string
		tool      string
		requested *int
		want      int
		wantErr   string
	}{
		{"ask omitted", ToolAsk, nil, 60, ""},
		{"ask at the schema's maximum", ToolAsk, ptr(600), 600, ""},
		{"ask above it", ToolAsk, ptr(601), 0, "timeout_secs: must be in [1, 600]"},
		{"agent omitted gets the ceiling", ToolAgent, nil, 120, ""},
		{"agent may ask for less", ToolAgent, ptr(5), 5, ""},
		{"agent never for more", ToolAgent, ptr(121), 0, "timeout_secs: must be in [5, 120] (agent_max_seconds)"},
		{"agent below the minimum", ToolAgent, ptr(4), 0, "timeout_secs: must be in [5, 120] (agent_max_seconds)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Timeout(Caller{Name: "n8n"}, l, tt.tool, tt.requested)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	if b := TimeoutBounds(owner, l, ToolAgent); b != (Timeouts{Min: 5, Max: 120, Default: 120, Cap: 120}) {
		t.Fatalf("gateway agent bounds %+v", b)
	}
	if b := TimeoutBounds(LocalUser(), Limits{Stdio: Stdio{MaxTimeoutSecs: 45}}, ToolAgent); b != (Timeouts{Min: 5, Max: 1800, Default: 45, Cap: 45}) {
		t.Fatalf("stdio agent bounds under a cap %+v", b)
	}
}

func TestHistoryLimit(t *testing.T) {
	l := Limits{MaxHistoryMessages: 20}
	for _, tt := range []struct {
		requested *int
		want      int
		ok        bool
	}{{nil, 20, true}, {ptr(1), 1, true}, {ptr(20), 20, true}, {ptr(0), 0, false}, {ptr(21), 0, false}} {
		got, err := HistoryLimit(l, tt.requested)
		if (err == nil) != tt.ok || got != tt.want || (err != nil && err.Error() != "limit: must be in [1, 20]") {
			t.Errorf("HistoryLimit(%v) = %d, %v", tt.requested, got, err)
		}
	}
}

func TestInvalidKindAndAliases(t *testing.T) {
	if InvalidKind(LocalUser()) != errkinds.Usage || InvalidKind(owner) != errkinds.InvalidParams || InvalidKind(Caller{}) != errkinds.InvalidParams {
		t.Fatal("invalid arguments: usage on stdio, invalid_params on the gateway")
	}
	if !AliasesAllowed(LocalUser()) || AliasesAllowed(owner) || AliasesAllowed(Caller{Name: "n8n"}) {
		t.Fatal("provider aliases are reachable on stdio only")
	}
}

func ptr(n int) *int { return &n }
