# bench/lib.sh -- what the bench scripts share: sourced, never run.
#
# First the helpers every script uses (free_port, wait_http, read_result,
# code_rev, start_peer); run.sh and backends.sh, which set up their own runs,
# take only these:
#   BENCH_LIB=helpers source bench/lib.sh
# Otherwise (bench/p99.sh, bench/rss.sh, bench/sweep.sh, bench/pictures.sh)
# it also sets root, B (BENCH_BUILD, default build-bench), OUT (BENCH_OUT,
# else a fresh $B/bench-out/<tag>-<date-time>/; it gets a file "meta" that
# bench/plot.sh reads), ONCED (BENCH_ONCED, else $B/onced, built here in
# Release unless BENCH_SKIP_BUILD=1) and an EXIT trap that stops every
# process put in PIDS. The caller sets TAG before sourcing.
set -uo pipefail

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_http PORT PID: until the server answers anything on HTTP (60 s max).
wait_http() {
  local port=$1 pid=$2 i code
  for ((i = 0; i < 600; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
      "http://127.0.0.1:$port/.well-known/agent-card.json" 2>/dev/null)
    [ -n "$code" ] && [ "$code" != 000 ] && return 0
    sleep 0.1
  done
  return 1
}

# read_result FILE KEY: the RESULT line of send.lua (wrk) or paced in FILE,
# as R[KEY.field]=value (the caller declares the associative array R).
# Fails when FILE has none.
read_result() {
  local line kv
  line=$(grep -m1 '^RESULT' "$1") || return 1
  for kv in ${line#RESULT }; do R[$2.${kv%%=*}]=${kv#*=}; done
}

# code_rev: what a table's title names as the code measured: the commit,
# "+local changes" when src/, apps/ or include/ differ from it.
code_rev() {
  local r
  r="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  echo "$(git -C "$r" rev-parse --short HEAD 2>/dev/null)$(git -C "$r" diff --quiet HEAD -- src apps include 2>/dev/null || echo '+local changes')"
}

# start_peer NAME: a fresh @a2a-js/sdk peer (bench/peer_server.mjs) on a free
# port, logging to $OUT/NAME.log; sets PORT, PID (added to PIDS) and
# PEER_VERSION (its first line). Needs the caller's root, OUT, PIDS and die.
start_peer() {
  PORT=$(free_port)
  node "$root/bench/peer_server.mjs" "$PORT" >"$OUT/$1.log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  wait_http "$PORT" "$PID" || { cat "$OUT/$1.log" >&2; die "peer did not start"; }
  PEER_VERSION=$(head -1 "$OUT/$1.log")
}

# The kernel's per-session CPU groups (kernel.sched_autogroup_enabled, on in
# Debian): with them on, PostgreSQL, onced, wrk and every other tenant's
# session each get a share of the CPUs first, and on a loaded 2-CPU machine
# a runnable thread waited up to ~2 s (bench/README.md, "The PostgreSQL
# replay tail"). autogroup_set sets it for the run from BENCH_AUTOGROUP
# (0 or 1; unset: as it is; root only), autogroup_restore puts it back (the
# caller's EXIT path), autogroup_state prints it for the table's title.
AUTOGROUP_FILE=/proc/sys/kernel/sched_autogroup_enabled
AUTOGROUP_WAS=$(cat "$AUTOGROUP_FILE" 2>/dev/null || echo -)
autogroup_set() {
  [ -n "${BENCH_AUTOGROUP:-}" ] || return 0
  case $BENCH_AUTOGROUP in 0 | 1) ;; *) echo "BENCH_AUTOGROUP is 0 or 1" >&2; return 1 ;; esac
  echo "$BENCH_AUTOGROUP" >"$AUTOGROUP_FILE" 2>/dev/null || {
    echo "cannot set $AUTOGROUP_FILE (root only; this kernel may not have it)" >&2
    return 1
  }
}
autogroup_restore() {
  [ -n "${BENCH_AUTOGROUP:-}" ] && [ "$AUTOGROUP_WAS" != - ] && echo "$AUTOGROUP_WAS" >"$AUTOGROUP_FILE"
  return 0
}
autogroup_state() { cat "$AUTOGROUP_FILE" 2>/dev/null || echo -; }

[ "${BENCH_LIB:-}" = helpers ] && return 0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Whatever ends the script, every process it started ends with it.
eval "$(python3 "$root/scripts/reaper.py" guard $$)"
B="${BENCH_BUILD:-$root/build-bench}"
OUT="${BENCH_OUT:-$B/bench-out/$TAG-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT" "$B/bench"

die() { echo "$TAG: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]+"${PIDS[@]}"}"; do wait "$p" 2>/dev/null; done
  autogroup_restore
}
trap cleanup EXIT
autogroup_set || die "BENCH_AUTOGROUP: see above"

# stop PID NAME: SIGTERM and wait; a non-zero exit (a crash) is reported.
stop() {
  local pid=$1 name=$2 rc
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"; rc=$?
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" != "$pid" ] && keep+=("$p"); done
  PIDS=("${keep[@]+"${keep[@]}"}")
  [ "$rc" -eq 0 ] || echo "$TAG: $name exited with status $rc; log: $OUT/$name.log" >&2
}

load1() { cut -d' ' -f1 /proc/loadavg; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; } # the 1-, 5- and 15-minute averages

# meta KEY VALUE: one line of $OUT/meta, what bench/plot.sh puts under its
# pictures (the code, the date, the load).
meta() { printf '%s=%s\n' "$1" "$2" >>"$OUT/meta"; }
: >"$OUT/meta"
meta code "$(code_rev)"
meta start "$(date -u +%Y-%m-%dT%H:%MZ)"
meta load_start "$(loadavg)"
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; } # PID VmRSS|VmHWM

# engine_stats PORT FIELD...: the named once/admin/stats engine counters, on one line
# (a dotted name reaches into an object: memoryStore.bytes; an absent one prints 0).
engine_stats() {
  local port=$1
  shift
  curl -s --max-time 30 "http://127.0.0.1:$port/" -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"once/admin/stats"}' |
    python3 -c '
import functools, json, sys
e = json.load(sys.stdin)["result"]["engine"]
get = lambda k: functools.reduce(lambda o, p: o.get(p, {}) if isinstance(o, dict) else {}, k.split("."), e)
print(*[v if isinstance(v, int) else 0 for v in map(get, sys.argv[1:])])' "$@"
}

# start_onced NAME ARGS...: a fresh onced on a free port; sets PORT and PID.
start_onced() {
  local name=$1
  shift
  PORT=$(free_port)
  "$ONCED" --drain-delay 0 --listen "127.0.0.1:$PORT" --test-admin --log-level warn "$@" >"$OUT/$name.log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  wait_http "$PORT" "$PID" || { tail "$OUT/$name.log" >&2; die "onced ($name) did not start"; }
}

command -v wrk >/dev/null || die "wrk is missing (bash scripts/deps.sh)"
if [ -n "${BENCH_ONCED:-}" ]; then
  ONCED="$BENCH_ONCED"
elif [ "${BENCH_SKIP_BUILD:-0}" = 1 ]; then
  ONCED="$B/onced"
else
  ONCED="$B/onced"
  log "build (Release) in $B"
  { cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$B" -j2 --target onced; } >"$OUT/build.log" 2>&1 ||
    die "build failed (log: $OUT/build.log)"
fi
[ -x "$ONCED" ] || die "no onced at $ONCED"
