// Package client is fenced's Go client: sessions that keep themselves
// alive, and fenced mutexes on top of them.
//
//	c, err := client.Dial(ctx, "10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379", nil)
//	s, err := c.NewSession(ctx, client.WithTTL(10*time.Second))
//	m := s.Mutex("orders")
//	tok, err := m.Lock(ctx)      // waits in the server's FIFO queue until ctx ends
//	work := m.Context(ctx)       // cancelled when the lock is lost
//	...                          // write to storage with tok (package fencing)
//	err = m.Unlock(ctx)
//
// # What it takes care of
//
// A correct lock over go-redis needs more than FLOCK and FUNLOCK; this
// package does the rest so that each call takes effect exactly once:
//
//   - Every FLOCK and FUNLOCK carries a request id (REQ) and is re-sent
//     with the same id on -TRYAGAIN, -CLUSTERDOWN, -UNCERTAIN, a broken
//     connection or a timed-out attempt. The server answers a repeated id
//     with its first result, so a lost reply never becomes a second hold,
//     and a repeated waiting FLOCK takes back its place in the queue.
//   - go-redis is configured by the package (see New): reads are bounded
//     by the call's context, never by a fixed read timeout that would cut
//     a long server-side wait short, and go-redis itself re-sends nothing.
//   - A Session heartbeats every TTL/3. Its Done channel closes when the
//     server says the session is gone (-NOSESSION, SESSION.KILL, expiry)
//     and also when no heartbeat has been answered for a whole TTL, since
//     by then the server may have expired it: the client gives up its
//     locks no later than the server does.
//   - Unlock sends the ownership's token (FUNLOCK ... FENCE tok), so a late
//     or repeated release can never release a newer ownership.
//
// # Tokens
//
// The token a Lock returns is the Raft log index of the grant: larger for
// every later ownership of the lock, across leader changes. Send it with
// every write to the resource the lock protects, and have the resource
// refuse a token lower than the highest it has seen (package fencing does
// this for SQL databases and HTTP services). A holder that was paused past
// its session's TTL then cannot overwrite its successor's work, whatever
// it believes.
//
// # Endpoints
//
// Dial takes one address or a comma-separated list of the cluster's nodes:
// any node serves any request, and on a broken connection the client moves
// to the next address. A node started with --redirect answers -MOVED; the
// client follows it. New wraps an existing go-redis client instead, a
// *redis.Client or a *redis.ClusterClient (for --redirect clusters).
package client
