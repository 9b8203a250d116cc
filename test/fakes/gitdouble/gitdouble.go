// Package gitdouble is a private git repository for tests: one commit of a
// few files, served over HTTP with git's "dumb" protocol (the repository's
// files as they are, which every git client can clone) behind a Basic
// credential, the way a forge answers a clone of a private repository.
// It needs no git binary and no disk: the objects are built in memory.
package gitdouble

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // G505: git names its objects by SHA-1
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Branch is the repository's only branch.
const Branch = "main"

// Repo is a bare repository's files by path (HEAD, info/refs,
// objects/xx/yyyy...).
type Repo struct {
	files  map[string][]byte
	commit string
}

// NewRepo is a repository with one commit on Branch holding files (names
// at the top level, no directories).
func NewRepo(files map[string]string) (*Repo, error) {
	r := &Repo{files: map[string][]byte{}}
	var tree bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if name == "" || strings.ContainsAny(name, "/\x00") {
			return nil, fmt.Errorf("file name %q: top-level names only", name)
		}
		sum, err := r.add("blob", []byte(files[name]))
		if err != nil {
			return nil, err
		}
		raw, _ := hex.DecodeString(sum)
		fmt.Fprintf(&tree, "100644 %s\x00", name)
		tree.Write(raw)
	}
	treeSum, err := r.add("tree", tree.Bytes())
	if err != nil {
		return nil, err
	}
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	who := fmt.Sprintf("Garra Test <test@garra.invalid> %d +0000", when)
	commit := fmt.Sprintf("tree %s\nauthor %s\ncommitter %s\n\nThe only commit.\n", treeSum, who, who)
	if r.commit, err = r.add("commit", []byte(commit)); err != nil {
		return nil, err
	}
	r.files["HEAD"] = []byte("ref: refs/heads/" + Branch + "\n")
	r.files["refs/heads/"+Branch] = []byte(r.commit + "\n")
	r.files["info/refs"] = []byte(r.commit + "\trefs/heads/" + Branch + "\n")
	r.files["objects/info/packs"] = []byte("\n")
	return r, nil
}

// Commit is the SHA-1 of the only commit.
func (r *Repo) Commit() string { return r.commit }

// add stores one loose object and returns its name.
func (r *Repo) add(kind string, body []byte) (string, error) {
	raw := append([]byte(fmt.Sprintf("%s %d\x00", kind, len(body))), body...)
	sum := sha1.Sum(raw) //nolint:gosec // G401: git's object names
	name := hex.EncodeToString(sum[:])
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	if _, err := w.Write(raw); err != nil {
		return "", fmt.Errorf("compress %s: %w", kind, err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("compress %s: %w", kind, err)
	}
	r.files["objects/"+name[:2]+"/"+name[2:]] = z.Bytes()
	return name, nil
}

// Server serves a Repo under a path prefix (e.g. "/repo.git/") to callers
// that send Basic User:Token, and counts what it answered.
type Server struct {
	Repo        *Repo
	Prefix      string
	User, Token string
	// Served and Refused count the requests answered 200 and 401.
	Served, Refused atomic.Int64
}

// HealthPath answers 200 without a credential, for a readiness probe.
const HealthPath = "/healthz"

// ServeHTTP answers the repository's files; a request without the
// credential gets 401 with a Basic challenge, as a forge answers for a
// private repository.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == HealthPath {
		w.WriteHeader(http.StatusOK)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read only", http.StatusMethodNotAllowed)
		return
	}
	path, ok := strings.CutPrefix(req.URL.Path, s.Prefix)
	if !ok {
		http.NotFound(w, req)
		return
	}
	if !s.authorized(req) {
		s.Refused.Add(1)
		w.Header().Set("WWW-Authenticate", `Basic realm="gitdouble"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	body, ok := s.Repo.files[path]
	if !ok {
		http.NotFound(w, req)
		return
	}
	s.Served.Add(1)
	// Not the smart protocol's content type: git falls back to fetching
	// the files.
	w.Header().Set("Content-Type", "application/octet-stream")
	if path == "info/refs" || path == "HEAD" || strings.HasPrefix(path, "refs/") {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	_, _ = w.Write(body)
}

func (s *Server) authorized(req *http.Request) bool {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(s.User+":"+s.Token))
	got := req.Header.Get("Authorization")
	return s.Token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// What the standalone double serves (llmdouble -git-listen): one
// repository at RepoPath whose README.md says ReadmeText.
const (
	RepoPath   = "/repo.git"
	ReadmeText = "a private repository, cloned with a credential the sandbox never held\n"
)

// DefaultServer is the standalone double's server for user and token.
func DefaultServer(user, token string) (*Server, error) {
	repo, err := NewRepo(map[string]string{"README.md": ReadmeText})
	if err != nil {
		return nil, err
	}
	return &Server{Repo: repo, Prefix: RepoPath + "/", User: user, Token: token}, nil
}
