// Command garra is Garra's single binary: the stdio MCP server for laptops,
// the HTTP gateway the operator deploys, the per-orchestrator sandbox, and a
// few commands for people at a shell.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/garraia/garra/internal/procguard"
)

func main() {
	// Before any secret is read or any child started: no child may read
	// this process's environment, descriptors or memory, and orphans of
	// the commands its tools run come back here to be killed (see
	// procguard). Failing that, nothing runs.
	if err := guardProcess(); err != nil {
		fmt.Fprintln(os.Stderr, "garra:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(os.Getenv).ExecuteContext(ctx)
	stop()
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(os.Stderr, "garra:", ee.msg)
			}
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "garra:", err)
		os.Exit(1)
	}
}

// guardProcess makes this process non-dumpable and a child subreaper.
// Every subcommand gets both: those that hold no secret and start no
// child lose nothing by it.
func guardProcess() error {
	if err := procguard.Harden(); err != nil {
		return err
	}
	return procguard.BecomeSubreaper()
}

// exitError ends the process with a specific code: 2 for usage errors, as
// shells expect.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageError(format string, a ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, a...)}
}
