package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Dialect is the SQL dialect a Guard speaks: it decides the DDL and the
// placeholders.
type Dialect int

// The dialects. Both have the upsert the guard needs, INSERT … ON CONFLICT
// DO UPDATE … WHERE (SQLite from 3.24).
const (
	PostgreSQL Dialect = iota + 1
	SQLite
)

func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "PostgreSQL"
	case SQLite:
		return "SQLite"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// DefaultTable is the table a Guard uses when given none.
const DefaultTable = "fencing_tokens"

// PostgreSQLDDL creates the guard's table in PostgreSQL, with the default
// name ([Guard.DDL] gives it for any name). Run it once, like any
// migration; it does nothing if the table exists.
const PostgreSQLDDL = `CREATE TABLE IF NOT EXISTS fencing_tokens (
	resource TEXT PRIMARY KEY,
	token    BIGINT NOT NULL CHECK (token > 0)
)`

// SQLiteDDL creates the guard's table in SQLite, with the default name.
// NOT NULL because SQLite lets a TEXT primary key hold NULL; WITHOUT ROWID
// because the row is found by its name only.
const SQLiteDDL = `CREATE TABLE IF NOT EXISTS fencing_tokens (
	resource TEXT NOT NULL PRIMARY KEY,
	token    INTEGER NOT NULL CHECK (token > 0)
) WITHOUT ROWID`

// Tx is what a Guard runs its statements on: the caller's *sql.Tx, or a
// *sql.Conn inside a transaction the caller began. A *sql.DB fits the
// interface too but checks in a transaction of its own, apart from the
// write it should guard: don't.
type Tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Guard records the highest token seen per resource in a SQL table and
// refuses a lower one, inside the caller's transaction. It holds only its
// statements: one Guard serves any number of databases and goroutines.
type Guard struct {
	dialect Dialect
	table   string
	upsert  string // records the token unless a higher one is recorded
	highest string // reads the recorded token, for the error
}

// NewGuard returns a guard over table ("" = DefaultTable) in this dialect.
// The table name must be a plain identifier (letters, digits, underscores,
// not starting with a digit, at most 63 bytes, PostgreSQL's limit): it is
// written into the SQL, and refusing everything else rules out injection.
// Put it in another schema with the connection's search_path.
func NewGuard(d Dialect, table string) (*Guard, error) {
	if table == "" {
		table = DefaultTable
	}
	if !isIdentifier(table) {
		return nil, fmt.Errorf("%w %q: want letters, digits and underscores, not starting with a digit, at most 63 bytes", ErrInvalidTable, table)
	}
	g := &Guard{dialect: d, table: table}
	// The row is updated also when the token is equal (a no-op change that
	// counts as one row), so that "no row changed" means exactly "a higher
	// token is recorded". The WHERE names the table, not an alias: SQLite's
	// INSERT has none.
	switch d {
	case PostgreSQL:
		g.upsert = "INSERT INTO " + table + " (resource, token) VALUES ($1, $2) " +
			"ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE " + table + ".token <= EXCLUDED.token"
		g.highest = "SELECT token FROM " + table + " WHERE resource = $1"
	case SQLite:
		g.upsert = "INSERT INTO " + table + " (resource, token) VALUES (?1, ?2) " +
			"ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE " + table + ".token <= excluded.token"
		g.highest = "SELECT token FROM " + table + " WHERE resource = ?1"
	default:
		return nil, fmt.Errorf("%w %v", ErrInvalidDialect, d)
	}
	return g, nil
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 63 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Table is the guard's table name.
func (g *Guard) Table() string { return g.table }

// DDL creates the guard's table in its dialect (CREATE TABLE IF NOT
// EXISTS): PostgreSQLDDL or SQLiteDDL with the guard's table name.
func (g *Guard) DDL() string {
	ddl := PostgreSQLDDL
	if g.dialect == SQLite {
		ddl = SQLiteDDL
	}
	return strings.Replace(ddl, DefaultTable, g.table, 1)
}

// Check records token as seen for resource inside tx, or refuses it if a
// higher token has been recorded: then the error is a *StaleTokenError
// (errors.Is(err, ErrStaleToken)) and the caller must roll back. A token
// equal to the highest is accepted; a token <= 0 is refused with
// ErrInvalidToken, before any statement runs. Any other error is the
// database's, wrapped: roll back too (and retry a serialization failure).
//
// The record commits or rolls back with tx. Until then the resource's row
// stays locked, so call Check before the write it guards, and keep the
// transaction short: the next holder's Check waits for it.
func (g *Guard) Check(ctx context.Context, tx Tx, resource string, token int64) error {
	if err := checkToken(token); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, g.upsert, resource, token)
	if err != nil {
		return fmt.Errorf("fencing: recording token %d for %q: %w", token, resource, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fencing: recording token %d for %q: %w", token, resource, err)
	}
	if n > 0 {
		return nil
	}
	// Refused. The row is locked by this transaction now, so this reads
	// the token that refused it (READ COMMITTED reads the latest commit).
	var highest int64
	if err := tx.QueryRowContext(ctx, g.highest, resource).Scan(&highest); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = errors.New("no row after a refused upsert")
		}
		return fmt.Errorf("fencing: reading the highest token of %q: %w", resource, err)
	}
	return &StaleTokenError{Resource: resource, Token: token, Highest: highest}
}
