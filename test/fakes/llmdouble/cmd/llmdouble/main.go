// Command llmdouble runs the LLM test double as a standalone process in echo
// mode, for benchmarks and the conformance suite: point a provider's base URL
// at it (OpenAI-compatible: <url>/v1, Anthropic: <url>).
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
	flag.Parse()

	s, err := llmdouble.NewListener(*listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "llmdouble:", err)
		os.Exit(1)
	}
	// The first line of stdout is the base URL, for scripts to read.
	fmt.Println(s.URL())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	s.Close()
}
