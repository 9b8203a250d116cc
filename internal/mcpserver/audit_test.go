package mcpserver

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The stdio invariants of the spec, enforced over this package's own
// production source: stdout belongs to the JSON-RPC transport, and the
// dispatcher neither spawns processes nor constructs agent tools.

// forbiddenImports may not appear in the dispatcher at all.
var forbiddenImports = map[string]string{
	"os/exec":  "spawns processes",
	"syscall":  "can spawn processes and write raw file descriptors",
	"net/http": "a stdio dispatcher has no business on the network",
	"github.com/garraia/garra/internal/tools":     "tool constructors live in the agent package",
	"github.com/garraia/garra/internal/shellgate": "shell execution is not the dispatcher's job",
	"github.com/garraia/garra/internal/jail":      "file tools are not the dispatcher's job",
}

// forbiddenSelectors are package.Name uses that write to stdout or spawn.
var forbiddenSelectors = map[string]bool{
	"fmt.Print": true, "fmt.Printf": true, "fmt.Println": true,
	"os.Stdout": true, "os.StartProcess": true, "exec.Command": true, "exec.CommandContext": true,
	"syscall.Exec": true, "syscall.ForkExec": true, "log.Print": true, "log.Printf": true, "log.Println": true,
}

func productionFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no production files found: the audit would pass vacuously")
	}
	return out
}

// violations lists every forbidden import and selector in one parsed file.
func violations(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if why, bad := forbiddenImports[path]; bad {
			out = append(out, fset.Position(imp.Pos()).String()+": imports "+path+": "+why)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); ok && forbiddenSelectors[pkg.Name+"."+sel.Sel.Name] {
			out = append(out, fset.Position(sel.Pos()).String()+": uses "+pkg.Name+"."+sel.Sel.Name)
		}
		return true
	})
	return out
}

func TestAuditNeverWritesToStdoutOrSpawns(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range productionFiles(t) {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range violations(fset, f) {
			t.Error(v)
		}
	}
}

// A plain-text scan too, so that the rule survives aliasing tricks such as
// `out := os.Stdout` hidden behind a renamed import.
func TestAuditSourceText(t *testing.T) {
	needles := []string{"os.Stdout", "fmt.Print", "exec.Command", "StartProcess", "ForkExec", "NewBash", "NewFileRead", "NewFileWrite", "NewGitDiff", "NewWebFetch", "LocalExecutor"}
	for _, name := range productionFiles(t) {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if strings.Contains(string(src), n) {
				t.Errorf("%s contains %q", name, n)
			}
		}
	}
}

// The audit must be able to fail: feed it a file that breaks the rules.
func TestAuditCatchesViolations(t *testing.T) {
	src := `package x
import ("fmt"; "os"; "os/exec")
func f() { fmt.Println("hi"); _ = os.Stdout; exec.Command("sh") }`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "bad.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := len(violations(fset, f))
	if found != 4 {
		t.Fatalf("audit found %d violations in a file with 4", found)
	}
}
