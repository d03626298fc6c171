package ctl

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// member is one member of the Raft configuration, as RAFT.STATUS lists it.
type member struct {
	ID         string `json:"id"`
	RaftAddr   string `json:"raft_addr"`
	ClientAddr string `json:"client_addr"`
	Voter      bool   `json:"voter"`
	Leader     bool   `json:"leader"`
}

// members asks the first endpoint that answers for RAFT.STATUS: the
// configuration as that node knows it.
func (r *runner) members(ctx context.Context) ([]member, error) {
	v, _, err := r.call(ctx, "RAFT.STATUS")
	if err != nil {
		return nil, err
	}
	st, err := fields(v)
	if err != nil {
		return nil, err
	}
	leader := text(st["leader_id"])
	nodes, _ := st["nodes"].([]any)
	out := make([]member, 0, len(nodes))
	for _, n := range nodes {
		f, err := fields(n)
		if err != nil {
			return nil, err
		}
		id := text(f["id"])
		out = append(out, member{
			ID: id, RaftAddr: text(f["raft_addr"]), ClientAddr: text(f["addr"]),
			Voter: text(f["suffrage"]) == "voter", Leader: id != "" && id == leader,
		})
	}
	// By id, not in configuration order: the same listing from every node.
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (r *runner) memberList(_ []string) error {
	ms, err := r.members(context.Background())
	if err != nil {
		return err
	}
	rows := make([][]string, len(ms))
	for i, m := range ms {
		suffrage := "nonvoter"
		if m.Voter {
			suffrage = "voter"
		}
		rows[i] = []string{m.ID, m.RaftAddr, m.ClientAddr, suffrage, strconv.FormatBool(m.Leader)}
	}
	return r.output(ms, []string{"ID", "RAFT ADDRESS", "CLIENT ADDRESS", "SUFFRAGE", "LEADER"}, rows)
}

func (r *runner) memberAdd(args []string) error {
	id, raftAddr, clientAddr := args[0], args[1], args[2]
	for _, a := range []string{raftAddr, clientAddr} {
		if err := checkAddr(a); err != nil {
			return fmt.Errorf("%w: member add: %v", ErrUsage, err)
		}
	}
	if _, _, err := r.call(context.Background(), "RAFT.JOIN", id, raftAddr, clientAddr); err != nil {
		return err
	}
	return r.done(member{ID: id, RaftAddr: raftAddr, ClientAddr: clientAddr},
		fmt.Sprintf("member %s added as a non-voter; the leader makes it a voter once it has caught up", id))
}

func (r *runner) memberRemove(args []string) error {
	id := args[0]
	ctx := context.Background()
	// RAFT.REMOVE records any id as removed for good, so a typo would
	// bar that id forever: only a member is removed (etcdctl refuses an
	// unknown id too).
	ms, err := r.members(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(ms, func(m member) bool { return m.ID == id }) {
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.ID
		}
		return fmt.Errorf("%w: no member %q (members: %s)", ErrFailed, id, strings.Join(ids, ", "))
	}
	if _, _, err := r.call(ctx, "RAFT.REMOVE", id); err != nil {
		return err
	}
	return r.done(map[string]any{"id": id, "removed": true}, fmt.Sprintf("member %s removed", id))
}

// endpoints are the addresses endpoint status|health ask: --endpoints, or
// with --cluster every member's client address.
func (r *runner) endpoints(ctx context.Context) ([]string, error) {
	if !r.opts.cluster {
		return r.g.addrs, nil
	}
	ms, err := r.members(ctx)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, m := range ms {
		if m.ClientAddr != "" {
			addrs = append(addrs, m.ClientAddr)
		}
	}
	return addrs, nil
}

// eachEndpoint runs check on every endpoint at once and returns what each
// one gave, in order.
func eachEndpoint[T any](addrs []string, check func(addr string) T) []T {
	out := make([]T, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() { out[i] = check(a) })
	}
	wg.Wait()
	return out
}

// epStatus is one endpoint's line of endpoint status, from its INFO.
type epStatus struct {
	Endpoint string `json:"endpoint"`
	ID       string `json:"id"`
	Version  string `json:"version"`
	// ClusterVersion is the semantics the cluster applies entries with,
	// and Known the newest this node's binary knows: during a rolling
	// upgrade they tell which nodes still run the old release.
	ClusterVersion int64  `json:"cluster_version"`
	Known          int64  `json:"cluster_version_known"`
	Role           string `json:"role"`
	IsLeader       bool   `json:"is_leader"`
	LeaderID       string `json:"leader_id"`
	Term           int64  `json:"term"`
	Commit         int64  `json:"commit_index"`
	Applied        int64  `json:"applied_index"`
	err            error
}

