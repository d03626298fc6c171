package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fenced/fenced/lockstate"
)

// readyContact is how long a follower may go without hearing from its
// leader and still call itself ready: many heartbeats (every 50 ms).
const readyContact = 2 * time.Second

// notReady says why this node would not serve its clients now, "" when it
// would: /readyz. It has settled (startup.go), it can persist (Disk
// trouble), and it is in touch with a quorum: a leader confirms its
// leadership with one (the check a linearizable read makes), a follower
// has heard from its leader lately. A node cut off from the majority is
// therefore not ready, whichever role it had.
func (s *Server) notReady(ctx context.Context) string {
	if !s.start.settled.Load() {
		return "starting: " + s.start.why()
	}
	st := s.node.Status()
	switch {
	case st.DiskError != "":
		// Redis's MISCONF: this node takes no writes until it can
		// persist again (see DESIGN.md, Disk trouble).
		return "cannot persist: " + st.DiskError
	case st.Leader == "":
		return "no leader"
	case s.node.IsLeader():
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := s.node.Read(ctx, func(*lockstate.State, int64) {}); err != nil {
			return "leader without a quorum: " + err.Error()
		}
	case time.Since(st.LastContact) > readyContact:
		return fmt.Sprintf("no contact with the leader for %v", time.Since(st.LastContact).Round(time.Millisecond))
	}
	return ""
}

func (s *Server) serveMetrics() (*http.Server, error) {
	ln, err := net.Listen("tcp", s.cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("server: metrics listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if why := s.notReady(r.Context()); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// GET (and HEAD) only: anything else is 405, with the methods allowed.
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{
		// A collector that fails costs its own metrics, not the others'.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      promLog{s.log},
	}))
	// Profiles, for finding what bounds throughput: only on loopback, since
	// a profile costs CPU and tells what the process holds.
	loopback := isLoopbackAddr(s.cfg.Metrics)
	if loopback {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	hs := newMetricsServer(s.metricsAuth(mux), loopback)
	go hs.Serve(ln)
	return hs, nil
}

// newMetricsServer bounds every phase of a request, so that a client that
// sends or reads slowly (Slowloris) cannot hold connections open. A
// profile on loopback writes for as long as it was asked to run (30 s by
// default, which pprof refuses beyond WriteTimeout), so loopback gets more.
func newMetricsServer(h http.Handler, loopback bool) *http.Server {
	write := 10 * time.Second
	if loopback {
		write = 2 * time.Minute
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      write,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
}

// promLog logs what the Prometheus handler reports (a collector's error).
type promLog struct{ log *slog.Logger }

func (l promLog) Println(v ...any) { l.log.Warn("metrics: " + fmt.Sprint(v...)) }
