package chart

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The README's install blocks (markers helm and kustomize, see
// test/readmeblocks) are run here as `helm template` and `kustomize build`
// would run them, with Helm's and kustomize's libraries: the chart or
// config/default rendered with the block's own flags and edits, every
// object decoded strictly, and the manager, gateway and sandbox images the
// ones the block set. The sandbox's must be the Dockerfile's sandbox
// target (garra-sandbox), the image with bash.

// installBlocks are the bodies of the README's blocks marked runner.
func installBlocks(t *testing.T, readme, runner string) []string {
	t.Helper()
	re := regexp.MustCompile("(?ms)^<!-- test: " + runner + " -->\n```sh\n(.*?)^```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(readme, -1) {
		out = append(out, m[1])
	}
	return out
}

// commands splits a script into command lines of words: continuation
// lines joined, comments dropped, `( … )` and `&&` taken apart. Quotes
// group words; nothing is expanded.
func commands(script string) [][]string {
	script = strings.ReplaceAll(script, "\\\n", " ")
	var out [][]string
	for _, line := range strings.Split(script, "\n") {
		var words []string
		var cur strings.Builder
		inWord, quote := false, rune(0)
		flush := func() {
			if inWord {
				words = append(words, cur.String())
			}
			cur.Reset()
			inWord = false
		}
		for _, r := range line {
			switch {
			case quote != 0 && r == quote:
				quote = 0
			case quote != 0:
				cur.WriteRune(r)
			case r == '\'' || r == '"':
				quote, inWord = r, true
			case r == '#' && !inWord:
				goto done
			case r == ' ' || r == '\t':
				flush()
			default:
				cur.WriteRune(r)
				inWord = true
			}
		}
	done:
		flush()
		var cmd []string
		for _, w := range words {
			w = strings.TrimPrefix(w, "(")
			end := strings.HasSuffix(w, ")")
			w = strings.TrimSuffix(w, ")")
			if w == "&&" || w == ";" {
				if len(cmd) > 0 {
					out = append(out, cmd)
				}
				cmd = nil
				continue
			}
			if w != "" {
				cmd = append(cmd, w)
			}
			if end && len(cmd) > 0 {
				out = append(out, cmd)
				cmd = nil
			}
		}
		if len(cmd) > 0 {
			out = append(out, cmd)
		}
	}
	return out
}

// runHelmBlock renders the chart for each `helm install` of the block and
// checks each `kubectl apply -f` of the chart's CRDs.
func runHelmBlock(t *testing.T, script string) error {
	t.Helper()
	ran := 0
	for _, cmd := range commands(script) {
		switch {
		case len(cmd) >= 4 && cmd[0] == "helm" && cmd[1] == "install":
			if err := helmInstall(t, cmd[2], cmd[3], cmd[4:]); err != nil {
				return fmt.Errorf("%s: %w", strings.Join(cmd, " "), err)
			}
		case len(cmd) == 4 && cmd[0] == "kubectl" && cmd[1] == "apply" && cmd[2] == "-f":
			if err := crdsIn(filepath.Join(repoRoot, cmd[3])); err != nil {
				return fmt.Errorf("%s: %w", strings.Join(cmd, " "), err)
			}
		default:
			return fmt.Errorf("%q: not a command this runner knows (helm install, kubectl apply -f of the chart's CRDs)", strings.Join(cmd, " "))
		}
		ran++
	}
	if ran == 0 {
		return fmt.Errorf("no command")
	}
	return nil
}

// helmInstall renders chart as release name with the install's flags,
// as helm would, and checks the images it sets.
func helmInstall(t *testing.T, name, chart string, flags []string) error {
	t.Helper()
	if filepath.Clean(filepath.Join(repoRoot, chart)) != filepath.Clean(chartDir) {
		return fmt.Errorf("installs %s, not the chart %s", chart, "charts/garra-operator")
	}
	ns := "default"
	vals := map[string]any{}
	for i := 0; i < len(flags); i++ {
		switch f := flags[i]; f {
		case "-n", "--namespace":
			i++
			ns = flags[i]
		case "--create-namespace", "--skip-crds":
		case "--set":
			i++
			if err := strvals.ParseInto(flags[i], vals); err != nil {
				return fmt.Errorf("--set %s: %w", flags[i], err)
			}
		default:
			return fmt.Errorf("flag %s: not one this runner knows", f)
		}
	}
	valuesYAML, err := yaml.Marshal(vals)
	if err != nil {
		return err
	}
	if _, err := renderRawAs(t, name, ns, string(valuesYAML)); err != nil {
		return err
	}
	r := renderAs(t, name, ns, string(valuesYAML))
	d := one[*appsv1.Deployment](t, r, "Deployment")
	c := managerContainer(t, d)
	image := c.Image
	repo, tag, _ := strings.Cut(image, ":")
	if want, ok := lookup(vals, "image", "repository"); ok && repo != want {
		return fmt.Errorf("the manager runs %s, not the repository %s the block sets", image, want)
	}
	if want, ok := lookup(vals, "image", "tag"); ok && tag != want {
		return fmt.Errorf("the manager runs %s, not the tag %s the block sets", image, want)
	}
	sandbox := repo + "-sandbox:" + tag
	if v, ok := lookup(vals, "sandboxImage"); ok && v != "" {
		sandbox = v
	}
	return checkImages(c, image, sandbox)
}

