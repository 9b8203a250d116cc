// Command imagebuild writes Garra's container images as docker-archive
// tarballs without a container engine, with go-containerregistry. They match
// the Dockerfile's two targets, plus the LLM double the end-to-end suite runs
// inside a test cluster:
//
//	garra.tar            localhost/garra:TAG            /usr/local/bin/garra and /manager on an empty base, user 65532, entrypoint garra
//	garra-sandbox.tar    localhost/garra-sandbox:TAG    `garra sandbox` on the Debian root file system of hack/sandbox-rootfs.sh
//	garra-llmdouble.tar  localhost/garra-llmdouble:TAG  test/fakes/llmdouble/cmd/llmdouble -listen :8080 -admin
//	garra-postgres.tar   localhost/garra-postgres:TAG   Debian's PostgreSQL (hack/postgres-rootfs.sh), a fresh server per pod
//	garra-e2e-toolchain.tar localhost/garra-e2e-toolchain:TAG Debian with make and python3 and no garra (hack/toolchain-rootfs.sh)
//
// The last three are for tests only and are written only when their inputs
// are given.
//
// For a release (hack/release.sh) it writes, checks and pushes multi-arch
// images instead (release.go):
//
//	imagebuild release -out DIR -version V -bin DIR ...   OCI layouts DIR/garra and DIR/garra-sandbox, one index each
//	imagebuild inspect -layout DIR/garra -version V ...   read one back: platforms, config, binaries' architecture
//	imagebuild push -layout DIR/garra -to REPO            push it as REPO:V and print REPO@digest
//
// The binaries must be static linux builds (hack/images.sh makes them).
// Every file gets the Unix epoch as its time, so the same inputs give the
// same image digest and a re-import is a no-op.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Registry is the host part of every image name: images are imported, never
// pulled, so no registry is named.
const Registry = "localhost"

// nonRoot is the uid and gid the images run as (distroless "nonroot"; the
// operator's pods pin the same).
const nonRoot = 65532

// defaultPath is the PATH of the Dockerfile's bases (distroless and Debian).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// The MCP registry accepts an OCI package only when its image carries the
// server's name (server.json's "name") in this label.
const (
	MCPServerNameLabel = "io.modelcontextprotocol.server.name"
	MCPServerName      = "io.github.garraia/garra"
)

func main() {
	// The release's subcommands; without one, the docker-archive tarballs.
	if len(os.Args) > 1 {
		if run, ok := subcommands[os.Args[1]]; ok {
			if err := run(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "imagebuild %s: %v\n", os.Args[1], err)
				os.Exit(1)
			}
			return
		}
	}
	var o options
	flag.StringVar(&o.Out, "out", "", "directory for the tarballs (created)")
	flag.StringVar(&o.Tag, "tag", "", "tag of every image (not latest: the pods use IfNotPresent)")
	flag.StringVar(&o.Garra, "garra", "", "static linux garra binary")
	flag.StringVar(&o.Manager, "manager", "", "static linux manager binary")
	flag.StringVar(&o.LLMDouble, "llmdouble", "", "static linux llmdouble binary (empty: no double image)")
	flag.StringVar(&o.SandboxBase, "sandbox-base", "", "root file system tarball of the sandbox image (hack/sandbox-rootfs.sh)")
	flag.StringVar(&o.PostgresBase, "postgres-base", "", "root file system tarball of the test PostgreSQL image (hack/postgres-rootfs.sh; empty: no such image)")
	flag.StringVar(&o.ToolchainBase, "toolchain-base", "", "root file system tarball of the test toolchain image, without garra (hack/toolchain-rootfs.sh; empty: no such image)")
	flag.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle for the garra image (the gateway calls LLM providers over TLS)")
	flag.Parse()
	written, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
	for _, w := range written {
		fmt.Printf("%s\t%s\n", w.Ref, w.Path)
	}
}

type options struct {
	// Arch is the images' GOARCH; empty means this machine's, which the
	// docker-archive tarballs (the default mode) always are.
	Arch string
	// OCI: OCI media types (a release's layouts) instead of Docker's (the
	// docker-archive tarballs).
	OCI                       bool
	Out, Tag                  string
	Garra, Manager, LLMDouble string
	SandboxBase, CACerts      string
	PostgresBase              string
	ToolchainBase             string
}

func (o options) arch() string {
	if o.Arch != "" {
		return o.Arch
	}
	return runtime.GOARCH
}

// written is one tarball and the image name inside it.
type written struct{ Ref, Path string }

func (o options) validate() error {
	var errs []error
	need := func(flag, v string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("-%s is required", flag))
		}
	}
	need("out", o.Out)
	need("tag", o.Tag)
	need("garra", o.Garra)
	need("manager", o.Manager)
	need("sandbox-base", o.SandboxBase)
	if o.Tag == "latest" {
		errs = append(errs, errors.New("-tag latest: the kubelet would try to pull it; use a version tag"))
	}
	return errors.Join(errs...)
}

