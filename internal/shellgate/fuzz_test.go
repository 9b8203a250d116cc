package shellgate

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzCheck checks the gate's invariants on arbitrary input: it never
// panics (decide has no recover, unlike Check), whatever the parser rejects
// is blocked, a verdict always comes with a consistent, short reason, the
// answer is deterministic, and it comes quickly.
func FuzzCheck(f *testing.F) {
	for _, tc := range blocked {
		f.Add(tc.cmd)
	}
	for _, cmd := range allowed {
		f.Add(cmd)
	}
	for _, fam := range families {
		for _, tc := range fam.blocked {
			f.Add(tc.cmd)
		}
		for _, cmd := range fam.allowed {
			f.Add(cmd)
		}
	}
	for _, s := range []string{
		"$'\\x", "$'\\u12345678'", "${!}", "${!a[@]}", "a[", "{", "}", "{{a,b},c}", "`", "$(", "<(", "<<",
		"cat <<-E\n\tx\n\tE", "x=(", "((a[$(b)]))", "case", "rm -rf \\", "\\\n", "~", "~root/x", "-",
		"git -c", "env -S", "sudo -u", "timeout", "xargs -I", "find . -exec", "sed 's", "awk -e",
		"bash -o", "tar -I", "kill -s", "ps -o", "declare -n", "coproc", "time", "!",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		start := time.Now()
		d := decide(cmd, Policy{})
		if el := time.Since(start); el > 3*time.Second {
			t.Fatalf("decision took %v", el)
		}
		if d.Allowed != (d.Reason == "") {
			t.Fatalf("inconsistent decision %+v", d)
		}
		if len(d.Reason) > 200 {
			t.Fatalf("reason too long: %d bytes", len(d.Reason))
		}
		if !utf8.ValidString(d.Reason) {
			t.Fatalf("reason is not valid UTF-8: %q", d.Reason)
		}
		if _, err := syntax.NewParser().Parse(strings.NewReader(cmd), ""); err != nil && d.Allowed {
			t.Fatalf("unparsable input allowed: %v", err)
		}
		if again := check(cmd); again != d {
			t.Fatalf("non-deterministic: %+v then %+v", d, again)
		}
	})
}
