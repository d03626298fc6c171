//go:build plant

package plant

import (
	"os"
	"time"
)

// On reports whether bug b is planted: FENCED_PLANT names it.
func On(b Bug) bool { return os.Getenv("FENCED_PLANT") == string(b) }

// WallNow is this process's wall clock in unix ms, which WallClockExpiry
// puts where the entry's time belongs.
func WallNow() int64 { return time.Now().UnixMilli() }
