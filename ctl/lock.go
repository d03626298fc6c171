package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fenced/fenced/client"
	"github.com/fenced/fenced/internal/flagargs"
)

// lostGrace is how long CMD has between SIGTERM and SIGKILL once the lock
// is lost under it (docker stop gives 10 s; the lock is already gone).
const lostGrace = 5 * time.Second

// lockCommand parses `lock info NAME` and `lock [--ttl D] [--wait D]
// NAME -- CMD [ARG...]`; argv is what followed the --.
func (r *runner) lockCommand(args, argv []string, dashed bool) (int, error) {
	fset := r.flagSet("fenced ctl lock")
	fset.DurationVar(&r.opts.ttl, "ttl", 10*time.Second, "the session's time to live")
	fset.DurationVar(&r.opts.wait, "wait", 0, "give up after this long without the lock (0: wait)")
	hint := ""
	if !dashed {
		hint = "; the command goes after --: fenced ctl lock NAME -- CMD [ARG...]"
	}
	ops, err := flagargs.Parse(fset, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(r.stdout, lockUsage)
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("%w: lock: %v%s", ErrUsage, err, hint)
	}
	if !dashed && len(ops) > 0 && ops[0] == "info" {
		return 0, r.lockInfoCommand(fset, ops[1:])
	}
	switch {
	case len(ops) == 0 || ops[0] == "":
		return 0, fmt.Errorf("%w: lock needs a NAME%s", ErrUsage, hint)
	case len(ops) > 1:
		return 0, fmt.Errorf("%w: lock takes one NAME, got %q%s", ErrUsage, ops, hint)
	case !dashed || len(argv) == 0:
		return 0, fmt.Errorf("%w: lock %s: no command after --: fenced ctl lock NAME -- CMD [ARG...]", ErrUsage, ops[0])
	case r.opts.ttl <= 0:
		return 0, fmt.Errorf("%w: lock: --ttl %v: must be positive", ErrUsage, r.opts.ttl)
	case r.opts.wait < 0:
		return 0, fmt.Errorf("%w: lock: --wait %v: must not be negative", ErrUsage, r.opts.wait)
	}
	if err := r.ready(); err != nil {
		return 0, err
	}
	return r.lock(ops[0], argv)
}

func (r *runner) lockInfoCommand(fset *flag.FlagSet, ops []string) error {
	fset.Visit(func(f *flag.Flag) {
		if f.Name == "ttl" || f.Name == "wait" {
			ops = nil // not lock info's flags
		}
	})
	if len(ops) != 1 {
		return fmt.Errorf("%w: lock info takes one NAME and no --ttl or --wait: fenced ctl [flags] lock info NAME", ErrUsage)
	}
	if err := r.ready(); err != nil {
		return err
	}
	defer r.close()
	return r.lockInfo(ops[0])
}

// holding is a lock taken for CMD.
type holding struct {
	c     *client.Client
	s     *client.Session
	m     *client.Mutex
	token int64
}

// sigError ends a wait for the lock that a signal abandoned.
type sigError struct{ sig os.Signal }

func (e sigError) Error() string { return "signal " + e.sig.String() }

// lock runs `lock NAME -- CMD`, as etcdctl lock does: take the lock, run
// CMD with its token, release the lock when CMD exits, exit as CMD did.
func (r *runner) lock(name string, argv []string) (int, error) {
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigc)

	h, code, err := r.acquire(name, sigc)
	if err != nil {
		return code, err
	}
	code, err = r.runHeld(h, name, argv, sigc)
	if rerr := r.release(h); rerr != nil {
		rerr = fmt.Errorf("lock %s: releasing: %v; the server frees it when the session's TTL (%v) runs out", name, rerr, r.opts.ttl)
		if err == nil && code == 0 {
			return 1, fmt.Errorf("%w: %v", ErrFailed, rerr)
		}
		fmt.Fprintln(r.stderr, "fenced ctl:", rerr)
	}
	return code, err
}

