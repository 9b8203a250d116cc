package egressproxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// The body is searched across read boundaries, whatever their sizes: a
// value split between two reads is still replaced.
func TestRedactingBody(t *testing.T) {
	r := newReplacer([]string{"s3cr3t-value", "czNjcjN0LXZhbHVl", "Bearer s3cr3t-value"})
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"nothing here", "nothing here"},
		{"s3cr3t-value", Marker},
		{"a s3cr3t-value b s3cr3t-value", "a " + Marker + " b " + Marker},
		{"Authorization: Bearer s3cr3t-value\n", "Authorization: " + Marker + "\n"},
		{"b64 czNjcjN0LXZhbHVl.", "b64 " + Marker + "."},
		{"s3cr3t-valu", "s3cr3t-valu"}, // a prefix at the end is given back
		{strings.Repeat("x", 40000) + "s3cr3t-value" + strings.Repeat("y", 40000), strings.Repeat("x", 40000) + Marker + strings.Repeat("y", 40000)},
	} {
		for _, name := range []string{"whole", "one byte", "half"} {
			var src io.Reader = strings.NewReader(tt.in)
			switch name {
			case "one byte":
				src = iotest.OneByteReader(src)
			case "half":
				src = iotest.HalfReader(src)
			}
			got, err := io.ReadAll(r.Body(io.NopCloser(src)))
			if err != nil || string(got) != tt.want {
				t.Errorf("%s %.40q: %.80q %v, want %.80q", name, tt.in, got, err, tt.want)
			}
		}
	}
	if newReplacer(nil) != nil || newReplacer([]string{""}) != nil {
		t.Fatal("no secrets must be no replacer")
	}
}

func TestRedactHeader(t *testing.T) {
	r := newReplacer([]string{"tok-123456"})
	h := http.Header{"X-Echo": {"Bearer tok-123456"}, "Other": {"fine"}}
	r.Header(h)
	if h.Get("X-Echo") != "Bearer "+Marker || h.Get("Other") != "fine" {
		t.Fatalf("%v", h)
	}
}
