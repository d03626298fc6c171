package ctl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// pool holds one go-redis client per address used.
type pool struct {
	opts    *redis.Options
	clients map[string]*redis.Client
}

// redisOptions are the connection settings of every node: credentials,
// TLS, RESP3 (maps come back as maps) and --timeout.
func (r *runner) redisOptions() (*redis.Options, error) {
	o := &redis.Options{
		Protocol: 3, Username: r.g.user, Password: r.g.pass,
		DialTimeout: r.g.timeout, ReadTimeout: r.g.timeout, WriteTimeout: r.g.timeout,
		// One dial per attempt: go-redis would try 5 times, each up to
		// DialTimeout, before ctl could move on to the next endpoint.
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
		// A request goes out once: a resend of SESSION.KILL or RAFT.JOIN
		// after a lost reply would report the first one's effect as a
		// failure. ctl chooses the endpoint before sending instead.
		MaxRetries:      -1,
		PoolSize:        4,
		DisableIdentity: true, // no CLIENT SETINFO round trip
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
	if r.g.tls {
		cfg, err := r.g.tlsConfig()
		if err != nil {
			return nil, err
		}
		o.TLSConfig = cfg
	}
	return o, nil
}

func (r *runner) connect() (*pool, error) {
	if r.pool != nil {
		return r.pool, nil
	}
	o, err := r.redisOptions()
	if err != nil {
		return nil, err
	}
	r.pool = &pool{opts: o, clients: map[string]*redis.Client{}}
	return r.pool, nil
}

func (p *pool) client(addr string) *redis.Client {
	if c := p.clients[addr]; c != nil {
		return c
	}
	o := *p.opts
	o.Addr = addr
	c := redis.NewClient(&o)
	p.clients[addr] = c
	return c
}

func (r *runner) close() {
	if r.pool == nil {
		return
	}
	for _, c := range r.pool.clients {
		c.Close()
	}
	r.pool = nil
}

// within bounds one attempt by --timeout.
func (r *runner) within(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.g.timeout)
}

// node returns the first endpoint, in --endpoints order, that answers
// PING. A refusal (a wrong password, say) is final: the other nodes have
// the same users.
func (r *runner) node(ctx context.Context) (string, *redis.Client, error) {
	p, err := r.connect()
	if err != nil {
		return "", nil, err
	}
	var failed []string
	for _, a := range r.g.addrs {
		c := p.client(a)
		actx, cancel := r.within(ctx)
		err := c.Ping(actx).Err()
		cancel()
		if err == nil {
			return a, c, nil
		}
		if code := errCode(err); code != "" && !notHere(code) {
			return "", nil, fmt.Errorf("%w: %s: %v", ErrFailed, a, err)
		}
		failed = append(failed, fmt.Sprintf("%s: %v", a, err))
	}
	return "", nil, fmt.Errorf("%w: %s", ErrUnreachable, strings.Join(failed, "; "))
}

// call sends one command, once, to the first endpoint that answers, and
// follows a -MOVED (nodes started with --redirect) once. It returns the
// reply (nil for a null) and the client that gave it.
func (r *runner) call(ctx context.Context, args ...any) (any, *redis.Client, error) {
	addr, c, err := r.node(ctx)
	if err != nil {
		return nil, nil, err
	}
	v, err := r.do(ctx, c, args...)
	if to := movedTo(err); to != "" {
		addr, c = to, r.pool.client(to)
		v, err = r.do(ctx, c, args...)
	}
	if err != nil {
		return nil, c, fmt.Errorf("%w: %s: %s: %v", ErrFailed, addr, args[0], err)
	}
	return v, c, nil
}

// do sends one command on c within --timeout; a null reply is (nil, nil).
func (r *runner) do(ctx context.Context, c *redis.Client, args ...any) (any, error) {
	actx, cancel := r.within(ctx)
	defer cancel()
	v, err := c.Do(actx, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// errCode is the first word of a server's error reply, "" for any other
// error (a connection's, a timeout).
func errCode(err error) string {
	var re redis.Error
	if err == nil || errors.Is(err, redis.Nil) || !errors.As(err, &re) {
		return ""
	}
	code, _, _ := strings.Cut(re.Error(), " ")
	return code
}

// notHere reports the error codes that say "not now, not this node"
// rather than refusing the request itself.
func notHere(code string) bool {
	switch code {
	case "LOADING", "TRYAGAIN", "CLUSTERDOWN", "MOVED":
		return true
	}
	return false
}

// movedTo is the address of a -MOVED reply ("" for anything else).
func movedTo(err error) string {
	if errCode(err) != "MOVED" {
		return ""
	}
	if f := strings.Fields(err.Error()); len(f) == 3 {
		return f[2]
	}
	return ""
}

// fields reads a RESP3 map (or a RESP2 flat array) with string keys.
func fields(v any) (map[string]any, error) {
	out := map[string]any{}
	switch m := v.(type) {
	case map[any]any:
		for k, v := range m {
			out[text(k)] = v
		}
	case map[string]any:
		return m, nil
	case []any:
		if len(m)%2 != 0 {
			return nil, fmt.Errorf("%w: a map of %d elements", ErrFailed, len(m))
		}
		for i := 0; i < len(m); i += 2 {
			out[text(m[i])] = m[i+1]
		}
	default:
		return nil, fmt.Errorf("%w: want a map, got %T", ErrFailed, v)
	}
	return out, nil
}

// text is a reply element as text: a string, a number, "" for null.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

// integer is a reply element as a number: an integer, or text that holds
// one (RAFT.STATUS and INFO send numbers as text).
func integer(v any) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	n, _ := strconv.ParseInt(text(v), 10, 64)
	return n
}

func texts(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		out = append(out, text(e))
	}
	return out
}

// infoFields parses INFO's "key:value" lines.
func infoFields(v any) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(text(v), "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = val
		}
	}
	return out
}
