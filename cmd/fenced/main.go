// Command fenced runs one fenced node: a Redis-protocol lock server whose
// every change is committed through Raft. With no flags it serves a
// single-node cluster on 127.0.0.1:6379 with its data under ./fenced-data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/fenced/fenced/ctl"
	"github.com/fenced/fenced/server"
)

func main() {
	// fenced ctl, the admin CLI, exits with its own status (ctl lock: the
	// status of the command it ran).
	if len(os.Args) > 1 && os.Args[1] == "ctl" {
		os.Exit(ctl.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	// Offline subcommands: fenced recover, fenced snapshot save|restore|status.
	subcommands := map[string]func(args []string) error{
		"recover":  func(args []string) error { return server.Recover(args, os.Stderr) },
		"snapshot": func(args []string) error { return server.Snapshot(args, os.Stdout, os.Stderr) },
	}
	if len(os.Args) > 1 && subcommands[os.Args[1]] != nil {
		if err := subcommands[os.Args[1]](os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fenced:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := server.ParseFlags(os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) { // --help or --version, done
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fenced:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		time.AfterFunc(server.ShutdownBound, func() {
			fmt.Fprintf(os.Stderr, "fenced: shutdown took longer than %v; stopping anyway. Goroutines:\n", server.ShutdownBound)
			pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			os.Exit(1)
		})
	}()
	if err := server.Run(ctx, cfg); err != nil {
		// Through the logger, so that --log-format json holds to the end.
		cfg.NewLogger(os.Stderr).Error("fenced stopped", "err", err)
		os.Exit(1)
	}
}
