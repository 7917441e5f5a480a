#!/usr/bin/env bash
# bench/run.sh -- one command for every number in bench/README.md.
#
#   bash bench/run.sh
#
# Builds onced (Release, its own build dir) and the two ceiling programs,
# then, on loopback, in one run, each server row in its own fresh process:
#   mhd-inline, mhd-handoff        libmicrohttpd hello-world ceilings
#   mem-*, sqlite-*                onced: new tasks with returnImmediately
#                                  (-new-ri) and blocking (-new-block),
#                                  replays (-replay), blocking new tasks on a
#                                  store prefilled for 8 s (-new-block-filled);
#                                  sqlite-uuid-block: blocking new tasks whose
#                                  IDs come in random order (send.lua uuid)
#   peer-fresh-ri, -block          the @a2a-js/sdk 1.3.0 peer, fresh messages
#   sqlite ceilings                rows/s, WAL + synchronous=FULL, 1 and 100
#                                  rows per transaction (before and after
#                                  onced's sqlite rows)
#   callgrind                      instructions per replayed SendMessage
# and the peer's (no) dedup of one messageId sent twice. Load: wrk -t2 -c64,
# WARMUP s discarded, then DURATION s measured with --latency.
# Prints a markdown table on stdout (progress on stderr); raw wrk output,
# server logs and callgrind files stay in $OUT. Every server is started here
# and stopped here (by PID). Takes about 4 minutes.
#
# Environment (all optional):
#   BENCH_BUILD       build dir                     (build-bench)
#   BENCH_DURATION    measured seconds per row      (10)
#   BENCH_WARMUP      discarded seconds per row     (2)
#   BENCH_REPLAYS     replays counted by callgrind  (200)
#   BENCH_QUIET_WAIT  wait up to this many s for 1-min load < BENCH_QUIET_LOAD (0)
#   BENCH_QUIET_LOAD  (1.5)
#   BENCH_SKIP_BUILD  1 = use the onced already in BENCH_BUILD (the ceiling
#                     programs are still compiled: they take a second)
#   BENCH_SOURCE      what the title names as the code measured (default:
#                     the commit, "+local changes" if src/apps/include differ)
#   BENCH_SQLITE_TAIL appended to every sqlite: store URL of onced, e.g.
#                     "?synchronous=normal" to measure what FULL costs (empty)
#   BENCH_ONLY        sqlite = only what the SQLite numbers need: the sqlite
#                     ceilings and rows, the peer rows their "x peer" ratios
#                     use, the dedup checks, callgrind on sqlite (no mhd,
#                     mem rows or their callgrind; their columns show "-")
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# Whatever ends this script (Ctrl-C, SIGTERM, SIGKILL), every process it
# started ends with it (scripts/reaper.py); the EXIT trap below stops them
# gently first when it gets the chance.
eval "$(python3 "$root/scripts/reaper.py" guard $$)"
B="${BENCH_BUILD:-$root/build-bench}"
DUR="${BENCH_DURATION:-10}"
WARM="${BENCH_WARMUP:-2}"
NREPLAY="${BENCH_REPLAYS:-200}"
QUIET_WAIT="${BENCH_QUIET_WAIT:-0}"
QUIET_LOAD="${BENCH_QUIET_LOAD:-1.5}"
ONLY="${BENCH_ONLY:-}"
SQ_TAIL="${BENCH_SQLITE_TAIL:-}"
OUT="$B/bench-out/$(date +%Y%m%d-%H%M%S)"
LUA="$root/bench/send.lua"
TCK="$(getconf CLK_TCK)"
NCPU="$(nproc)"

die() { echo "run.sh: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

# ---------------------------------------------------------------- servers
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do
    kill -TERM "$p" 2>/dev/null
  done
  for p in "${PIDS[@]}"; do
    wait "$p" 2>/dev/null
  done
}
trap cleanup EXIT

# free_port, wait_http, read_result, code_rev, start_peer
BENCH_LIB=helpers source "$root/bench/lib.sh"

