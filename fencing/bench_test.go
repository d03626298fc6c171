package fencing_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced/fencing"
)

// BenchmarkGuardPostgres measures what the guard adds to a write on the
// real server (fsync on, data in $TMPDIR): one connection runs, alternately
// so that the machine's drift hits both alike, BEGIN; UPDATE; COMMIT and
// BEGIN; Check; UPDATE; COMMIT. It reports each path's mean and their
// difference, guard-µs/op. make bench-fencing runs it.
func BenchmarkGuardPostgres(b *testing.B) {
	db := postgres(b)
	db.SetMaxOpenConns(1)
	tg := target{fencing.PostgreSQL, db}
	g := tg.newGuard(b)
	data := uniqueName(b, "data")
	tg.exec(b, "CREATE TABLE "+data+" (id TEXT PRIMARY KEY, v BIGINT NOT NULL)")
	tg.exec(b, "INSERT INTO "+data+" (id, v) VALUES ('row', 0)")
	ctx := context.Background()
	update := "UPDATE " + data + " SET v = $1 WHERE id = 'row'"
	writeOnce := func(i int64, guarded bool) time.Duration {
		start := time.Now()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if guarded {
			// A new holder every 10 writes; its other writes carry an
			// equal token. Both cost the same: the row is written either way.
			if err := g.Check(ctx, tx, "row", 1+i/10); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := tx.ExecContext(ctx, update, i); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	const warm = 50 // the connection, the plans and the pages
	for i := range int64(warm) {
		writeOnce(i, i%2 == 0)
	}
	var plain, guarded time.Duration
	var n int64
	for b.Loop() {
		plain += writeOnce(warm+n, false)
		guarded += writeOnce(warm+n, true)
		n++
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) / 1e3 }
	b.ReportMetric(us(plain), "plain-µs/op")
	b.ReportMetric(us(guarded), "guarded-µs/op")
	b.ReportMetric(us(guarded-plain), "guard-µs/op")
}
