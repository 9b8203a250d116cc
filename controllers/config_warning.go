package controllers

import (
	"fmt"
	"unicode/utf8"

	"github.com/garraia/garra/internal/config"
)

// maxEventNote is the longest note the API server accepts on an
// events.k8s.io/v1 Event, in bytes: a longer one is refused, and the
// warning with it.
const maxEventNote = 1024

// configWarningNote is the note of the ConfigWarning event: the problems
// `garra config check` reports for the rendered file, as many as fit in
// one event, then how many were left out.
func configWarningNote(problems []config.Problem) string {
	const tailRoom = len("; and 999 more")
	note := "config.yml: "
	for i, p := range problems {
		item := p.String()
		if i > 0 {
			item = "; " + item
		}
		limit := maxEventNote - tailRoom
		if i == len(problems)-1 {
			limit = maxEventNote // the last one needs no tail
		}
		if len(note)+len(item) <= limit {
			note += item
			continue
		}
		left := len(problems) - i
		if i == 0 { // one problem longer than a note: cut it rather than say nothing
			note += truncate(item, limit-len(note))
			left--
		}
		if left > 0 {
			note += fmt.Sprintf("; and %d more", left)
		}
		return note
	}
	return note
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len("…"), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
