// Package plant switches on, one at a time, real-world bugs that the fault
// tests (test/chaos_*) and the security tests (test/auth_test.go) must
// detect: their checkers are only evidence if they catch these. A normal
// build has none of them: On is a constant false there and the compiler
// drops every planted branch. A binary built with -tags plant reads the
// bug to plant from the FENCED_PLANT variable of its environment.
package plant

// Bug names one planted bug.
type Bug string

// The planted bugs (see DESIGN.md, Fault tests and planted bugs).
const (
	// StaleRead serves reads without confirming leadership: a deposed
	// leader answers from its old state.
	StaleRead Bug = "stale-read"
	// WaiterSession grants a lock to a queued waiter without checking that
	// its session is still live.
	WaiterSession Bug = "waiter-session"
	// MemoryTokens takes tokens from a counter held in memory, which
	// starts again from 1 when a node restarts, instead of the log index.
	MemoryTokens Bug = "memory-tokens"
	// LostIsFailure reports a proposal whose leadership was lost after it
	// was sent as a definite failure (-TRYAGAIN) instead of -UNCERTAIN.
	LostIsFailure Bug = "lost-is-failure"
	// NoAppliedIndex does not persist the applied index, so a restart
	// applies the log entries in the state again.
	NoAppliedIndex Bug = "no-applied-index"
	// NoDedup ignores REQ ids: a retried request acts twice.
	NoDedup Bug = "no-dedup"
	// DoubleGrant hands a released lock to its next waiter at once, in the
	// middle of the entry, instead of once at the entry's end: an entry that
	// frees a lock twice (the holder expires, then the entry's own op ends
	// the new holder) grants it twice with the same token (see DESIGN.md,
	// Sessions, waits and handoff).
	DoubleGrant Bug = "double-grant"
	// WallClockExpiry decides expiry by each node's wall clock instead of
	// the time in the log entry.
	WallClockExpiry Bug = "wall-clock-expiry"
	// AuthSkipped lets every command through the dispatcher's NOAUTH gate:
	// a connection that never authenticated runs anything while a password
	// is set (test/auth_test.go catches it).
	AuthSkipped Bug = "auth-skipped"
	// VersionLie announces a cluster version one above what the binary
	// knows, so the version gate opens while a member still cannot follow
	// (test/upgrade_test.go catches it).
	VersionLie Bug = "version-lie"
)

// The planted security bugs, which the attack tests (test/peer_test.go)
// must catch. The fault tests' checkers do not look for them.
const (
	// PeerUnverified accepts any client certificate on the peer channel
	// without checking that it chains to the cluster's CA.
	PeerUnverified Bug = "peer-unverified"
	// AdminSkipped lets any authenticated user run admin commands: the ACL
	// check of the @admin category is skipped.
	AdminSkipped Bug = "admin-skipped"
	// OwnershipIgnored lets any user use any session whose id it presents.
	OwnershipIgnored Bug = "ownership-ignored"
	// WatchesDropped loses a transaction's WATCHed keys on the way to the
	// state machine (as a slip in forwarding or in the entry's encoding
	// would): EXEC never aborts, and check-and-set loses increments.
	WatchesDropped Bug = "watches-dropped"
	// FcallROLocal serves FCALL_RO on any node from what that node has
	// applied, as Redis lets a replica serve it, without the leader's read
	// barrier: a follower cut off or behind answers with old values.
	FcallROLocal Bug = "fcall-ro-local"
)

// All lists every planted bug.
func All() []Bug {
	return []Bug{StaleRead, WaiterSession, MemoryTokens, LostIsFailure, NoAppliedIndex, NoDedup, WallClockExpiry, DoubleGrant, AuthSkipped, VersionLie, PeerUnverified, AdminSkipped, OwnershipIgnored, WatchesDropped, FcallROLocal}
}
