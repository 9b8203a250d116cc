package controllers

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/client-go/tools/events"

	"github.com/garraia/garra/internal/config"
)

func TestConfigWarningNote(t *testing.T) {
	p := func(i, size int) config.Problem {
		return config.Problem{Field: fmt.Sprintf("f[%d]", i), Message: strings.Repeat("m", size)}
	}
	if got := configWarningNote([]config.Problem{{Field: "a", Message: "x"}, {Field: "b", Message: "y"}}); got != "config.yml: a: x; b: y" {
		t.Fatalf("note %q", got)
	}

	// Twenty problems of about 100 bytes: as many as fit, then a count.
	var many []config.Problem
	for i := range 20 {
		many = append(many, p(i, 95))
	}
	note := configWarningNote(many)
	shown := strings.Count(note, "f[")
	if len(note) > maxEventNote || !strings.HasSuffix(note, fmt.Sprintf("; and %d more", 20-shown)) || shown < 5 {
		t.Fatalf("%d bytes, %d shown: %q", len(note), shown, note)
	}

	// The last problem may use the room the count would have taken.
	exact := []config.Problem{p(0, maxEventNote-len("config.yml: f[0]: ")-300), p(1, 300-len("; f[1]: "))}
	if note := configWarningNote(exact); len(note) != maxEventNote || strings.Contains(note, "more") {
		t.Fatalf("%d bytes: %q", len(note), note[len(note)-40:])
	}

	// One problem longer than a note is cut, on a rune boundary.
	huge := []config.Problem{{Field: "f", Message: strings.Repeat("é", 2000)}, p(1, 10)}
	note = configWarningNote(huge)
	if len(note) > maxEventNote || !utf8.ValidString(note) || !strings.Contains(note, "…; and 1 more") {
		t.Fatalf("%d bytes: %q", len(note), note[len(note)-40:])
	}
}

// The reconciler raises the Warning its CRD field doc promises for redact
// patterns the gateway ignores, naming each by index, in one event short
// enough for the API server.
func TestWarnConfigReportsIgnoredRedactPatterns(t *testing.T) {
	rec := events.NewFakeRecorder(4)
	r := &GarraServerReconciler{Recorder: rec}

	gs := testServer()
	gs.Spec.Gateway.RedactPatterns = []string{"corp-[0-9]{6}", "x*", "(", `\b`}
	yml, err := RenderConfigYAML(gs, inlineMembers(gs))
	if err != nil {
		t.Fatal(err)
	}
	r.warnConfig(gs, inlineMembers(gs), yml)
	select {
	case ev := <-rec.Events:
		for _, want := range []string{
			"Warning ConfigWarning config.yml: ",
			"gateway.mcp_http.redact_patterns[1]: redact pattern 1 skipped: matches the empty string (ignored)",
			"gateway.mcp_http.redact_patterns[2]: redact pattern 2 skipped: invalid RE2 syntax",
			"gateway.mcp_http.redact_patterns[3]: redact pattern 3 skipped: matches the empty string",
		} {
			if !strings.Contains(ev, want) {
				t.Errorf("event %q lacks %q", ev, want)
			}
		}
		if strings.Contains(ev, "redact_patterns[0]") || strings.Contains(ev, "x*") {
			t.Errorf("event %q names a valid pattern or quotes one", ev)
		}
	default:
		t.Fatal("no event")
	}

	// Thirty-two bad patterns still make one event the API server accepts.
	gs.Spec.Gateway.RedactPatterns = nil
	for i := range 32 {
		gs.Spec.Gateway.RedactPatterns = append(gs.Spec.Gateway.RedactPatterns, fmt.Sprintf("p%d?|", i))
	}
	yml, _ = RenderConfigYAML(gs, inlineMembers(gs))
	r.warnConfig(gs, inlineMembers(gs), yml)
	ev := <-rec.Events
	if note := strings.TrimPrefix(ev, "Warning ConfigWarning "); len(note) > maxEventNote || !strings.Contains(note, "more") {
		t.Fatalf("%d-byte note: %q", len(note), note)
	}

	// A clean spec raises nothing.
	yml, err = RenderConfigYAML(testServer(), inlineMembers(testServer()))
	if err != nil {
		t.Fatal(err)
	}
	r.warnConfig(testServer(), inlineMembers(testServer()), yml)
	select {
	case ev := <-rec.Events:
		t.Fatalf("unexpected event %q", ev)
	default:
	}
}
