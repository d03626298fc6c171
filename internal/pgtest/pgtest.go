// Package pgtest starts a throwaway PostgreSQL server for tests: initdb into
// a fresh temporary directory, postgres on a free loopback port with trust
// authentication and no unix socket, everything removed by Stop. It is test
// infrastructure: only _test files import it.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq" // the driver the tests talk to the server with
)

// ErrNotInstalled means no PostgreSQL server binaries were found (or, as
// root, no postgres user to run them as): a test skips on it, or fails when
// Required says so.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL is not installed")

// Required reports whether a missing PostgreSQL must fail the tests instead
// of skipping them: CI sets FENCED_REQUIRE_COMPAT=1 after installing it.
func Required() bool { return os.Getenv("FENCED_REQUIRE_COMPAT") == "1" }

// Server is one running postgres process.
type Server struct {
	dir    string // removed by Stop; holds data/ and postgres.log
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the process's exit status, once exited is closed
}

// BinDir finds the directory of initdb and postgres: the newest
// /usr/lib/postgresql/N/bin (Debian keeps them off PATH), else the one
// holding an initdb on PATH.
func BinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Start runs initdb and postgres and returns once the server accepts
// connections. The caller must call Stop.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	// PostgreSQL refuses to run as root: then initdb and postgres run as
	// the postgres user, which must be able to reach the directory.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("%w: running as root and no postgres user to run it as (%v)", ErrNotInstalled, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp(baseDir(cred != nil), "fenced-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	// A port taken between the probe and postgres's bind is retried.
	for attempt := 0; ; attempt++ {
		err := s.run(ctx, bin, data, cred)
		if err == nil {
			ok = true
			return s, nil
		}
		if attempt == 3 || !strings.Contains(err.Error(), "could not bind") {
			return nil, err
		}
	}
}

// baseDir is where the server's directory goes: the usual temporary
// directory, unless the postgres user could not reach it (a private
// TMPDIR of root's).
func baseDir(otherUser bool) string {
	base := os.TempDir()
	if !otherUser {
		return base
	}
	for d := base; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

func (s *Server) run(ctx context.Context, bin, data string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logPath := filepath.Join(s.dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", "", // TCP only: no socket directory to share
		"-c", "max_connections=100", "-c", "logging_collector=off")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: a test binary killed mid-run takes its server with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	s.port, s.cmd, s.exited = port, cmd, make(chan struct{})
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	db, err := sql.Open("postgres", s.DSN())
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			out, _ := os.ReadFile(logPath)
			s.cmd = nil
			return fmt.Errorf("pgtest: postgres exited (%v): %s", s.err, out)
		case <-ctx.Done():
			return fmt.Errorf("pgtest: waiting for postgres: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("pgtest: postgres not accepting connections after 30s (last: %v): %s", err, out)
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// DSN is a lib/pq connection string for database "postgres" as the
// superuser postgres.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Stop shuts the server down (fast shutdown: open transactions roll back)
// and removes its directory.
func (s *Server) Stop() error {
	var err error
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
			err = errors.New("pgtest: postgres did not stop within 15s of SIGINT; killed")
		}
		s.cmd = nil
	}
	if rmErr := os.RemoveAll(s.dir); rmErr != nil && err == nil {
		err = fmt.Errorf("pgtest: %w", rmErr)
	}
	return err
}