// acquire opens a session and takes the lock. A signal meanwhile abandons
// the wait (the client cancels it on the server) and gives back a grant
// that raced it.
func (r *runner) acquire(name string, sigc <-chan os.Signal) (*holding, int, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case s := <-sigc:
			cancel(sigError{s})
		case <-stop:
		}
	}()
	h, err := r.take(ctx, name)
	close(stop)
	<-watched // from here on, signals wait in sigc for CMD
	var se sigError
	if errors.As(context.Cause(ctx), &se) {
		if h != nil {
			r.release(h)
		}
		code := 1
		if s, ok := se.sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		return nil, code, fmt.Errorf("lock %s: stopped by %v before the lock was obtained", name, se)
	}
	return h, 1, err
}

func (r *runner) take(ctx context.Context, name string) (*holding, error) {
	opts, err := r.redisOptions()
	if err != nil {
		return nil, err
	}
	dctx, dcancel := r.within(ctx)
	c, err := client.Dial(dctx, strings.Join(r.g.addrs, ","), opts)
	dcancel()
	if err != nil {
		if errCode(err) != "" { // the nodes answered, and refused
			return nil, fmt.Errorf("%w: %v", ErrFailed, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	host, _ := os.Hostname()
	sctx, scancel := r.within(ctx)
	s, err := c.NewSession(sctx, client.WithTTL(r.opts.ttl),
		client.WithName(fmt.Sprintf("fenced ctl lock, pid %d on %s", os.Getpid(), host)))
	scancel()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %v", ErrFailed, err)
	}
	h := &holding{c: c, s: s, m: s.Mutex(name)}
	wctx := ctx
	if r.opts.wait > 0 {
		var wcancel context.CancelFunc
		wctx, wcancel = context.WithTimeout(ctx, r.opts.wait)
		defer wcancel()
	}
	h.token, err = h.m.Lock(wctx)
	if err != nil {
		r.release(h)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("%w: lock %s: not obtained within --wait %v", ErrFailed, name, r.opts.wait)
		}
		return nil, fmt.Errorf("%w: lock %s: %v", ErrFailed, name, err)
	}
	return h, nil
}

// release gives the lock back and closes the session, which would free
// it anyway, each within --timeout.
func (r *runner) release(h *holding) error {
	defer h.c.Close()
	var errs []error
	if h.token > 0 && h.s.Err() == nil {
		ctx, cancel := r.within(context.Background())
		if err := h.m.Unlock(ctx); err != nil && !errors.Is(err, client.ErrSessionLost) {
			errs = append(errs, err)
		}
		cancel()
	}
	ctx, cancel := r.within(context.Background())
	defer cancel()
	if err := h.s.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// runHeld runs CMD while h holds the lock and returns its exit status.
// Signals are passed on to it; if the lock is lost meanwhile it is
// stopped (SIGTERM, then SIGKILL after lostGrace) and ctl fails.
func (r *runner) runHeld(h *holding, name string, argv []string, sigc <-chan os.Signal) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	// Later entries win: these override any inherited ones.
	cmd.Env = append(os.Environ(), "FENCED_TOKEN="+strconv.FormatInt(h.token, 10), "FENCED_LOCK="+name)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.stdin, r.stdout, r.stderr
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		code := 126 // as a shell: found but cannot run
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return code, fmt.Errorf("lock %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	lost := h.m.Context(context.Background()).Done()
	var lostErr error
	var kill <-chan time.Time
	for {
		select {
		case err := <-exited:
			if lostErr != nil {
				return 1, lostErr
			}
			return exitStatus(err), nil
		case s := <-sigc:
			cmd.Process.Signal(s)
		case <-lost:
			lost = nil
			lostErr = fmt.Errorf("%w: lock %s: lost while %s ran, which was stopped", ErrFailed, name, argv[0])
			fmt.Fprintf(r.stderr, "fenced ctl: lock %s lost (%v): stopping %s\n", name, h.s.Err(), argv[0])
			cmd.Process.Signal(syscall.SIGTERM)
			kill = time.After(lostGrace)
		case <-kill:
			cmd.Process.Kill()
		}
	}
}

// exitStatus is CMD's exit status as a shell reports it: 128+N when
// signal N ended it.
func exitStatus(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case !errors.As(err, &ee):
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
