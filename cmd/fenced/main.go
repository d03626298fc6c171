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

	"github.com/fenced/fenced/server"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "recover" {
		err := server.Recover(os.Args[2:], os.Stderr)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fenced:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "snapshot" {
		err := server.Snapshot(os.Args[2:], os.Stdout, os.Stderr)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fenced:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := server.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
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
		fmt.Fprintln(os.Stderr, "fenced:", err)
		os.Exit(1)
	}
}
