package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// The CLUSTER commands present the cluster to Redis Cluster clients as one
// shard whose master, owning all 16384 slots, is the Raft leader; with
// --redirect, followers answer -MOVED to it. Followers are listed as
// replicas, but no command is served from a follower's own state.

const lastSlot = 16383

// clusterNode is one member as CLUSTER presents it.
type clusterNode struct {
	id, host string
	port     int
	leader   bool
}

// clusterNodes lists the members with a known client address, the leader
// first.
func (s *Server) clusterNodes() []clusterNode {
	leader := s.node.Leader()
	var members []lockstate.Member
	s.node.Local(func(st *lockstate.State) { members = st.Members() })
	var out []clusterNode
	for _, m := range members {
		host, port, err := net.SplitHostPort(m.Addr)
		if m.Removed || err != nil {
			continue
		}
		p, _ := strconv.Atoi(port)
		n := clusterNode{id: m.ID, host: host, port: p, leader: m.ID == leader}
		if n.leader {
			out = append([]clusterNode{n}, out...)
		} else {
			out = append(out, n)
		}
	}
	return out
}

// nodeName is a member's 40-character cluster node name, which clients
// expect: its id, hex-encoded and padded.
func nodeName(id string) string {
	h := fmt.Sprintf("%x", id)
	if len(h) > 40 {
		h = h[:40]
	}
	return h + strings.Repeat("0", 40-len(h))
}

func (s *Server) cluster(c *resp.Conn, args [][]byte) resp.Value {
	nodes := s.clusterNodes()
	hasLeader := len(nodes) > 0 && nodes[0].leader
	switch strings.ToUpper(string(args[1])) {
	case "INFO":
		state := "ok"
		if !hasLeader {
			state = "fail"
		}
		lines := []string{
			"cluster_enabled:1", "cluster_state:" + state, "cluster_slots_assigned:16384",
			"cluster_slots_ok:16384", "cluster_known_nodes:" + strconv.Itoa(len(nodes)), "cluster_size:1",
		}
		text := strings.Join(lines, "\r\n") + "\r\n"
		if c.Proto() == 3 {
			return resp.Verbatim("txt", text)
		}
		return resp.BulkString(text)
	case "MYID":
		return resp.BulkString(nodeName(s.cfg.ID))
	case "NODES":
		var b strings.Builder
		for _, n := range nodes {
			flags, master, slots := "slave", nodeName(nodes[0].id), ""
			if n.leader {
				flags, master, slots = "master", "-", " 0-16383"
			}
			if n.id == s.cfg.ID {
				flags = "myself," + flags
			}
			fmt.Fprintf(&b, "%s %s:%d@0 %s %s 0 0 1 connected%s\n", nodeName(n.id), n.host, n.port, flags, master, slots)
		}
		return resp.BulkString(b.String())
	case "SLOTS":
		if !hasLeader {
			return resp.Array()
		}
		entry := []resp.Value{resp.Int(0), resp.Int(lastSlot)}
		for _, n := range nodes {
			entry = append(entry, resp.Array(resp.BulkString(n.host), resp.Int(int64(n.port)), resp.BulkString(nodeName(n.id))))
		}
		return resp.Array(resp.Array(entry...))
	case "SHARDS":
		if !hasLeader {
			return resp.Array()
		}
		var list []resp.Value
		for _, n := range nodes {
			role := "replica"
			if n.leader {
				role = "master"
			}
			list = append(list, resp.Map(
				resp.BulkString("id"), resp.BulkString(nodeName(n.id)),
				resp.BulkString("port"), resp.Int(int64(n.port)),
				resp.BulkString("ip"), resp.BulkString(n.host),
				resp.BulkString("endpoint"), resp.BulkString(n.host),
				resp.BulkString("role"), resp.BulkString(role),
				resp.BulkString("replication-offset"), resp.Int(0),
				resp.BulkString("health"), resp.BulkString("online"),
			))
		}
		return resp.Array(resp.Map(
			resp.BulkString("slots"), resp.Array(resp.Int(0), resp.Int(lastSlot)),
			resp.BulkString("nodes"), resp.Array(list...),
		))
	}
	if strings.EqualFold(string(args[1]), "HELP") && len(args) == 2 {
		return helpReply(
			"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"INFO", "    Return information about the cluster: one shard, its master the Raft leader.",
			"MYID", "    Return this node's id.",
			"NODES", "    Return the cluster's nodes, the leader as master of every slot.",
			"SHARDS", "    Return the cluster's one shard.",
			"SLOTS", "    Return every slot's master: the leader.",
			"HELP", "    Print this help.",
		)
	}
	return syntaxError("unknown subcommand '%s'. Try CLUSTER HELP.", commands.Clip(args[1]))
}
