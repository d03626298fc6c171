// Package redsyncdoc is the example of docs/redsync.md: everything below the
// imports is the page's Go block, character for character
// (test/docs_test.go checks it, and runs UpdateOrders against a cluster).
package redsyncdoc

import (
	"context"
	"errors"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// ErrLockLost: the lock expired before its token was read (the holder paused
// past its expiry) and may be someone else's now.
var ErrLockLost = errors.New("lock lost")

// UpdateOrders calls write with the fencing token of one acquisition of the
// lock "orders". client is one fenced node, any of them:
// redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}).
func UpdateOrders(ctx context.Context, client *redis.Client, write func(token int64) error) error {
	rs := redsync.New(goredis.NewPool(client)) // one pool, not one per node
	m := rs.NewMutex("orders", redsync.WithExpiry(10*time.Second))
	if err := m.LockContext(ctx); err != nil {
		return err
	}
	defer m.UnlockContext(ctx)
	// FENCE key IFEQ value answers only while the key still holds m.Value():
	// null (redis.Nil) once it expired, never a successor's token.
	token, err := client.Do(ctx, "FENCE", "orders", "IFEQ", m.Value()).Int64()
	if errors.Is(err, redis.Nil) {
		return ErrLockLost // do not write
	} else if err != nil {
		return err
	}
	// The storage rejects a token lower than the highest it has seen.
	if err := write(token); err != nil {
		return err
	}
	if _, err := m.ExtendContext(ctx); err != nil { // extending keeps the token
		return err
	}
	return write(token)
}
