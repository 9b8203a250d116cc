package config

import (
	"strings"
	"testing"
)

func TestOrchestratorNameValid(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"ci", true},
		{"team-a/ci", true},
		{strings.Repeat("a", 40), true},
		{strings.Repeat("a", 41), false},
		{strings.Repeat("n", 63) + "/ci", true},
		{strings.Repeat("n", 64) + "/ci", false},
		{"team-a/" + strings.Repeat("a", 41), false},
		{"", false},
		{"/ci", false},
		{"team-a/", false},
		{"a/b/c", false},
		{"Team/ci", false},
		{"team_a/ci", false},
	}
	for _, tt := range tests {
		if got := OrchestratorNameValid(tt.name); got != tt.want {
			t.Errorf("OrchestratorNameValid(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
