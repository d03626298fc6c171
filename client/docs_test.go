package client_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/client.md and the README's first Go example show functions of
// this package's examples; each Go block of those pages must be one of
// them, word for word, so the pages' code is code that compiles and runs
// here (against a real server, with its output checked).
func TestDocsPageIsTheExamples(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"../docs/client.md", "../README.md"} {
		page, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(page), -1)
		if len(blocks) == 0 {
			t.Errorf("%s has no Go block", path)
		}
		for _, b := range blocks {
			if !strings.HasPrefix(b[1], "func ") {
				t.Errorf("%s: a Go block that is not a function of client/example_test.go:\n%s", path, b[1])
				continue
			}
			if !strings.Contains(string(src), b[1]) {
				t.Errorf("%s: a Go block that is not in client/example_test.go as written:\n%s", path, b[1])
			}
		}
	}
}
