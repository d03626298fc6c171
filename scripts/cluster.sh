#!/usr/bin/env bash
# Starts a local 3-node fenced cluster on loopback and keeps it in the
# foreground; Ctrl-C stops it. Data lives under $DATA (default
# ./cluster-data), so a second run restarts the same cluster.
#
#   node  client           raft
#   n1    127.0.0.1:6379   127.0.0.1:7379   (bootstraps the cluster)
#   n2    127.0.0.1:6380   127.0.0.1:7380   (joins through n1's Raft address)
#   n3    127.0.0.1:6381   127.0.0.1:7381   (joins through n1's Raft address)
#
# Point clients at any one node: followers forward to the leader.
set -euo pipefail
BIN=${BIN:-bin/fenced}
DATA=${DATA:-cluster-data}
pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait; }
trap stop EXIT INT TERM
for i in 1 2 3; do
  args=(--id "n$i" --listen "127.0.0.1:$((6378 + i))" --raft-addr "127.0.0.1:$((7378 + i))" --data "$DATA/n$i")
  if [ "$i" -gt 1 ]; then args+=(--join 127.0.0.1:7379); fi
  "$BIN" "${args[@]}" 2> >(sed -u "s/^/n$i: /" >&2) &
  pids+=($!)
  sleep 0.5
done
echo "fenced cluster: clients may use 127.0.0.1:6379, :6380 or :6381 (Ctrl-C stops it)" >&2
wait -n "${pids[@]}"
