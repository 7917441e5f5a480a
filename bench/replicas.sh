#!/usr/bin/env bash
# bench/replicas.sh -- new blocking tasks per second with 1, 2 and 3 onced
# replicas on one PostgreSQL (issue 35 item 6: where adding a replica stops
# helping, and why).
#
#   BENCH_PG_URL=postgres://postgres@127.0.0.1:25432/once bash bench/replicas.sh
#
# For each N in BENCH_REPLICAS: N fresh onced processes (Release, the echo
# executor, --test-admin) on one fresh schema of BENCH_PG_URL (reset by the
# first), then one wrk per replica, all at once, each `-t1 -c(64/N)` with
# bench/send.lua "new block" (distinct client-minted IDs per run, thread and
# connection), BENCH_WARMUP s discarded, BENCH_DURATION s measured: 64
# connections in all whatever N, so the rows differ only in how many
# processes serve them. Per row: the correct answers per second summed over
# the replicas (send.lua's checks: a completed task per answer), errors, and
# CPU per task of the onced processes together, of the PostgreSQL server
# (its postmaster and children, found from the server's data_directory)
# and of the whole machine. Prints one markdown table; raw output in
# $B/bench-out/replicas-<date-time>/.
#
# Environment (all optional):
#   BENCH_PG_URL      the server (postgres://postgres@127.0.0.1:25432/once)
#   BENCH_PG_SCHEMA   the schema used, dropped at the end   (replicas)
#   BENCH_REPLICAS    the replica counts                    ("1 2 3")
#   BENCH_DURATION    measured seconds per row              (10)
#   BENCH_WARMUP      discarded seconds per row             (2)
#   BENCH_ONCED / BENCH_BUILD / BENCH_SKIP_BUILD as in bench/lib.sh
TAG=replicas
source "$(dirname "$0")/lib.sh"
PG_URL="${BENCH_PG_URL:-postgres://postgres@127.0.0.1:25432/once}"
SCHEMA="${BENCH_PG_SCHEMA:-replicas}"
COUNTS="${BENCH_REPLICAS:-1 2 3}"
DUR="${BENCH_DURATION:-10}"
WARM="${BENCH_WARMUP:-2}"
LUA="$root/bench/send.lua"
command -v psql >/dev/null || die "psql is missing (bash scripts/deps.sh)"

psql_q() { psql "$PG_URL" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
DATADIR=$(psql_q "SHOW data_directory" 2>/dev/null) || die "cannot reach $PG_URL"
# The server's processes: its postmaster and every child (backends, WAL
# writer, checkpointer, autovacuum). Readable only on the server's machine.
pg_pids() {
  local pm
  pm=$(head -1 "$DATADIR/postmaster.pid" 2>/dev/null) || return 0
  echo "$pm $(pgrep -P "$pm" -d ' ')"
}
ticks() { local p; for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done |
  awk '{s += $1} END {print s + 0}'; }
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
HZ=$(getconf CLK_TCK)

# row N: N replicas, N wrk at once; prints the table row.
row() {
  local n=$1 conns=$((64 / $1)) i run="r$(date +%s%N | tail -c 9)n$1" ports=() rpids=() wpids=()
  for ((i = 0; i < n; i++)); do
    local reset=""
    [ "$i" = 0 ] && reset="&reset=1"
    start_onced "onced-$n-$i" --store "$PG_URL?schema=$SCHEMA$reset"
    ports+=("$PORT")
    rpids+=("$PID")
  done
  for ((i = 0; i < n; i++)); do
    wrk -t1 -c"$conns" -d"${WARM}s" -s "$LUA" "http://127.0.0.1:${ports[$i]}/" -- \
      new block "${run}w$i" >"$OUT/warm-$n-$i.wrk" 2>&1 &
    wpids+=($!)
  done
  wait "${wpids[@]}"
  wpids=()
  local pg o0 p0 b0
  pg=$(pg_pids)
  o0=$(ticks "${rpids[@]}"); p0=$(ticks $pg); b0=$(busy_ticks)
  for ((i = 0; i < n; i++)); do
    wrk -t1 -c"$conns" -d"${DUR}s" --timeout 10s -s "$LUA" "http://127.0.0.1:${ports[$i]}/" -- \
      new block "${run}m$i" >"$OUT/run-$n-$i.wrk" 2>&1 &
    wpids+=($!)
  done
  wait "${wpids[@]}"
  local o1 p1 b1
  o1=$(ticks "${rpids[@]}"); p1=$(ticks $pg); b1=$(busy_ticks)
  for ((i = 0; i < n; i++)); do stop "${rpids[$i]}" "onced-$n-$i"; done
  python3 - "$n" "$((o1 - o0))" "$((p1 - p0))" "$((b1 - b0))" "$HZ" "$(load1)" "$OUT"/run-"$n"-*.wrk <<'PY'
import re, sys
n, o, p, b, hz, load = int(sys.argv[1]), *map(int, sys.argv[2:6]), sys.argv[6]
ok = req = secs = 0.0
bad = {}
for f in sys.argv[7:]:
    r = dict(re.findall(r"(\w+)=([0-9.]+)", open(f).read().split("RESULT", 1)[-1]))
    if "ok" not in r:
        bad["no-result"] = bad.get("no-result", 0) + 1
        continue
    ok += float(r["ok"]); req += float(r["requests"]); secs = max(secs, float(r["seconds"]))
    for k in ("connect", "read", "write", "non2xx", "timeout", "rpc_err", "not_done"):
        if float(r[k]):
            bad[k] = bad.get(k, 0) + float(r[k])
us = lambda t: "%.0f" % (t * 1e6 / hz / ok) if ok else "-"
print("| %d | %.0f | %s | %s | %s | %s | %s |" % (
    n, ok / secs if secs else 0, ",".join("%s=%d" % kv for kv in bad.items()) or "0",
    us(o), us(p), us(b), load))
PY
}

START_UPTIME="$(uptime)"
echo "## bench/replicas.sh $(date -u +%Y-%m-%dT%H:%MZ) — $($ONCED --version | head -1), PostgreSQL $(psql_q 'SHOW server_version' | cut -d' ' -f1) (fsync=$(psql_q 'SHOW fsync'), synchronous_commit=$(psql_q 'SHOW synchronous_commit'))"
echo
echo "$(nproc) CPUs; wrk, every replica and the server on them. 64 connections in all (wrk -t1 -c64/N per replica), send.lua new block, ${WARM}s warm-up, ${DUR}s measured. Load at start: \`${START_UPTIME# }\`."
echo
echo "| replicas | new tasks/s (correct) | errors | CPU µs/task onced (all) | PostgreSQL | machine | load1 at end |"
echo "|---:|---:|---|---:|---:|---:|---:|"
for n in $COUNTS; do
  [ "$n" -ge 1 ] && [ "$n" -le 64 ] || die "BENCH_REPLICAS: $n is not 1..64"
  row "$n"
done
psql_q "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" 2>/dev/null || log "could not drop schema $SCHEMA"
echo
echo "Load at end: \`$(uptime)\`. Raw output: $OUT"