# stop PID NAME: SIGTERM, wait, report a non-zero exit (a crash shows here).
stop() {
  local pid=$1 name=$2 rc
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"; rc=$?
    echo "run.sh: $name (pid $pid) had already exited with status $rc; log: $OUT/$name.log" >&2
    return 1
  fi
  kill -TERM "$pid"
  wait "$pid"; rc=$?
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" != "$pid" ] && keep+=("$p"); done
  PIDS=("${keep[@]+"${keep[@]}"}")
  [ "$rc" -eq 0 ] || echo "run.sh: $name exited with status $rc on SIGTERM; log: $OUT/$name.log" >&2
  return 0
}

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'; }
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
hwm_kb() { awk '/^VmHWM/{print $2}' "/proc/$1/status" 2>/dev/null; }
load1() { cut -d' ' -f1 /proc/loadavg; }

H_JSON=(-H 'Content-Type: application/json' -H 'A2A-Version: 1.0')
H_EXT=(-H 'A2A-Extensions: urn:once:a2a:idempotency:v1')

rpc() { # rpc PORT BODY [curl args...]
  local port=$1 body=$2
  shift 2
  curl -s --max-time 30 "http://127.0.0.1:$port/" "${H_JSON[@]}" "$@" -d "$body"
}

stats() { # stats PORT -> "registered executed replayed storeErrors"
  rpc "$1" '{"jsonrpc":"2.0","id":1,"method":"once/admin/stats"}' |
    python3 -c 'import json,sys; e=json.load(sys.stdin)["result"]["engine"]; print(e["registered"], e["executedTurns"], e["replayed"], e["storeErrors"])'
}

task_id() { # the task id of a SendMessage answer on stdin, or its error message
  python3 -c 'import json,sys
r=json.load(sys.stdin)
print(r["result"]["task"]["id"] if "result" in r else r.get("error",{}).get("message"))'
}

# ---------------------------------------------------------------- results
declare -A R   # R[row.key] = value
ROWS=()

# drive NAME PORT PID MODE WAIT [ONCED]: warm-up, then the measured wrk run;
# fills R. ONCED=1: snapshot onced's engine counters just before measuring.
drive() {
  local name=$1 port=$2 pid=$3 mode=$4 wait=$5 onced=${6:-0}
  local pfx
  pfx="b$(date +%s%N | tail -c 10)$RANDOM"
  local wpfx="${pfx}w"
  [ "$mode" = replay ] && pfx="$REPLAY_ID" && wpfx="$REPLAY_ID"
  log "$name: warm-up ${WARM}s"
  wrk -t2 -c64 -d"${WARM}s" -s "$LUA" "http://127.0.0.1:$port/" -- "$mode" "$wait" "$wpfx" \
    >"$OUT/$name.warmup.wrk" 2>&1
  R[$name.warm_requests]=$(sed -n 's/^RESULT requests=\([0-9]*\).*/\1/p' "$OUT/$name.warmup.wrk")
  log "$name: ${DUR}s measured (load1 $(load1))"
  R[$name.load]=$(load1)
  if [ "$onced" = 1 ]; then
    read -r "R[$name.reg0]" "R[$name.exe0]" "R[$name.rep0]" _ <<<"$(stats "$port")"
  fi
  local s0 b0 t0 t1
  s0=$(cpu_ticks "$pid"); b0=$(busy_ticks); t0=$(date +%s%N)
  # fsync/fdatasync calls by the server during the window (tracepoints;
  # root and perf needed, else "-"): what a durable row really paid
  local pstat="" perf_pid=""
  if [ "$onced" = 1 ] && command -v perf >/dev/null; then
    pstat="$OUT/$name.perfstat"
    perf stat -x, -e syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync -p "$pid" \
      -o "$pstat" -- sleep "$DUR" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  local TIMEFORMAT='%U %S'
  { time wrk -t2 -c64 -d"${DUR}s" --timeout 5s --latency -s "$LUA" \
      "http://127.0.0.1:$port/" -- "$mode" "$wait" "$pfx" >"$OUT/$name.wrk" 2>&1; } \
    2>"$OUT/$name.wrktime"
  t1=$(date +%s%N)
  if [ -n "$pstat" ]; then
    wait "$perf_pid"
    R[$name.fsyncs]=$(awk -F, '/sys_enter_f/ {n += $1; ok = 1} END{ if (ok) print n; else print "-"}' \
      "$pstat" 2>/dev/null)
  fi
  local s1 b1
  s1=$(cpu_ticks "$pid"); b1=$(busy_ticks)
  read_result "$OUT/$name.wrk" "$name" ||
    { echo "run.sh: $name: wrk printed no RESULT:" >&2; cat "$OUT/$name.wrk" >&2; }
  local wu ws
  read -r wu ws <"$OUT/$name.wrktime"
  local el_s srv_s wrk_s busy_s
  el_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b-a)/1e9}')
  srv_s=$(awk -v a="$s0" -v b="$s1" -v t="$TCK" 'BEGIN{printf "%.3f", (b-a)/t}')
  wrk_s=$(awk -v u="$wu" -v s="$ws" 'BEGIN{printf "%.3f", u+s}')
  busy_s=$(awk -v a="$b0" -v b="$b1" -v t="$TCK" 'BEGIN{printf "%.3f", (b-a)/t}')
  R[$name.srv_us]=$(awk -v c="$srv_s" -v n="${R[$name.requests]:-0}" \
    'BEGIN{ if (n > 0) printf "%.0f", c*1e6/n; else print "-"}')
  R[$name.srv_cpu]=$(awk -v c="$srv_s" -v e="$el_s" 'BEGIN{printf "%.0f", 100*c/e}')
  R[$name.wrk_cpu]=$(awk -v c="$wrk_s" -v e="$el_s" 'BEGIN{printf "%.0f", 100*c/e}')
  R[$name.other_cpu]=$(awk -v b="$busy_s" -v s="$srv_s" -v w="$wrk_s" -v e="$el_s" \
    'BEGIN{o = b - s - w; if (o < 0) o = 0; printf "%.0f", 100*o/e}')
  if grep -q '^SAMPLE' "$OUT/$name.wrk"; then
    R[$name.sample]=$(grep '^SAMPLE' "$OUT/$name.wrk" | head -1)
  fi
  ROWS+=("$name")
}

