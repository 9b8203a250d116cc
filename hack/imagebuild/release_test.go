package main

import (
	"debug/elf"
	"encoding/binary"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// elfStub is an ELF header for machine and nothing else: what inspect
// reads of a binary.
func elfStub(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	b := make([]byte, 64)
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.LittleEndian.PutUint16(b[16:], uint16(elf.ET_EXEC))
	binary.LittleEndian.PutUint16(b[18:], uint16(machine))
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// releaseBins writes garra-linux-<arch> and manager-linux-<arch> stubs; a
// swap puts the other CPU's header into arm64's garra.
func releaseBins(t *testing.T, swap bool) string {
	t.Helper()
	dir := t.TempDir()
	for arch, m := range archMachine {
		g := m
		if swap && arch == "arm64" {
			g = elf.EM_X86_64
		}
		elfStub(t, filepath.Join(dir, "garra-linux-"+arch), g)
		elfStub(t, filepath.Join(dir, "manager-linux-"+arch), m)
	}
	return dir
}

func TestReleaseLayoutsReadBack(t *testing.T) {
	dir := t.TempDir()
	o := releaseOptions{
		Out: filepath.Join(dir, "images"), Version: "v1.2.3", Bin: releaseBins(t, false), Revision: "abc",
		CACerts: writeFile(t, filepath.Join(dir, "ca.crt"), "CERTS"),
		Arches:  []string{"amd64", "arm64"},
		SandboxBases: map[string]string{
			"amd64": baseTar(t, t.TempDir()), "arm64": baseTar(t, t.TempDir()),
		},
	}
	written, err := buildRelease(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(o.Out, "garra"), filepath.Join(o.Out, "garra-sandbox")}; !slices.Equal(written, want) {
		t.Fatalf("wrote %v, want %v", written, want)
	}
	for _, w := range written {
		lines, err := inspect(inspectOptions{Layout: w, Version: "v1.2.3", Arches: []string{"arm64", "amd64"}})
		if err != nil {
			t.Errorf("inspect %s: %v", w, err)
		}
		if len(lines) != 2 {
			t.Errorf("inspect %s: %d lines, want one per platform: %q", w, len(lines), lines)
		}
		for _, l := range lines {
			t.Log(l)
			if !strings.Contains(l, "user 65532:65532") {
				t.Errorf("line %q does not show the non-root user", l)
			}
		}
	}
	garra, err := inspect(inspectOptions{Layout: written[0], Version: "v1.2.3", Arches: []string{"amd64", "arm64"}})
	if err != nil || !strings.Contains(garra[0], MCPServerNameLabel+"="+MCPServerName) {
		t.Errorf("garra image line %q (%v) lacks the MCP registry's label", garra[0], err)
	}

	// What inspect must refuse: another version, a missing platform.
	if _, err := inspect(inspectOptions{Layout: written[0], Version: "v1.2.4", Arches: o.Arches}); err == nil {
		t.Error("inspect accepted a layout of another version")
	}
	if _, err := inspect(inspectOptions{Layout: written[1], Version: "v1.2.3", Arches: []string{"amd64", "arm64", "ppc64le"}}); err == nil || !strings.Contains(err.Error(), "platforms") {
		t.Errorf("inspect with a platform missing: %v", err)
	}
}

func TestInspectCatchesAnotherCPUsBinary(t *testing.T) {
	dir := t.TempDir()
	o := releaseOptions{Out: dir, Version: "v1.2.3", Bin: releaseBins(t, true), Arches: []string{"amd64", "arm64"}}
	written, err := buildRelease(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 {
		t.Fatalf("wrote %v, want the garra layout alone (no sandbox bases)", written)
	}
	_, err = inspect(inspectOptions{Layout: written[0], Version: "v1.2.3", Arches: o.Arches})
	if err == nil || !strings.Contains(err.Error(), "garra linux/arm64: /usr/local/bin/garra is built for EM_X86_64") {
		t.Errorf("inspect of an arm64 image holding an amd64 garra: %v", err)
	}
}

func TestReleaseRefusesBadOptions(t *testing.T) {
	for _, o := range []releaseOptions{
		{Out: "x", Bin: "y", Version: ""},
		{Out: "x", Bin: "y", Version: "v1 2"},
		{Out: "x", Bin: "y", Version: "latest"},
		{Out: "x", Bin: "y", Version: "v1", Arches: []string{"amd64"}, SandboxBases: map[string]string{"arm64": "z"}},
	} {
		if _, err := buildRelease(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := parsePlatforms("linux/amd64,darwin/arm64"); err == nil {
		t.Error("darwin/arm64 accepted as an image platform")
	}
}

// Push to a registry on loopback with credentials from the environment,
// then pull the index back by tag: same digest, both platforms.
func TestPushUploadsTheIndex(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "token" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	written, err := buildRelease(releaseOptions{Out: dir, Version: "v1.2.3", Bin: releaseBins(t, false), Arches: []string{"amd64", "arm64"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := push(written[0], host+"/garraia/garra", keychain()); err == nil {
		t.Fatal("pushed without the environment's credentials")
	}
	t.Setenv("REGISTRY_USERNAME", "ci")
	t.Setenv("REGISTRY_PASSWORD", "token")
	ref, err := push(written[0], host+"/garraia/garra", keychain())
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(written[0])
	if err != nil {
		t.Fatal(err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	top, _ := ii.IndexManifest()
	if want := host + "/garraia/garra@" + top.Manifests[0].Digest.String(); ref != want {
		t.Errorf("push printed %s, want %s", ref, want)
	}
	tag, err := name.NewTag(host+"/garraia/garra:v1.2.3", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	auth := remote.WithAuth(&authn.Basic{Username: "ci", Password: "token"})
	idx, err := remote.Index(tag, auth)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	if d != top.Manifests[0].Digest {
		t.Errorf("registry's v1.2.3 is %s, the layout's %s", d, top.Manifests[0].Digest)
	}
	im, _ := idx.IndexManifest()
	var plats []string
	for _, m := range im.Manifests {
		plats = append(plats, m.Platform.String())
		if _, err := remote.Image(tag.Context().Digest(m.Digest.String()), auth); err != nil {
			t.Errorf("%s: %v", m.Platform, err)
		}
	}
	if !slices.Equal(plats, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v", plats)
	}
}
