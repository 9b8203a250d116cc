// Command release packages charts/garra-operator for a release with Helm's
// Go library and checks the package as `helm push` would publish it: the
// version (X.Y.Z) and appVersion (vX.Y.Z, the image tag) stamped, the
// archive read back, linted, and rendered with its default values, whose
// images must be the release's. It prints the archive's path.
//
//	cd test/chart && go run ./release -version 0.1.0 -out DIR
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// Image is the repository the chart's default values name; the release
// pushes it and its -sandbox twin with the tag vVERSION.
const Image = "ghcr.io/garraia/garra"

func main() {
	var src, out, version string
	flag.StringVar(&src, "chart", "../../charts/garra-operator", "the chart's directory")
	flag.StringVar(&out, "out", "", "directory for the archive NAME-VERSION.tgz")
	flag.StringVar(&version, "version", "", "the release's version, X.Y.Z (hack/version.sh --bare)")
	flag.Parse()
	path, err := Package(src, out, version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart release:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// Package writes the stamped archive into out and checks it; on a failed
// check the archive is removed and the error says what failed.
func Package(src, out, version string) (string, error) {
	if !semver.MatchString(version) {
		return "", fmt.Errorf("-version %q is not X.Y.Z (no leading v: Helm's chart versions are SemVer)", version)
	}
	if out == "" {
		return "", errors.New("-out is required")
	}
	c, err := loader.Load(src)
	if err != nil {
		return "", fmt.Errorf("load %s: %w", src, err)
	}
	c.Metadata.Version, c.Metadata.AppVersion = version, "v"+version
	path, err := chartutil.Save(c, out)
	if err != nil {
		return "", fmt.Errorf("package: %w", err)
	}
	if err := check(path, version); err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return path, nil
}

// check reads the archive back, as a user's `helm install oci://...` does,
// and lints and renders what is inside.
func check(path, version string) error {
	c, err := loader.Load(path)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if c.Metadata.Version != version || c.Metadata.AppVersion != "v"+version {
		return fmt.Errorf("version %s appVersion %s, want %s and v%s", c.Metadata.Version, c.Metadata.AppVersion, version, version)
	}
	// Lint works on a directory: the archive's own files, unpacked.
	dir, err := os.MkdirTemp("", "chart-release-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := chartutil.SaveDir(c, dir); err != nil {
		return err
	}
	var errs []error
	for _, m := range lint.RunAll(filepath.Join(dir, c.Name()), nil, "garra-system").Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, fmt.Errorf("lint: %s", m.Error()))
		}
	}
	errs = append(errs, checkImages(c, version))
	return errors.Join(errs...)
}

// checkImages renders the default values (`helm template`) and finds the
// release's images in the manager's Deployment.
func checkImages(c *chartv2.Chart, version string) error {
	top, err := util.ToRenderValues(c, map[string]any{}, common.ReleaseOptions{Name: "garra-operator", Namespace: "garra-system", IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return fmt.Errorf("values: %w", err)
	}
	out, err := engine.Render(c, top)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	var deploy string
	for name, body := range out {
		if strings.HasSuffix(name, "/deployment.yaml") {
			deploy = body
		}
	}
	tag := "v" + version
	var errs []error
	for _, want := range []string{
		`image: "` + Image + ":" + tag + `"`,
		"--garra-image=" + Image + ":" + tag,
		"--sandbox-image=" + Image + "-sandbox:" + tag,
	} {
		if !strings.Contains(deploy, want) {
			errs = append(errs, fmt.Errorf("the rendered Deployment lacks %q", want))
		}
	}
	return errors.Join(errs...)
}
