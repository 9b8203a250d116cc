package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// subcommands are the release's: multi-arch OCI layouts, their check, and
// their push.
var subcommands = map[string]func([]string) error{
	"release": releaseCmd,
	"inspect": inspectCmd,
	"push":    pushCmd,
}

// Pre-defined annotation keys of the OCI image spec, set on every release
// index and manifest (registries such as ghcr.io link the package to its
// repository by the source).
const (
	annVersion  = "org.opencontainers.image.version"
	annSource   = "org.opencontainers.image.source"
	annRevision = "org.opencontainers.image.revision"
	annRefName  = "org.opencontainers.image.ref.name"
	sourceURL   = "https://github.com/garraia/garra"
)

// The release's images: the layout directory under -out and the config each
// must carry.
var releaseImages = map[string]func() v1.Config{
	"garra":         garraConfig,
	"garra-sandbox": sandboxConfig,
}

type releaseOptions struct {
	Out, Version, Bin, Revision, CACerts string
	// Arches are the linux GOARCHes of every image.
	Arches []string
	// SandboxBases are the sandbox's root file systems by GOARCH; the
	// sandbox image is built for exactly these (none: no sandbox image).
	SandboxBases map[string]string
}

func releaseCmd(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	var o releaseOptions
	var platforms, bases string
	fs.StringVar(&o.Out, "out", "", "directory of the OCI layouts (garra/, garra-sandbox/), replaced")
	fs.StringVar(&o.Version, "version", "", "the release's version (hack/version.sh): the tag and the version annotation")
	fs.StringVar(&o.Bin, "bin", "", "directory of static builds named garra-linux-<arch> and manager-linux-<arch>")
	fs.StringVar(&o.Revision, "revision", "", "git commit of the build (annotation)")
	fs.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle for the garra image")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "platforms of every image")
	fs.StringVar(&bases, "sandbox-base", "", "ARCH=ROOTFS_TAR[,...]: the sandbox's base per architecture (hack/sandbox-rootfs.sh on that architecture)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.Arches, err = parsePlatforms(platforms); err != nil {
		return fmt.Errorf("-platforms: %w", err)
	}
	o.SandboxBases = map[string]string{}
	for kv := range strings.SplitSeq(bases, ",") {
		if kv == "" {
			continue
		}
		arch, path, ok := strings.Cut(kv, "=")
		if !ok || arch == "" || path == "" {
			return fmt.Errorf("-sandbox-base: %q is not ARCH=PATH", kv)
		}
		o.SandboxBases[arch] = path
	}
	written, err := buildRelease(o)
	if err != nil {
		return err
	}
	for _, w := range written {
		fmt.Println(w)
	}
	return nil
}

func parsePlatforms(s string) ([]string, error) {
	var arches []string
	for p := range strings.SplitSeq(s, ",") {
		arch, ok := strings.CutPrefix(p, "linux/")
		if !ok || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("%q is not linux/<arch>", p)
		}
		arches = append(arches, arch)
	}
	return arches, nil
}

// buildRelease writes one OCI layout per image, each holding one index
// tagged (ref.name) with the version, and returns their directories.
func buildRelease(o releaseOptions) ([]string, error) {
	var errs []error
	if o.Out == "" || o.Bin == "" {
		errs = append(errs, errors.New("-out and -bin are required"))
	}
	if _, err := name.NewTag("localhost/x:" + o.Version); err != nil || o.Version == "" || o.Version == "latest" {
		errs = append(errs, fmt.Errorf("-version %q is not a version tag", o.Version))
	}
	for arch := range o.SandboxBases {
		if !slices.Contains(o.Arches, arch) {
			errs = append(errs, fmt.Errorf("-sandbox-base for %s, which is not among the platforms %v", arch, o.Arches))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ann := map[string]string{annVersion: o.Version, annSource: sourceURL}
	if o.Revision != "" {
		ann[annRevision] = o.Revision
	}
	users, err := usersLayer()
	if err != nil {
		return nil, err
	}
	var garraAdds, sandboxAdds []mutate.IndexAddendum
	for _, arch := range o.Arches {
		bo := options{
			Arch: arch, OCI: true, CACerts: o.CACerts,
			Garra:   filepath.Join(o.Bin, "garra-linux-"+arch),
			Manager: filepath.Join(o.Bin, "manager-linux-"+arch),
		}
		img, err := garraImage(bo, users)
		if err != nil {
			return nil, fmt.Errorf("garra image for linux/%s: %w", arch, err)
		}
		garraAdds = append(garraAdds, addendum(img, arch, ann))
		if base, ok := o.SandboxBases[arch]; ok {
			bo.SandboxBase = base
			img, err := sandboxImage(bo)
			if err != nil {
				return nil, fmt.Errorf("sandbox image for linux/%s: %w", arch, err)
			}
			sandboxAdds = append(sandboxAdds, addendum(img, arch, ann))
		}
	}
	var out []string
	for _, r := range []struct {
		name string
		adds []mutate.IndexAddendum
	}{{"garra", garraAdds}, {"garra-sandbox", sandboxAdds}} {
		if len(r.adds) == 0 {
			continue
		}
		dir := filepath.Join(o.Out, r.name)
		if err := writeLayout(dir, r.adds, ann, o.Version); err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		out = append(out, dir)
	}
	return out, nil
}

func addendum(img v1.Image, arch string, ann map[string]string) mutate.IndexAddendum {
	return mutate.IndexAddendum{
		Add: mutate.Annotations(img, ann).(v1.Image),
		Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1,
			Platform:  &v1.Platform{OS: "linux", Architecture: arch},
		},
	}
}

func writeLayout(dir string, adds []mutate.IndexAddendum, ann map[string]string, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	idx = mutate.Annotations(idx, ann).(v1.ImageIndex)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{annRefName: version}))
}

