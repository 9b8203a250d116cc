package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func repoServerJSON(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../server.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func schemasDir(t *testing.T) string {
	t.Helper()
	d, err := moduleSchemas()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The repository's server.json, stamped, passes the registry's schema and
// type; what the stamp changes is the three version fields only.
func TestStampedServerJSONValidates(t *testing.T) {
	raw := repoServerJSON(t)
	out, err := Stamp(raw, "1.2.3-dev.g0abc")
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(out, "1.2.3-dev.g0abc", schemasDir(t)); err != nil {
		t.Fatal(err)
	}
	var before, after map[string]any
	if err := json.Unmarshal(raw, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatal(err)
	}
	before["version"] = "1.2.3-dev.g0abc"
	for _, p := range before["packages"].([]any) {
		p := p.(map[string]any)
		switch p["registryType"] {
		case "npm":
			p["version"] = "1.2.3-dev.g0abc"
		case "oci":
			repo, _, _ := strings.Cut(p["identifier"].(string), ":")
			p["identifier"] = repo + ":v1.2.3-dev.g0abc"
		}
	}
	b1, _ := json.Marshal(before)
	b2, _ := json.Marshal(after)
	if string(b1) != string(b2) {
		t.Errorf("the stamp changed more than the versions:\n%s\n%s", b1, b2)
	}
	if _, err := Stamp(raw, "v1.2.3"); err == nil {
		t.Error("stamped a version with a leading v")
	}
}

// Each kind of mistake the registry would refuse is refused here, naming
// what is wrong.
func TestValidateRefuses(t *testing.T) {
	good, err := Stamp(repoServerJSON(t), "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	dir := schemasDir(t)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"a field the registry does not know", `"title": "Garra"`, `"title": "Garra", "homepage": "x"`, "unknown field"},
		{"a description over 100 characters", `"description": "`, `"description": "` + strings.Repeat("x", 100), "description"},
		{"a name without a namespace", `"name": "io.github.garraia/garra"`, `"name": "garra"`, "name"},
		{"a transport the schema lacks", `"type": "stdio"`, `"type": "carrier-pigeon"`, "transport"},
		{"an older schema", `2025-12-11`, `2025-10-17`, "publishes only"},
		{"an image of another version", `ghcr.io/garraia/garra:v1.2.3`, `ghcr.io/garraia/garra:v1.2.2`, "want the tag v1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := string(good)
			if !strings.Contains(s, tc.old) {
				t.Fatalf("fixture text %q not in server.json", tc.old)
			}
			err := Validate([]byte(strings.Replace(s, tc.old, tc.new, 1)), "1.2.3", dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestRunWritesTheFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "server.json")
	if err := run("../../server.json", out, "1.2.3", ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), `"version": "1.2.3"`) {
		t.Errorf("%s: %v\n%s", out, err, b)
	}
}