# after_onced NAME PORT: engine counters for the row just measured (from the
# snapshot drive took before it): tasks registered, replays; for
# returnImmediately rows, how many turns were still queued when wrk stopped,
# how long they took to drain, and the completion rate over measured + drain.
after_onced() {
  local name=$1 port=$2
  local reg exe rep err
  read -r reg exe rep err <<<"$(stats "$port")"
  R[$name.registered]=$((reg - R[$name.reg0]))
  R[$name.replayed]=$((rep - R[$name.rep0]))
  R[$name.backlog]=$((reg - exe))
  local t0 i
  t0=$(date +%s%N)
  for ((i = 0; i < 600 && reg != exe; i++)); do
    sleep 0.1
    read -r reg exe rep err <<<"$(stats "$port")"
  done
  R[$name.drain_s]=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}')
  [ "$reg" = "$exe" ] || R[$name.drain_s]="> ${R[$name.drain_s]}"
  R[$name.done_rate]=$(awk -v n="$((exe - R[$name.exe0]))" -v s="${R[$name.seconds]:-0}" \
    -v d="${R[$name.drain_s]#> }" 'BEGIN{ if (s + d > 0) printf "%.0f", n/(s+d); else print "-"}')
  R[$name.store_errors]=$err
  R[$name.tasks_total]=$reg
}

# every: true unless BENCH_ONLY narrows the run to one store's rows.
every() { [ -z "$ONLY" ]; }

# ---------------------------------------------------------------- start
case "$ONLY" in "" | sqlite) ;; *) die "BENCH_ONLY must be empty or sqlite, not $ONLY" ;; esac
command -v wrk >/dev/null || die "wrk is missing (bash scripts/deps.sh)"
command -v python3 >/dev/null || die "python3 is missing (bash scripts/deps.sh)"
command -v valgrind >/dev/null || die "valgrind is missing (bash scripts/deps.sh)"
[ -d "$root/tests/interop/node_modules/@a2a-js/sdk" ] || bash "$root/scripts/deps.sh"