func lookup(vals map[string]any, path ...string) (string, bool) {
	var v any = vals
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		v = m[p]
	}
	s, ok := v.(string)
	return s, ok
}

// checkImages checks the manager's --garra-image and --sandbox-image,
// after the kubelet's $(VAR) expansion from the container's env.
func checkImages(c corev1.Container, garra, sandbox string) error {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	expand := regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)
	flags := map[string]string{}
	for _, a := range c.Args {
		a = expand.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
		if k, v, ok := strings.Cut(a, "="); ok {
			flags[k] = v
		}
	}
	if got := flags["--garra-image"]; got != garra {
		return fmt.Errorf("--garra-image is %q, want %q", got, garra)
	}
	if got := flags["--sandbox-image"]; got != sandbox {
		return fmt.Errorf("--sandbox-image is %q, want %q", got, sandbox)
	}
	// The Dockerfile's sandbox target, whose image has bash (the garra
	// image is distroless: an agent's shell would find none).
	if repo, _, _ := strings.Cut(sandbox, ":"); !strings.HasSuffix(repo, "garra-sandbox") {
		return fmt.Errorf("the sandbox image %s is not a garra-sandbox image, the one with bash", sandbox)
	}
	return nil
}

// crdsIn checks that dir holds CustomResourceDefinitions only.
func crdsIn(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD files in %s", dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		obj, _, err := strict.Decode(data, nil, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, ok := obj.(*apiextensionsv1.CustomResourceDefinition); !ok {
			return fmt.Errorf("%s is a %T, not a CRD", f, obj)
		}
	}
	return nil
}

// runKustomizeBlock copies config/ aside, applies the block's `kustomize
// edit set image` there, builds what its `kubectl apply -k` names, and
// checks the images.
func runKustomizeBlock(t *testing.T, script string) error {
	t.Helper()
	root := t.TempDir()
	if err := copyTree(filepath.Join(repoRoot, "config"), filepath.Join(root, "config")); err != nil {
		return err
	}
	cwd, applied := root, false
	var set []kusttypes.Image
	for _, cmd := range commands(script) {
		switch {
		case len(cmd) == 2 && cmd[0] == "cd":
			cwd = filepath.Join(cwd, cmd[1])
		case len(cmd) >= 5 && strings.Join(cmd[:4], " ") == "kustomize edit set image":
			imgs, err := editSetImage(filepath.Join(cwd, "kustomization.yaml"), cmd[4:])
			if err != nil {
				return fmt.Errorf("%s: %w", strings.Join(cmd, " "), err)
			}
			set = append(set, imgs...)
		case len(cmd) == 4 && cmd[0] == "kubectl" && cmd[1] == "apply" && cmd[2] == "-k":
			cwd = root // the subshell's cd is over
			if err := kustomizeBuild(t, filepath.Join(cwd, cmd[3]), set); err != nil {
				return fmt.Errorf("%s: %w", strings.Join(cmd, " "), err)
			}
			applied = true
		default:
			return fmt.Errorf("%q: not a command this runner knows (cd, kustomize edit set image, kubectl apply -k)", strings.Join(cmd, " "))
		}
	}
	if !applied {
		return fmt.Errorf("no kubectl apply -k")
	}
	return nil
}

// editSetImage does what `kustomize edit set image NAME=NEWNAME[:TAG]`
// does to a kustomization's images.
func editSetImage(file string, args []string) ([]kusttypes.Image, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var k kusttypes.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, err
	}
	var set []kusttypes.Image
	for _, a := range args {
		name, to, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("%s: want NAME=NEWNAME:TAG", a)
		}
		img := kusttypes.Image{Name: name, NewName: to}
		if i := strings.LastIndex(to, ":"); i > strings.LastIndex(to, "/") {
			img.NewName, img.NewTag = to[:i], to[i+1:]
		}
		found := false
		for i := range k.Images {
			if k.Images[i].Name == name {
				k.Images[i], found = img, true
			}
		}
		if !found {
			k.Images = append(k.Images, img)
		}
		set = append(set, img)
	}
	out, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	return set, os.WriteFile(file, out, 0o600)
}

