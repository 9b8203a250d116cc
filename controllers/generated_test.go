package controllers

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// controllerGenArgs are the Makefile's `manifests` and `generate` in one
// controller-gen run, writing under out instead of into the tree. Keep them
// in step with the Makefile's operator block.
func controllerGenArgs(out string) []string {
	return []string{
		"tool", "controller-gen",
		"object:headerFile=hack/boilerplate.go.txt",
		"crd",
		"rbac:roleName=manager-role",
		"paths=./api/...;./controllers/...",
		"output:object:dir=" + filepath.Join(out, "object"),
		"output:crd:dir=" + filepath.Join(out, "crd"),
		"output:rbac:dir=" + filepath.Join(out, "rbac"),
	}
}

// TestGeneratedFilesAreFresh fails when the CRD, the ClusterRole or the
// DeepCopy methods in the tree are not what controller-gen makes of the
// markers now: run `make manifests generate`.
func TestGeneratedFilesAreFresh(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("go", controllerGenArgs(out)...)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, msg)
	}

	pairs := map[string]string{
		filepath.Join(out, "object", "zz_generated.deepcopy.go"): "api/v1alpha1/zz_generated.deepcopy.go",
		filepath.Join(out, "rbac", "role.yaml"):                  "config/rbac/role.yaml",
	}
	gotCRDs, _ := filepath.Glob(filepath.Join(out, "crd", "*.yaml"))
	haveCRDs, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	var gotNames, haveNames []string
	for _, f := range gotCRDs {
		gotNames = append(gotNames, filepath.Base(f))
		pairs[f] = filepath.Join("config", "crd", "bases", filepath.Base(f))
	}
	for _, f := range haveCRDs {
		haveNames = append(haveNames, filepath.Base(f))
	}
	if !slices.Equal(gotNames, haveNames) {
		t.Errorf("config/crd/bases holds %v, controller-gen makes %v: run `make manifests`", haveNames, gotNames)
	}
	for fresh, inTree := range pairs {
		want, err := os.ReadFile(fresh)
		if err != nil {
			t.Errorf("controller-gen made no %s: %v", filepath.Base(fresh), err)
			continue
		}
		have, err := os.ReadFile(filepath.Join(root, inTree))
		if err != nil {
			t.Errorf("%s: %v: run `make manifests generate`", inTree, err)
			continue
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s is stale (%s): run `make manifests generate`", inTree, firstDifference(have, want))
		}
	}
}

// firstDifference names the first line where the tree and the fresh output differ.
func firstDifference(have, want []byte) string {
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(h) && i < len(w); i++ {
		if h[i] != w[i] {
			return fmt.Sprintf("line %d: have %q, want %q", i+1, strings.TrimSpace(h[i]), strings.TrimSpace(w[i]))
		}
	}
	return fmt.Sprintf("have %d lines, want %d", len(h), len(w))
}
