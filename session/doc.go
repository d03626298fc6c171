// Package session is the leader's side of sessions. It owns:
//
//   - the cluster clock (Clock), which stamps every proposed entry with the
//     time that sessions' TTLs, lock waits and key expiries are measured in;
//   - the ticker (Ticker), which proposes a tick entry once the state
//     machine's earliest deadline has passed on that clock, so that expiries
//     and wait timeouts happen without a client's command;
//   - the policy of new sessions: their ids (NewID: random, drawn by the
//     proposing node) and the bounds of their TTLs (TTLBounds).
//
// Nothing here decides an expiry: the state machine (lockstate) does, from
// the time in the entry it applies, so every replica decides alike. This
// package only chooses what to propose and when. The session commands'
// RESP handling stays in package server.
package session
