package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"time"

	"github.com/fenced/fenced/resp"
)

// backupTimeout bounds RAFT.BACKUP: the leader's read checks and the
// capture, and on a follower the forwarded round trip that carries the
// whole state.
const backupTimeout = 2 * time.Minute

// raftBackup is RAFT.BACKUP on the leader: [applied index, hex SHA-256 of
// the state at that index (what RAFT.HASH reports there), the snapshot
// stream (raftstore's format, with its checksum)]. The state is captured
// after a linearizable read's checks, so it holds every write acknowledged
// before the command arrived. The reply is one bulk string, built in
// memory: fine within the state's usual sizes; a follower relays at most
// resp's 512 MiB bulk limit, the leader itself has none.
func (s *Server) raftBackup(c *resp.Conn, _ [][]byte) resp.Value {
	ctx, cancel := context.WithTimeout(c.Context(), backupTimeout)
	defer cancel()
	var buf bytes.Buffer
	info, err := s.node.Backup(ctx, &buf)
	if err != nil {
		return errorReply(err)
	}
	s.log.Info("backup taken", "applied_index", info.Applied, "records", info.Records, "bytes", info.Size)
	return resp.Array(resp.Int(int64(info.Applied)), resp.BulkString(hex.EncodeToString(info.Hash[:])), resp.Bulk(buf.Bytes()))
}
