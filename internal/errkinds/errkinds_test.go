package errkinds

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/garraia/garra/internal/audit"
)

const golden = "../../docs/errors.md"

// docs/errors.md is Markdown(), byte for byte. UPDATE_GOLDEN=1 rewrites it.
func TestErrorsMarkdownIsGenerated(t *testing.T) {
	want := Markdown()
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

// kindConsts returns the string constants named Kind* declared in a Go
// source file, as "pkg.Name" → value.
func kindConsts(pkg, filename string, src any) (map[string]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Kind") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				out[pkg+"."+name.Name] = v
			}
		}
	}
	return out, nil
}

// checkKinds compares the constants found with the table: every constant
// needs a row with its name and value, and every row naming a constant
// needs the constant (no stale rows).
func checkKinds(consts map[string]string, table []Kind) []string {
	var problems []string
	byConst := map[string]Kind{}
	for _, k := range table {
		if k.Const != "" {
			byConst[k.Const] = k
		}
	}
	names := make([]string, 0, len(consts))
	for n := range consts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		row, ok := byConst[n]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s = %q has no row in errkinds.Kinds: add one and run UPDATE_GOLDEN=1 go test ./internal/errkinds", n, consts[n]))
		case row.Kind != consts[n]:
			problems = append(problems, fmt.Sprintf("%s is %q in the code but %q in errkinds.Kinds", n, consts[n], row.Kind))
		}
	}
	for c := range byConst {
		if _, ok := consts[c]; !ok {
			problems = append(problems, fmt.Sprintf("errkinds.Kinds names %s, which no longer exists", c))
		}
	}
	sort.Strings(problems)
	return problems
}

// packages whose Kind* constants are error.kind labels.
var kindPackages = map[string]string{
	"ask": "../ask", "agent": "../agent", "authn": "../authn", "gateway": "../gateway", "mcpstdio": "../mcpstdio",
}

func TestEveryKindConstHasARow(t *testing.T) {
	all := map[string]string{}
	for pkg, dir := range kindPackages {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no source found (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			consts, err := kindConsts(pkg, f, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range consts {
				all[k] = v
			}
		}
	}
	// The two files the spec names must be among what was scanned.
	for _, must := range []string{"ask.KindProviderError", "gateway.KindToolNotAllowed"} {
		if _, ok := all[must]; !ok {
			t.Fatalf("scan did not find %s: the check would pass vacuously", must)
		}
	}
	for _, p := range checkKinds(all, Kinds) {
		t.Error(p)
	}
}

// The checker must be able to fail: a new constant without a row, a
// renamed value and a stale row are all reported.
func TestCheckerCatchesDrift(t *testing.T) {
	src := `package gateway
const (
	KindToolNotAllowed = "tool_not_allowed"
	KindBrandNew       = "brand_new"
	KindSendDisabled   = "send_off"
	notAKind           = "x"
)
const KindAlone = "alone"
var KindVar = "not a const"
`
	consts, err := kindConsts("gateway", "policy.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(consts) != 4 {
		t.Fatalf("found %v", consts)
	}
	table := []Kind{
		{Kind: "tool_not_allowed", Const: "gateway.KindToolNotAllowed"},
		{Kind: "send_disabled", Const: "gateway.KindSendDisabled"},
		{Kind: "gone", Const: "gateway.KindGone"},
	}
	got := strings.Join(checkKinds(consts, table), "\n")
	for _, want := range []string{
		`gateway.KindBrandNew = "brand_new" has no row`,
		`gateway.KindAlone = "alone" has no row`,
		`gateway.KindSendDisabled is "send_off" in the code but "send_disabled"`,
		`names gateway.KindGone, which no longer exists`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("checker missed %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "KindToolNotAllowed") || strings.Contains(got, "KindVar") {
		t.Errorf("checker reported a good or non-const entry:\n%s", got)
	}
}

func TestRowsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds {
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
	for _, h := range HTTP {
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
	for _, r := range append(append([]RPCCode{}, StdioJSONRPC...), JSONRPC...) {
		v, ok := sdk[r.Name]
		if !ok || int64(r.Code) != v {
			t.Errorf("row %d %s: the SDK's value is %d (known: %v)", r.Code, r.Name, v, ok)
		}
	}
}

func TestOutcomesMatchTheAuditPackage(t *testing.T) {
	var ours []string
	for _, o := range Outcomes {
		ours = append(ours, o.Outcome)
	}
	if !slices.Equal(ours, audit.Outcomes) {
		t.Fatalf("errkinds.Outcomes %v != audit.Outcomes %v", ours, audit.Outcomes)
	}
}
