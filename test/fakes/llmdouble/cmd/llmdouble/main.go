// Command llmdouble runs the LLM test double as a standalone process in echo
// mode, for benchmarks, the conformance suite and the end-to-end cluster
// suite: point a provider's base URL at it (OpenAI-compatible: <url>/v1,
// Anthropic: <url>). With -admin, a test scripts it over HTTP (see the
// package's admin.go); the e2e image runs it that way inside the cluster.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "host:port to listen on")
	admin := flag.Bool("admin", false, "serve the /_double/ control API (script, requests, healthz)")
	flag.Parse()

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