if [ "$QUIET_WAIT" -gt 0 ]; then
  waited=0
  while awk -v l="$(load1)" -v q="$QUIET_LOAD" 'BEGIN{exit !(l >= q)}' && [ "$waited" -lt "$QUIET_WAIT" ]; do
    log "load1 $(load1) >= $QUIET_LOAD; waiting (${waited}s of ${QUIET_WAIT}s)"
    sleep 30
    waited=$((waited + 30))
  done
fi
START_UPTIME="$(uptime)"
START_TIME=$(date +%s)

mkdir -p "$OUT"
if [ "${BENCH_SKIP_BUILD:-0}" = 1 ]; then
  [ -x "$B/onced" ] || die "BENCH_SKIP_BUILD=1 but $B/onced does not exist"
  log "using the existing $B/onced (BENCH_SKIP_BUILD=1)"
else
  log "build (Release) in $B"
  cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
    cmake --build "$B" -j2 --target onced >>"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log" >&2; die "build failed (log: $OUT/build.log)"; }
fi
CFLAGS_B=(-std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes
  -Wmissing-prototypes -Wvla -Wformat=2)
mkdir -p "$B/bench"
# shellcheck disable=SC2046
gcc "${CFLAGS_B[@]}" -o "$B/bench/mhd_hello" "$root/bench/mhd_hello.c" \
  $(pkg-config --cflags --libs libmicrohttpd) -lpthread 2>>"$OUT/build.log" ||
  die "mhd_hello build failed"
gcc "${CFLAGS_B[@]}" -o "$B/bench/sqlite_ceiling" "$root/bench/sqlite_ceiling.c" -lsqlite3 \
  2>>"$OUT/build.log" || die "sqlite_ceiling build failed"
ONCED="$B/onced"
DATA="$OUT/data"   # on the same disk as the build dir (not tmpfs): fsync is real
mkdir -p "$DATA"

# ---------------------------------------------------------------- ceilings
every && for variant in inline handoff; do
  workers=0
  [ "$variant" = handoff ] && workers=64
  port=$(free_port)
  "$B/bench/mhd_hello" "$port" 2 "$workers" >"$OUT/mhd-$variant.log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  wait_http "$port" "$pid" || die "mhd_hello did not start"
  drive "mhd-$variant" "$port" "$pid" hello ri
  R[mhd-$variant.hwm]=$(hwm_kb "$pid")
  stop "$pid" "mhd-$variant"
done

