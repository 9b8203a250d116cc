package tools

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultMaxOutputBytes is the cap on one tool result when none is
// configured. The model pays for every byte of it.
const DefaultMaxOutputBytes = 64 << 10

// truncationMarker is appended to any output that was cut.
func truncationMarker(shown, total int64) string {
	return fmt.Sprintf("\n[output truncated: first %d of %d bytes shown]", shown, total)
}

// capOutput cuts s to at most maxBytes (on a UTF-8 boundary) and appends
// the truncation marker when it cut anything. maxBytes <= 0 means no cap.
func capOutput(s string, maxBytes int) string {
	if maxBytes <= 0 || len(s) <= maxBytes {
		return s
	}
	cut := runeBoundary(s, maxBytes)
	return s[:cut] + truncationMarker(int64(cut), int64(len(s)))
}

// runeBoundary returns the largest n <= maxBytes such that s[:n] does not
// end inside a UTF-8 sequence.
func runeBoundary(s string, maxBytes int) int {
	n := maxBytes
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// capWriter keeps the first max bytes written to it and counts the rest,
// so a chatty child cannot grow the server's memory. It is safe for
// concurrent writers (stdout and stderr of one child).
type capWriter struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func newCapWriter(maxBytes int) *capWriter {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxOutputBytes
	}
	return &capWriter{max: maxBytes}
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total += int64(len(p))
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns what was kept, with the truncation marker when bytes
// were dropped.
func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.total <= int64(len(w.buf)) {
		return string(w.buf)
	}
	s := string(w.buf)
	cut := runeBoundary(s, len(s))
	return s[:cut] + truncationMarker(int64(cut), w.total)
}

// scrubPaths replaces every occurrence of the given absolute directories in
// s by a relative spelling ("." for the directory itself), longest first,
// so that messages never carry the host layout of the workspace roots.
func scrubPaths(s string, dirs ...string) string {
	var ds []string
	for _, d := range dirs {
		if d != "" && filepath.IsAbs(d) && d != string(filepath.Separator) {
			ds = append(ds, filepath.Clean(d))
		}
	}
	slices.SortFunc(ds, func(a, b string) int { return len(b) - len(a) })
	for _, d := range ds {
		s = strings.ReplaceAll(s, d+string(filepath.Separator), "")
		s = strings.ReplaceAll(s, d, ".")
	}
	return s
}
