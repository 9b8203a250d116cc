package main

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// repoRoot is the product module, two levels up from this module.
const repoRoot = "../.."

// The garra image from hack/imagebuild and the Dockerfile's garra stage must
// be the same image to whoever runs it: same entrypoint, command, user,
// working directory, environment and labels.
func TestGarraConfigMatchesTheDockerfile(t *testing.T) {
	df, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := stageConfig(string(df), "garra")
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if want := garraConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("the Dockerfile's garra stage says\n  %+v\nhack/imagebuild writes\n  %+v", got, want)
	}
}

func TestStageConfigParsesWhatItReads(t *testing.T) {
	const df = `FROM x AS build
ENV A=1
FROM scratch AS one
LABEL a.b="c d" e=f
ENV A=1 \
    B="two words"
ENV A=3
USER 1:1
WORKDIR /w
ENTRYPOINT ["a", "b"]
CMD ["c"]
FROM scratch AS two
`
	got, err := stageConfig(df, "one")
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		User: "1:1", WorkingDir: "/w", Entrypoint: []string{"a", "b"}, Cmd: []string{"c"},
		Env:    []string{"A=3", "B=two words"},
		Labels: map[string]string{"a.b": "c d", "e": "f"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{
		"FROM scratch AS one\nENTRYPOINT garra mcp-server\n", // shell form
		"FROM scratch AS one\nEXPOSE 8080\n",                 // config the parser does not model
		"FROM scratch AS one\nENV A\n",
		"FROM scratch AS other\n",
	} {
		if _, err := stageConfig(bad, "one"); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

// The image as the MCP registry and an MCP host see it: built from a real
// static garra, its config read back from the tarball, its file system
// unpacked, and its entrypoint run with server.json's arguments on stdio.
func TestGarraImageStartsTheMCPServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary is a linux binary")
	}
	dir := t.TempDir()
	garra := buildGarra(t, dir)
	// Only the garra image: the others would compress the binary again.
	o := options{
		Garra:   garra,
		Manager: writeFile(t, filepath.Join(dir, "manager"), "MANAGER"),
		CACerts: writeFile(t, filepath.Join(dir, "ca.crt"), "CERTS"),
	}
	users, err := usersLayer()
	if err != nil {
		t.Fatal(err)
	}
	built, err := garraImage(o, users)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(Registry + "/garra:test")
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(dir, "garra.tar")
	if err := tarball.WriteToFile(tarPath, tag, built); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes (garra %d bytes)", tag, fileSize(t, tarPath), fileSize(t, garra))
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := cf.Config
	if !slices.Equal(cfg.Entrypoint, []string{"garra"}) || cfg.User != "65532:65532" {
		t.Errorf("entrypoint %q user %q, want [garra] as 65532:65532", cfg.Entrypoint, cfg.User)
	}
	if want := serverJSONName(t); cfg.Labels[MCPServerNameLabel] != want {
		t.Errorf("label %s = %q, want server.json's name %q", MCPServerNameLabel, cfg.Labels[MCPServerNameLabel], want)
	}

	// `docker run -i --rm IMAGE mcp-server`: the arguments replace Cmd and
	// follow the entrypoint, found on the image's PATH, run in its working
	// directory with its environment.
	rootfs := filepath.Join(dir, "rootfs")
	unpack(t, img, rootfs)
	args := serverJSONArgs(t)
	argv := append(slices.Clone(cfg.Entrypoint), args...)
	exe := lookPath(t, rootfs, cfg.Env, argv[0])
	cmd := exec.Command(exe, argv[1:]...)
	cmd.Dir = filepath.Join(rootfs, cfg.WorkingDir)
	cmd.Env = rebase(rootfs, cfg.Env)
	cmd.Stderr = &tailWriter{t: t}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "imagebuild-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("initialize %v: %v", argv, err)
	}
	t.Logf("%v answered initialize in %v", argv, time.Since(start))
	defer func() { _ = cs.Close() }()
	ir := cs.InitializeResult()
	if ir.ServerInfo == nil || ir.ServerInfo.Name != "garra" || ir.ProtocolVersion == "" {
		t.Errorf("initialize result %+v", ir)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "garra_ask" }) {
		t.Errorf("tools/list has no garra_ask: %d tools", len(tools.Tools))
	}
}