# ---------------------------------------------------------------- onced
# onced_row ROW STORE MODE WAIT [PREFILL_S]: one fresh onced process per
# row, so every row starts from an empty store -- or, with PREFILL_S, from
# the tasks that PREFILL_S seconds of untimed new-task load left (then
# drained), to show how a row changes as the store fills. Then warm-up +
# measured run, engine counters, VmHWM, clean stop.
onced_row() {
  local name=$1 store=$2 mode=$3 wait=$4 prefill=${5:-0} port pid
  port=$(free_port)
  # --log-level warn: the rows measure serving, as they did before onced
  # had a request log (one line per call at the default level, info).
  "$ONCED" --drain-delay 0 --listen "127.0.0.1:$port" --store "$store" --test-admin --log-level warn \
    >"$OUT/$name.log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  wait_http "$port" "$pid" || { tail "$OUT/$name.log" >&2; die "onced ($store) did not start"; }
  if [ "$prefill" -gt 0 ]; then
    log "$name: prefill ${prefill}s (untimed)"
    wrk -t2 -c64 -d"${prefill}s" -s "$LUA" "http://127.0.0.1:$port/" -- new ri "p$RANDOM$RANDOM" \
      >"$OUT/$name.prefill.wrk" 2>&1
    local reg exe i
    read -r reg exe _ _ <<<"$(stats "$port")"
    for ((i = 0; i < 600 && reg != exe; i++)); do
      sleep 0.1
      read -r reg exe _ _ <<<"$(stats "$port")"
    done
  fi
  if [ "$mode" = replay ]; then
    REPLAY_ID="replay-$name-$RANDOM"
    local first
    first=$(rpc "$port" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"$REPLAY_ID\",\"taskId\":\"$REPLAY_ID\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hello\"}]}}}" "${H_EXT[@]}")
    echo "$first" >"$OUT/$name.first.json"
    echo "$first" | grep -q TASK_STATE_COMPLETED ||
      echo "run.sh: $name: the task to replay did not complete: $first" >&2
  fi
  drive "$name" "$port" "$pid" "$mode" "$wait" 1
  after_onced "$name" "$port"
  R[$name.hwm]=$(hwm_kb "$pid")
  stop "$pid" "$name" || R[$name.crashed]=1
  # The row's files go now: a deleted file's dirty pages are dropped, not
  # written back while the next row runs.
  rm -f "$DATA"/*
  grep -v -e '^onced listening' -e 'shutting down' -e 'no --push-secret' "$OUT/$name.log" \
    >"$OUT/$name.unexpected.log"
}

if every; then
  onced_row mem-new-ri memory: new ri
  onced_row mem-new-block memory: new block
  onced_row mem-replay memory: replay block
  onced_row mem-new-block-filled memory: new block 8
fi

# The fsync ceiling right before and right after onced's sqlite rows: the
# disk is shared, and its speed moves between minutes.
ceiling() { # ceiling NAME SECONDS ROWS -> rows/s
  "$B/bench/sqlite_ceiling" "$DATA/$1.db" "$2" "$3" | tee -a "$OUT/sqlite-ceiling.txt" |
    sed 's/.*rows_per_s=\([0-9]*\).*/\1/'
}
log "sqlite ceiling before: 1 row/txn (3 s), 100 rows/txn (2 s); WAL, synchronous=FULL"
CEIL1A=$(ceiling ceiling1a 3 1)
CEIL100=$(ceiling ceiling100 2 100)
onced_row sqlite-new-ri "sqlite:$DATA/new-ri.db$SQ_TAIL" new ri
onced_row sqlite-new-block "sqlite:$DATA/new-block.db$SQ_TAIL" new block
onced_row sqlite-uuid-block "sqlite:$DATA/uuid-block.db$SQ_TAIL" uuid block
onced_row sqlite-replay "sqlite:$DATA/replay.db$SQ_TAIL" replay block
onced_row sqlite-new-block-filled "sqlite:$DATA/filled.db$SQ_TAIL" new block 8
log "sqlite ceiling after: 1 row/txn (3 s)"
CEIL1B=$(ceiling ceiling1b 3 1)
[ -n "$CEIL1A" ] && [ -n "$CEIL1B" ] && [ -n "$CEIL100" ] || die "sqlite_ceiling failed"
CEIL1=$(( (CEIL1A + CEIL1B) / 2 ))

# ---------------------------------------------------------------- peer
# peer_row ROW WAIT: one fresh node process per row, like onced.
peer_row() {
  local name=$1 wait=$2
  start_peer "$name"
  drive "$name" "$PORT" "$PID" fresh "$wait"
  R[$name.hwm]=$(hwm_kb "$PID")
  stop "$PID" "$name"
}
peer_row peer-fresh-ri ri
peer_row peer-fresh-block block

# No dedup in the peer: the same message (same messageId) sent twice.
dup_body='{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"dup-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
start_peer peer-dedup
pa=$(rpc "$PORT" "$dup_body" | task_id)
pb=$(rpc "$PORT" "$dup_body" | task_id)
if [ "$pa" != "$pb" ]; then PEER_DEDUP="no dedup: the same messageId sent twice made two tasks ($pa, $pb)"
else PEER_DEDUP="dedup: the same messageId sent twice returned one task ($pa)"; fi
log "peer: $PEER_DEDUP"
stop "$PID" peer-dedup

