package fencing_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fenced/fenced/fencing"
)

// TestDocsMatchExamples keeps docs/fencing.md true to the package: each Go
// block is cut from example_test.go (which compiles and runs), each CREATE
// TABLE block is one of the DDL constants, and the upsert shown is the
// guard's.
func TestDocsMatchExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	example := "\n" + strings.Join(lines(string(src)), "\n") + "\n"
	pg, err := fencing.NewGuard(fencing.PostgreSQL, "")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```(\\w*)\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	var goBlocks, ddls, upserts int
	for _, b := range blocks {
		lang, body := b[1], strings.TrimSpace(b[2])
		switch {
		case lang == "go":
			goBlocks++
			if !strings.Contains(example, "\n"+strings.Join(lines(body), "\n")+"\n") {
				t.Errorf("this Go block of docs/fencing.md is not in fencing/example_test.go:\n%s", body)
			}
		case lang == "sql" && strings.HasPrefix(body, "CREATE TABLE"):
			ddls++
			if body != fencing.PostgreSQLDDL+";" && body != fencing.SQLiteDDL+";" {
				t.Errorf("this DDL of docs/fencing.md is neither PostgreSQLDDL nor SQLiteDDL:\n%s", body)
			}
		case lang == "sql" && strings.HasPrefix(body, "INSERT"):
			upserts++
			if strings.Join(strings.Fields(body), " ") != fencing.Upsert(pg) {
				t.Errorf("docs/fencing.md shows the upsert as\n%s\nthe guard runs\n%s", body, fencing.Upsert(pg))
			}
		}
	}
	if goBlocks < 4 || ddls != 2 || upserts != 1 {
		t.Errorf("docs/fencing.md has %d Go blocks, %d DDLs, %d upserts; want at least 4, 2, 1", goBlocks, ddls, upserts)
	}
}
