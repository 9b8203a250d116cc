package redact

import (
	"errors"
	"strings"
	"testing"
)

func TestMatchesEmpty(t *testing.T) {
	tests := []struct {
		pattern string
		want    bool
	}{
		{`corp-[0-9]{6}`, false},
		{`a`, false},
		{`a+`, false},
		{`(a|b)+c*`, false},
		{`token (?P<secret>\w+)`, false},
		{`token=(?P<secret>\w*)`, false}, // the literal part is never empty
		{`\bsk-\w+\b`, false},
		{`^key:.+$`, false},
		{`[^x]`, false},
		{`.`, false},
		{`x{2,}`, false},
		{`(?i)secret`, false},
		{`a*`, true},
		{`x?`, true},
		{`[0-9]*`, true},
		{`(?:)`, true},
		{`a|`, true},
		{`|a`, true},
		{`(a|b?)`, true},
		{`x{0,3}`, true},
		{`(a*)(b?)`, true},
		{`^`, true},
		{`$`, true},
		{`\b`, true},
		{`\B`, true},
		{`(?m)^$`, true},
		{`\A\z`, true},
		{`(?P<secret>a*)`, true},
		{`(`, false}, // unparsable: New reports the syntax instead
	}
	for _, tt := range tests {
		if got := matchesEmpty(tt.pattern); got != tt.want {
			t.Errorf("matchesEmpty(%q) = %v, want %v", tt.pattern, got, tt.want)
		}
	}
}

// New skips an empty-matching pattern and names it by index; the other
// patterns still apply.
func TestNewSkipsEmptyMatchingPatterns(t *testing.T) {
	r, errs := New([]string{`corp-[0-9]{6}`, `x*`, `(`, `\b`})
	if len(errs) != 3 {
		t.Fatalf("errors %v, want 3", errs)
	}
	want := map[int]string{1: "matches the empty string", 2: "invalid RE2 syntax", 3: "matches the empty string"}
	for _, err := range errs {
		var pe *PatternError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, want[pe.Index]) {
			t.Errorf("error %v, want %q for its index", err, want[pe.Index])
		}
		if strings.Contains(err.Error(), "x*") {
			t.Errorf("error %q quotes the pattern", err)
		}
	}
	if got := r.String("id corp-123456 xxx"); got != "id "+Placeholder+" xxx" {
		t.Fatalf("String = %q: x* must not apply, corp- must", got)
	}
}
