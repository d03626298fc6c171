package test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Debian's prometheus-redis-exporter, pointed at a node, reads
// true figures from it (INFO ALL, CONFIG GET, SLOWLOG...): the node is up,
// its connections (the exporter's own included), its keys (keys and held
// locks share Redis's db0) and the calls of each command.
func TestRedisExporter(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("prometheus-redis-exporter")
	if err != nil {
		compatSkip(t, "prometheus-redis-exporter is not installed (apt-get install prometheus-redis-exporter)")
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n := startNode(t, nodeOpts{args: []string{"--metrics", metrics}})
	cl := n.client(t)
	const sets = 4
	for i := range sets {
		mustStr(t, cl, "SET", fmt.Sprint("key", i), "v")
	}
	s := openSession(t, cl, 60000, "exporter")
	mustInt(t, cl, "FLOCK", "held", s)
	mustStr(t, cl, "SET", "key0", "w") // the same key again: 5 SETs, 4 keys
	// Connections: exactly these two, once the setup client's are gone.
	cl.Close()
	for range 2 {
		mustStr(t, n.soloClient(t), "PING")
	}
	eventually(t, 10*time.Second, "2 connections", func() bool {
		return metricsOf(t, metrics).value(t, "fenced_connections") == 2
	})

	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "--redis.addr", "redis://"+n.addr, "--web.listen-address", listen)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus-redis-exporter's output:\n%s", out.String())
		}
	})
	var m scrape
	eventually(t, 15*time.Second, "the exporter answers", func() bool {
		m, err = tryScrape("http://" + listen + "/metrics")
		return err == nil
	})
	m.expect(t, 1, "redis_up")
	m.expect(t, 3, "redis_connected_clients") // the two, and the exporter's
	m.expect(t, sets+1, "redis_db_keys", "db", "db0")
	m.expect(t, sets+1, "redis_commands_total", "cmd", "set")
	m.expect(t, 1, "redis_commands_total", "cmd", "flock")
	m.expect(t, 1, "redis_commands_total", "cmd", "session.open")
	if m.series("redis_instance_info", "role", "master", "redis_mode", "standalone") == nil {
		t.Errorf("redis_instance_info: %s", grepLines(m.text, "redis_instance_info"))
	}
}

// lockedBuffer is a bytes.Buffer a process may write while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Clone(b.b.String())
}
