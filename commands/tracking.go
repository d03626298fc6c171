package commands

import (
	"strings"

	"github.com/fenced/fenced/reply"
)

// CLIENT TRACKING and CLIENT CACHING, parsed in Redis 7.0's order of checks
// (networking.c, clientCommand): the options left to right, each refused
// as it comes (a REDIRECT to a client that does not exist before a later
// syntax error), then ON or OFF. What depends on the connection's current
// mode (switching BCAST, OPTIN or OPTOUT, overlapping prefixes) is the
// server's to check, with TrackingConflict and PrefixOverlap.

// Redis's texts for CLIENT TRACKING and CLIENT CACHING.
var (
	ErrRedirectTwice   = reply.NewErr("ERR", "A client can only redirect to a single other client")
	ErrRedirectMissing = reply.NewErr("ERR", "The client ID you want redirect to does not exist")
	ErrPrefixNoBcast   = reply.NewErr("ERR", "PREFIX option requires BCAST mode to be enabled")
	ErrSwitchBcast     = reply.NewErr("ERR", "You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	ErrOptBcast        = reply.NewErr("ERR", "OPTIN and OPTOUT are not compatible with BCAST")
	ErrOptBoth         = reply.NewErr("ERR", "You can't specify both OPTIN mode and OPTOUT mode")
	ErrSwitchOpt       = reply.NewErr("ERR", "You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	ErrCachingOff      = reply.NewErr("ERR", "CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	ErrCachingYes      = reply.NewErr("ERR", "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	ErrCachingNo       = reply.NewErr("ERR", "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
	// ErrTooManyPrefixes is fenced's: Redis takes any number, and checks
	// them against each other in quadratic time.
	ErrTooManyPrefixes = reply.NewErr("ERR", "too many tracking prefixes for one client (at most 1024, 1 MiB in all)")
)

// Bounds on one connection's BCAST prefixes.
const (
	MaxTrackingPrefixes    = 1024
	MaxTrackingPrefixBytes = 1 << 20
)

// TrackingMode is the mode of CLIENT TRACKING ON.
type TrackingMode struct {
	BCast, OptIn, OptOut, NoLoop bool
}

// ClientTracking is a parsed CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST]
// [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP].
type ClientTracking struct {
	On       bool
	Redirect int64 // 0: none
	Mode     TrackingMode
	Prefixes []string // in the order given, repeats included
}

// ParseClientTracking parses args (CLIENT TRACKING ...; at least three).
// exists reports whether a client id names a connection of this node:
// Redis refuses a REDIRECT to an unknown client as it meets the option.
func ParseClientTracking(args [][]byte, exists func(id int64) bool) (ClientTracking, error) {
	var r ClientTracking
	size := 0
	for j := 3; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "redirect" && more > 0:
			j++
			if r.Redirect != 0 {
				return r, ErrRedirectTwice
			}
			id, err := ParseInt(args[j])
			if err != nil {
				return r, ErrNotInteger
			}
			if id == 0 || !exists(id) {
				return r, ErrRedirectMissing
			}
			r.Redirect = id
		case opt == "bcast":
			r.Mode.BCast = true
		case opt == "optin":
			r.Mode.OptIn = true
		case opt == "optout":
			r.Mode.OptOut = true
		case opt == "noloop":
			r.Mode.NoLoop = true
		case opt == "prefix" && more > 0:
			j++
			size += len(args[j])
			if len(r.Prefixes) == MaxTrackingPrefixes || size > MaxTrackingPrefixBytes {
				return r, ErrTooManyPrefixes
			}
			r.Prefixes = append(r.Prefixes, string(args[j]))
		default:
			return r, ErrSyntax
		}
	}
	switch strings.ToLower(string(args[2])) {
	case "on":
		r.On = true
	case "off":
	default:
		return r, ErrSyntax
	}
	return r, nil
}

// TrackingConflict checks CLIENT TRACKING ON's options against each other
// and against the connection's current mode (on: tracking is on, in mode
// cur), in Redis's order.
func (r ClientTracking) TrackingConflict(on bool, cur TrackingMode) error {
	m := r.Mode
	switch {
	case !m.BCast && len(r.Prefixes) > 0:
		return ErrPrefixNoBcast
	case on && cur.BCast != m.BCast:
		return ErrSwitchBcast
	case m.BCast && (m.OptIn || m.OptOut):
		return ErrOptBcast
	case m.OptIn && m.OptOut:
		return ErrOptBoth
	case on && (m.OptIn && cur.OptOut || m.OptOut && cur.OptIn):
		return ErrSwitchOpt
	}
	return nil
}

// PrefixOverlap checks BCAST prefixes as Redis does: a new prefix may not
// be a prefix of, or start with, one the connection has (have, in Redis's
// order: sorted) or another new one. The first new prefix in the order
// given that overlaps is named.
func PrefixOverlap(have, add []string) error {
	overlap := func(a, b string) bool {
		n := min(len(a), len(b))
		return a[:n] == b[:n]
	}
	for i, p := range add {
		for _, h := range have {
			if overlap(h, p) {
				return reply.NewErr("ERR", "Prefix '"+Clip([]byte(p))+"' overlaps with an existing prefix '"+Clip([]byte(h))+"'. Prefixes for a single client must not overlap.")
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return reply.NewErr("ERR", "Prefix '"+Clip([]byte(p))+"' overlaps with another provided prefix '"+Clip([]byte(q))+"'. Prefixes for a single client must not overlap.")
			}
		}
	}
	return nil
}

// ParseClientCaching parses CLIENT CACHING YES|NO (Redis ignores what
// follows): yes for YES. tracking and the mode are the connection's.
func ParseClientCaching(args [][]byte, tracking bool, mode TrackingMode) (yes bool, err error) {
	if !tracking {
		return false, ErrCachingOff
	}
	switch strings.ToLower(string(args[2])) {
	case "yes":
		if !mode.OptIn {
			return false, ErrCachingYes
		}
		return true, nil
	case "no":
		if !mode.OptOut {
			return false, ErrCachingNo
		}
		return false, nil
	}
	return false, ErrSyntax
}
