#!/usr/bin/env bash
# Splits a fenced node's CPU profile (go run ./bench --pprof DIR) into what
# the node spends its CPU on, each part counted once (a sample goes to the
# first part whose functions are on its stack), and scales the shares by the
# node's CPU per cycle as the benchmark printed it:
#
#   scripts/pprof-split.sh bin/fenced DIR/uncontended-fenced-3-64-n2.pprof 71
#
# The README's P9 table was made with it.
set -euo pipefail
bin=$1 prof=$2 per=$3

seconds() { awk '{v=$0; if (v ~ /ms$/) {sub(/ms$/, "", v); v/=1000} else sub(/s$/, "", v); print v+0}'; }
total=$(go tool pprof -top -nodecount=1 "$bin" "$prof" 2>/dev/null | grep -o 'Total samples = [0-9.]*m\?s' | awk '{print $4}' | seconds)
ignore=""
part() {
	local name=$1 focus=$2 args v
	args=(-top -nodecount=100000 -focus "$focus")
	[ -n "$ignore" ] && args+=(-ignore "$ignore")
	v=$(go tool pprof "${args[@]}" "$bin" "$prof" 2>/dev/null | grep -o 'accounting for [0-9.]*m\?s' | head -1 | awk '{print $3}' | seconds || true)
	awk -v n="$name" -v v="${v:-0}" -v t="$total" -v p="$per" 'BEGIN {printf "%-46s %5.1f %%  %5.1f µs\n", n, 100*v/t, p*v/t}'
	ignore="${ignore:+$ignore|}$focus"
}
echo "$prof: $total s of samples, $per µs per cycle"
part "log append (Pebble batch, WAL, fdatasync)" 'LogStore..StoreLogs|LogWriter..flushLoop'
part "state machine (decode, Step, write-back)" 'fsm..ApplyBatch'
part "forwarding link (follower side)" 'resp\.\(\*Mux\)'
part "connections: read, dispatch, propose, reply" 'resp\.\(\*Conn\)'
part "raft transport (entries, acks)" 'NetworkTransport|pipelineReplicate|pipelineDecode|netPipeline|raft\.sendRPC'
part "raft main loop, commit, futures" 'hashicorp/raft'
part "garbage collection" 'runtime\.gcBgMarkWorker|runtime\.gcAssistAlloc|runtime\.bgsweep|runtime\.bgscavenge'
part "scheduler and other runtime" 'runtime\.schedule|runtime\.mcall|runtime\.park_m|runtime\.findRunnable|runtime\.sysmon|runtime\.mstart'
part "everything else" '.'