# The same check against onced (plain A2A 1.0: no taskId, no extension).
port=$(free_port)
"$ONCED" --drain-delay 0 --listen "127.0.0.1:$port" --store memory: --log-level warn >"$OUT/onced-dedup.log" 2>&1 &
pid=$!; PIDS+=("$pid")
wait_http "$port" "$pid" || die "onced did not start"
oa=$(rpc "$port" "$dup_body" | task_id)
ob=$(rpc "$port" "$dup_body" -D "$OUT/onced-dedup.headers" | task_id)
orep=$(grep -i '^Idempotent-Replayed' "$OUT/onced-dedup.headers" | tr -d '\r')
ONCED_DEDUP="the same messageId sent twice returned one task ($oa, $ob; ${orep:-no replay header})"
stop "$pid" onced-dedup

# ---------------------------------------------------------------- callgrind
# Instructions per replayed SendMessage, server side (HTTP + JSON-RPC +
# engine + store), by callgrind: instrumentation off during start-up; on,
# 20 uncounted requests (first translations), zeroed, NREPLAY requests over
# one keep-alive connection, dump; then an idle window as long as those
# took, dump (background threads: sweeper, timers); per request =
# (window - idle) / NREPLAY. The same for mhd_hello (handoff) with the same
# body: the HTTP layer alone, in onced's thread model.
# callgrind_count TAG EXPECT CMD...: EXPECT is the -w line every answer must
# give; @PORT@ in CMD's arguments becomes the port.
callgrind_count() {
  local tag=$1 expect=$2 port pid a
  shift 2
  port=$(free_port)
  local cmd=()
  for a in "$@"; do cmd+=("${a//@PORT@/$port}"); done
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg-$tag.%p.out" \
    "${cmd[@]}" >"$OUT/cg-$tag.log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  wait_http "$port" "$pid" || { tail "$OUT/cg-$tag.log" >&2; die "$tag under callgrind did not start"; }
  local id="cg-$tag" body
  body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"$id\",\"taskId\":\"$id\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hello\"}]}}}"
  rpc "$port" "$body" "${H_EXT[@]}" >/dev/null   # registers the task (onced)
  printf '%s\n' "$body" >"$OUT/cg-$tag.body"
  local cfg="$OUT/cg-$tag.curlrc" i
  : >"$cfg"
  for ((i = 0; i < NREPLAY; i++)); do echo "url = \"http://127.0.0.1:$port/\"" >>"$cfg"; done
  # (-o applies to one URL only: bodies go to the file too, one per line)
  local curl_args=(-s -w '\ncode=%{http_code} replayed=%header{idempotent-replayed}\n'
    "${H_JSON[@]}" "${H_EXT[@]}" --data-binary "@$OUT/cg-$tag.body")
  callgrind_control -i on "$pid" >/dev/null 2>&1
  curl -K <(head -20 "$cfg") "${curl_args[@]}" >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  local t0 t1
  t0=$(date +%s%N)
  curl -K "$cfg" "${curl_args[@]}" >"$OUT/cg-$tag.codes"
  t1=$(date +%s%N)
  callgrind_control -d replays "$pid" >/dev/null 2>&1
  sleep "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b-a)/1e9}')"
  callgrind_control -d idle "$pid" >/dev/null 2>&1
  stop "$pid" "cg-$tag" || true
  local ok rf idf ir_r ir_i
  ok=$(grep -c "^$expect\$" "$OUT/cg-$tag.codes")
  rf=$(grep -l '^desc: Trigger: .*replays' "$OUT"/cg-"$tag".*.out* 2>/dev/null | head -1)
  idf=$(grep -l '^desc: Trigger: .*idle' "$OUT"/cg-"$tag".*.out* 2>/dev/null | head -1)
  ir_r=$(awk '/^(summary|totals):/{print $2; exit}' "$rf" 2>/dev/null)
  ir_i=$(awk '/^(summary|totals):/{print $2; exit}' "$idf" 2>/dev/null)
  R[cg-$tag.ok]=$ok
  R[cg-$tag.ir_replays]=${ir_r:-?}
  R[cg-$tag.ir_idle]=${ir_i:-?}
  R[cg-$tag.ir_per_req]=$(awk -v r="${ir_r:-0}" -v i="${ir_i:-0}" -v n="$NREPLAY" \
    'BEGIN{ if (r > 0) printf "%.0f", (r - i) / n; else print "?"}')
  if [ -n "$rf" ]; then
    callgrind_annotate --inclusive=yes "$rf" 2>/dev/null | head -60 >"$OUT/cg-$tag.top.txt"
    callgrind_annotate --tree=caller "$rf" >"$OUT/cg-$tag.callers.txt" 2>/dev/null
    # valgrind counts each iteration of memset's `rep stosb` as an
    # instruction, so zeroing is over-weighted: show it apart.
    local ms
    ms=$(callgrind_annotate "$rf" 2>/dev/null | awk '/memset/ {gsub(",", "", $1); s += $1} END{print s+0}')
    R[cg-$tag.memset_per_req]=$(awk -v m="$ms" -v n="$NREPLAY" 'BEGIN{printf "%.0f", m/n}')
  fi
}
CG=(sqlite)
every && CG=(mem sqlite hello)
log "callgrind: $NREPLAY replays or posts each on: ${CG[*]}"
every && callgrind_count mem 'code=200 replayed=true' "$ONCED" --drain-delay 0 --listen 127.0.0.1:@PORT@ --store memory:
callgrind_count sqlite 'code=200 replayed=true' "$ONCED" --drain-delay 0 --listen 127.0.0.1:@PORT@ \
  --store "sqlite:$DATA/cg.db$SQ_TAIL"