// buildGarra builds the product's garra as hack/images.sh does: static,
// linux, this machine's architecture.
func buildGarra(t *testing.T, dir string) string {
	t.Helper()
	out, err := filepath.Abs(filepath.Join(dir, "garra"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/garra")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/garra: %v\n%s", err, b)
	}
	t.Logf("built garra in %v", time.Since(start))
	return out
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// serverJSON is the part of the repository's server.json this module needs.
type serverJSON struct {
	Name     string `json:"name"`
	Packages []struct {
		RegistryType     string `json:"registryType"`
		PackageArguments []struct {
			Value string `json:"value"`
		} `json:"packageArguments"`
	} `json:"packages"`
}

func readServerJSON(t *testing.T) serverJSON {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s serverJSON
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	return s
}

func serverJSONName(t *testing.T) string {
	t.Helper()
	s := readServerJSON(t)
	if s.Name != MCPServerName {
		t.Errorf("server.json names %q, the image label %q", s.Name, MCPServerName)
	}
	return s.Name
}

// serverJSONArgs are the OCI package's arguments: what a host appends to
// `docker run -i --rm IMAGE`.
func serverJSONArgs(t *testing.T) []string {
	t.Helper()
	for _, p := range readServerJSON(t).Packages {
		if p.RegistryType != "oci" {
			continue
		}
		var args []string
		for _, a := range p.PackageArguments {
			args = append(args, a.Value)
		}
		if len(args) == 0 {
			t.Fatal("server.json's oci package has no arguments")
		}
		return args
	}
	t.Fatal("server.json has no oci package")
	return nil
}

// unpack writes the image's flattened file system under dir.
func unpack(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := strings.TrimSuffix(path.Clean(h.Name), "/")
		switch h.Typeflag {
		case tar.TypeDir:
			// Owner-writable whatever the image says: the test unpacks as
			// itself, and must be able to fill the directory.
			err = root.MkdirAll(p, os.FileMode(h.Mode).Perm()|0o700)
		case tar.TypeReg:
			err = errors.Join(root.MkdirAll(path.Dir(p), 0o755), writeFrom(root, p, os.FileMode(h.Mode).Perm(), tr))
		default:
			t.Fatalf("%s: tar entry type %c not expected in the garra image", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatalf("unpack %s: %v", h.Name, err)
		}
	}
}

func writeFrom(root *os.Root, p string, mode os.FileMode, r io.Reader) error {
	f, err := root.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// lookPath finds file on the image's PATH inside rootfs, as the runtime
// does for a relative entrypoint.
func lookPath(t *testing.T, rootfs string, env []string, file string) string {
	t.Helper()
	if strings.Contains(file, "/") {
		return filepath.Join(rootfs, file)
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(v) {
				p := filepath.Join(rootfs, d, file)
				if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
					return p
				}
			}
		}
	}
	t.Fatalf("%s is not on the image's PATH (env %v)", file, env)
	return ""
}

// rebase points the image's absolute paths (HOME, SSL_CERT_FILE, PATH's
// entries) into rootfs, so the unpacked binary sees the image's files.
func rebase(rootfs string, env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		parts := filepath.SplitList(v)
		for i, p := range parts {
			if strings.HasPrefix(p, "/") {
				parts[i] = filepath.Join(rootfs, p)
			}
		}
		out = append(out, k+"="+strings.Join(parts, string(filepath.ListSeparator)))
	}
	return out
}

// tailWriter sends the server's stderr to the test log.
type tailWriter struct{ t *testing.T }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.t.Logf("garra: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// stageConfig is the image config a Dockerfile stage sets itself: LABEL,
// ENV, USER, WORKDIR, ENTRYPOINT and CMD (exec form). Any other instruction
// that changes the config is an error, so the comparison cannot silently
// miss it.
func stageConfig(dockerfile, stage string) (v1.Config, error) {
	var cfg v1.Config
	in := false
	found := false
	var line strings.Builder
	sc := bufio.NewScanner(strings.NewReader(dockerfile))
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(text, "\\"); ok {
			line.WriteString(cont + " ")
			continue
		}
		line.WriteString(text)
		instr, rest, _ := strings.Cut(line.String(), " ")
		line.Reset()
		rest = strings.TrimSpace(rest)
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			f := strings.Fields(rest)
			in = len(f) == 3 && strings.EqualFold(f[1], "AS") && f[2] == stage
			found = found || in
			continue
		}
		if !in {
			continue
		}
		var err error
		switch instr {
		case "COPY", "ADD", "RUN", "ARG":
		case "USER":
			cfg.User = rest
		case "WORKDIR":
			cfg.WorkingDir = rest
		case "ENTRYPOINT":
			cfg.Entrypoint, err = execForm(rest)
		case "CMD":
			cfg.Cmd, err = execForm(rest)
		case "LABEL", "ENV":
			var kvs [][2]string
			if kvs, err = pairs(rest); err != nil {
				break
			}
			for _, kv := range kvs {
				if instr == "LABEL" {
					if cfg.Labels == nil {
						cfg.Labels = map[string]string{}
					}
					cfg.Labels[kv[0]] = kv[1]
					continue
				}
				i := slices.IndexFunc(cfg.Env, func(e string) bool { return strings.HasPrefix(e, kv[0]+"=") })
				if i >= 0 {
					cfg.Env[i] = kv[0] + "=" + kv[1]
				} else {
					cfg.Env = append(cfg.Env, kv[0]+"="+kv[1])
				}
			}
		default:
			err = fmt.Errorf("instruction %s is not modelled", instr)
		}
		if err != nil {
			return v1.Config{}, fmt.Errorf("stage %s: %s: %w", stage, instr, err)
		}
	}
	if !found {
		return v1.Config{}, fmt.Errorf("no stage named %s", stage)
	}
	return cfg, sc.Err()
}

func execForm(s string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%q is not the exec (JSON array) form: %w", s, err)
	}
	return v, nil
}

// pairs splits `k=v k2="v 2"` into key/value pairs.
func pairs(s string) ([][2]string, error) {
	var out [][2]string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \"") {
			return nil, fmt.Errorf("%q is not key=value", s)
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			v, s = rest[1:end+1], rest[end+2:]
		} else {
			v, s, _ = strings.Cut(rest, " ")
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}