// endpointClients returns the endpoints to ask and a pool with a client
// for each, made before any goroutine uses it: the pool's map is not locked.
func (r *runner) endpointClients(ctx context.Context) ([]string, *pool, error) {
	addrs, err := r.endpoints(ctx)
	if err != nil {
		return nil, nil, err
	}
	p, err := r.connect()
	if err != nil {
		return nil, nil, err
	}
	for _, a := range addrs {
		p.client(a)
	}
	return addrs, p, nil
}

func (r *runner) endpointStatus(_ []string) error {
	ctx := context.Background()
	addrs, p, err := r.endpointClients(ctx)
	if err != nil {
		return err
	}
	all := eachEndpoint(addrs, func(a string) epStatus {
		c := p.clients[a]
		// INFO, not RAFT.STATUS: any user may read it, and it has the
		// version too.
		v, err := r.do(ctx, c, "INFO", "server", "raft")
		if err != nil {
			return epStatus{Endpoint: a, err: err}
		}
		f := infoFields(v)
		return epStatus{
			Endpoint: a, ID: f["raft_node_id"], Version: f["fenced_version"], Role: f["raft_role"],
			ClusterVersion: integer(f["cluster_version"]), Known: integer(f["cluster_version_known"]),
			IsLeader: f["raft_role"] == "leader", LeaderID: f["raft_leader_id"],
			Term: integer(f["raft_term"]), Commit: integer(f["raft_commit_index"]), Applied: integer(f["raft_applied_index"]),
		}
	})
	var ok []epStatus
	var rows [][]string
	var failed []string
	for _, s := range all {
		if s.err != nil {
			fmt.Fprintf(r.stderr, "fenced ctl: endpoint %s: %v\n", s.Endpoint, s.err)
			failed = append(failed, s.Endpoint)
			continue
		}
		ok = append(ok, s)
		rows = append(rows, []string{s.Endpoint, s.ID, s.Version,
			fmt.Sprintf("%d/%d", s.ClusterVersion, s.Known), s.Role, strconv.FormatBool(s.IsLeader), s.LeaderID,
			strconv.FormatInt(s.Term, 10), strconv.FormatInt(s.Commit, 10), strconv.FormatInt(s.Applied, 10)})
	}
	if ok == nil {
		ok = []epStatus{}
	}
	if err := r.output(ok, []string{"ENDPOINT", "ID", "VERSION", "CLUSTER VERSION/KNOWN", "ROLE", "IS LEADER", "LEADER", "TERM", "COMMIT INDEX", "APPLIED INDEX"}, rows); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: no status from %s", ErrUnreachable, strings.Join(failed, ", "))
	}
	return nil
}

// epHealth is one endpoint's line of endpoint health.
type epHealth struct {
	Endpoint string `json:"endpoint"`
	Health   bool   `json:"health"`
	Took     string `json:"took"`
	Error    string `json:"error,omitempty"`
}

func (r *runner) endpointHealth(_ []string) error {
	ctx := context.Background()
	addrs, p, err := r.endpointClients(ctx)
	if err != nil {
		return err
	}
	all := eachEndpoint(addrs, func(a string) epHealth {
		start := time.Now()
		err := r.healthOf(ctx, p.clients[a])
		h := epHealth{Endpoint: a, Health: err == nil, Took: time.Since(start).Round(time.Microsecond).String()}
		if err != nil {
			h.Error = err.Error()
		}
		return h
	})
	rows := make([][]string, len(all))
	var sick []string
	for i, h := range all {
		rows[i] = []string{h.Endpoint, strconv.FormatBool(h.Health), h.Took, h.Error}
		if !h.Health {
			sick = append(sick, h.Endpoint)
		}
	}
	if err := r.output(all, []string{"ENDPOINT", "HEALTH", "TOOK", "ERROR"}, rows); err != nil {
		return err
	}
	if len(sick) > 0 {
		return fmt.Errorf("%w: unhealthy: %s", ErrFailed, strings.Join(sick, ", "))
	}
	return nil
}

// healthOf checks what /readyz checks, over the client port: the node
// answers, has settled (INFO loading:0), can persist (no disk_error),
// knows a leader, and a linearizable read through it succeeds (DBSIZE: the
// leader confirms its leadership with a quorum before answering).
func (r *runner) healthOf(ctx context.Context, c *redis.Client) error {
	if _, err := r.do(ctx, c, "PING"); err != nil {
		return err
	}
	v, err := r.do(ctx, c, "INFO", "persistence", "raft")
	if err != nil {
		return err
	}
	f := infoFields(v)
	switch {
	case f["loading"] != "0":
		return fmt.Errorf("starting (INFO loading:%s)", f["loading"])
	case f["disk_error"] != "":
		return fmt.Errorf("cannot persist: %s", f["disk_error"])
	case f["raft_leader_id"] == "":
		return fmt.Errorf("no leader")
	}
	if _, err := r.do(ctx, c, "DBSIZE"); err != nil {
		return fmt.Errorf("linearizable read (DBSIZE): %v", err)
	}
	return nil
}
