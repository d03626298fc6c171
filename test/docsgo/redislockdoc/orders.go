// Package redislockdoc is the example of docs/redislock.md: everything below
// the imports is the page's Go block, character for character
// (test/docs_test.go checks it, and runs UpdateOrders against a cluster).
package redislockdoc

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

var (
	ErrBusy     = errors.New("orders is locked by another holder")
	ErrLockLost = errors.New("lock lost") // expired before its token was read
)

// UpdateOrders calls write with the fencing token of one acquisition of the
// lock "orders". client is one fenced node, any of them:
// redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}).
func UpdateOrders(ctx context.Context, client *redis.Client, write func(token int64) error) error {
	locker := redislock.New(client)
	lock, err := locker.Obtain(ctx, "orders", 10*time.Second,
		&redislock.Options{RetryStrategy: redislock.LinearBackoff(50 * time.Millisecond)})
	if errors.Is(err, redislock.ErrNotObtained) { // not ==: v0.10 joins ctx.Err() to it
		return ErrBusy
	} else if err != nil {
		return err
	}
	defer lock.Release(ctx)
	// lock.Token() is the random value redislock stored: FENCE key IFEQ value
	// answers null (redis.Nil) once the key expired, never a successor's token.
	token, err := client.Do(ctx, "FENCE", "orders", "IFEQ", lock.Token()).Int64()
	if errors.Is(err, redis.Nil) {
		return ErrLockLost // do not write
	} else if err != nil {
		return err
	}
	// The storage rejects a token lower than the highest it has seen.
	if err := write(token); err != nil {
		return err
	}
	if err := lock.Refresh(ctx, 10*time.Second, nil); err != nil { // keeps the token
		return err
	}
	return write(token)
}
