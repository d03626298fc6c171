// Package fencing is the resource side of a fencing token: the check a store
// of data makes before it accepts a write, so that a lock holder whose lock
// has moved on without its knowing (a GC pause, a VM migration, a network
// cut) can no longer change the data. The lock side is fenced's FLOCK; this
// package owns what the protected resource does with the token.
//
// A fencing token is an int64 > 0 handed out with each grant of a lock
// (fenced: the Raft log index of the entry that granted it), strictly
// increasing across the successive holders of that lock. The resource
// records, per resource name, the highest token it has seen and refuses a
// write that carries a lower one. A token equal to the highest is accepted:
// one holder writes many times under one grant, and a grant's token is never
// given to another holder, so equal means "the current holder". A token
// <= 0 is never valid ([ErrInvalidToken]).
//
// # SQL
//
// [Guard] does the check inside the caller's own transaction, on a table
// whose DDL it gives ([PostgreSQLDDL], [SQLiteDDL], [Guard.DDL]):
//
//	BEGIN
//	guard.Check(ctx, tx, resource, token)  -- refuses a lower token: ErrStaleToken
//	your write
//	COMMIT                                  -- or ROLLBACK on any error
//
// Check is one statement, an upsert that replaces the recorded token only if
// it is not higher than the new one (INSERT … ON CONFLICT (resource) DO
// UPDATE … WHERE recorded <= new) and counts the rows it changed: none means
// stale. It is race-free under concurrent transactions because the upsert
// locks the resource's row, also when its WHERE refuses the update, until the
// transaction ends. In PostgreSQL's READ COMMITTED, a second transaction's
// upsert on the same resource waits for that lock and then re-reads the
// latest committed row, so holders are serialised per resource in token
// order: the later holder's write starts after the earlier one committed or
// rolled back, and a stale holder finds the higher token and is refused.
// Because the token and your write commit or roll back together, a refused
// transaction leaves nothing behind, and a transaction that rolls back for
// any other reason does not record its token. Call Check before your write,
// so that the row lock orders the writes too. Under REPEATABLE READ or
// SERIALIZABLE, a concurrent holder's committed token makes the upsert fail
// with a serialization error instead (SQLSTATE 40001): retry the transaction,
// and Check then answers ErrStaleToken. SQLite serialises writing
// transactions anyway; it needs 3.24 or later for the upsert.
//
// # HTTP
//
// [Middleware] reads the Fencing-Token header ([Header]) and answers
// 409 Conflict to a token lower than the highest seen for the request's
// resource (by default its URL path), 400 Bad Request to a missing or
// malformed one, and passes the rest to the handler. The highest tokens live
// in a [Store]: [MemoryStore] in this process, or [SQLStore] in a table
// through a Guard.
//
// # Stores without a conditional write
//
// A fence is only as good as the store's ability to compare and write in one
// atomic step. A store that has no conditional write (a plain object store
// PUT, a file on a shared disk, an email) cannot be fenced: a check made
// before the write can always be overtaken by a newer holder's write between
// the check and the write. Route the writes through something that can fence
// (a database row guarded here, a service behind Middleware that owns the
// store), or use the store's own compare-and-set: keep the highest token
// next to the data and write only if it is still what you compared against
// (a DynamoDB condition expression, an etcd transaction on the key's value,
// an object store's If-Match on the ETag of the version you read).
package fencing
