package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced/fencing"
	"github.com/lib/pq"
)

// Both kinds of handle the brief names fit the guard.
var (
	_ fencing.Tx = (*sql.Tx)(nil)
	_ fencing.Tx = (*sql.Conn)(nil)
)

// write runs BEGIN; Check; then the caller's write; COMMIT (ROLLBACK on
// any error), the usage pattern of the package doc.
func write(ctx context.Context, tg target, g *fencing.Guard, resource string, token int64, body func(*sql.Tx) error) error {
	tx, err := tg.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := g.Check(ctx, tx, resource, token); err != nil {
		return err
	}
	if body != nil {
		if err := body(tx); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func TestGuardDDL(t *testing.T) {
	for _, c := range []struct {
		d    fencing.Dialect
		want string
	}{{fencing.PostgreSQL, fencing.PostgreSQLDDL}, {fencing.SQLite, fencing.SQLiteDDL}} {
		g, err := fencing.NewGuard(c.d, "")
		if err != nil {
			t.Fatal(err)
		}
		if g.Table() != fencing.DefaultTable || g.DDL() != c.want {
			t.Errorf("%v: default guard has table %q and DDL\n%s\nwant %q and the constant\n%s", c.d, g.Table(), g.DDL(), fencing.DefaultTable, c.want)
		}
		g, err = fencing.NewGuard(c.d, "Locks_2")
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Replace(c.want, "fencing_tokens", "Locks_2", 1); g.DDL() != want || strings.Contains(g.DDL(), "fencing_tokens") {
			t.Errorf("%v: DDL for table Locks_2:\n%s", c.d, g.DDL())
		}
	}
	// The constants create working tables, twice (IF NOT EXISTS), with the
	// token > 0 constraint.
	eachDialect(t, func(t *testing.T, tg target) {
		g := tg.newGuard(t)
		tg.exec(t, g.DDL())
		if _, err := tg.db.Exec(tg.q("INSERT INTO "+g.Table()+" (resource, token) VALUES ($1, $2)"), "r", 0); err == nil {
			t.Error("the table accepted token 0")
		}
	})
}

func TestGuardRefusesBadTableNames(t *testing.T) {
	for _, name := range []string{
		"fencing_tokens; DROP TABLE accounts", "fencing_tokens --", `"quoted"`, "a.b", "public.fencing_tokens",
		"a-b", "a b", "1abc", "tökens", "a\x00b", strings.Repeat("a", 64),
	} {
		for _, d := range []fencing.Dialect{fencing.PostgreSQL, fencing.SQLite} {
			g, err := fencing.NewGuard(d, name)
			if !errors.Is(err, fencing.ErrInvalidTable) || g != nil {
				t.Errorf("NewGuard(%v, %q) = %v, %v; want ErrInvalidTable", d, name, g, err)
			}
		}
	}
	for _, name := range []string{"t", "_t", "Tokens_2", strings.Repeat("a", 63)} {
		if _, err := fencing.NewGuard(fencing.PostgreSQL, name); err != nil {
			t.Errorf("NewGuard(%q): %v", name, err)
		}
	}
	for _, d := range []fencing.Dialect{0, 3, -1} {
		if _, err := fencing.NewGuard(d, ""); !errors.Is(err, fencing.ErrInvalidDialect) {
			t.Errorf("NewGuard(%v): %v, want ErrInvalidDialect", d, err)
		}
	}
}

// TestGuardSemantics: first and equal tokens accepted, a lower one refused
// with ErrStaleToken (carrying the highest) and the caller's write in that
// transaction not visible, a higher one accepted, resources independent,
// tokens <= 0 refused before any statement, and a transaction that rolls
// back records nothing.
func TestGuardSemantics(t *testing.T) {
	eachDialect(t, func(t *testing.T, tg target) {
		ctx := context.Background()
		g := tg.newGuard(t)
		data := uniqueName(t, "data")
		tg.exec(t, "CREATE TABLE "+data+" (id TEXT PRIMARY KEY, v TEXT NOT NULL)")
		tg.exec(t, "INSERT INTO "+data+" (id, v) VALUES ('doc', 'initial')")
		set := func(v string) func(*sql.Tx) error {
			return func(tx *sql.Tx) error {
				_, err := tx.Exec(tg.q("UPDATE "+data+" SET v = $1 WHERE id = 'doc'"), v)
				return err
			}
		}
		value := func() string {
			var v string
			if err := tg.db.QueryRow("SELECT v FROM " + data + " WHERE id = 'doc'").Scan(&v); err != nil {
				t.Fatal(err)
			}
			return v
		}

		if err := write(ctx, tg, g, "doc", 33, set("by 33")); err != nil {
			t.Fatalf("first token: %v", err)
		}
		if err := write(ctx, tg, g, "doc", 33, set("by 33 again")); err != nil {
			t.Fatalf("equal token (same holder writing again): %v", err)
		}
		if err := write(ctx, tg, g, "doc", 34, set("by 34")); err != nil {
			t.Fatalf("higher token: %v", err)
		}

		// The paused holder, token 33, writes first and checks after (the
		// wrong order, to see its write go with the refusal).
		tx, err := tg.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := set("by stale 33")(tx); err != nil {
			t.Fatal(err)
		}
		err = g.Check(ctx, tx, "doc", 33)
		var stale *fencing.StaleTokenError
		if !errors.Is(err, fencing.ErrStaleToken) || !errors.As(err, &stale) {
			t.Fatalf("lower token: %v, want ErrStaleToken", err)
		}
		if *stale != (fencing.StaleTokenError{Resource: "doc", Token: 33, Highest: 34}) {
			t.Errorf("stale error = %+v", *stale)
		}
		if want := `fencing: stale token 33 for "doc" (highest seen 34)`; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if v := value(); v != "by 34" {
			t.Errorf("after the refused transaction the row holds %q, want %q", v, "by 34")
		}
		// The usual order: the refusal comes first and nothing is written.
		if err := write(ctx, tg, g, "doc", 1, set("by stale 1")); !errors.Is(err, fencing.ErrStaleToken) {
			t.Errorf("token 1 after 34: %v", err)
		}
		if v, h := value(), tg.recorded(t, g, "doc"); v != "by 34" || h != 34 {
			t.Errorf("after refusals: row %q, recorded %d; want %q, 34", v, h, "by 34")
		}

		// Another resource has its own highest.
		if err := write(ctx, tg, g, "other", 2, nil); err != nil {
			t.Errorf("token 2 on another resource: %v", err)
		}
		if err := write(ctx, tg, g, "other", 1, nil); !errors.Is(err, fencing.ErrStaleToken) {
			t.Errorf("token 1 after 2 on the other resource: %v", err)
		}

		// Tokens no grant gives.
		for _, tok := range []int64{0, -1, -1 << 63} {
			err := write(ctx, tg, g, "fresh", tok, nil)
			if !errors.Is(err, fencing.ErrInvalidToken) || !strings.HasPrefix(err.Error(), "fencing: invalid token") {
				t.Errorf("token %d: %v, want ErrInvalidToken", tok, err)
			}
		}
		if h := tg.recorded(t, g, "fresh"); h != 0 {
			t.Errorf("an invalid token was recorded: %d", h)
		}

		// A checked transaction that rolls back records nothing.
		tx, err = tg.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctx, tx, "doc", 100); err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		if err := write(ctx, tg, g, "doc", 35, set("by 35")); err != nil {
			t.Errorf("token 35 after a rolled back 100: %v", err)
		}

		// A *sql.Conn in a transaction it began itself.
		conn, err := tg.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctx, conn, "doc", 34); !errors.Is(err, fencing.ErrStaleToken) {
			t.Errorf("token 34 on a *sql.Conn after 35: %v", err)
		}
		if err := g.Check(ctx, conn, "doc", 36); err != nil {
			t.Errorf("token 36 on a *sql.Conn: %v", err)
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		if h := tg.recorded(t, g, "doc"); h != 36 {
			t.Errorf("recorded %d after the *sql.Conn's commit, want 36", h)
		}
	})
}

// TestGuardConcurrent: goroutines write with random tokens in concurrent
// transactions, each accepted write also bumping a sequence number in a row
// of its own (a lock of the data, not the guard's). An independent model
// checks the outcome: in the order the writes committed (the sequence),
// tokens never go down, no write is lost (the sequence has no gaps or
// repeats), the recorded token is the largest committed, and each refusal
// named as highest a token that was committed and is higher.
func TestGuardConcurrent(t *testing.T) {
	eachDialect(t, func(t *testing.T, tg target) {
		g := tg.newGuard(t)
		data := uniqueName(t, "data")
		tg.exec(t, "CREATE TABLE "+data+" (id TEXT PRIMARY KEY, seq BIGINT NOT NULL, last BIGINT NOT NULL)")
		resources := []string{"a", "b"}
		for _, r := range resources {
			tg.exec(t, "INSERT INTO "+data+" (id, seq, last) VALUES ($1, 0, 0)", r)
		}
		const workers, each = 8, 30
		type commit struct{ seq, token int64 }
		type refusal struct{ token, highest int64 }
		var mu sync.Mutex
		commits := map[string][]commit{}
		refusals := map[string][]refusal{}
		// Tokens come from a counter, like grants, minus a random lag: the
		// attempts race with near tokens, some behind the times.
		var grants atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for range each {
					r := resources[rng.IntN(len(resources))]
					tok := max(1, grants.Add(1)-rng.Int64N(12))
					var seq int64
					err := write(context.Background(), tg, g, r, tok, func(tx *sql.Tx) error {
						// Widen the window between check and write.
						time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
						if _, err := tx.Exec(tg.q("UPDATE "+data+" SET seq = seq + 1, last = $1 WHERE id = $2"), tok, r); err != nil {
							return err
						}
						return tx.QueryRow(tg.q("SELECT seq FROM "+data+" WHERE id = $1"), r).Scan(&seq)
					})
					var stale *fencing.StaleTokenError
					mu.Lock()
					switch {
					case err == nil:
						commits[r] = append(commits[r], commit{seq, tok})
					case errors.As(err, &stale):
						refusals[r] = append(refusals[r], refusal{tok, stale.Highest})
					default:
						t.Errorf("token %d on %s: %v", tok, r, err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		total := 0
		for _, r := range resources {
			cs := commits[r]
			slices.SortFunc(cs, func(a, b commit) int { return int(a.seq - b.seq) })
			committed := map[int64]bool{}
			var maxTok int64
			for i, c := range cs {
				if c.seq != int64(i+1) {
					t.Fatalf("%s: commit #%d has sequence %d: a write was lost or doubled", r, i+1, c.seq)
				}
				if c.token < maxTok {
					t.Errorf("%s: write %d committed with token %d after %d had committed", r, c.seq, c.token, maxTok)
				}
				maxTok = max(maxTok, c.token)
				committed[c.token] = true
			}
			if got := tg.recorded(t, g, r); got != maxTok {
				t.Errorf("%s: recorded token %d, want the largest committed %d", r, got, maxTok)
			}
			for _, rf := range refusals[r] {
				if rf.highest <= rf.token || !committed[rf.highest] {
					t.Errorf("%s: token %d refused as below %d, which was not a higher committed token", r, rf.token, rf.highest)
				}
			}
			if len(cs) == 0 || len(refusals[r]) == 0 {
				t.Errorf("%s: %d commits and %d refusals; the test needs both", r, len(cs), len(refusals[r]))
			}
			total += len(cs) + len(refusals[r])
			t.Logf("%s: %d commits, %d refusals, highest %d", r, len(cs), len(refusals[r]), maxTok)
		}
		if total != workers*each && !t.Failed() {
			t.Errorf("%d outcomes, want %d", total, workers*each)
		}
	})
}

// TestGuardPostgresWaitsForHolder shows the READ COMMITTED reasoning on a
// real server: a second transaction's Check waits for the first one's row
// lock, then sees its outcome (committed: refused below it, accepted at or
// above it; rolled back: judged against the older token).
func TestGuardPostgresWaitsForHolder(t *testing.T) {
	tg := target{fencing.PostgreSQL, postgres(t)}
	ctx := context.Background()
	g := tg.newGuard(t)
	if err := write(ctx, tg, g, "r", 3, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		first, then int64
		commit      bool
		stale       bool
		recorded    int64
	}{
		{"lower after commit", 7, 5, true, true, 7},
		{"higher after commit", 9, 11, true, false, 11},
		{"lower after rollback", 20, 12, false, false, 12},
	} {
		t1, err := tg.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctx, t1, "r", c.first); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		done := make(chan error, 1)
		go func() { done <- write(ctx, tg, g, "r", c.then, nil) }()
		select {
		case err := <-done:
			t.Fatalf("%s: the second Check returned (%v) while the first transaction was open", c.name, err)
		case <-time.After(300 * time.Millisecond):
		}
		if c.commit {
			err = t1.Commit()
		} else {
			err = t1.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		err = <-done
		if c.stale != errors.Is(err, fencing.ErrStaleToken) || (!c.stale && err != nil) {
			t.Errorf("%s: token %d after %d: %v", c.name, c.then, c.first, err)
		}
		if got := tg.recorded(t, g, "r"); got != c.recorded {
			t.Errorf("%s: recorded %d, want %d", c.name, got, c.recorded)
		}
	}
}

// TestGuardPostgresRepeatableRead: under REPEATABLE READ a transaction
// whose snapshot predates a concurrent holder's commit gets a serialization
// failure from Check (as the package doc says), never a silent acceptance;
// its retry is judged on the new token.
func TestGuardPostgresRepeatableRead(t *testing.T) {
	tg := target{fencing.PostgreSQL, postgres(t)}
	ctx := context.Background()
	g := tg.newGuard(t)
	if err := write(ctx, tg, g, "r", 3, nil); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []int64{5, 9} {
		tx, err := tg.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		var one int
		if err := tx.QueryRow("SELECT 1").Scan(&one); err != nil { // takes the snapshot
			t.Fatal(err)
		}
		// Token 7 commits meanwhile (the second time an equal token, which
		// rewrites the row all the same).
		if err := write(ctx, tg, g, "r", 7, nil); err != nil {
			t.Fatal(err)
		}
		err = g.Check(ctx, tx, "r", tok)
		tx.Rollback()
		var pqErr *pq.Error
		if !errors.As(err, &pqErr) || pqErr.Code != "40001" {
			t.Errorf("token %d in a snapshot older than token 7's commit: %v, want SQLSTATE 40001", tok, err)
		}
	}
	if err := write(ctx, tg, g, "r", 5, nil); !errors.Is(err, fencing.ErrStaleToken) {
		t.Errorf("retry of 5: %v", err)
	}
	if err := write(ctx, tg, g, "r", 9, nil); err != nil {
		t.Errorf("retry of 9: %v", err)
	}
}