// ---------------------------------------------------------------------------
// inspect

type inspectOptions struct {
	Layout, Version string
	Arches          []string
	// RunVersion runs the garra of this machine's architecture from the
	// image and checks that it reports Version.
	RunVersion bool
}

func inspectCmd(args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	var o inspectOptions
	var platforms string
	fs.StringVar(&o.Layout, "layout", "", "an OCI layout written by imagebuild release (its base name is the image's)")
	fs.StringVar(&o.Version, "version", "", "the version it must carry")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "the platforms it must hold, no more, no fewer")
	fs.BoolVar(&o.RunVersion, "run-version", false, "run this machine's garra from the image: `garra version` must name -version")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.Arches, err = parsePlatforms(platforms); err != nil {
		return fmt.Errorf("-platforms: %w", err)
	}
	lines, err := inspect(o)
	for _, l := range lines {
		fmt.Println(l)
	}
	return err
}

// inspect reads an image's layout back and checks what a registry and a
// kubelet will see: one index tagged with the version, exactly the wanted
// platforms, each manifest's config for its platform and equal to the
// image's intended config (non-root user, entrypoint, labels), and
// binaries built for that platform's CPU. It returns a line per platform.
func inspect(o inspectOptions) ([]string, error) {
	image := filepath.Base(o.Layout)
	wantConfig, ok := releaseImages[image]
	if !ok {
		return nil, fmt.Errorf("%s: not a release image (%v)", image, slices.Sorted(maps.Keys(releaseImages)))
	}
	p, err := layout.FromPath(o.Layout)
	if err != nil {
		return nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].Annotations[annRefName] != o.Version {
		return nil, fmt.Errorf("%s: index.json must hold one index tagged %s, holds %d", o.Layout, o.Version, len(tm.Manifests))
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(image+": "+format, a...)) }
	if im.MediaType != types.OCIImageIndex || im.Annotations[annVersion] != o.Version || im.Annotations[annSource] != sourceURL {
		fail("index %s with annotations %v, want an OCI index with %s=%s and %s=%s", im.MediaType, im.Annotations, annVersion, o.Version, annSource, sourceURL)
	}
	var got []string
	lines := []string{}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" {
			fail("manifest %s has platform %v, want linux/<arch>", d.Digest, d.Platform)
			continue
		}
		arch := d.Platform.Architecture
		got = append(got, arch)
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		line, err := inspectImage(img, image, arch, wantConfig(), o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s linux/%s: %w", image, arch, err))
		}
		lines = append(lines, line)
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(o.Arches))) {
		fail("platforms %v, want %v", got, o.Arches)
	}
	return lines, errors.Join(errs...)
}

func inspectImage(img v1.Image, image, arch string, want v1.Config, o inspectOptions) (string, error) {
	var errs []error
	m, err := img.Manifest()
	if err != nil {
		return "", err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	dig, err := img.Digest()
	if err != nil {
		return "", err
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Annotations[annVersion] != o.Version {
		errs = append(errs, fmt.Errorf("manifest %s annotated %v, want OCI with %s=%s", m.MediaType, m.Annotations, annVersion, o.Version))
	}
	if cf.OS != "linux" || cf.Architecture != arch {
		errs = append(errs, fmt.Errorf("config says %s/%s", cf.OS, cf.Architecture))
	}
	if u := cf.Config.User; u == "" || u == "0" || u == "root" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root:") {
		errs = append(errs, fmt.Errorf("runs as %q: root", u))
	}
	if !reflect.DeepEqual(cf.Config, want) {
		errs = append(errs, fmt.Errorf("config %+v, want %+v", cf.Config, want))
	}
	size := m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}

	// The binaries: ELF for this platform's CPU.
	bins := []string{"usr/local/bin/garra"}
	if image == "garra" {
		bins = append(bins, "manager")
	}
	files, err := readFiles(img, bins)
	if err != nil {
		return "", err
	}
	for _, b := range bins {
		mach, err := elfMachine(files[b])
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("/%s: %w", b, err))
		case mach != archMachine[arch]:
			errs = append(errs, fmt.Errorf("/%s is built for %v, the image is %s", b, mach, arch))
		}
	}
	if o.RunVersion && arch == runtime.GOARCH {
		if err := runVersion(files["usr/local/bin/garra"], o.Version); err != nil {
			errs = append(errs, err)
		}
	}
	var labels []string
	for k, v := range cf.Config.Labels {
		labels = append(labels, k+"="+v)
	}
	slices.Sort(labels)
	line := fmt.Sprintf("%-14s linux/%-6s %s %6.1f MiB  user %s  entrypoint %q cmd %q  labels %v",
		image, arch, dig, float64(size)/(1<<20), cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd, labels)
	return line, errors.Join(errs...)
}

