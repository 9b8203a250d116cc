// Command serverjson writes the release's server.json, the MCP registry
// entry, and validates it offline as the registry would: the repository's
// server.json with one version stamped into its version field, its npm
// package's version and its OCI image's tag; then decoded strictly into the
// registry's own Go type (its pkg/api/v0.ServerJSON), $schema checked to be
// the schema the registry's publish requires (its pkg/model), and the file
// validated against that schema, read from the registry's Go module (pinned
// in go.mod, so verified by go.sum).
//
//	cd hack/serverjson && go run . -in ../../server.json -version 0.1.0 -out DIR/server.json
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	apiv0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// registryModule holds, in internal/validators/schemas, every dated
// server.json schema the registry validates against.
const registryModule = "github.com/modelcontextprotocol/registry"

func main() {
	var in, out, version, schemas string
	flag.StringVar(&in, "in", "../../server.json", "the repository's server.json")
	flag.StringVar(&out, "out", "", "where to write the stamped server.json")
	flag.StringVar(&version, "version", "", "the release's version, X.Y.Z")
	flag.StringVar(&schemas, "schemas", "", "directory of the registry's dated schemas (default: the pinned registry module's)")
	flag.Parse()
	if err := run(in, out, version, schemas); err != nil {
		fmt.Fprintln(os.Stderr, "serverjson:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}

func run(in, out, version, schemas string) error {
	if out == "" {
		return errors.New("-out is required")
	}
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	stamped, err := Stamp(raw, version)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if schemas == "" {
		if schemas, err = moduleSchemas(); err != nil {
			return err
		}
	}
	if err := Validate(stamped, version, schemas); err != nil {
		return fmt.Errorf("%s stamped with %s: %w", in, version, err)
	}
	return os.WriteFile(out, stamped, 0o644) //nolint:gosec // G306: a public artifact
}

var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// Stamp sets version (X.Y.Z) as the entry's version, its npm package's and
// its OCI image's tag (vX.Y.Z), keeping every other byte as it is.
func Stamp(raw []byte, version string) ([]byte, error) {
	if !semver.MatchString(version) {
		return nil, fmt.Errorf("version %q is not X.Y.Z", version)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	var pkgs []map[string]json.RawMessage
	if err := json.Unmarshal(doc["packages"], &pkgs); err != nil {
		return nil, fmt.Errorf("packages: %w", err)
	}
	set := func(m map[string]json.RawMessage, k, v string) {
		b, _ := json.Marshal(v)
		m[k] = b
	}
	set(doc, "version", version)
	for i, p := range pkgs {
		var typ, id string
		_ = json.Unmarshal(p["registryType"], &typ)
		_ = json.Unmarshal(p["identifier"], &id)
		switch typ {
		case "npm":
			set(p, "version", version)
		case "oci":
			repo, _, ok := strings.Cut(id, ":")
			if !ok {
				return nil, fmt.Errorf("packages[%d]: identifier %q has no tag", i, id)
			}
			set(p, "identifier", repo+":v"+version)
		default:
			return nil, fmt.Errorf("packages[%d]: registryType %q: the release stamps npm and oci only", i, typ)
		}
	}
	b, err := json.Marshal(pkgs)
	if err != nil {
		return nil, err
	}
	doc["packages"] = b
	// Field order of a map is lost; the registry reads the JSON, not the
	// layout, so indent the result for people.
	flat, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, flat, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// Validate checks raw as the registry's publish does offline: the
// registry's type, the current schema, the schema's rules, and the
// version in every place that carries one.
func Validate(raw []byte, version, schemas string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s apiv0.ServerJSON
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("the registry's ServerJSON type: %w", err)
	}
	if s.Schema != model.CurrentSchemaURL {
		return fmt.Errorf("$schema %s: the registry publishes only %s", s.Schema, model.CurrentSchemaURL)
	}
	date := filepath.Base(filepath.Dir(s.Schema))
	schemaPath := filepath.Join(schemas, date+".json")
	sch, err := os.ReadFile(schemaPath)
	if err != nil {
		return fmt.Errorf("schema %s: %w", date, err)
	}
	var id struct {
		ID string `json:"$id"`
	}
	if err := json.Unmarshal(sch, &id); err != nil || id.ID == "" {
		return fmt.Errorf("%s has no $id", schemaPath)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id.ID, bytes.NewReader(sch)); err != nil {
		return err
	}
	compiled, err := c.Compile(id.ID)
	if err != nil {
		return fmt.Errorf("compile %s: %w", schemaPath, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	if err := compiled.Validate(v); err != nil {
		return fmt.Errorf("schema %s: %w", date, err)
	}

	var errs []error
	if s.Version != version {
		errs = append(errs, fmt.Errorf("version %q, want %q", s.Version, version))
	}
	for i, p := range s.Packages {
		switch p.RegistryType {
		case model.RegistryTypeNPM:
			if p.Version != version {
				errs = append(errs, fmt.Errorf("packages[%d] (npm %s) version %q, want %q", i, p.Identifier, p.Version, version))
			}
		case model.RegistryTypeOCI:
			if _, tag, _ := strings.Cut(p.Identifier, ":"); tag != "v"+version {
				errs = append(errs, fmt.Errorf("packages[%d] (oci) identifier %s, want the tag v%s", i, p.Identifier, version))
			}
		}
	}
	return errors.Join(errs...)
}

// moduleSchemas is the schemas directory of the registry module this
// module requires (downloaded, and checked against go.sum, by the build).
func moduleSchemas() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", registryModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", registryModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("%s is not downloaded (go mod download)", registryModule)
	}
	return filepath.Join(dir, "internal", "validators", "schemas"), nil
}
