//go:build !unix

package tools

import "os"

func signalOf(*os.ProcessState) (int, bool) { return 0, false }
