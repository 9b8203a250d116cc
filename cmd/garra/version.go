package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set by the linker: -ldflags "-X main.version=v0.1.0 -X main.commit=abc".
var (
	version = "dev"
	commit  = ""
)

func buildCommit() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "garra %s (commit %s, %s %s/%s)\n",
				version, buildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
