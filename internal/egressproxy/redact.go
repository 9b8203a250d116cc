package egressproxy

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
)

// Marker replaces a credential's value in what an upstream answers.
const Marker = "[REDACTED:credential]"

// replacer replaces a fixed set of secret strings with Marker, in header
// values and, streaming, in bodies. A nil replacer replaces nothing.
type replacer struct {
	secrets [][]byte // longest first, so a value inside a longer form loses to it
	longest int
}

func newReplacer(secrets []string) *replacer {
	var r replacer
	for _, s := range secrets {
		if s != "" && !slices.ContainsFunc(r.secrets, func(b []byte) bool { return string(b) == s }) {
			r.secrets = append(r.secrets, []byte(s))
			r.longest = max(r.longest, len(s))
		}
	}
	if len(r.secrets) == 0 {
		return nil
	}
	slices.SortFunc(r.secrets, func(a, b []byte) int { return len(b) - len(a) })
	return &r
}

// String replaces every secret in s.
func (r *replacer) String(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, string(sec), Marker)
	}
	return s
}

// Header replaces every secret in h's values, in place.
func (r *replacer) Header(h http.Header) {
	if r == nil {
		return
	}
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = r.String(v)
		}
		h[k] = vs
	}
}

// Body wraps rc so that what is read has every secret replaced. It keeps
// at most one read's worth plus the longest secret's length less one
// byte, so it never holds a whole body.
func (r *replacer) Body(rc io.ReadCloser) io.ReadCloser {
	if r == nil {
		return rc
	}
	return &redactingBody{r: r, src: rc, in: make([]byte, 0, 32<<10+r.longest)}
}

type redactingBody struct {
	r   *replacer
	src io.ReadCloser
	in  []byte // read, not yet scanned to the end (a secret may straddle)
	out []byte // scanned, ready to hand out
	err error  // the source's error once it is done
}

func (b *redactingBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			if len(b.in) == 0 {
				return 0, b.err
			}
			b.scan(true)
			continue
		}
		if len(b.in) == cap(b.in) {
			b.scan(false)
			continue
		}
		n, err := b.src.Read(b.in[len(b.in):cap(b.in)])
		b.in = b.in[:len(b.in)+n]
		if err != nil {
			b.err = err
		} else if n > 0 {
			b.scan(false)
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// scan moves what of in is settled to out, secrets replaced: all of it at
// the end of the body, else all but the last longest-1 bytes after the
// last replacement, which might be the start of a secret.
func (b *redactingBody) scan(final bool) {
	out := b.out[:0:0]
	in := b.in
	for {
		at, n := -1, 0
		for _, s := range b.r.secrets {
			if i := bytes.Index(in, s); i >= 0 && (at < 0 || i < at) {
				at, n = i, len(s)
			}
		}
		if at < 0 {
			break
		}
		out = append(out, in[:at]...)
		out = append(out, Marker...)
		in = in[at+n:]
	}
	keep := 0
	if !final {
		keep = min(len(in), b.r.longest-1)
	}
	out = append(out, in[:len(in)-keep]...)
	b.out = out
	rest := copy(b.in[:cap(b.in)], in[len(in)-keep:])
	b.in = b.in[:rest]
}

func (b *redactingBody) Close() error { return b.src.Close() }
