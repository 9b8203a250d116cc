//go:build !unix

package jail

import "os"

const readFlags = os.O_RDONLY
