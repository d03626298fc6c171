package resp

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// aheadHandler: "W k v" runs ahead and answers a Later that stores v in k
// when it resolves, after a delay that makes later writes resolve first;
// "R k" may not run ahead and reads k; "HOLD" runs ahead and answers a Later
// that waits for release.
type aheadHandler struct {
	mu      sync.Mutex
	kv      map[string]string
	started int // W commands started whose Later has not resolved
	held    int // HOLD commands handed to the replier
	overlap int // most W commands outstanding at once
	release chan struct{}
}

func (h *aheadHandler) RunsAhead(c *Conn, args [][]byte) bool {
	switch string(args[0]) {
	case "W", "HOLD":
		return true
	}
	return false
}

func (h *aheadHandler) ServeRESP(c *Conn, args [][]byte) Value {
	switch string(args[0]) {
	case "W":
		k, v := string(args[1]), string(args[2])
		n, _ := strconv.Atoi(v)
		h.mu.Lock()
		h.started++
		h.overlap = max(h.overlap, h.started)
		h.mu.Unlock()
		return Later(func() Value {
			time.Sleep(time.Duration(5-n%5) * time.Millisecond)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.started--
			h.kv[k] = v
			return SimpleString("OK " + v)
		})
	case "R":
		h.mu.Lock()
		defer h.mu.Unlock()
		return BulkString(h.kv[string(args[1])])
	case "HOLD":
		h.mu.Lock()
		h.held++
		h.mu.Unlock()
		return Later(func() Value { <-h.release; return SimpleString("RELEASED") })
	}
	return Error("ERR unknown")
}

func TestLaterRepliesInOrderAndReadsWait(t *testing.T) {
	h := &aheadHandler{kv: map[string]string{}}
	addr := startServer(t, &Server{Handler: h, MaxPipeline: 16})
	c := dial(t, addr)
	var in strings.Builder
	for i := range 100 {
		in.WriteString(multibulk("W", "k", strconv.Itoa(i)))
		if i%10 == 9 {
			in.WriteString(multibulk("R", "k"))
		}
	}
	c.send(in.String())
	for i := range 100 {
		c.expect("OK " + strconv.Itoa(i))
		if i%10 == 9 {
			// R waited for every W before it: it reads the last one.
			c.expect(strconv.Quote(strconv.Itoa(i)))
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.overlap < 2 {
		t.Errorf("at most %d writes were outstanding at once: the pipeline did not run ahead", h.overlap)
	}
}

// A handler that is not a Pipeliner may still answer Later: the reply is
// written in order, and the next command waits for it.
func TestLaterWithoutPipeliner(t *testing.T) {
	h := &aheadHandler{kv: map[string]string{}}
	addr := startServer(t, &Server{Handler: HandlerFunc(h.ServeRESP)})
	c := dial(t, addr)
	c.send(multibulk("W", "k", "1") + multibulk("R", "k") + multibulk("W", "k", "2") + multibulk("R", "k"))
	for _, want := range []string{"OK 1", `"1"`, "OK 2", `"2"`} {
		c.expect(want)
	}
	if h.overlap != 1 {
		t.Errorf("%d writes outstanding at once without a Pipeliner, want 1", h.overlap)
	}
}

// Shutdown waits for owed replies, writes them, and then closes.
func TestLaterShutdown(t *testing.T) {
	h := &aheadHandler{kv: map[string]string{}, release: make(chan struct{})}
	srv := &Server{Handler: h}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c := dial(t, ln.Addr().String())
	c.send(multibulk("HOLD") + multibulk("HOLD"))
	// Shutdown answers what was read and drops the rest: wait until both
	// are handed to the replier (a fixed 50 ms was not always enough under
	// -race on two loaded cores: the second HOLD was never read).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		held := h.held
		h.mu.Unlock()
		if held == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 HOLDs handed to the replier after 10 s", held)
		}
	}
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with replies owed", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(h.release)
	c.expect("RELEASED")
	c.expect("RELEASED")
	c.expectEOF()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after the owed replies were written")
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
}

// TestValueMap: Map replaces a ready reply at once, and a Later's reply
// only once it is ready, on the goroutine that waits for it.
func TestValueMap(t *testing.T) {
	double := func(v Value) Value { return Int(v.Integer() * 2) }
	if got := Int(21).Map(double); got.Kind() != KindInt || got.Integer() != 42 {
		t.Errorf("Map of a ready reply: %v", got)
	}
	ready := make(chan struct{})
	mapped := false
	v := Later(func() Value { <-ready; return Int(5) }).Map(func(v Value) Value {
		mapped = true
		return double(v)
	})
	if v.Kind() != KindLater || mapped {
		t.Fatalf("Map of a Later ran early: kind %v, mapped %v", v.Kind(), mapped)
	}
	close(ready)
	if got := v.later(); got.Integer() != 10 || !mapped {
		t.Errorf("Map of a Later: %v, mapped %v", got, mapped)
	}
}
