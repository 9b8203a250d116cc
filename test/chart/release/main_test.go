package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

const chartDir = "../../../charts/garra-operator"

func TestPackageStampsAndChecks(t *testing.T) {
	out := t.TempDir()
	path, err := Package(chartDir, out, "1.2.3-dev.g0abc")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "garra-operator-1.2.3-dev.g0abc.tgz" {
		t.Errorf("archive %s", path)
	}
	c, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "1.2.3-dev.g0abc" || c.Metadata.AppVersion != "v1.2.3-dev.g0abc" {
		t.Errorf("packaged version %s appVersion %s", c.Metadata.Version, c.Metadata.AppVersion)
	}
	var crds int
	for _, f := range c.Files {
		if strings.HasPrefix(f.Name, "crds/") {
			crds++
		}
	}
	if crds != 2 {
		t.Errorf("%d CRDs in the archive, want the two of crds/", crds)
	}

	for _, v := range []string{"v1.2.3", "1.2", "latest", ""} {
		if _, err := Package(chartDir, out, v); err == nil {
			t.Errorf("version %q accepted", v)
		}
	}
}

// A chart whose default image is not the release's fails, and leaves no
// archive behind to be pushed by mistake.
func TestPackageRefusesAnotherImage(t *testing.T) {
	src := filepath.Join(t.TempDir(), "garra-operator")
	if err := os.CopyFS(src, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	vp := filepath.Join(src, "values.yaml")
	b, err := os.ReadFile(vp)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "repository: "+Image, "repository: docker.io/someone/garra", 1)
	if edited == string(b) {
		t.Fatal("values.yaml no longer names " + Image)
	}
	if err := os.WriteFile(vp, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	_, err = Package(src, out, "1.2.3")
	if err == nil || !strings.Contains(err.Error(), `lacks "image: \"ghcr.io/garraia/garra:v1.2.3\""`) {
		t.Errorf("another default image: %v", err)
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Errorf("left %v behind", left)
	}
}
