//go:build !plant

package plant

// On reports whether bug b is planted: never, in a normal build.
func On(Bug) bool { return false }

// WallNow is the wall clock a planted bug reads; unused in a normal build.
func WallNow() int64 { return 0 }
