package gateway_test

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/authn/authntest"
)

// A client that sends its whole request with Connection: close, as a
// shell's /dev/tcp does, must read the refusal rather than a reset: the
// gateway reads the (small) body it refuses before closing.
func TestRefusalReadsCleanlyWithConnectionClose(t *testing.T) {
	is := authntest.NewIssuer(t)
	other := authntest.NewIssuer(t)
	rev := &tableReviewer{}
	h, _ := startIdentity(t, is, rev)
	intruder := other.Sign(nil, map[string]any{"iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:agents:intruder", "aud": saAud})
	rev.users = map[string]string{intruder: "system:serviceaccount:agents:intruder"}
	u, err := url.Parse(h.url)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", u.Host, intruder, len(toolsList), toolsList)
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			t.Fatalf("attempt %d: reading the refusal: %v (read %q)", i, err, out)
		}
		if !strings.HasPrefix(string(out), "HTTP/1.1 401") {
			t.Fatalf("attempt %d: %q, want a 401", i, out)
		}
	}
}
