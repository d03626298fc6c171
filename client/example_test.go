package client_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/fenced/fenced/client"
	"github.com/fenced/fenced/fencing"
	_ "github.com/ncruces/go-sqlite3/driver" // SQLite in pure Go, for the examples
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

// sellApple is the README's first Go example: a lock from fenced, and its
// token checked by the database in the same transaction as the write it
// guards (package fencing). A holder that was paused while its lock moved
// on gets fencing.ErrStaleToken instead of overwriting its successor.
func sellApple(ctx context.Context, s *client.Session, db *sql.DB, guard *fencing.Guard) error {
	m := s.Mutex("stock/apples")
	tok, err := m.Lock(ctx) // waits in line (FIFO) until granted or ctx ends
	if err != nil {
		return err
	}
	defer m.Unlock(ctx)

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := guard.Check(ctx, tx, "stock/apples", tok); err != nil {
		return err // fencing.ErrStaleToken: a newer holder has written
	}
	if _, err := tx.ExecContext(ctx, "UPDATE stock SET n = n - 1 WHERE item = 'apples'"); err != nil {
		return err
	}
	return tx.Commit()
}

func Example_fencedWrite() {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(tmpDir, "shop.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	guard, err := fencing.NewGuard(fencing.SQLite, "fencing_tokens") // or fencing.PostgreSQL
	if err != nil {
		log.Fatal(err)
	}
	for _, ddl := range []string{guard.DDL(), "CREATE TABLE stock (item TEXT PRIMARY KEY, n INT)", "INSERT INTO stock VALUES ('apples', 10)"} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			log.Fatal(err)
		}
	}

	c, err := client.Dial(ctx, addr, nil) // or "host1:6379,host2:6379,host3:6379"
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession(ctx) // heartbeats every TTL/3 until s.Close
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)

	if err := sellApple(ctx, s, db, guard); err != nil {
		log.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT n FROM stock WHERE item = 'apples'").Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("apples left:", n)
	// Output: apples left: 9
}
