package test

// The docs can't drift: every page of docs/ that docs/README.md's table
// lists has its example run here, from the page itself, against a 3-node
// cluster, through the forwarding path (the example is pointed at a
// follower; the successor of the paused-holder case takes the lock through
// the leader).
//
//   - Go pages (redsync.md, redislock.md): the page's ```go block is the
//     file test/docsgo/<lib>doc/orders.go after its package clause,
//     character for character; the test fails on any difference and calls
//     that package's UpdateOrders.
//   - Python pages (redis-py.md, python-redis-lock.md): the ```python block
//     runs under /usr/bin/python3 through test/compat/python/docs_page.py.
//   - node-redlock.md: the ```js block runs under node through
//     test/compat/node/docs_page.js, with the packages of
//     test/compat/node/package-lock.json.
//   - redlock-rb.md: the ```ruby block runs under ruby with ruby-redis
//     through test/compat/ruby/docs_page.rb.
//   - redisson.md: no JVM library here; the Lua script of the ```java block
//     is taken out of the page and run with go-redis on Redisson's own hash
//     layout, locked and relocked with Redisson's recorded lock script.
//
// The one substitution made in a page's code is its address: the pages
// write 127.0.0.1:6379 (docAddrs lists the exact spelling per language),
// which becomes the follower's host and port; a page in which that spelling
// is missing fails. node-redlock.md also runs with the other versions its
// text names, by the replacements listed in TestDocs.
//
// Each run checks, through connections of its own, that the example reads
// its token with FENCE key IFEQ and the value the library stored, that the
// token is the current holder's and grows from one acquisition to the next,
// that the lock is released, and the paused-holder case: between the
// example's acquisition and its token read the key expires (PEXPIRE 50 ms
// stands in for the example's 10 s lease running out while the holder is
// paused) and a successor takes the lock through the library; the
// example's read must answer null and it must not write, and the
// successor's read must answer a token above the paused holder's.
//
// python-redis-lock and redlock-rb are not installable here (PyPI and
// rubygems are out of reach): where they do not load, the drivers use the
// stand-ins in test/compat/python/standin and test/compat/ruby/standin,
// which take the lock with the library's key layout, value and recorded
// scripts; the page's own token read and write are what is exercised.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/fenced/fenced/test/docsgo/redislockdoc"
	"github.com/fenced/fenced/test/docsgo/redsyncdoc"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// docBlock is one fenced code block of a page.
type docBlock struct {
	lang string
	line int // of the opening fence, 1-based
	text string
}

var fenceLine = regexp.MustCompile("^```\\s*([A-Za-z0-9_+-]*)\\s*$")

// docBlocks returns the fenced code blocks of docs/<page>.
func docBlocks(t testing.TB, page string) []docBlock {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", page))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks []docBlock
		cur    *docBlock
		lines  []string
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fenceLine.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur, lines = &docBlock{lang: m[1], line: n}, nil
		case cur != nil && m != nil && m[1] == "":
			cur.text = strings.Join(lines, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("docs/%s: the block opened at line %d is not closed", page, cur.line)
	}
	return blocks
}

