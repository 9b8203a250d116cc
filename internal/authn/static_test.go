package authn_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/garraia/garra/internal/authn"
)

// Static resolves each token to its caller by digest: every line of a
// rotation proves its caller, an empty or unknown token nobody, and a
// token two callers claim neither.
func TestStatic(t *testing.T) {
	st := &authn.Static{}
	st.Add("owner", "owner-key")
	st.Add("a", "a-new")
	st.Add("a", "a-old")
	st.Add("a", "a-new") // the same line twice stays a's
	st.Add("b", "shared")
	st.Add("c", "shared")
	st.Add("d", "")
	for _, tc := range []struct{ token, caller string }{
		{"owner-key", "owner"},
		{"a-new", "a"},
		{"a-old", "a"},
		{"shared", ""},
		{"", ""},
		{"unknown", ""},
	} {
		id, err := st.Authenticate(context.Background(), tc.token)
		if got := id.Caller; got != tc.caller || (tc.caller == "") != (err != nil) {
			t.Errorf("token %q: caller %q, error %v; want %q", tc.token, got, err, tc.caller)
		}
	}
}

// An authentication costs one lookup, whatever the number of callers
// (compare the two sizes' ns/op).
func BenchmarkStaticAuthenticate(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("callers=%d", n), func(b *testing.B) {
			st := &authn.Static{}
			for i := range n {
				st.Add(fmt.Sprintf("orch-%d", i), fmt.Sprintf("token-%032d", i))
			}
			token := fmt.Sprintf("token-%032d", n/2)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.Authenticate(context.Background(), token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
