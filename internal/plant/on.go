//go:build plant

package plant

import "os"

// On reports whether bug b is planted: FENCED_PLANT names it.
func On(b Bug) bool { return os.Getenv("FENCED_PLANT") == string(b) }
