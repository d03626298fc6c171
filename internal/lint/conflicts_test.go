package lint

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoConflictMarkers: no file of the repository keeps the markers of a
// merge left unresolved (a README once did, both sides of it committed).
func TestNoConflictMarkers(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".sh", ".py", ".js", ".rb", ".json", ".yml", ".yaml", ".txt", "":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			return err // a binary file (no extension) is not text
		}
		if line, ok := conflictMarker(b); ok {
			t.Errorf("%s:%d: a merge conflict marker", p, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// conflictMarker returns the first line that opens or closes a conflict.
func conflictMarker(b []byte) (int, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for n := 1; sc.Scan(); n++ {
		if l := sc.Text(); strings.HasPrefix(l, "<<<<<<< ") || strings.HasPrefix(l, ">>>>>>> ") {
			return n, true
		}
	}
	return 0, false
}

func TestConflictMarkerCatch(t *testing.T) {
	if _, ok := conflictMarker([]byte("a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> metrics\n")); !ok {
		t.Error("an unresolved conflict was not seen")
	}
	if _, ok := conflictMarker([]byte("Title\n=======\n<<< not one\n")); ok {
		t.Error("a setext heading was taken for a conflict")
	}
}
