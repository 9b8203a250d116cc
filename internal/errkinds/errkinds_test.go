package errkinds_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/errkinds"
)

const golden = "../../docs/errors.md"

// docs/errors.md is Markdown(), byte for byte. UPDATE_GOLDEN=1 rewrites it.
func TestErrorsMarkdownIsGenerated(t *testing.T) {
	want := errkinds.Markdown()
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run UPDATE_GOLDEN=1 go test ./internal/errkinds to create it)", err)
	}
	if string(got) != want {
		t.Fatalf("docs/errors.md is out of date with internal/errkinds: run UPDATE_GOLDEN=1 go test ./internal/errkinds\n%s", firstDiff(string(got), want))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n file: %s\n want: %s", i+1, x, y)
		}
	}
	return ""
}

// The docs name each label's constant by the CamelCase rule; these are
// the constants the surfaces write, so the rule must give their names.
func TestGoNameIsTheConstantsName(t *testing.T) {
	for k, want := range map[errkinds.Kind]string{
		errkinds.ProviderError: "ProviderError", errkinds.Timeout: "Timeout",
		errkinds.TooManyRequests: "TooManyRequests", errkinds.IdentityNotAllowed: "IdentityNotAllowed",
		errkinds.Internal: "Internal", errkinds.HostNotAllowed: "HostNotAllowed",
	} {
		if got := k.GoName(); got != want {
			t.Errorf("%q.GoName() = %q, want %q", k, got, want)
		}
	}
}

// Each authn verdict is answered with its own row; anything else is the
// identity provider that could not be asked.
func TestAuthRefusalRows(t *testing.T) {
	for k, want := range map[errkinds.Kind]string{
		errkinds.Unauthorized:       "invalid bearer token",
		errkinds.InvalidToken:       "the token is not valid: bad signature, algorithm, issuer or format",
		errkinds.TokenExpired:       "the token has expired or is not valid yet",
		errkinds.WrongAudience:      "the token's audience is not this gateway",
		errkinds.IdentityNotAllowed: "the token is valid but its identity is not an orchestrator of this gateway",
		errkinds.AuthUnavailable:    "the identity provider could not be reached: retry",
		"something_else":            "the identity provider could not be reached: retry",
	} {
		row := errkinds.AuthRefusal(k)
		if row.Body != want || !slices.Contains(errkinds.HTTP, row) {
			t.Errorf("AuthRefusal(%q) = %+v, want the table's row %q", k, row, want)
		}
		if k != "something_else" && row.Audit != k {
			t.Errorf("AuthRefusal(%q) audits %q", k, row.Audit)
		}
	}
}

// Every audit kind of the HTTP table is an error.kind label or one of the
// kinds only the HTTP layer records.
func TestHTTPAuditKindsAreKinds(t *testing.T) {
	known := map[errkinds.Kind]bool{errkinds.OriginRefused: true, errkinds.HostNotAllowed: true, errkinds.NotAcceptable: true}
	for _, k := range errkinds.Kinds {
		known[k.Kind] = true
	}
	for _, h := range errkinds.HTTP {
		if h.Audit != "" && !known[h.Audit] {
			t.Errorf("HTTP row %d %q audits %q, which is no kind", h.Status, h.Body, h.Audit)
		}
	}
}

// A refusal's envelope message is fixed per kind and never empty; a kind
// without a fixed sentence answers its own label.
func TestMessages(t *testing.T) {
	for _, k := range errkinds.Kinds {
		if k.Kind.Message() == "" {
			t.Errorf("%q has an empty message", k.Kind)
		}
	}
	if got := errkinds.TargetNotAllowed.Message(); got != "the destination is not approved for this caller" {
		t.Errorf("target_not_allowed: %q", got)
	}
	if got := errkinds.ProviderError.Message(); got != "provider_error" {
		t.Errorf("provider_error: %q", got)
	}
}

func TestRowsAreUnique(t *testing.T) {
	seen := map[errkinds.Kind]bool{}
	for _, k := range errkinds.Kinds {
		if seen[k.Kind] || k.Kind == "" || k.Where == "" || k.Meaning == "" {
			t.Errorf("row %+v is duplicate or incomplete", k)
		}
		seen[k.Kind] = true
	}
	type key struct {
		status int
		body   string
	}
	hs := map[key]bool{}
	for _, h := range errkinds.HTTP {
		if hs[key{h.Status, h.Body}] || h.Body == "" || h.When == "" {
			t.Errorf("HTTP row %+v is duplicate or incomplete", h)
		}
		hs[key{h.Status, h.Body}] = true
	}
}

// The JSON-RPC rows name the SDK's constants, with their values.
func TestJSONRPCCodesMatchTheSDK(t *testing.T) {
	sdk := map[string]int64{
		"CodeParseError": jsonrpc.CodeParseError, "CodeInvalidRequest": jsonrpc.CodeInvalidRequest,
		"CodeMethodNotFound": jsonrpc.CodeMethodNotFound, "CodeInvalidParams": jsonrpc.CodeInvalidParams,
		"CodeInternalError": jsonrpc.CodeInternalError,
	}
	for _, r := range append(append([]errkinds.RPCCode{}, errkinds.StdioJSONRPC...), errkinds.JSONRPC...) {
		v, ok := sdk[r.Name]
		if !ok || int64(r.Code) != v {
			t.Errorf("row %d %s: the SDK's value is %d (known: %v)", r.Code, r.Name, v, ok)
		}
	}
}

func TestOutcomesMatchTheAuditPackage(t *testing.T) {
	var ours []string
	for _, o := range errkinds.Outcomes {
		ours = append(ours, o.Outcome)
	}
	if !slices.Equal(ours, audit.Outcomes) {
		t.Fatalf("errkinds.Outcomes %v != audit.Outcomes %v", ours, audit.Outcomes)
	}
}
