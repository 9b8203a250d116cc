package shellgate

import (
	"strings"
	"testing"
)

// A family is one way of talking past the gate, closed at its root, with
// the spellings that must stay blocked and the ordinary work that must
// keep running next to it.
type family struct {
	name    string
	blocked []blockCase
	allowed []string
}

type blockCase struct {
	cmd  string
	want string // must appear in the reason when set
}

// pathFamily: sensitive paths spelled with globs, brackets, braces,
// variables, symlink aliases, or built by another program at run time.
var pathFamily = family{
	name: "sensitive paths",
	blocked: []blockCase{
		// Globs and brackets anywhere in the path, not only after /proc/.
		{"cat /pro*/self/environ", "environ"},
		{"cat /*/self/environ", "environ"},
		{"cat /???c/self/environ", "environ"},
		{"cat /[p]roc/self/environ", "environ"},
		{"head -c 200 /proc/[0-9]*/environ", "environ"},
		{"strings /p?oc/1/env*", "environ"},
		{"cat /proc/sel[f]/envir[o]n", "environ"},
		{"ls /proc/*/e*n", "environ"},
		{"cat /proc/self/task/*/environ", "environ"},
		// Braces, including groups that hold slashes.
		{"cat /{proc/self,tmp}/environ", "environ"},
		{"cat /proc/{1,self}/environ", "environ"},
		{"cat /proc/se{l,}f/mem", "/proc"},
		// Variables, assembled from pieces or transformed.
		{"a=/pr; b=oc/self/env; c=iron; cat $a$b$c", "environ"},
		{`d=/proc/self; cat "$d/environ"`, "environ"},
		{"p=/proc; cat ${p}/1/environ", "environ"},
		{`x=/PROC/SELF/ENVIRON; cat "${x,,}"`, "environ"},
		{`p=_proc_self_environ; cat "${p//_//}"`, "environ"},
		{`e=$'\x2fproc\x2fself\x2fenviron'; cat "$e"`, "environ"},
		{`parts=(/pr oc); cat "${parts[0]}${parts[1]}/self/environ"`, "run-time"},
		{`printf -v p '/pr%sc/self/environ' o; cat "$p"`, "environ"},
		{`p=${q:-/proc/1}; cat "$p/environ"`, "environ"},
		// Built by another program at run time.
		{`cat "$(echo L3Byb2MvMS9lbnZpcm9u | base64 -d)"`, "run-time"},
		{"cat $(printf '/pr%sc/self/environ' o)", "environ"},
		{`cat "$(rev <<< norivne/fles/corp/)"`, "run-time"},
		{`f=$(find / -name environ | head -1); cat "$f"`, "run-time"},
		{`read p < list.txt; cat "$p"`, "run-time"},
		{`while read -r f; do cat "$f"; done < paths.txt`, "run-time"},
		{"cat list.txt | xargs cat", "xargs"},
		{"xargs -a list.txt cat", "xargs"},
		{"xargs head < list", "xargs"},
		{`cat "$(cat x)iron"`, "run-time"},
		{`grep -a KEY "$(cat where)"`, "run-time"},
		{`cat < "$(cat where)"`, "run-time"},
		{`mapfile -t fs < list; cat "${fs[0]}"`, "run-time"},
		{`f() { cat "$1"; }; f "$(cat where)"`, "run-time"},
		// Symlinks into /proc/self and other processes' entries.
		{"cat /dev/fd/../environ", "environ"},
		{"cat /dev/stdin/../environ", "/proc link"},
		{"cat /proc/self/fd/3/../environ", ""},
		{"cat /proc/self/cwd/../environ", ""},
		{"cat /proc/self/mem", "mem"},
		{"dd if=/proc/$PPID/mem bs=1 skip=4096 count=64", "mem"},
		{"ls -l /proc/1/fd", "/proc/*/fd"},
		{"cat /proc/$PPID/fd/4", "/proc/*/fd"},
		{"cat /proc/1/map_files/*", "map_files"},
		{"cat /run/secrets/kubernetes.io/serviceaccount/token", "secrets"},
		{"cat /var/run/secrets/kubernetes.io/serviceaccount/token", "secrets"},
		{"xxd /dev/mem", "memory"},
		// Relative names after the working directory moved into /proc.
		{"cd /proc/self && cat environ", "environ"},
		{"cd /proc/1; grep -a KEY environ", "environ"},
		{"pushd /proc/self >/dev/null; cat environ", "environ"},
		{"cd /proc; cat self/environ", "environ"},
		{"cd /dev/fd && cat ../environ", ""},
		{"cd /run/secrets && cat kubernetes.io/serviceaccount/token", "secrets"},
		// Writes into .git, however the path is spelled or built.
		{"echo x > .gi?/hooks/pre-commit", "protected file"},
		{"cp evil .GIT/hooks/pre-commit", "protected file"},
		{`cp hook "$(git rev-parse --git-dir)/hooks/pre-commit"`, ".git"},
		{`d=.git; cp x "$d/config"`, ".git"},
		{`tee "$(git rev-parse --git-path hooks)/post-checkout" < x`, "protected file"},
		{"cd .git && echo x > config", "protected file"},
		{"cd .git/hooks; cp ../../evil pre-commit", "protected file"},
		{"echo x > sub/.git/config", ".git"},
		{"ln -sf evil .g[i]t/hooks/pre-push", ".g"},
		{"mv x .{git,tmp}/hooks/pre-commit", ""},
		{`echo x > "$(printf .gi%s t)/config"`, ".git"},
		{`echo x > "$(cat name)/config"`, "run-time path"},
		{`tee "$(cat target)" < x`, "run-time"},
		{`cp a "$(head -1 list)"`, "run-time"},
		{`g=.git; echo '[core]' >> "./${g}/config"`, ".git"},
	},
	allowed: []string{
		"cat /proc/cpuinfo",
		"cat /proc/meminfo",
		"cat /proc/self/status",
		"cat /proc/$$/status",
		"ls /proc/self/fd",
		"cat /proc/self/fd/0",
		"cat /etc/os-release",
		`f=README.md; cat "$f"`,
		`for f in *.go; do wc -l "$f"; done`,
		"find . -name '*.go' | xargs grep -l curl",
		`find . -name '*.go' | while read -r f; do wc -l "$f"; done`,
		"git ls-files | xargs wc -l",
		`tmp=$(mktemp -d); echo hi > "$tmp/x"; cat "$tmp/x"`,
		`d=$(pwd); ls "$d"`,
		`root=$(git rev-parse --show-toplevel); cat "$root/go.mod"`,
		`for f in $(git ls-files '*.go'); do gofmt -l "$f"; done`,
		"wc -l $(find . -name '*.go')",
		`v=$(cat VERSION); echo "v$v"`,
		`out=$(go test ./... 2>&1); echo "$out" | tail`,
		"git commit -m \"$(cat <<'EOF'\nfix: a message\n\nwith a body\nEOF\n)\"",
		`echo "$(date +%F)" > stamp.txt`,
		`cat "$(ls -t logs/*.log | head -1)"`,
		`name=$(basename "$PWD"); echo "$name"`,
		`cat "$HOME/.bashrc"`,
		"ls ~/.ssh",
		"cat .git/HEAD",
		"git log --oneline -3",
		`echo "$PATH"`,
		`n=$(nproc); make -j"$n"`,
		`for p in $(pgrep -f server); do echo "$p"; done`,
		`rev=$(git rev-parse --short HEAD); echo "build $rev" > version.txt`,
		`x=/tmp/build; mkdir -p "$x" && cp -r src "$x"`,
		`files=$(git diff --name-only HEAD~1); echo "$files"`,
		"git diff --name-only | xargs gofmt -l",
		`p="${1:-.}"; ls "$p"`,
	},
}

var families = []family{pathFamily}

func TestFamilies(t *testing.T) {
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			for _, tc := range fam.blocked {
				d := Check(tc.cmd)
				switch {
				case d.Allowed:
					t.Errorf("Check(%q) allowed, want blocked", tc.cmd)
				case tc.want != "" && !strings.Contains(d.Reason, tc.want):
					t.Errorf("Check(%q) reason %q, want it to mention %q", tc.cmd, d.Reason, tc.want)
				}
			}
			for _, cmd := range fam.allowed {
				if d := Check(cmd); !d.Allowed {
					t.Errorf("Check(%q) blocked (%s), want allowed", cmd, d.Reason)
				}
			}
		})
	}
}
