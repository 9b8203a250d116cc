//go:build unix

package jail

import (
	"os"
	"syscall"
)

// readFlags opens without blocking, so a FIFO planted where a file was
// expected cannot hang the call before it is refused as not regular.
// O_NONBLOCK has no effect on reads from regular files.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK
