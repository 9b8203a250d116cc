package egressdouble

import (
	"crypto/subtle"
	"net/http"
	"net/http/cgi" //nolint:gosec // G504: httpoxy was fixed in Go 1.6.3; this runs git's own backend on loopback
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
)

// Git is git's own smart-HTTP server (git http-backend, run as CGI) on a
// TLS loopback server that answers 401 without Basic USER:PASSWORD. Its
// repositories are the bare ones under Root.
type Git struct {
	*httptest.Server
	Root string
	// Unauthorized counts requests refused for want of the credential.
	Unauthorized atomic.Int64
}

// BackendPath is where Debian and most distributions install
// git-http-backend.
const BackendPath = "/usr/lib/git-core/git-http-backend"

// NewGit starts the git server over root on ip, or skips the test when
// git's http-backend is not installed.
func NewGit(t testing.TB, ip, root, user, password string) *Git {
	t.Helper()
	backend := BackendPath
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git http-backend not installed (%s): %v", backend, err)
	}
	g := &Git{Root: root}
	h := &cgi.Handler{
		Path: backend,
		Dir:  root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			// http-backend lets an authenticated user push (REMOTE_USER).
			"REMOTE_USER=" + user,
			"HOME=" + root,
		},
	}
	g.Server = startTLS(t, ip, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u+":"+p), []byte(user+":"+password)) != 1 {
			g.Unauthorized.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="git double"`)
			http.Error(w, "credential required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	return g
}
