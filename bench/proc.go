package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. It is
// 100 on every Linux architecture Go supports (the kernel fixes it for the
// ABI), so it is not read through sysconf, which would need cgo.
const clockTicks = 100

// proc is one server process the tool started (a fenced node, redis-server or
// an etcd member). It can be killed and started again with the same
// arguments, which is what the failover and restart measurements need.
type proc struct {
	name    string
	path    string
	args    []string
	logPath string // stdout and stderr of every run, appended

	cmd     *exec.Cmd
	done    chan struct{} // closed when the current run has exited
	waitErr error         // valid after done is closed
}

// start runs the process (again). The child gets its own process group, so
// a Ctrl-C on the terminal reaches only the tool, which then stops the
// servers in order; Pdeathsig kills it should the tool itself die without
// cleaning up, so no server outlives a crashed run. (Pdeathsig follows the
// OS thread that started the child; the tool never locks goroutines to
// threads, so the Go runtime keeps its threads for the life of the process.)
func (p *proc) start() error {
	if p.running() {
		return fmt.Errorf("%s is already running", p.name)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	fmt.Fprintf(logFile, "==== %s %s\n", p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() { p.waitErr = cmd.Wait(); close(done) }()
	return nil
}

func (p *proc) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exited is closed when the current run ends; nil (blocks forever) if the
// process was never started, which suits a select that aborts a wait.
func (p *proc) exited() <-chan struct{} { return p.done }

func (p *proc) pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// kill is kill -9: the crash the failover and restart measurements are about.
func (p *proc) kill() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop asks for a graceful shutdown (SIGTERM) and kills after grace.
func (p *proc) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		fmt.Fprintf(os.Stderr, "bench: %s ignored SIGTERM for %v; killing it\n", p.name, grace)
		p.kill()
	}
}

// logTail is the end of the process's log, for error messages.
func (p *proc) logTail() string {
	return fmt.Sprintf("--- %s log (%s) ---\n%s", p.name, p.logPath, tail(p.logPath, 30))
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// cpuTime is the user+system CPU a process has used so far, from
// /proc/<pid>/stat. Sampled before and after a window, the difference is
// what the process cost in it, whichever core it ran on.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a stat line. The
// command name (field 2) is in parentheses and may hold spaces or ')', so
// fields are counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat line")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), so field k is f[k-3].
	if len(f) < 13 {
		return 0, errors.New("short /proc stat line")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad utime/stime in /proc stat line")
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// rssBytes is a process's resident set (VmRSS of /proc/<pid>/status).
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseKBField(string(b), "VmRSS")
}

// peakRSSBytes is a process's peak resident set so far (VmHWM).
func peakRSSBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseKBField(string(b), "VmHWM")
}

// parseKBField reads a "Name:   123 kB" line of a /proc status-style file.
func parseKBField(text, name string) (int64, error) {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != name {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			break
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("no %s line", name)
}

// freePorts returns n distinct free loopback addresses. They are drawn from
// 10000-19999, below Linux's ephemeral range (32768-60999) and apart from the
// integration tests' 20000-31999, so no outgoing connection takes a port
// while its node is down between a kill and its restart. All listeners stay
// open until every port is chosen so the same port can't come back twice.
func freePorts(n int) ([]string, error) {
	var addrs []string
	for tries := 0; len(addrs) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free loopback port in 10000-19999")
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(10000)))
		if err != nil {
			continue
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// lookBinary finds a peer's server binary: the flag's value if given, else
// PATH, else the Debian location. "" means the target is skipped.
func lookBinary(flagValue, name string) string {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err == nil {
			return flagValue
		}
		return ""
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/" + name); err == nil {
		return "/usr/bin/" + name
	}
	return ""
}

// waitFor polls cond every interval until it returns nil, ctx ends, exited
// is closed, or timeout passes; the error names what was awaited.
func waitFor(ctx context.Context, what string, timeout, interval time.Duration, exited <-chan struct{}, cond func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, min(time.Second, timeout))
		last = cond(cctx)
		cancel()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not after %v: %v", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("%s: the process exited (last: %v)", what, last)
		case <-time.After(interval):
		}
	}
}

// serverProc is one server process of a target whose CPU the steps
// measure: a fenced node, redis-server or an etcd member.
type serverProc struct {
	name string // "n1 leader", "redis-server", "e2"
	pid  int
}

// windowUse is what one step's measured window cost.
type windowUse struct {
	// busy is the share of all the machine's cores in use (1 = every core
	// busy all the time): the servers, the load generator and the kernel's
	// network work together. A target bounded by the machine rather than by
	// its own design shows as a step near 1. Negative when unknown.
	busy float64
	// procs is each server process's CPU (user+system), in the order
	// given; nil when unknown.
	procs []time.Duration
}

// measureWindow samples /proc/stat and every server process's CPU at from
// and again at to, the instants that bound a step's measured window, so
// the figures cover the cycles the step counts and not its warm-up. The
// result is read after to; figures that could not be read, or a window cut
// short, come back unknown.
func measureWindow(ctx context.Context, from, to time.Time, pids []int) func() windowUse {
	out := make(chan windowUse, 1)
	go func() {
		sleepCtx(ctx, time.Until(from))
		b0, t0, errM0 := cpuJiffies()
		p0, errP0 := procsCPU(pids)
		sleepCtx(ctx, time.Until(to))
		b1, t1, errM1 := cpuJiffies()
		p1, errP1 := procsCPU(pids)
		u := windowUse{busy: -1}
		if ctx.Err() != nil {
			out <- u
			return
		}
		if errM0 == nil && errM1 == nil && t1 > t0 {
			u.busy = float64(b1-b0) / float64(t1-t0)
		}
		if errP0 == nil && errP1 == nil {
			u.procs = cpuDeltas(p0, p1)
		}
		out <- u
	}()
	return func() windowUse { return <-out }
}

// procsCPU is cpuTime of every pid, in order.
func procsCPU(pids []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, p := range pids {
		t, err := cpuTime(p)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// cpuDeltas is after - before per process; nil if the readings do not
// pair up or a counter went back (a pid reused by a restarted process).
func cpuDeltas(before, after []time.Duration) []time.Duration {
	if len(before) != len(after) {
		return nil
	}
	out := make([]time.Duration, len(before))
	for i := range before {
		if after[i] < before[i] {
			return nil
		}
		out[i] = after[i] - before[i]
	}
	return out
}

// cpuJiffies reads the first line of /proc/stat: the time all CPUs were
// busy (everything but idle and iowait) and in total.
func cpuJiffies() (busy, total int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseCPULine(string(b))
}

// parseCPULine parses "cpu  user nice system idle iowait irq softirq steal ...".
// Guest time is already counted in user and nice, so it is not added again.
func parseCPULine(stat string) (busy, total int64, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, errors.New("malformed /proc/stat")
	}
	for i, s := range f[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, errors.New("malformed /proc/stat")
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}
