package client_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// addr is the fenced node the examples and tests of this package talk to:
// a real server, built from this tree and started by TestMain on a free
// port with a temporary data directory; tmpDir is for the examples' files.
var addr, tmpDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fenced-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	tmpDir = dir
	bin := filepath.Join(dir, "fenced")
	build := exec.Command("go", "build", "-o", bin, "github.com/fenced/fenced/cmd/fenced")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building fenced: %v\n%s", err, out)
		return 1
	}
	cmd := exec.Command(bin, "--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	serving := regexp.MustCompile(`msg="fenced serving" listen=(\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case addr = <-found:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "fenced did not start within 30 s")
		return 1
	}
	return m.Run()
}