// archMachine is the ELF machine of each GOARCH a release builds.
var archMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// elfMachine reads the machine of an ELF file's header.
func elfMachine(b []byte) (elf.Machine, error) {
	if len(b) < 20 || !bytes.HasPrefix(b, []byte(elf.ELFMAG)) {
		return 0, errors.New("not an ELF file")
	}
	var order binary.ByteOrder = binary.LittleEndian
	if elf.Data(b[elf.EI_DATA]) == elf.ELFDATA2MSB {
		order = binary.BigEndian
	}
	return elf.Machine(order.Uint16(b[18:20])), nil
}

// readFiles reads paths from the image's layers, the top layer first (the
// first found is what the container sees).
func readFiles(img v1.Image, paths []string) (map[string][]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for i := len(layers) - 1; i >= 0 && len(out) < len(paths); i-- {
		if err := func() error {
			rc, err := layers[i].Uncompressed()
			if err != nil {
				return err
			}
			defer func() { _ = rc.Close() }()
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				p := strings.TrimPrefix(h.Name, "./")
				if _, done := out[p]; !done && slices.Contains(paths, p) && h.Typeflag == tar.TypeReg {
					if out[p], err = io.ReadAll(tr); err != nil {
						return err
					}
				}
			}
		}(); err != nil {
			return nil, err
		}
	}
	for _, p := range paths {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("/%s is not in the image", p)
		}
	}
	return out, nil
}

// runVersion runs the image's garra (this machine's architecture) with
// `version`; its first word after "garra" must be the release's version.
func runVersion(garra []byte, version string) error {
	dir, err := os.MkdirTemp("", "imagebuild-inspect-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	exe := filepath.Join(dir, "garra")
	if err := os.WriteFile(exe, garra, 0o700); err != nil { //nolint:gosec // G306: an executable, in a private temporary directory
		return err
	}
	out, err := exec.Command(exe, "version").Output()
	if err != nil {
		return fmt.Errorf("garra version: %w", err)
	}
	if f := strings.Fields(string(out)); len(f) < 2 || f[1] != version {
		return fmt.Errorf("garra version says %q, want %s", strings.TrimSpace(string(out)), version)
	}
	return nil
}

// ---------------------------------------------------------------------------
// push

func pushCmd(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	var dir, repo string
	fs.StringVar(&dir, "layout", "", "an OCI layout written by imagebuild release")
	fs.StringVar(&repo, "to", "", "repository to push to, e.g. ghcr.io/garraia/garra; the tag is the layout's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ref, err := push(dir, repo, keychain())
	if err != nil {
		return err
	}
	fmt.Println(ref)
	return nil
}

// push uploads the layout's index (and with it every platform's image) as
// repo:<its tag> and returns repo@<index digest>, the name provenance is
// attested for.
func push(dir, repo string, kc authn.Keychain) (string, error) {
	if dir == "" || repo == "" {
		return "", errors.New("-layout and -to are required")
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return "", err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return "", err
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return "", err
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].Annotations[annRefName] == "" {
		return "", fmt.Errorf("%s: index.json must hold one tagged index", dir)
	}
	d := tm.Manifests[0]
	tag, err := name.NewTag(repo + ":" + d.Annotations[annRefName])
	if err != nil {
		return "", fmt.Errorf("-to %s: %w", repo, err)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(tag, idx, remote.WithAuthFromKeychain(kc)); err != nil {
		return "", fmt.Errorf("push %s: %w", tag, err)
	}
	return tag.Context().Digest(d.Digest.String()).String(), nil
}

// keychain is REGISTRY_USERNAME and REGISTRY_PASSWORD (CI: the workflow's
// token) when set, else anonymous. Only the environment, so that no
// credential helper or config file on the machine takes part.
func keychain() authn.Keychain {
	user, pass := os.Getenv("REGISTRY_USERNAME"), os.Getenv("REGISTRY_PASSWORD")
	if user == "" || pass == "" {
		return staticKeychain{authn.Anonymous}
	}
	return staticKeychain{authn.FromConfig(authn.AuthConfig{Username: user, Password: pass})}
}

type staticKeychain struct{ a authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.a, nil }
