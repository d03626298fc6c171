package main

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// etcdLock is etcd's lock recipe as a user would run it: one client (given
// all endpoints, so RPCs spread over the members) and one session (a lease
// kept alive in the background) per worker, and concurrency.Mutex. An
// uncontended Lock is one Txn and Unlock one Delete: two Raft writes a cycle.
type etcdLock struct {
	cli     *clientv3.Client
	sess    *concurrency.Session
	mu      *concurrency.Mutex
	timeout time.Duration // per Lock; a waiting Lock gets longer
}

// etcdMutex returns the factory of the Mutex path. Lock always waits, so
// timeout bounds each Lock: the plain operation timeout uncontended, plus
// the allowed wait when contended, short during failover.
func etcdMutex(endpoints []string, timeout time.Duration) lockerFactory {
	return func(ctx context.Context, i int, key string) (locker, error) {
		cli, err := newEtcdClient(endpoints)
		if err != nil {
			return nil, err
		}
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
		if err != nil {
			cli.Close()
			return nil, fmt.Errorf("etcd session: %w", err)
		}
		return &etcdLock{cli: cli, sess: sess, mu: concurrency.NewMutex(sess, "/bench/"+key), timeout: timeout}, nil
	}
}

// Acquire is Mutex.Lock. Its token is the revision of the response that
// granted the lock (Header().Revision), which increases in grant order.
func (l *etcdLock) Acquire(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if err := l.mu.Lock(ctx); err != nil {
		return 0, fmt.Errorf("Mutex.Lock: %w", err)
	}
	return l.mu.Header().Revision, nil
}

func (l *etcdLock) Release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := l.mu.Unlock(ctx); err != nil {
		return fmt.Errorf("Mutex.Unlock: %w", err)
	}
	return nil
}

func (l *etcdLock) Close() error {
	err := l.sess.Close() // revokes the lease, so no key outlives the step
	l.cli.Close()
	return err
}
