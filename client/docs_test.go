package client_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/client.md shows Example functions of this package; each Go block
// of the page must be one of them, word for word, so the page's code is
// code that compiles and runs here (against a real server, with its
// output checked).
func TestDocsPageIsTheExamples(t *testing.T) {
	page, err := os.ReadFile("../docs/client.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(page), -1)
	if len(blocks) == 0 {
		t.Fatal("docs/client.md has no Go block")
	}
	for _, b := range blocks {
		if !strings.HasPrefix(b[1], "func Example") {
			t.Errorf("docs/client.md: a Go block that is not an Example function:\n%s", b[1])
			continue
		}
		if !strings.Contains(string(src), b[1]) {
			t.Errorf("docs/client.md's block is not in client/example_test.go as written:\n%s", b[1])
		}
	}
}
