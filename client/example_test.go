package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/fenced/fenced/client"
)

// A lock held under a session: the token goes with every write to the
// resource the lock protects, and the work runs under m.Context, which is
// cancelled if the lock is lost.
func Example() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, nil) // or "host1:6379,host2:6379,host3:6379"
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	s, err := c.NewSession(ctx, client.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)

	m := s.Mutex("example-orders")
	tok, err := m.Lock(ctx) // waits in the server's FIFO queue until ctx ends
	if err != nil {
		log.Fatal(err)
	}
	work := m.Context(ctx)
	fmt.Println("token > 0:", tok > 0, "working:", work.Err() == nil)
	// ... write to storage with tok (package fencing refuses older tokens)

	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after Unlock:", context.Cause(work))
	// Output:
	// token > 0: true working: true
	// after Unlock: client: lock released
}

// TryLock does not wait: another owner's hold is ErrNotObtained.
func ExampleMutex_TryLock() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	a, _ := c.NewSession(ctx)
	defer a.Close(ctx)
	b, _ := c.NewSession(ctx)
	defer b.Close(ctx)

	if _, err := a.Mutex("example-report").TryLock(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = b.Mutex("example-report").TryLock(ctx)
	fmt.Println(errors.Is(err, client.ErrNotObtained))
	// Output: true
}

// Lock with a deadline waits at most that long, in FIFO order.
func ExampleMutex_Lock_timeout() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	a, _ := c.NewSession(ctx)
	defer a.Close(ctx)
	b, _ := c.NewSession(ctx)
	defer b.Close(ctx)

	if _, err := a.Mutex("example-batch").Lock(ctx); err != nil {
		log.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = b.Mutex("example-batch").Lock(wctx)
	fmt.Println(errors.Is(err, client.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

// Done is closed when the session is lost: killed, expired, or not
// renewed for a whole TTL. The holder learns it without asking.
func ExampleSession_Done() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession(ctx, client.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	m := s.Mutex("example-lease")
	if _, err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	work := m.Context(ctx)

	// An operator (or the session's expiry) ends the session.
	if err := killSession(ctx, s.ID()); err != nil {
		log.Fatal(err)
	}

	<-s.Done()
	<-work.Done()
	fmt.Println(errors.Is(s.Err(), client.ErrSessionLost), errors.Is(context.Cause(work), client.ErrSessionLost))
	// Output: true true
}
