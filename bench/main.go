// Command bench measures fenced's lock throughput and latency over RESP
// (SPEC section 10): uncontended FLOCK+FUNLOCK cycles and, with --contended,
// 16 clients queueing on one lock with WAIT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "", "use this running server instead of starting a node")
	bin := flag.String("bin", "", "fenced binary to start (default: go build ./cmd/fenced)")
	clientsSpec := flag.String("clients", "1,16,64", "client counts for the uncontended workload")
	duration := flag.Duration("duration", 5*time.Second, "measured time per step")
	warmup := flag.Duration("warmup", time.Second, "unmeasured time before each step's window")
	jsonPath := flag.String("json", "", "also write the results as JSON to this file")
	contended := flag.Bool("contended", false, "also run 16 clients on one lock with FLOCK ... WAIT")
	waitMs := flag.Int("wait-ms", 10000, "WAIT for the contended workload, ms")
	flag.Parse()
	clients, err := parseClients(*clientsSpec)
	if err != nil {
		return err
	}
	if *duration <= 0 || *warmup < 0 || *waitMs <= 0 {
		return errors.New("need --duration > 0, --warmup >= 0, --wait-ms > 0")
	}
	// Ctrl-C must still stop the node and kill the sessions.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t, err := startTarget(ctx, *addr, *bin)
	if err != nil {
		return fmt.Errorf("server not available: %w", err)
	}
	defer t.stop()
	runID := strconv.FormatInt(time.Now().UnixNano(), 36) // lock names unique per run
	rep := report{Machine: machineInfo(), Target: t.desc, Duration: duration.String(), Warmup: warmup.String()}
	rep.Results = runUncontended(ctx, t.addr, runID, clients, *warmup, *duration)
	if *contended && ctx.Err() == nil {
		rep.Results = append(rep.Results, runContended(ctx, t.addr, runID, *waitMs, *warmup, *duration))
	}
	rep.markdown(os.Stdout)
	if *jsonPath != "" {
		if err := rep.writeJSON(*jsonPath); err != nil {
			return err
		}
	}
	if !rep.succeeded() {
		return errors.New("no FLOCK+FUNLOCK cycle succeeded")
	}
	if ctx.Err() != nil {
		return errors.New("interrupted; the figures above cover only the time measured")
	}
	return nil
}