func build(o options) ([]written, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o750); err != nil {
		return nil, err
	}
	var out []written
	write := func(repo string, img v1.Image) error {
		ref, err := name.NewTag(Registry + "/" + repo + ":" + o.Tag)
		if err != nil {
			return fmt.Errorf("image name %s: %w", repo, err)
		}
		path := filepath.Join(o.Out, repo+".tar")
		if err := tarball.WriteToFile(path, ref, img); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		out = append(out, written{Ref: ref.String(), Path: path})
		return nil
	}

	users, err := usersLayer()
	if err != nil {
		return nil, err
	}

	garra, err := garraImage(o, users)
	if err != nil {
		return nil, fmt.Errorf("garra image: %w", err)
	}
	if err := write("garra", garra); err != nil {
		return nil, err
	}

	sbx, err := sandboxImage(o)
	if err != nil {
		return nil, fmt.Errorf("sandbox image: %w", err)
	}
	if err := write("garra-sandbox", sbx); err != nil {
		return nil, err
	}

	if o.LLMDouble != "" {
		dbl, err := llmDoubleImage(o, users)
		if err != nil {
			return nil, fmt.Errorf("llmdouble image: %w", err)
		}
		if err := write("garra-llmdouble", dbl); err != nil {
			return nil, err
		}
	}

	if o.ToolchainBase != "" {
		tc, err := toolchainImage(o)
		if err != nil {
			return nil, fmt.Errorf("toolchain image: %w", err)
		}
		if err := write("garra-e2e-toolchain", tc); err != nil {
			return nil, err
		}
	}

	if o.PostgresBase != "" {
		pg, err := postgresImage(o)
		if err != nil {
			return nil, fmt.Errorf("postgres image: %w", err)
		}
		if err := write("garra-postgres", pg); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// garraImage is the Dockerfile's `garra` target: both binaries, CA
// certificates, a passwd naming 65532, and garraConfig.
func garraImage(o options, users v1.Layer) (v1.Image, error) {
	files := []file{
		{Path: "usr/local/bin/garra", From: o.Garra, Mode: 0o755},
		{Path: "manager", From: o.Manager, Mode: 0o755},
		{Path: "tmp", Dir: true, Mode: 0o1777},
	}
	if o.CACerts != "" {
		files = append(files, file{Path: "etc/ssl/certs/ca-certificates.crt", From: o.CACerts, Mode: 0o644})
	}
	bin, err := layer(files)
	if err != nil {
		return nil, err
	}
	return image(o, []v1.Layer{users, bin}, garraConfig())
}

// garraConfig is the config of the Dockerfile's `garra` stage, field for
// field (a test parses the Dockerfile and compares). The entrypoint is garra,
// so `docker run -i IMAGE mcp-server`, what server.json tells MCP hosts to
// run, is the stdio server; the Deployments name their own command
// (/manager, garra gateway), which replaces the entrypoint.
func garraConfig() v1.Config {
	return v1.Config{
		User:       fmt.Sprintf("%d:%d", nonRoot, nonRoot),
		Env:        []string{"PATH=" + defaultPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "HOME=/home/nonroot"},
		WorkingDir: "/home/nonroot",
		Entrypoint: []string{"garra"},
		Cmd:        []string{"mcp-server"},
		Labels:     map[string]string{MCPServerNameLabel: MCPServerName},
	}
}

// sandboxImage is the Dockerfile's `sandbox` target: the Debian root file
// system as the base layer and garra on top.
func sandboxImage(o options) (v1.Image, error) {
	base, err := tarball.LayerFromFile(o.SandboxBase)
	if err != nil {
		return nil, fmt.Errorf("base layer %s: %w", o.SandboxBase, err)
	}
	bin, err := layer([]file{{Path: "usr/local/bin/garra", From: o.Garra, Mode: 0o755}})
	if err != nil {
		return nil, err
	}
	return image(o, []v1.Layer{base, bin}, sandboxConfig())
}

// sandboxConfig is the config of the Dockerfile's `sandbox` stage.
func sandboxConfig() v1.Config {
	return v1.Config{
		User:         fmt.Sprintf("%d:%d", nonRoot, nonRoot),
		Env:          []string{"PATH=" + defaultPath, "HOME=/home/garra"},
		WorkingDir:   "/workspace",
		Entrypoint:   []string{"garra", "sandbox"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
	}
}

// llmDoubleImage runs the scripted LLM double with its control API on :8080.
func llmDoubleImage(o options, users v1.Layer) (v1.Image, error) {
	bin, err := layer([]file{{Path: "llmdouble", From: o.LLMDouble, Mode: 0o755}})
	if err != nil {
		return nil, err
	}
	return image(o, []v1.Layer{users, bin}, v1.Config{
		User:         fmt.Sprintf("%d:%d", nonRoot, nonRoot),
		Entrypoint:   []string{"/llmdouble", "-listen", ":8080", "-admin"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
	})
}

// postgresStart is the PostgreSQL image's entrypoint. Every pod starts a
// fresh server: initdb into $PGDATA (below an emptyDir, so initdb creates
// the directory with the mode it insists on), the superuser POSTGRES_USER
// with the password of POSTGRES_PASSWORD, SCRAM over TCP from anywhere,
// the socket in /tmp (the root file system may be read-only).
const postgresStart = `#!/bin/bash
set -euo pipefail
: "${PGDATA:?PGDATA is not set}" "${POSTGRES_USER:?POSTGRES_USER is not set}" "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is not set}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	pw="$(mktemp)"
	printf '%s' "$POSTGRES_PASSWORD" >"$pw"
	initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 --no-instructions >/dev/null
	rm -f "$pw"
	echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp
`

// postgresImage is a throwaway PostgreSQL server for the end-to-end suite's
// replicated gateway: Debian's packages as the base layer (its postgres
// user is 65532) and postgresStart as the entrypoint.
func postgresImage(o options) (v1.Image, error) {
	base, err := tarball.LayerFromFile(o.PostgresBase)
	if err != nil {
		return nil, fmt.Errorf("base layer %s: %w", o.PostgresBase, err)
	}
	start, err := layer([]file{{Path: "usr/local/bin/postgres-start", Data: []byte(postgresStart), Mode: 0o755}})
	if err != nil {
		return nil, err
	}
	return image(o, []v1.Layer{base, start}, v1.Config{
		User:         fmt.Sprintf("%d:%d", nonRoot, nonRoot),
		Env:          []string{"PATH=/usr/lib/postgresql/bin:" + defaultPath, "PGDATA=/var/lib/postgresql/data/pgdata"},
		Entrypoint:   []string{"postgres-start"},
		ExposedPorts: map[string]struct{}{"5432/tcp": {}},
	})
}

// toolchainImage is a team's own build image as the end-to-end suite
// stands one in: Debian with make and python3, no garra, no user, no
// entrypoint (the operator runs garra in it from an init container).
func toolchainImage(o options) (v1.Image, error) {
	base, err := tarball.LayerFromFile(o.ToolchainBase)
	if err != nil {
		return nil, fmt.Errorf("base layer %s: %w", o.ToolchainBase, err)
	}
	return image(o, []v1.Layer{base}, v1.Config{Env: []string{"PATH=" + defaultPath}, Cmd: []string{"bash"}})
}

func image(o options, layers []v1.Layer, cfg v1.Config) (v1.Image, error) {
	base := empty.Image
	if o.OCI {
		base = mutate.ConfigMediaType(mutate.MediaType(base, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	img := base
	for _, l := range layers {
		add := mutate.Addendum{Layer: l}
		if o.OCI {
			add.MediaType = types.OCILayer
		}
		var err error
		if img, err = mutate.Append(img, add); err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.arch()
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

// usersLayer is /etc/passwd and /etc/group naming root and nonroot, so tools
// that look the user up (git, ssh, id) find one.
func usersLayer() (v1.Layer, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRoot)
	return layer([]file{
		{Path: "etc/passwd", Data: []byte(passwd), Mode: 0o644},
		{Path: "etc/group", Data: []byte(group), Mode: 0o644},
		{Path: "home/nonroot", Dir: true, Mode: 0o700, UID: nonRoot},
	})
}

// file is one entry of a layer: a directory, inline data, or a file copied
// from the host.
type file struct {
	Path string
	From string
	Data []byte
	Dir  bool
	Mode int64
	UID  int
}

// layer is an uncompressed tar of files (parent directories added), with
// epoch times and numeric owners.
func layer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	epoch := time.Unix(0, 0).UTC()
	var mkdirs func(dir string) error
	mkdirs = func(dir string) error {
		if dir == "." || dir == "/" || seen[dir] {
			return nil
		}
		if err := mkdirs(filepath.Dir(dir)); err != nil {
			return err
		}
		seen[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
	}
	for _, f := range files {
		if err := mkdirs(filepath.Dir(f.Path)); err != nil {
			return nil, err
		}
		if f.Dir {
			seen[f.Path] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: f.Path + "/", Mode: f.Mode, Uid: f.UID, Gid: f.UID, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
			continue
		}
		data := f.Data
		if f.From != "" {
			b, err := os.ReadFile(f.From)
			if err != nil {
				return nil, err
			}
			data = b
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: f.Mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}
