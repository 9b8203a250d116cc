// Command llmdouble runs the LLM test double as a standalone process in echo
// mode, for benchmarks, the conformance suite and the end-to-end cluster
// suite: point a provider's base URL at it (OpenAI-compatible: <url>/v1,
// Anthropic: <url>). With -admin, a test scripts it over HTTP (see the
// package's admin.go); the e2e image runs it that way inside the cluster.
//
// With -git-listen it also serves gitdouble's private repository over
// HTTPS (-git-cert, -git-key) to callers that send Basic
// -git-user:<the token in -git-token-file>: the e2e suite's upstream for
// credentials injected by the gateway, from the same image.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/garraia/garra/test/fakes/gitdouble"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "host:port to listen on")
	admin := flag.Bool("admin", false, "serve the /_double/ control API (script, requests, healthz)")
	gitListen := flag.String("git-listen", "", "also serve a private git repository over HTTPS on this host:port")
	gitCert := flag.String("git-cert", "", "PEM certificate of the git server")
	gitKey := flag.String("git-key", "", "PEM key of the git server")
	gitUser := flag.String("git-user", "x-access-token", "user name a clone must send")
	gitTokenFile := flag.String("git-token-file", "", "file holding the token a clone must send")
	flag.Parse()

	if *gitListen != "" {
		if err := serveGit(*gitListen, *gitCert, *gitKey, *gitUser, *gitTokenFile); err != nil {
			fmt.Fprintln(os.Stderr, "llmdouble:", err)
			os.Exit(1)
		}
	}

	s, err := llmdouble.NewListener(*listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "llmdouble:", err)
		os.Exit(1)
	}
	if *admin {
		s.EnableAdmin()
	}
	// The first line of stdout is the base URL, for scripts to read.
	fmt.Println(s.URL())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	s.Close()
}

// serveGit starts the git double in the background; a listener that fails
// later ends the process, so a broken upstream is seen, not waited on.
func serveGit(addr, cert, key, user, tokenFile string) error {
	raw, err := os.ReadFile(tokenFile)
	if err != nil {
		return fmt.Errorf("git token: %w", err)
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return errors.New("git token file is empty")
	}
	s, err := gitdouble.DefaultServer(user, token)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		err := srv.ListenAndServeTLS(cert, key)
		fmt.Fprintln(os.Stderr, "llmdouble: git:", err)
		os.Exit(1)
	}()
	return nil
}
