package ctl

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// sessionInfo is one session, as SESSION.INFO describes it.
type sessionInfo struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	TTLMs       int64    `json:"ttl_ms"`
	RemainingMs int64    `json:"remaining_ms"`
	Created     string   `json:"created"`
	Locks       []string `json:"locks"`
	Waiting     []string `json:"waiting"`
}

// infoBatch is how many SESSION.INFOs share one pipeline round trip.
const infoBatch = 256

func (r *runner) sessionList(_ []string) error {
	ctx := context.Background()
	v, c, err := r.call(ctx, "SESSION.LIST")
	if err != nil {
		return err
	}
	ids := texts(v)
	out := make([]sessionInfo, 0, len(ids))
	// Pipelined to the node that answered SESSION.LIST (the leader, for
	// nodes with --redirect).
	for len(ids) > 0 {
		batch := ids[:min(len(ids), infoBatch)]
		ids = ids[len(batch):]
		actx, cancel := r.within(ctx)
		pipe := c.Pipeline()
		cmds := make([]*redis.Cmd, len(batch))
		for i, id := range batch {
			cmds[i] = pipe.Do(actx, "SESSION.INFO", id)
		}
		pipe.Exec(actx) // each command's own error is read below
		cancel()
		for i, cmd := range cmds {
			v, err := cmd.Result()
			if errCode(err) == "NOSESSION" {
				continue // ended since SESSION.LIST
			}
			if err != nil {
				return fmt.Errorf("%w: SESSION.INFO %s: %v", ErrFailed, batch[i], err)
			}
			f, err := fields(v)
			if err != nil {
				return err
			}
			out = append(out, sessionInfo{
				ID: text(f["id"]), Name: text(f["name"]), TTLMs: integer(f["ttl"]), RemainingMs: integer(f["remaining"]),
				Created: text(f["created"]), Locks: texts(f["locks"]), Waiting: texts(f["waiting"]),
			})
		}
	}
	rows := make([][]string, len(out))
	for i, s := range out {
		rows[i] = []string{s.ID, s.Name, ms(s.TTLMs), ms(s.RemainingMs), strings.Join(s.Locks, ","), strings.Join(s.Waiting, ","), s.Created}
	}
	return r.output(out, []string{"ID", "NAME", "TTL", "REMAINING", "LOCKS", "WAITING", "CREATED"}, rows)
}

func ms(n int64) string { return (time.Duration(n) * time.Millisecond).String() }

func (r *runner) sessionKill(args []string) error {
	id := args[0]
	v, _, err := r.call(context.Background(), "SESSION.KILL", id)
	if err != nil {
		return err
	}
	if integer(v) != 1 {
		return fmt.Errorf("%w: session %q: no such session", ErrFailed, id)
	}
	return r.done(map[string]any{"id": id, "killed": true}, fmt.Sprintf("session %s killed; its locks are released", id))
}

// lockState is a lock, as LOCK.INFO describes it. Holder and waiters'
// sessions are null unless they are the user's own (or the user is an
// admin).
type lockState struct {
	Name    string   `json:"name"`
	Held    bool     `json:"held"`
	Holder  *string  `json:"holder"`
	Owner   string   `json:"owner"`
	Token   *int64   `json:"token"`
	Count   int64    `json:"count"`
	Limit   int64    `json:"limit"`
	Waiters []waiter `json:"waiters"`
}

type waiter struct {
	Session     *string `json:"session"`
	Owner       string  `json:"owner"`
	RemainingMs int64   `json:"remaining_ms"` // -1: waits without a deadline
}

func (r *runner) lockInfo(name string) error {
	v, _, err := r.call(context.Background(), "LOCK.INFO", name)
	if err != nil {
		return err
	}
	f, err := fields(v)
	if err != nil {
		return err
	}
	l := lockState{Name: name, Holder: optText(f["holder"]), Owner: text(f["owner"]),
		Count: integer(f["count"]), Limit: integer(f["limit"]), Waiters: []waiter{}}
	if f["token"] != nil {
		tok := integer(f["token"])
		l.Token, l.Held = &tok, true
	}
	ws, _ := f["waiters"].([]any)
	for _, w := range ws {
		wf, err := fields(w)
		if err != nil {
			return err
		}
		l.Waiters = append(l.Waiters, waiter{Session: optText(wf["session"]), Owner: text(wf["owner"]), RemainingMs: integer(wf["remaining"])})
	}
	if r.g.output == "json" {
		return r.output(l, nil, nil)
	}
	holder, token := "(free)", ""
	if l.Held {
		holder, token = shown(l.Holder), strconv.FormatInt(*l.Token, 10)
	}
	r.table([]string{"NAME", "HOLDER", "OWNER", "TOKEN", "COUNT", "LIMIT", "WAITERS"},
		[][]string{{name, holder, l.Owner, token, strconv.FormatInt(l.Count, 10), strconv.FormatInt(l.Limit, 10), strconv.Itoa(len(l.Waiters))}})
	if len(l.Waiters) == 0 {
		return nil
	}
	fmt.Fprintln(r.stdout)
	rows := make([][]string, len(l.Waiters))
	for i, w := range l.Waiters {
		rem := "no deadline" // WAIT 0: -1
		if w.RemainingMs >= 0 {
			rem = ms(w.RemainingMs)
		}
		rows[i] = []string{strconv.Itoa(i + 1), shown(w.Session), w.Owner, rem}
	}
	r.table([]string{"QUEUE", "SESSION", "OWNER", "REMAINING"}, rows)
	return nil
}

func optText(v any) *string {
	if v == nil {
		return nil
	}
	s := text(v)
	return &s
}

// shown is a session id LOCK.INFO may withhold from other users.
func shown(id *string) string {
	if id == nil {
		return "(not shown)"
	}
	return *id
}
