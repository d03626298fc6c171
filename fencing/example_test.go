package fencing_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fenced/fenced/fencing"
)

// The code blocks of docs/fencing.md are cut from this file
// (TestDocsMatchExamples), so the page cannot drift from the API.

// setBalance is a lock holder's write: the token is checked in the same
// transaction as the write, so the two commit or roll back together.
func setBalance(ctx context.Context, db *sql.DB, guard *fencing.Guard, account string, balance, token int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	// First, so that the row lock it takes also orders the writes.
	if err := guard.Check(ctx, tx, "account/"+account, token); err != nil {
		return err // errors.Is(err, fencing.ErrStaleToken): a newer holder has written
	}
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = $1 WHERE id = $2", balance, account); err != nil {
		return err
	}
	return tx.Commit()
}

// newGuard creates the guard and its table at start-up.
func newGuard(ctx context.Context, db *sql.DB, dialect fencing.Dialect) (*fencing.Guard, error) {
	guard, err := fencing.NewGuard(dialect, "fencing_tokens")
	if err != nil {
		return nil, err
	}
	// Or run fencing.PostgreSQLDDL / fencing.SQLiteDDL with your migrations.
	if _, err := db.ExecContext(ctx, guard.DDL()); err != nil {
		return nil, err
	}
	return guard, nil
}

// Two holders of one lock write in turn: token 34's holder took the lock
// over while token 33's holder was paused; 33 wakes up and tries to write.
// The example runs on SQLite; on PostgreSQL only the dialect changes.
func ExampleGuard() {
	dir, _ := os.MkdirTemp("", "fencing-example-")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "bank.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	ctx := context.Background()
	db.ExecContext(ctx, "CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER)")
	db.ExecContext(ctx, "INSERT INTO accounts VALUES ('1', 0)")

	guard, err := newGuard(ctx, db, fencing.SQLite)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(setBalance(ctx, db, guard, "1", 100, 34)) // the new holder
	fmt.Println(setBalance(ctx, db, guard, "1", 50, 33))  // the old one, awake again
	fmt.Println(setBalance(ctx, db, guard, "1", 120, 34)) // the new holder again
	var balance int64
	db.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = '1'").Scan(&balance)
	fmt.Println("balance", balance)
	// Output:
	// <nil>
	// fencing: stale token 33 for "account/1" (highest seen 34)
	// <nil>
	// balance 120
}

// putFile stands for a handler that writes the resource named by its path.
func putFile(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "stored "+r.URL.Path+"\n")
}

// newServer fences the file handlers by the Fencing-Token header.
func newServer(store fencing.Store) http.Handler {
	mux := http.NewServeMux()
	fence := fencing.Middleware(store) // the resource is the URL path
	mux.Handle("PUT /files/", fence(http.HandlerFunc(putFile)))
	return mux
}

// put is a lock holder's request: the token travels in the header.
func put(ctx context.Context, url string, token int64, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(fencing.Header, strconv.FormatInt(token, 10))
	return http.DefaultClient.Do(req)
}

func ExampleMiddleware() {
	// In memory; fencing.NewSQLStore(db, guard) keeps the tokens across restarts.
	srv := httptest.NewServer(newServer(new(fencing.MemoryStore)))
	defer srv.Close()
	for _, token := range []int64{34, 33, 34, 35} {
		resp, err := put(context.Background(), srv.URL+"/files/report.csv", token, strings.NewReader("rows"))
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %d %s", token, resp.StatusCode, body)
	}
	// Output:
	// 34 200 stored /files/report.csv
	// 33 409 fencing: stale token 33 for "/files/report.csv" (highest seen 34)
	// 34 200 stored /files/report.csv
	// 35 200 stored /files/report.csv
}