// docCode returns the page's one block in lang (or one of its aliases).
func docCode(t testing.TB, page string, langs ...string) string {
	t.Helper()
	var found []docBlock
	for _, b := range docBlocks(t, page) {
		for _, l := range langs {
			if b.lang == l {
				found = append(found, b)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/%s has %d ```%s blocks, want exactly one (the example this test runs)", page, len(found), langs[0])
	}
	return found[0].text
}

// docAddrs is how each language's examples spell the address of a fenced
// node; the test replaces it with the node it runs them against.
var docAddrs = map[string]string{
	"python": `host="127.0.0.1", port=6379`,
	"js":     `host: "127.0.0.1", port: 6379`,
	"ruby":   `redis://127.0.0.1:6379`,
}

// docReplace replaces every old in src by new, failing if there is none.
func docReplace(t testing.TB, page, src, old, new string) string {
	t.Helper()
	if !strings.Contains(src, old) {
		t.Fatalf("docs/%s: the example no longer contains %q, which the test replaces", page, old)
	}
	return strings.ReplaceAll(src, old, new)
}

// docAddr replaces the page's address (docAddrs[lang]) by addr.
func docAddr(t testing.TB, page, lang, src, addr string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	old := docAddrs[lang]
	new := strings.NewReplacer("127.0.0.1", host, "6379", port).Replace(old)
	return docReplace(t, page, src, old, new)
}

// writeDoc writes a page's example to a file of the test's own.
func writeDoc(t testing.TB, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// docPages are the pages docs/README.md's table links to.
func docPages(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var pages []string
	for _, m := range regexp.MustCompile(`(?m)^\|.*\]\(([a-z0-9-]+\.md)\) \|$`).FindAllStringSubmatch(string(b), -1) {
		pages = append(pages, m[1])
	}
	if len(pages) == 0 {
		t.Fatal("docs/README.md's table links no page")
	}
	return pages
}

// TestDocs runs the example of every page in docs/README.md's table (see
// the top of this file).
func TestDocs(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(30 * time.Second)
	at, other := c.followers(leader)[0], leader

	runs := map[string]func(t *testing.T){
		"redsync.md":   func(t *testing.T) { runGoDoc(t, redsyncDoc, at, other) },
		"redislock.md": func(t *testing.T) { runGoDoc(t, redislockDoc, at, other) },
		"redis-py.md":  func(t *testing.T) { runPythonDoc(t, "redis-py.md", "redis-py", "orders", at, other) },
		"python-redis-lock.md": func(t *testing.T) {
			runPythonDoc(t, "python-redis-lock.md", "python-redis-lock", "lock:orders", at, other)
		},
		"node-redlock.md": func(t *testing.T) { runNodeDoc(t, at, other) },
		"redlock-rb.md":   func(t *testing.T) { runRubyDoc(t, at, other) },
		"redisson.md":     func(t *testing.T) { runRedissonDoc(t, at, other) },
	}
	for _, page := range docPages(t) {
		t.Run(page, func(t *testing.T) {
			run, ok := runs[page]
			if !ok {
				t.Fatalf("docs/%s has no runner in TestDocs: every page's example is run", page)
			}
			// Every example locks "orders" (python-redis-lock: "lock:orders");
			// a run that failed half-way must not leave it to the next.
			if err := leader.client(t).Del(tctx(t), "orders", "lock:orders").Err(); err != nil {
				t.Fatal(err)
			}
			run(t)
		})
	}
}

// ---------------------------------------------------------------------------
// Go pages

// goDoc is a Go page and the package that holds its block.
type goDoc struct {
	page, file string
	update     func(ctx context.Context, client *redis.Client, write func(token int64) error) error
	lost       error // what update returns when the token read answers null
	// successor takes "orders" through the library on c and returns the
	// value it stored and its release.
	successor func(ctx context.Context, c *redis.Client) (string, func() error, error)
	extra     func(t *testing.T, d goDoc, at, other *node) // page-specific checks
}

var redsyncDoc = goDoc{
	page: "redsync.md", file: "docsgo/redsyncdoc/orders.go",
	update: redsyncdoc.UpdateOrders, lost: redsyncdoc.ErrLockLost,
	successor: func(ctx context.Context, c *redis.Client) (string, func() error, error) {
		m := redsync.New(goredis.NewPool(c)).NewMutex("orders", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		err := m.LockContext(ctx)
		return m.Value(), func() error { _, err := m.UnlockContext(ctx); return err }, err
	},
}

var redislockDoc = goDoc{
	page: "redislock.md", file: "docsgo/redislockdoc/orders.go",
	update: redislockdoc.UpdateOrders, lost: redislockdoc.ErrLockLost,
	successor: func(ctx context.Context, c *redis.Client) (string, func() error, error) {
		l, err := redislock.New(c).Obtain(ctx, "orders", 10*time.Second, nil)
		if err != nil {
			return "", nil, err
		}
		return l.Token(), func() error { return l.Release(ctx) }, nil
	},
	// A held lock and a context that ends first: when it ends between
	// attempts, v0.10.0 answers errors.Join(ErrNotObtained, ctx.Err()),
	// which only errors.Is finds, so the page's check must be errors.Is for
	// UpdateOrders to say ErrBusy. When it ends during an attempt (the
	// script in flight, or its select picking the ticker over the ended
	// context, both ready under load: make test 13:15, "context deadline
	// exceeded"), v0.10.0 returns that attempt's error alone, which the page
	// passes on. So each try must give one of the two, never a write, and
	// ErrBusy must come within five.
	extra: func(t *testing.T, d goDoc, at, other *node) {
		ctx := tctx(t)
		_, release, err := d.successor(ctx, other.client(t))
		if err != nil {
			t.Fatal(err)
		}
		busy := false
		var ne net.Error
		for try := 0; try < 5 && !busy; try++ {
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			err = redislockdoc.UpdateOrders(short, at.client(t), func(int64) error { return errors.New("wrote while another held the lock") })
			cancel()
			switch {
			case errors.Is(err, redislockdoc.ErrBusy):
				busy = true
			case errors.Is(err, redislock.ErrNotObtained):
				t.Fatalf("UpdateOrders passed on ErrNotObtained (%v): the page's check missed it", err)
			case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
				t.Logf("try %d: the context ended during an attempt: %v", try, err)
			default:
				t.Fatalf("UpdateOrders while another holds the lock = %v, want ErrBusy", err)
			}
		}
		if !busy {
			t.Error("UpdateOrders while another holds the lock never said ErrBusy in 5 tries")
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
	},
}

// checkGoDoc fails unless the page's Go block is the file after its
// package clause.
func checkGoDoc(t *testing.T, d goDoc) {
	t.Helper()
	page := strings.Split(strings.TrimSpace(docCode(t, d.page, "go")), "\n")
	src, err := os.ReadFile(d.file)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "\npackage ")
	if !ok {
		t.Fatalf("%s has no package clause", d.file)
	}
	_, body, _ = strings.Cut(body, "\n")
	file := strings.Split(strings.TrimSpace(body), "\n")
	for i := range max(len(page), len(file)) {
		var p, f string
		if i < len(page) {
			p = page[i]
		}
		if i < len(file) {
			f = file[i]
		}
		if p != f {
			t.Fatalf("docs/%s's Go block differs from %s (after its package clause) at line %d of the block:\npage: %q\nfile: %q\n"+
				"The file is what is compiled and run: make the page and the file the same.", d.page, d.file, i+1, p, f)
		}
	}
}

// fenceSpy is a go-redis hook that records every FENCE the example sends,
// running pause (once) before the first one after it is set.
type fenceSpy struct {
	mu    sync.Mutex
	seen  [][]any
	reply []any
	pause func(value string)
}

func (s *fenceSpy) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *fenceSpy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (s *fenceSpy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "fence" {
			return next(ctx, cmd)
		}
		s.mu.Lock()
		pause := s.pause
		s.pause = nil
		s.mu.Unlock()
		if args := cmd.Args(); pause != nil && len(args) == 4 {
			pause(fmt.Sprint(args[3]))
		}
		err := next(ctx, cmd)
		var v any
		if c, ok := cmd.(*redis.Cmd); ok {
			v = c.Val()
		}
		s.mu.Lock()
		s.seen = append(s.seen, cmd.Args())
		s.reply = append(s.reply, v)
		s.mu.Unlock()
		return err
	}
}

func (s *fenceSpy) last(t *testing.T) ([]any, any) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		t.Fatal("the example sent no FENCE")
	}
	args := s.seen[len(s.seen)-1]
	if len(args) != 4 || !strings.EqualFold(fmt.Sprint(args[2]), "IFEQ") {
		t.Fatalf("the example read its token with %v, want FENCE key IFEQ value", args)
	}
	return args, s.reply[len(s.reply)-1]
}

func runGoDoc(t *testing.T, d goDoc, at, other *node) {
	checkGoDoc(t, d)
	ctx := tctx(t)
	spy := &fenceSpy{}
	client := at.client(t)
	client.AddHook(spy)
	mon := at.client(t)

	// Two acquisitions, two writes each (one before and one after the
	// extension).
	var tokens []int64
	for range 2 {
		var written []int64
		err := d.update(ctx, client, func(token int64) error {
			args, _ := spy.last(t)
			if args[1] != "orders" {
				t.Errorf("the example fences %v, not its lock's key orders", args[1])
			}
			if v, err := mon.Get(ctx, "orders").Result(); err != nil || v != args[3] {
				t.Errorf("the example passes IFEQ %v, but the key holds %q (%v): not the library's value", args[3], v, err)
			}
			if cur := mustInt(t, mon, "FENCE", "orders"); cur != token {
				t.Errorf("write got token %d, the current holder's is %d", token, cur)
			}
			written = append(written, token)
			return nil
		})
		if err != nil {
			t.Fatalf("UpdateOrders: %v", err)
		}
		if len(written) != 2 || written[0] != written[1] {
			t.Fatalf("writes got tokens %v, want one token twice", written)
		}
		if n := mustInt(t, mon, "EXISTS", "orders"); n != 0 {
			t.Fatal("the example did not release the lock")
		}
		tokens = append(tokens, written[0])
	}
	if tokens[1] <= tokens[0] {
		t.Fatalf("tokens %v of two acquisitions are not increasing", tokens)
	}

	// The paused holder.
	var tokA, tokB int64
	var valueB string
	var releaseB func() error
	spy.mu.Lock()
	spy.pause = func(value string) {
		tokA = mustInt(t, mon, "FENCE", "orders", "IFEQ", value)
		mustInt(t, mon, "PEXPIRE", "orders", 50)
		eventually(t, 5*time.Second, "the lock to expire", func() bool { return mustInt(t, mon, "EXISTS", "orders") == 0 })
		var err error
		if valueB, releaseB, err = d.successor(ctx, other.client(t)); err != nil {
			t.Fatalf("the successor's acquisition: %v", err)
		}
		tokB = mustInt(t, mon, "FENCE", "orders", "IFEQ", valueB)
	}
	spy.mu.Unlock()
	var written []int64
	err := d.update(ctx, client, func(token int64) error {
		written = append(written, token)
		return nil
	})
	if releaseB == nil {
		t.Fatal("the example sent no FENCE after acquiring")
	}
	if _, reply := spy.last(t); reply != nil {
		t.Errorf("the paused holder's FENCE key IFEQ value = %v, want null", reply)
	}
	if !errors.Is(err, d.lost) {
		t.Errorf("UpdateOrders of the paused holder = %v, want %v", err, d.lost)
	}
	if len(written) != 0 {
		t.Errorf("the paused holder wrote with tokens %v (the successor's is %d)", written, tokB)
	}
	if tokB <= tokA || tokA <= tokens[1] {
		t.Errorf("tokens: earlier %v, paused holder %d, successor %d: not increasing", tokens, tokA, tokB)
	}
	if cur := mustInt(t, mon, "FENCE", "orders", "IFEQ", valueB); cur != tokB {
		t.Errorf("the successor's token after the paused holder's run = %d, want %d", cur, tokB)
	}
	if err := releaseB(); err != nil {
		t.Fatalf("the successor's release: %v", err)
	}
	t.Logf("tokens %v, paused holder %d (read null), successor %d", tokens, tokA, tokB)
	if d.extra != nil {
		d.extra(t, d, at, other)
	}
}

// ---------------------------------------------------------------------------
// Python, Node and Ruby pages

// checkDocTokens checks a driver's tokens: two acquisitions, the paused
// holder's, the successor's, strictly increasing.
func checkDocTokens(t *testing.T, sum compatSummary) {
	t.Helper()
	if len(sum.Fence) != 4 {
		t.Fatalf("tokens %v, want 4", sum.Fence)
	}
	for i := 1; i < len(sum.Fence); i++ {
		if sum.Fence[i] <= sum.Fence[i-1] {
			t.Fatalf("tokens %v (two acquisitions, paused holder, successor) are not increasing", sum.Fence)
		}
	}
	t.Logf("%s: tokens %v (two acquisitions, paused holder, successor)", sum.Lib, sum.Fence)
}

func runPythonDoc(t *testing.T, page, lib, key string, at, other *node) {
	src := docAddr(t, page, "python", docCode(t, page, "python"), at.addr)
	py, _ := findPython(t)
	file := writeDoc(t, "page.py", src)
	sum := runCompat(t, 2*time.Minute, "compat/python", py, "docs_page.py", "--page", file,
		"--lib", lib, "--key", key, "--addr", at.addr, "--other-addr", other.addr)
	checkDocTokens(t, sum)
}

func runNodeDoc(t *testing.T, at, other *node) {
	const page = "node-redlock.md"
	src := docAddr(t, page, "js", docCode(t, page, "js", "javascript"), at.addr)
	node, major := findNode(t)
	// The page's code as written (redlock 5, ioredis 6), and with the other
	// versions its text says it works with.
	for _, v := range []struct {
		name, redlock string
		ioredis6      bool
		replace       []string // old, new, ...
	}{
		{"redlock5-ioredis6", "5", true, nil},
		{"redlock5-ioredis5", "5", false, []string{`require("ioredis")`, `require("ioredis5")`}},
		{"redlock4-ioredis5", "4", false, []string{
			`require("ioredis")`, `require("ioredis5")`,
			`require("redlock").default`, `require("redlock4")`,
			`lock.release()`, `lock.unlock()`}},
	} {
		t.Run(v.name, func(t *testing.T) {
			if v.ioredis6 && major < 20 {
				t.Skipf("ioredis 6 needs node >= 20, this is node v%d", major)
			}
			s := src
			for i := 0; i < len(v.replace); i += 2 {
				s = docReplace(t, page, s, v.replace[i], v.replace[i+1])
			}
			file := writeDoc(t, "page.js", s)
			sum := runCompat(t, 2*time.Minute, nodeCompatDir, node, "docs_page.js", "--page", file,
				"--redlock", v.redlock, "--addr", at.addr, "--other-addr", other.addr)
			checkDocTokens(t, sum)
		})
	}
}

// findRuby returns a ruby that loads ruby-redis.
func findRuby(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("ruby")
	if err != nil {
		compatSkip(t, "no ruby in PATH (apt-get install ruby ruby-redis)")
	}
	if out, err := exec.Command(bin, "-e", `require "redis"`).CombinedOutput(); err != nil {
		compatSkip(t, "ruby cannot load redis (apt-get install ruby-redis): %v %s", err, out)
	}
	return bin
}

func runRubyDoc(t *testing.T, at, other *node) {
	const page = "redlock-rb.md"
	src := docAddr(t, page, "ruby", docCode(t, page, "ruby"), at.addr)
	ruby := findRuby(t)
	file := writeDoc(t, "page.rb", src)
	sum := runCompat(t, 2*time.Minute, "compat/ruby", ruby, "docs_page.rb", "--page", file,
		"--addr", at.addr, "--other-addr", other.addr)
	checkDocTokens(t, sum)
}

// ---------------------------------------------------------------------------
// Redisson

// javaString is a Java string literal.
var javaString = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)

// redissonScript is the Lua script of docs/redisson.md's Java block: its one
// string literal that calls redis.call.
func redissonScript(t *testing.T, java string) string {
	t.Helper()
	var found []string
	for _, lit := range javaString.FindAllString(java, -1) {
		if strings.Contains(lit, "redis.call") {
			s, err := strconv.Unquote(lit)
			if err != nil {
				t.Fatalf("docs/redisson.md: the script literal %s: %v", lit, err)
			}
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/redisson.md's Java block has %d string literals with a script, want 1", len(found))
	}
	return found[0]
}

func runRedissonDoc(t *testing.T, at, other *node) {
	const page = "redisson.md"
	java := docCode(t, page, "java")
	// Redisson turns its watchdog off when lock() is given a lease time;
	// the page's lock() relies on the watchdog.
	if !strings.Contains(java, "lock.lock();") || regexp.MustCompile(`\.(lock|tryLock)\([^)]`).MatchString(java) {
		t.Fatalf("docs/redisson.md's example must call lock.lock() without a lease time (with one, Redisson does not renew the lock)")
	}
	script := redissonScript(t, java)
	acquire := loadLibScripts(t)["redisson/RedissonLock.tryLockInnerAsync"].Text
	if acquire == "" {
		t.Fatal("testdata/scripts.json has no redisson/RedissonLock.tryLockInnerAsync")
	}
	ctx := tctx(t)
	c, mon, succ := at.client(t), at.client(t), other.client(t)
	// Redisson's lock: the hash "orders", field "<client uuid>:<thread id>",
	// value the hold count; its lock script answers nil when it got it.
	holderA, holderB := "2d6a0a4e-5c1f-4b7e-9a57-0b6c3f1d9e01:1", "7f3b9c2a-1e4d-4c8b-8d2e-5a6b7c8d9e0f:1"
	lock := func(c *redis.Client, holder string, leaseMs int) {
		t.Helper()
		if v, err := c.Eval(ctx, acquire, []string{"orders"}, leaseMs, holder).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("Redisson's lock script for %s = %v %v, want nil (acquired)", holder, v, err)
		}
	}
	// The page's script, sent the ways Redisson sends a script: EVAL, or
	// with its script cache EVALSHA; in READ_ONLY mode it tries EVALSHA_RO
	// first and falls back to EVALSHA for good on "ERR unknown command".
	sha, err := c.ScriptLoad(ctx, script).Result()
	if err != nil {
		t.Fatal(err)
	}
	roUnknown := false
	token := func(c *redis.Client, holder string) any {
		t.Helper()
		var got []any
		for _, cmd := range []string{"EVAL", "EVALSHA", "EVALSHA_RO"} {
			body := script
			if cmd != "EVAL" {
				body = sha
			}
			v, err := c.Do(ctx, cmd, body, 1, "orders", holder).Result()
			if errors.Is(err, redis.Nil) {
				v, err = nil, nil
			}
			if cmd == "EVALSHA_RO" && err != nil && strings.HasPrefix(err.Error(), "ERR unknown command") {
				roUnknown = true
				continue
			}
			if err != nil {
				t.Fatalf("the page's script by %s: %v", cmd, err)
			}
			got = append(got, v)
		}
		for _, v := range got[1:] {
			if v != got[0] {
				t.Fatalf("the page's script answers differently by EVAL, EVALSHA, EVALSHA_RO: %v", got)
			}
		}
		return got[0]
	}

	lock(c, holderA, 30000)
	if v := mustStr(t, mon, "HGET", "orders", holderA); v != "1" {
		t.Fatalf("Redisson's hold count %q, want 1", v)
	}
	tok1, ok := token(c, holderA).(int64)
	if !ok || tok1 != mustInt(t, mon, "FENCE", "orders") {
		t.Fatalf("the holder's token = %v, want the key's FENCE %d", tok1, mustInt(t, mon, "FENCE", "orders"))
	}
	lock(c, holderA, 30000) // reentrant: the count goes to 2, same key, same token
	if v := token(c, holderA); v != tok1 {
		t.Fatalf("the token after a reentrant lock = %v, want %d", v, tok1)
	}
	if v := token(c, holderB); v != nil {
		t.Fatalf("another holder's token while A holds = %v, want nil", v)
	}
	mustInt(t, mon, "DEL", "orders")

	// The paused holder: lock with a 100 ms lease (no watchdog, as for a
	// process stopped with it), wait past it, the successor locks.
	lock(c, holderA, 100)
	tokA, ok := token(c, holderA).(int64)
	if !ok || tokA <= tok1 {
		t.Fatalf("the holder's token before its pause = %v, want above %d", tokA, tok1)
	}
	eventually(t, 5*time.Second, "the lease to run out", func() bool { return mustInt(t, mon, "EXISTS", "orders") == 0 })
	lock(succ, holderB, 30000)
	if v := token(c, holderA); v != nil {
		t.Errorf("the paused holder's token after the successor locked = %v, want nil", v)
	}
	tokB, ok := token(succ, holderB).(int64)
	if !ok || tokB <= tokA {
		t.Errorf("the successor's token = %v, want above the paused holder's %d", tokB, tokA)
	}
	mustInt(t, mon, "DEL", "orders")
	t.Logf("token %d, paused holder %d (then nil), successor %d; EVALSHA_RO unknown (Redisson falls back to EVALSHA): %v", tok1, tokA, tokB, roUnknown)
}
