#!/usr/bin/env bash
# redis-suite.sh: Redis 7.0.15's own test suite, its harness unpatched, in
# external mode against a fresh fenced and against a fresh redis-server 7,
# file by file. Prints per file the tests each passed and the names of those
# that pass on redis-server and fail on fenced, and checks that fenced still
# answers PING after every file.
#
#   make redis-suite REDIS_SRC=/path/to/redis-7.0.15 [SUITE_FILES="unit/multi ..."]
#
# REDIS_SRC is a Redis 7.0.15 source tree (only its tests/ are used; nothing
# is built): the redis/redis repository at tag 7.0.15
#   git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis
# or, on Debian 12, the source package
#   apt-get source --download-only redis && tar xzf redis_7.0.15.orig.tar.gz
# Without it the script says so and exits 0 (CI has no Redis tree). It needs
# tclsh (Debian: tcl) and redis-server 7 on PATH. SUITE_TIMEOUT bounds
# each file's run, in seconds (default 1800).
#
# The options are the ones an external server needs and nothing that hides
# a semantic difference: --singledb (fenced has database 0 only), --durable
# (a failing test does not stop its file), --ignore-encoding and
# --ignore-digest (OBJECT ENCODING and DEBUG DIGEST describe Redis's own
# memory layout), and the tags that need DEBUG, replication or SAVE left out.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin/fenced}
FILES=${SUITE_FILES:-"unit/protocol unit/type/string unit/type/incr unit/keyspace unit/expire unit/scripting unit/functions unit/pubsub unit/multi unit/info-command unit/tracking"}
OUT=${SUITE_OUT:-redis-suite-results}

if [[ -z "${REDIS_SRC:-}" || ! -f "${REDIS_SRC}/tests/test_helper.tcl" ]]; then
  cat <<'EOF'
redis-suite: skipped: set REDIS_SRC to a Redis 7.0.15 source tree, for example
  git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis /tmp/redis-7.0.15
  make redis-suite REDIS_SRC=/tmp/redis-7.0.15
(on Debian 12: apt-get source --download-only redis; tar xzf redis_7.0.15.orig.tar.gz)
EOF
  exit 0
fi
for cmd in tclsh redis-server redis-cli; do
  command -v "$cmd" >/dev/null || { echo "redis-suite: $cmd not found (Debian: apt-get install tcl redis-server redis-tools)"; exit 1; }
done
[[ -x "$BIN" ]] || { echo "redis-suite: $BIN not built (make build)"; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
SRC=$(cd "$REDIS_SRC" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

waitping() { # port: until PONG, 20 s at most
  for _ in $(seq 200); do
    [[ "$(redis-cli -p "$1" PING 2>/dev/null)" == PONG ]] && return 0
    sleep 0.1
  done
  return 1
}

# run TARGET FILE PORT: the suite's one file against the server on PORT;
# its output, colours removed, goes to $OUT/TARGET-FILE.txt.
run() {
  local log="$OUT/$1-${2//\//_}.txt"
  (cd "$SRC" && timeout "${SUITE_TIMEOUT:-1800}" tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$3" \
      --singledb --durable --ignore-encoding --ignore-digest \
      --tags -needs:debug --tags -needs:repl --tags -needs:save \
      --single "$2" 2>&1) | sed -u -e 's/\x1b\[[0-9;]*m//g' >"$log" || true
}

# names TARGET FILE STATUS: the names of the tests with that status.
names() {
  sed -n -E "s/^\[$3\]: (.*) \([0-9]+ ms\)$/\1/p; s/^\[$3\]: (.*) in tests\/.*$/\1/p" \
    "$OUT/$1-${2//\//_}.txt" | sort -u
}

printf '%-20s %8s %8s %7s  %s\n' file redis fenced ratio "fenced PING after"
tot_r=0
tot_f=0
for f in $FILES; do
  [[ -f "$SRC/tests/$f.tcl" ]] || { echo "redis-suite: no tests/$f.tcl in $SRC"; exit 1; }
  # A fresh redis-server and a fresh single fenced node per file.
  rp=$(freeport)
  redis-server --port "$rp" --save '' --appendonly no --daemonize no \
    --dir "$WORK" --logfile "$WORK/redis-$rp.log" &
  rpid=$!
  pids+=("$rpid")
  fp=$(freeport)
  rfp=$(freeport)
  mkdir -p "$WORK/fenced-$fp"
  "$BIN" --data "$WORK/fenced-$fp" --listen "127.0.0.1:$fp" --raft-addr "127.0.0.1:$rfp" \
    >"$OUT/fenced-${f//\//_}.log" 2>&1 &
  fpid=$!
  pids+=("$fpid")
  waitping "$rp" || { echo "redis-suite: redis-server did not start"; exit 1; }
  waitping "$fp" || { echo "redis-suite: fenced did not start (see $OUT/fenced-${f//\//_}.log)"; exit 1; }

  run redis "$f" "$rp"
  run fenced "$f" "$fp"
  ping=$(redis-cli -p "$fp" PING 2>&1 || true)
  kill "$rpid" "$fpid" 2>/dev/null || true
  wait "$rpid" "$fpid" 2>/dev/null || true

  ok_r=$(names redis "$f" ok | wc -l)
  ok_f=$(comm -12 <(names redis "$f" ok) <(names fenced "$f" ok) | wc -l)
  tot_r=$((tot_r + ok_r))
  tot_f=$((tot_f + ok_f))
  ratio=$(awk -v a="$ok_f" -v b="$ok_r" 'BEGIN { if (b == 0) print "-"; else printf "%.0f%%", 100 * a / b }')
  printf '%-20s %8d %8d %7s  %s\n' "$f" "$ok_r" "$ok_f" "$ratio" "$ping"
  comm -23 <(names redis "$f" ok) <(names fenced "$f" ok) >"$OUT/failing-${f//\//_}.txt"
  sed 's/^/    fails on fenced: /' "$OUT/failing-${f//\//_}.txt"
  # An exception ends the file's run: say where.
  grep -m1 -A1 '^\[exception\]' "$OUT/fenced-${f//\//_}.txt" | sed 's/^/    /' || true
  if [[ "$ping" != PONG ]]; then
    echo "redis-suite: fenced did not answer PING after $f"
    exit 1
  fi
done
ratio=$(awk -v a="$tot_f" -v b="$tot_r" 'BEGIN { if (b == 0) print "-"; else printf "%.1f%%", 100 * a / b }')
printf '%-20s %8d %8d %7s\n' total "$tot_r" "$tot_f" "$ratio"
echo "logs: $OUT"