// kustomizeBuild builds dir as `kubectl apply -k` would, decodes every
// object strictly and checks that the manager, gateway and sandbox images
// are the ones set (or config/default's defaults).
func kustomizeBuild(t *testing.T, dir string, set []kusttypes.Image) error {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return fmt.Errorf("kustomize build: %w", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return err
	}
	var manager *appsv1.Deployment
	for _, doc := range strings.Split(string(out), "\n---\n") {
		m := decode(t, "kustomize build", []byte(doc))
		if d, ok := m.obj.(*appsv1.Deployment); ok {
			manager = d
		}
	}
	if manager == nil {
		return fmt.Errorf("no Deployment in the build")
	}
	c := managerContainer(t, manager)
	want := map[string]string{"ghcr.io/garraia/garra": "", "ghcr.io/garraia/garra-sandbox": ""}
	defaults, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return err
	}
	var k kusttypes.Kustomization
	if err := yaml.Unmarshal(defaults, &k); err != nil {
		return err
	}
	for _, img := range append(k.Images, set...) {
		if _, ok := want[img.Name]; !ok {
			return fmt.Errorf("an image named %s is set, which no container or variable of the manager uses", img.Name)
		}
		ref := img.Name
		if img.NewName != "" {
			ref = img.NewName
		}
		if img.NewTag != "" {
			ref += ":" + img.NewTag
		}
		want[img.Name] = ref
	}
	for name, ref := range want {
		if ref == "" || !strings.Contains(ref, ":") {
			return fmt.Errorf("image %s has no tag set: the manager would pull %q", name, ref)
		}
	}
	if c.Image != want["ghcr.io/garraia/garra"] {
		return fmt.Errorf("the manager runs %s, want %s", c.Image, want["ghcr.io/garraia/garra"])
	}
	return checkImages(c, want["ghcr.io/garraia/garra"], want["ghcr.io/garraia/garra-sandbox"])
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o600)
	})
}

var installRunners = map[string]func(*testing.T, string) error{"helm": runHelmBlock, "kustomize": runKustomizeBlock}

// The README's install blocks, as written.
func TestReadmeInstallBlocks(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for runner, run := range installRunners {
		blocks := installBlocks(t, string(raw), runner)
		if len(blocks) == 0 {
			t.Errorf("no README block is marked %s", runner)
		}
		for _, b := range blocks {
			if err := run(t, b); err != nil {
				t.Errorf("%s block:\n%s\n%v", runner, b, err)
			}
		}
	}
}

// config/default as it is, with no edit: real images tagged with the
// release's version (vX.Y.Z of the VERSION file), the sandbox's the one
// with bash.
func TestKustomizeDefaultImages(t *testing.T) {
	dir := filepath.Join(repoRoot, "config", "default")
	if err := kustomizeBuild(t, dir, nil); err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kusttypes.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	for _, img := range k.Images {
		if want := "v" + strings.TrimSpace(string(v)); img.NewTag != want {
			t.Errorf("config/default tags %s %q, not the release's %q", img.Name, img.NewTag, want)
		}
	}
}

// Broken install steps must fail, or the test above proves nothing.
func TestReadmeInstallRunnerCatchesBrokenBlocks(t *testing.T) {
	for _, c := range []struct{ runner, script string }{
		{"helm", "helm install garra-operator charts/garra-operator --set image.repo=REGISTRY/garra\n"},
		{"helm", "helm install garra-operator charts/garra-operator --set sandboxImage=REGISTRY/garra:v1\n"},
		{"helm", "helm upgrade garra-operator charts/garra-operator\n"},
		{"kustomize", "(cd config/default && kustomize edit set image controller=REGISTRY/garra-operator:v1)\nkubectl apply -k config/default\n"},
		{"kustomize", "(cd config/default && kustomize edit set image ghcr.io/garraia/garra-sandbox=REGISTRY/garra:v1)\nkubectl apply -k config/default\n"},
		{"kustomize", "kubectl apply -k config/manager\n"},
	} {
		err := installRunners[c.runner](t, c.script)
		if err == nil {
			t.Errorf("%s block passed:\n%s", c.runner, c.script)
			continue
		}
		t.Logf("refused as it should be: %v", err)
	}
}
