package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// profileStep takes, when --pprof is set, a CPU profile of every node that
// serves /debug/pprof over the measured window of the step about to start
// (after its warm-up), and writes it as <dir>/<step>-<node>.pprof: the
// evidence of what bounds a figure. It does not wait for the profiles.
func (b *bench) profileStep(ctx context.Context, nodes []*fencedNode, step string) {
	if b.cfg.pprofDir == "" {
		return
	}
	secs := max(1, int(b.cfg.duration.Seconds()))
	for _, n := range nodes {
		if n.metrics == "" {
			continue
		}
		path := filepath.Join(b.cfg.pprofDir, strings.NewReplacer(" ", "-", "/", "-").Replace(step)+"-"+n.id+".pprof")
		go func() {
			if sleepCtx(ctx, b.cfg.warmup) != nil {
				return
			}
			if err := fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", n.metrics, secs), path); err != nil {
				progress("pprof %s: %v", path, err)
			}
		}()
	}
}

func fetchProfile(ctx context.Context, url, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, res.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
