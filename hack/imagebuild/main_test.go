package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// baseTar is a two-file stand-in for the debootstrap root file system.
func baseTar(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "base.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, e := range []struct{ name, body string }{{"bin/bash", "#!bash"}, {"etc/passwd", "garra:x:65532:65532::/home/garra:/bin/bash\n"}} {
		_ = tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o755, Size: int64(len(e.body))})
		_, _ = tw.Write([]byte(e.body))
	}
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return p
}

// files flattens an image tarball and returns path → content.
func files(t *testing.T, path, ref string) (map[string]string, []string, string) {
	t.Helper()
	tag, _ := name.NewTag(ref)
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("%s does not hold %s: %v", path, ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[strings.TrimSuffix(h.Name, "/")] = string(b)
	}
	return out, cf.Config.Entrypoint, cf.Config.User
}

func TestBuildWritesTheThreeImages(t *testing.T) {
	dir := t.TempDir()
	o := options{
		Out:         filepath.Join(dir, "out"),
		Tag:         "e2e",
		Garra:       writeFile(t, filepath.Join(dir, "garra"), "GARRA"),
		Manager:     writeFile(t, filepath.Join(dir, "manager"), "MANAGER"),
		LLMDouble:   writeFile(t, filepath.Join(dir, "llmdouble"), "DOUBLE"),
		SandboxBase: baseTar(t, dir),
		CACerts:     writeFile(t, filepath.Join(dir, "ca.crt"), "CERTS"),
	}
	got, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, w := range got {
		refs = append(refs, w.Ref)
	}
	if want := []string{"localhost/garra:e2e", "localhost/garra-sandbox:e2e", "localhost/garra-llmdouble:e2e"}; !slices.Equal(refs, want) {
		t.Fatalf("refs %v, want %v", refs, want)
	}

	fs, ep, user := files(t, got[0].Path, got[0].Ref)
	if fs["usr/local/bin/garra"] != "GARRA" || fs["manager"] != "MANAGER" || fs["etc/ssl/certs/ca-certificates.crt"] != "CERTS" ||
		!strings.Contains(fs["etc/passwd"], ":65532:65532:") || !slices.Equal(ep, []string{"garra"}) || user != "65532:65532" {
		t.Errorf("garra image: entrypoint %v user %q files %v", ep, user, keys(fs))
	}

	fs, ep, user = files(t, got[1].Path, got[1].Ref)
	if fs["usr/local/bin/garra"] != "GARRA" || fs["bin/bash"] != "#!bash" || !strings.HasPrefix(fs["etc/passwd"], "garra:") ||
		!slices.Equal(ep, []string{"garra", "sandbox"}) || user != "65532:65532" {
		t.Errorf("sandbox image: entrypoint %v user %q files %v", ep, user, keys(fs))
	}

	fs, ep, _ = files(t, got[2].Path, got[2].Ref)
	if fs["llmdouble"] != "DOUBLE" || !slices.Equal(ep, []string{"/llmdouble", "-listen", ":8080", "-admin"}) {
		t.Errorf("llmdouble image: entrypoint %v files %v", ep, keys(fs))
	}

	// Same inputs, same digests: a re-import changes nothing.
	again, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		a, _ := os.ReadFile(got[i].Path)
		b, _ := os.ReadFile(again[i].Path)
		if string(a) != string(b) {
			t.Errorf("%s differs between two builds of the same inputs", got[i].Ref)
		}
	}
}

func TestBuildRefusesIncompleteOptions(t *testing.T) {
	_, err := build(options{Tag: "latest"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"-out is required", "-garra is required", "-manager is required", "-sandbox-base is required", "-tag latest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func keys(m map[string]string) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k)
	return k
}

// requiredOptions are the options build cannot do without, on stand-in
// inputs in a temp dir; the optional images are left out.
func requiredOptions(t *testing.T) options {
	t.Helper()
	dir := t.TempDir()
	return options{
		Out:         filepath.Join(dir, "out"),
		Tag:         "e2e",
		Garra:       writeFile(t, filepath.Join(dir, "garra"), "GARRA"),
		Manager:     writeFile(t, filepath.Join(dir, "manager"), "MANAGER"),
		SandboxBase: baseTar(t, dir),
	}
}

// The PostgreSQL image is written only when its base is given, runs as
// 65532 with the start script as its entrypoint and the server binaries on
// PATH, and the script is valid bash.
func TestBuildWritesThePostgresImageOnlyWhenAsked(t *testing.T) {
	o := requiredOptions(t)
	got, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range got {
		if strings.Contains(w.Ref, "postgres") {
			t.Fatalf("%s written without -postgres-base", w.Ref)
		}
	}

	o.PostgresBase = baseTar(t, t.TempDir())
	got, err = build(o)
	if err != nil {
		t.Fatal(err)
	}
	last := got[len(got)-1]
	if last.Ref != "localhost/garra-postgres:e2e" {
		t.Fatalf("last image %s, want localhost/garra-postgres:e2e", last.Ref)
	}
	fs, ep, user := files(t, last.Path, last.Ref)
	if fs["bin/bash"] != "#!bash" || fs["usr/local/bin/postgres-start"] != postgresStart ||
		!slices.Equal(ep, []string{"postgres-start"}) || user != "65532:65532" {
		t.Errorf("postgres image: entrypoint %v user %q files %v", ep, user, keys(fs))
	}
	tag, _ := name.NewTag(last.Ref)
	img, err := tarball.ImageFromPath(last.Path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cf.Config.Env, "PGDATA=/var/lib/postgresql/data/pgdata") ||
		!strings.HasPrefix(cf.Config.Env[0], "PATH=/usr/lib/postgresql/bin:") {
		t.Errorf("postgres image env %v", cf.Config.Env)
	}

	script := writeFile(t, filepath.Join(t.TempDir(), "postgres-start"), postgresStart)
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Errorf("postgres-start is not valid bash: %v %s", err, out)
	}
}

// The toolchain image is the base alone: no garra, no user, no entrypoint.
func TestBuildWritesTheToolchainImageOnlyWhenAsked(t *testing.T) {
	o := requiredOptions(t)
	o.ToolchainBase = baseTar(t, t.TempDir())
	got, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	var tc *written
	for i := range got {
		if got[i].Ref == "localhost/garra-e2e-toolchain:e2e" {
			tc = &got[i]
		}
	}
	if tc == nil {
		t.Fatalf("no toolchain image in %v", got)
	}
	fs, ep, user := files(t, tc.Path, tc.Ref)
	if fs["bin/bash"] != "#!bash" || fs["usr/local/bin/garra"] != "" || len(ep) != 0 || user != "" {
		t.Errorf("toolchain image: entrypoint %v user %q files %v", ep, user, keys(fs))
	}
}
