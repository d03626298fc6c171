package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced/fencing"
	"github.com/fenced/fenced/internal/pgtest"
	_ "github.com/lib/pq"                    // PostgreSQL, for the tests only
	_ "github.com/ncruces/go-sqlite3/driver" // SQLite in pure Go (no cgo), for the tests only
)

// One PostgreSQL server for the package's tests, started by the first test
// that needs it and stopped by TestMain.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
}

func TestMain(m *testing.M) {
	m.Run()
	if pg.srv != nil {
		if err := pg.srv.Stop(); err != nil {
			fmt.Println(err)
		}
	}
}

// postgres opens the shared server's database, or skips the test when
// PostgreSQL is not installed (fails it under FENCED_REQUIRE_COMPAT=1).
func postgres(t testing.TB) *sql.DB {
	t.Helper()
	pg.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		pg.srv, pg.err = pgtest.Start(ctx)
	})
	if pg.err != nil {
		if pgtest.Required() || !errors.Is(pg.err, pgtest.ErrNotInstalled) {
			t.Fatalf("PostgreSQL: %v (.ci/run installs it)", pg.err)
		}
		t.Skipf("%v; skipping (FENCED_REQUIRE_COMPAT=1 fails instead)", pg.err)
	}
	db, err := sql.Open("postgres", pg.srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sqlite opens a fresh SQLite database file in WAL mode, so readers do not
// wait for the writer. Transactions start DEFERRED, SQLite's default: the
// guard's first statement is a write, so it takes the write lock (waiting
// up to the busy timeout) before the transaction has read anything.
func sqlite(t testing.TB) *sql.DB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "fencing.db") +
		"?_pragma=busy_timeout(30000)&_pragma=journal_mode(wal)&_txlock=deferred"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// target is one database under test.
type target struct {
	dialect fencing.Dialect
	db      *sql.DB
}

// eachDialect runs f on PostgreSQL and on SQLite, as subtests.
func eachDialect(t *testing.T, f func(t *testing.T, tg target)) {
	t.Run("PostgreSQL", func(t *testing.T) {
		f(t, target{fencing.PostgreSQL, postgres(t)})
	})
	t.Run("SQLite", func(t *testing.T) {
		f(t, target{fencing.SQLite, sqlite(t)})
	})
}

var tableSeq atomic.Int64

// uniqueName is a table name of this test's own, so that tests sharing
// the PostgreSQL server never see each other's rows.
func uniqueName(t testing.TB, prefix string) string {
	s := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_"))
	if len(s) > 40 {
		s = s[len(s)-40:]
	}
	return fmt.Sprintf("%s_%s_%d", prefix, strings.Trim(s, "_"), tableSeq.Add(1))
}

// newGuard creates a guard on a table of the test's own, with its DDL.
func (tg target) newGuard(t testing.TB) *fencing.Guard {
	t.Helper()
	g, err := fencing.NewGuard(tg.dialect, uniqueName(t, "ft"))
	if err != nil {
		t.Fatal(err)
	}
	tg.exec(t, g.DDL())
	return g
}

func (tg target) exec(t testing.TB, query string, args ...any) {
	t.Helper()
	if _, err := tg.db.ExecContext(context.Background(), tg.q(query), args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// q turns the tests' $n placeholders into the dialect's.
func (tg target) q(query string) string {
	if tg.dialect == fencing.SQLite {
		return regexp.MustCompile(`\$(\d+)`).ReplaceAllString(query, "?$1")
	}
	return query
}

// recorded reads the guard's table directly, not through the guard: 0 when
// the resource has no row.
func (tg target) recorded(t testing.TB, g *fencing.Guard, resource string) int64 {
	t.Helper()
	var tok int64
	err := tg.db.QueryRow(tg.q("SELECT token FROM "+g.Table()+" WHERE resource = $1"), resource).Scan(&tok)
	if err == sql.ErrNoRows {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