every && callgrind_count hello 'code=200 replayed=' "$B/bench/mhd_hello" @PORT@ 2 64

END_UPTIME="$(uptime)"
rm -rf "$DATA"   # the SQLite files: hundreds of MB, no longer needed
ELAPSED=$(($(date +%s) - START_TIME))

# ---------------------------------------------------------------- report
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a/b}'; }
errs() {
  local n=$1 s="" k
  for k in non2xx timeout connect read write rpc_err not_done not_replayed; do
    local v=${R[$n.$k]:-?}
    [ "$v" != 0 ] && s+="$k=$v "
  done
  echo "${s:-0}"
}
peer_for() { case $1 in *-ri) echo peer-fresh-ri ;; *) echo peer-fresh-block ;; esac; }

echo
echo "## bench/run.sh$([ -n "$ONLY" ] && echo " (BENCH_ONLY=$ONLY)")$([ -n "$SQ_TAIL" ] && echo " (sqlite URLs end in $SQ_TAIL)") $(date -u +%Y-%m-%dT%H:%MZ) — ${BENCH_SOURCE:-commit $(code_rev)}"
echo
echo "Machine: $NCPU CPUs ($(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)), $(uname -sr)."
echo "Load: start \`${START_UPTIME# }\`; end \`${END_UPTIME# }\`. Elapsed ${ELAPSED}s."
echo "wrk -t2 -c64, ${WARM}s warm-up discarded, ${DUR}s measured, --latency; loopback; wrk and the server share the $NCPU CPUs."
echo "Peer: $PEER_VERSION"
echo
echo "| row | req/s | p50 ms | p99 ms | errors | server CPU µs/req | CPU % srv/wrk/other | × peer | × mhd handoff | × mhd inline | × sqlite 1/txn | × sqlite 100/txn |"
echo "|---|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---:|"
for n in "${ROWS[@]}"; do
  rps=${R[$n.rps]:-}
  xp="-" xh="-" xi="-" x1="-" x100="-"
  case $n in
    mem-* | sqlite-*)
      xp=$(ratio "$rps" "${R[$(peer_for "$n").rps]:-}")
      xh=$(ratio "$rps" "${R[mhd-handoff.rps]:-}")
      xi=$(ratio "$rps" "${R[mhd-inline.rps]:-}") ;;
    peer-*)
      xh=$(ratio "$rps" "${R[mhd-handoff.rps]:-}")
      xi=$(ratio "$rps" "${R[mhd-inline.rps]:-}") ;;
  esac
  case $n in sqlite-new-ri | sqlite-new-block) x1=$(ratio "$rps" "$CEIL1"); x100=$(ratio "$rps" "$CEIL100") ;; esac
  printf '| %s | %s | %s | %s | %s | %s | %s/%s/%s | %s | %s | %s | %s | %s |\n' "$n" "$rps" \
    "${R[$n.p50_ms]:-}" "${R[$n.p99_ms]:-}" "$(errs "$n")" "${R[$n.srv_us]:-}" \
    "${R[$n.srv_cpu]:-}" "${R[$n.wrk_cpu]:-}" "${R[$n.other_cpu]:-}" "$xp" "$xh" "$xi" "$x1" "$x100"
done
printf '| sqlite-ceiling-1/txn | %s rows/s (mean of %s before, %s after) | | | | | | | | | 1.00 | |\n' \
  "$CEIL1" "$CEIL1A" "$CEIL1B"
printf '| sqlite-ceiling-100/txn | %s rows/s | | | | | | | | | | 1.00 |\n' "$CEIL100"
echo
mib() { awk -v k="${1:-0}" 'BEGIN{ if (k > 0) printf "%.0f", k/1024; else print "-"}'; }
echo "Each server row ran in its own fresh process. Tasks = tasks the process held at the end"
echo "(onced: registered, from its counters; peer: warm-up + measured requests, each a new task)."
echo
echo "| row | wrk requests | tasks at row start (after warm-up) | tasks in process at end | replays counted | turns queued when wrk stopped | drain s | completed/s over measured + drain | fsyncs in window (per new task) | store errors | VmHWM MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for n in "${ROWS[@]}"; do
  case $n in
    mem-* | sqlite-*)
      fs=${R[$n.fsyncs]:--}
      [ "$fs" != - ] && [ "${R[$n.registered]:-0}" -gt 0 ] &&
        fs="$fs ($(awk -v f="$fs" -v t="${R[$n.registered]}" 'BEGIN{printf "%.3f", f/t}'))"
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "${R[$n.requests]:-}" \
        "${R[$n.reg0]:-}" "${R[$n.tasks_total]:-}" "${R[$n.replayed]:-}" "${R[$n.backlog]:-}" \
        "${R[$n.drain_s]:-}" "${R[$n.done_rate]:-}" "$fs" "${R[$n.store_errors]:-}" \
        "$(mib "${R[$n.hwm]:-}")" ;;
    peer-*)
      printf '| %s | %s | %s | %s | - | - | - | - | - | - | %s |\n' "$n" "${R[$n.requests]:-}" \
        "${R[$n.warm_requests]:-}" \
        "$(( ${R[$n.warm_requests]:-0} + ${R[$n.requests]:-0} ))" "$(mib "${R[$n.hwm]:-}")" ;;
    *)
      printf '| %s | %s | - | - | - | - | - | - | - | - | %s |\n' "$n" "${R[$n.requests]:-}" \
        "$(mib "${R[$n.hwm]:-}")" ;;
  esac
done
echo
echo "Peer dedup check: $PEER_DEDUP. onced, same request: $ONCED_DEDUP."
echo
echo "| callgrind, server side | instructions / request | of which memset | × mhd-handoff | answers as expected | Ir counted window | Ir idle window |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for t in "${CG[@]}"; do
  case $t in
    hello) label="mhd_hello handoff, same POST" ;;
    *) label="onced $t, replayed SendMessage" ;;
  esac
  printf '| %s | %s | %s | %s | %s/%s | %s | %s |\n' "$label" "${R[cg-$t.ir_per_req]:-}" \
    "${R[cg-$t.memset_per_req]:-}" "$(ratio "${R[cg-$t.ir_per_req]:-}" "${R[cg-hello.ir_per_req]:-}")" \
    "${R[cg-$t.ok]:-}" "$NREPLAY" "${R[cg-$t.ir_replays]:-}" "${R[cg-$t.ir_idle]:-}"
done
echo
for n in "${ROWS[@]}"; do
  [ -n "${R[$n.sample]:-}" ] && echo "First bad answer in $n: ${R[$n.sample]}"
done
for n in "${ROWS[@]}"; do
  [ -n "${R[$n.crashed]:-}" ] && echo "$n: the server was not running at the end of its row: see $OUT/$n.log"
  [ -s "$OUT/$n.unexpected.log" ] && echo "$n: onced logged: $(head -5 "$OUT/$n.unexpected.log" | tr '\n' ' ')"
done
echo "Raw output: $OUT"
