#!/usr/bin/env bash
# bench/grpc.sh -- the gRPC binding's row: new blocking tasks per second
# over gRPC as a ratio to JSON-RPC, on the same store and in the same run,
# and against @a2a-js/sdk 1.3.0's gRPC server on the same machine.
#
#   bash bench/grpc.sh
#
# Every row is its own fresh server process on 127.0.0.1, an empty store,
# driven closed-loop by 64 connections for BENCH_WARMUP s (discarded) then
# BENCH_DURATION s (measured). Per store (memory:, then sqlite: at its
# default synchronous=FULL, the file on the build dir's disk), onced with
# --listen and --grpc-listen:
#   ST-jsonrpc-wrk  wrk -t2 -c64 with bench/send.lua "new block": the
#                   JSON-RPC row exactly as bench/run.sh drives it
#   ST-jsonrpc      grpc_load -m jsonrpc -k new: the same request over
#                   HTTP/1.1 keep-alive from grpc_load's threads
#   ST-grpc         grpc_load -m grpc -k new: the same request over gRPC
# and node bench/peer_server.mjs PORT GRPC_PORT (@a2a-js/sdk 1.3.0
# DefaultRequestHandler + InMemoryTaskStore, echo executor):
#   peer-jsonrpc    grpc_load -m jsonrpc -k fresh
#   peer-grpc       grpc_load -m grpc -k fresh (the peer mints task IDs)
# grpc_load (tests/tools/grpc_load.c) is one client for both bindings: two
# threads, each one epoll loop over half the connections, one call in flight
# per connection, distinct IDs, every answer checked (a completed Task with
# the sent taskId); only correct answers count. Before each row the script waits (up to BENCH_QUIET_WAIT
# s) for the 1-minute load average to fall below BENCH_QUIET_LOAD and
# records it. Per row also the server's and the client's CPU per call and,
# with perf, the server's fsync + fdatasync calls per call. Prints a markdown table on stdout; raw output and server logs
# in $B/bench-out/grpc-<date-time>/ (SQLite files deleted after each row).
#
# With BENCH_CG_N=N (0: off) it then counts instructions per new blocking
# task for both bindings in one onced under valgrind --tool=callgrind
# (memory:?cold=off as bench/callgrind.sh, instrumentation on after
# start-up, all threads): 20 uncounted calls per binding, then per binding
# counters zeroed, N calls on one connection (grpc_load -c 1 -n N), dump,
# an idle window as long, dump; per call = (window - idle) / N. The
# costliest functions (inclusive) of each window follow the table.
# BENCH_CG_ONLY=1: only that (instruction counts do not depend on the
# machine's load).
#
# Environment (all optional): BENCH_DURATION (10), BENCH_WARMUP (2),
# BENCH_CONNS (64), BENCH_QUIET_WAIT (600), BENCH_QUIET_LOAD (1.5),
# BENCH_STORES ("memory sqlite"), BENCH_CG_N (0), BENCH_CG_ONLY (0),
# BENCH_CG_TOP (20), BENCH_BUILD / BENCH_SKIP_BUILD / BENCH_ONCED as in
# rss.sh (grpc_load is $B/tools/grpc_load, built with onced).
TAG=grpc
source "$(dirname "$0")/lib.sh"
DUR="${BENCH_DURATION:-10}"
WARM="${BENCH_WARMUP:-2}"
CONNS="${BENCH_CONNS:-64}"
QUIET_WAIT="${BENCH_QUIET_WAIT:-600}"
QUIET_LOAD="${BENCH_QUIET_LOAD:-1.5}"
STORES="${BENCH_STORES:-memory sqlite}"
CG_N="${BENCH_CG_N:-0}"
CG_ONLY="${BENCH_CG_ONLY:-0}"
CG_TOP="${BENCH_CG_TOP:-20}"
LUA="$root/bench/send.lua"
TCK="$(getconf CLK_TCK)"
DATA="$OUT/data"
mkdir -p "$DATA"
LOADGEN="$B/tools/grpc_load"
if [ "${BENCH_SKIP_BUILD:-0}" != 1 ] || [ ! -x "$LOADGEN" ]; then
  log "build grpc_load in $B"
  cmake --build "$B" -j2 --target grpc_load >>"$OUT/build.log" 2>&1 ||
    die "grpc_load build failed (log: $OUT/build.log)"
fi
[ -x "$LOADGEN" ] || die "no grpc_load at $LOADGEN"

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'; }

# wait_tcp PORT PID: until something accepts on 127.0.0.1:PORT (60 s max).
wait_tcp() {
  local port=$1 pid=$2 i
  for ((i = 0; i < 600; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# quiet: wait up to QUIET_WAIT s for the 1-minute load average < QUIET_LOAD.
quiet() {
  local t0=$SECONDS
  while awk -v l="$(load1)" -v q="$QUIET_LOAD" 'BEGIN{exit !(l >= q)}' &&
    ((SECONDS - t0 < QUIET_WAIT)); do
    sleep 5
  done
  ((SECONDS - t0 > 0)) && log "waited $((SECONDS - t0))s for load $(load1) < $QUIET_LOAD"
  return 0
}

declare -A R
ROWS=()

# perf_start NAME PID SECS / perf_end NAME CALLS: fsync + fdatasync calls by
# the server over SECS (perf's syscall tracepoints; "-" without perf or the
# right to use it), per call: how many tasks one durable commit carried.
perf_start() {
  PERF_PID=""
  command -v perf >/dev/null || return 0
  perf stat -x, -e syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync -p "$2" \
    -o "$OUT/$1.perfstat" -- sleep "$3" >/dev/null 2>&1 &
  PERF_PID=$!
}
perf_end() {
  R[$1.fsync]="-"
  [ -n "$PERF_PID" ] || return 0
  wait "$PERF_PID"
  R[$1.fsync]=$(awk -F, -v n="$2" '/sys_enter_f/ {s += $1; ok = 1}
    END { if (ok && n > 0) printf "%.3f", s / n; else print "-" }' "$OUT/$1.perfstat" 2>/dev/null)
}

# cpu_cols NAME S0 S1 T0 T1 CALLS: the server's CPU (ticks S0..S1) and the
# client's (bash time in $OUT/NAME.time) per call made, and their shares of
# one CPU over T0..T1 (ns); then NAME joins the table.
cpu_cols() {
  local name=$1 s0=$2 s1=$3 t0=$4 t1=$5 calls=$6 cu cs
  read -r cu cs <"$OUT/$name.time"
  R[$name.srv_us]=$(awk -v a="$s0" -v b="$s1" -v t="$TCK" -v n="$calls" \
    'BEGIN{ if (n > 0) printf "%.0f", (b-a)/t*1e6/n; else print "-"}')
  R[$name.cli_us]=$(awk -v u="$cu" -v s="$cs" -v n="$calls" \
    'BEGIN{ if (n > 0) printf "%.1f", (u+s)*1e6/n; else print "-"}')
  R[$name.cpu]=$(awk -v a="$s0" -v b="$s1" -v t="$TCK" -v u="$cu" -v s="$cs" -v t0="$t0" -v t1="$t1" \
    'BEGIN{e=(t1-t0)/1e9; printf "%.0f/%.0f", 100*(b-a)/t/e, 100*(u+s)/e}')
  ROWS+=("$name")
}

# measure NAME PID CMD...: quiet, then run CMD (the warm-up is inside it),
# taking the server's CPU over the whole run; parses the RESULT line.
measure() {
  local name=$1 pid=$2
  shift 2
  quiet
  R[$name.load]=$(load1)
  log "$name: ${WARM}s + ${DUR}s (load1 ${R[$name.load]})"
  local s0 s1 t0 t1
  perf_start "$name" "$pid" "$(awk -v a="$WARM" -v b="$DUR" 'BEGIN{print a + b}')"
  s0=$(cpu_ticks "$pid"); t0=$(date +%s%N)
  local TIMEFORMAT='%U %S'
  { time "$@" >"$OUT/$name.out" 2>&1; } 2>"$OUT/$name.time"
  t1=$(date +%s%N); s1=$(cpu_ticks "$pid")
  echo "$*" >"$OUT/$name.cmd"
  local line kv
  line=$(grep '^RESULT' "$OUT/$name.out")
  [ -n "$line" ] || { echo "grpc.sh: $name printed no RESULT:" >&2; cat "$OUT/$name.out" >&2; }
  for kv in ${line#RESULT }; do R[$name.${kv%%=*}]=${kv#*=}; done
  R[$name.sample]=$(grep '^SAMPLE' "$OUT/$name.out" | head -1)
  # CPU and fsyncs over warm-up + window (grpc_load runs both in one process)
  local calls=$((${R[$name.ok]:-0} + ${R[$name.errors]:-0} + ${R[$name.warm_ok]:-0} + ${R[$name.warm_errors]:-0}))
  perf_end "$name" "$calls"
  cpu_cols "$name" "$s0" "$s1" "$t0" "$t1" "$calls"
}

# wrk_row NAME PORT PID: the JSON-RPC row as bench/run.sh drives it; the
# RESULT line of send.lua, mapped onto grpc_load's keys.
wrk_row() {
  local name=$1 port=$2 pid=$3 pfx="w$RANDOM$RANDOM"
  quiet
  R[$name.load]=$(load1)
  log "$name: wrk ${WARM}s + ${DUR}s (load1 ${R[$name.load]})"
  wrk -t2 -c"$CONNS" -d"${WARM}s" -s "$LUA" "http://127.0.0.1:$port/" -- new block "${pfx}w" \
    >"$OUT/$name.warmup.wrk" 2>&1
  local s0 s1 t0 t1
  perf_start "$name" "$pid" "$DUR"
  s0=$(cpu_ticks "$pid"); t0=$(date +%s%N)
  local TIMEFORMAT='%U %S'
  { time wrk -t2 -c"$CONNS" -d"${DUR}s" --timeout 5s --latency -s "$LUA" \
      "http://127.0.0.1:$port/" -- new block "$pfx" >"$OUT/$name.wrk" 2>&1; } 2>"$OUT/$name.time"
  t1=$(date +%s%N); s1=$(cpu_ticks "$pid")
  local line kv
  line=$(grep '^RESULT' "$OUT/$name.wrk")
  declare -A W=()
  for kv in ${line#RESULT }; do W[${kv%%=*}]=${kv#*=}; done
  R[$name.ok]=${W[ok]:-0}
  R[$name.rps]=$(awk -v o="${W[ok]:-0}" -v s="${W[seconds]:-1}" 'BEGIN{printf "%.0f", o/s}')
  R[$name.errors]=$(( ${W[requests]:-0} - ${W[ok]:-0} + ${W[connect]:-0} + ${W[read]:-0} + ${W[write]:-0} + ${W[timeout]:-0} ))
  R[$name.p50_ms]=${W[p50_ms]:-}
  R[$name.p99_ms]=${W[p99_ms]:-}
  R[$name.sample]=$(grep '^SAMPLE' "$OUT/$name.wrk" | head -1)
  perf_end "$name" "${W[requests]:-0}"
  cpu_cols "$name" "$s0" "$s1" "$t0" "$t1" "${W[requests]:-0}"
}

# A fresh onced with both listeners; sets PORT, GPORT, PID.
onced_up() {
  local name=$1 store=$2
  GPORT=$(free_port)
  start_onced "$name" --store "$store" --grpc-listen "127.0.0.1:$GPORT"
  wait_tcp "$GPORT" "$PID" || die "onced ($name): no gRPC listener on $GPORT"
}

# callgrind_rows: the BENCH_CG_N section (see the top); sets CG_TABLE.
callgrind_rows() {
  local port gport pid b ok t0 t1 ir ii f
  port=$(free_port); gport=$(free_port)
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg.%p.out" \
    "$ONCED" --drain-delay 0 --listen "127.0.0.1:$port" --grpc-listen "127.0.0.1:$gport" \
    --store "memory:?cold=off" --log-level warn >"$OUT/cg.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  wait_http "$port" "$pid" && wait_tcp "$gport" "$pid" || { tail "$OUT/cg.log" >&2; die "onced under callgrind did not start"; }
  callgrind_control -i on "$pid" >/dev/null 2>&1
  "$LOADGEN" -p "$port" -m jsonrpc -c 1 -n 20 -T 60000 -x cgwj >/dev/null
  "$LOADGEN" -p "$gport" -m grpc -c 1 -n 20 -T 60000 -x cgwg >/dev/null
  CG_TABLE="| binding | instructions / new blocking task | answers correct | Ir counted window | Ir idle window |"$'\n'"|---|---:|---:|---:|---:|"
  for b in jsonrpc grpc; do
    local p=$port
    [ "$b" = grpc ] && p=$gport
    callgrind_control -z "$pid" >/dev/null 2>&1
    t0=$(date +%s%N)
    "$LOADGEN" -p "$p" -m "$b" -c 1 -n "$CG_N" -T 60000 -x "cg$b$RANDOM" >"$OUT/cg-$b.out" 2>&1
    t1=$(date +%s%N)
    callgrind_control -d "$b" "$pid" >/dev/null 2>&1
    sleep "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b-a)/1e9}')"
    callgrind_control -d "$b-idle" "$pid" >/dev/null 2>&1
    ok=$(sed -n 's/^RESULT.* ok=\([0-9]*\).*/\1/p' "$OUT/cg-$b.out")
    f=$(grep -l "^desc: Trigger: .*$b\$" "$OUT"/cg.*.out* | head -1)
    ir=$(awk '/^(summary|totals):/{print $2; exit}' "$f")
    ii=$(awk '/^(summary|totals):/{print $2; exit}' "$(grep -l "^desc: Trigger: .*$b-idle\$" "$OUT"/cg.*.out* | head -1)")
    CG_TABLE+=$'\n'"| $b | $(awk -v r="${ir:-0}" -v i="${ii:-0}" -v n="$CG_N" 'BEGIN{printf "%.0f", (r-i)/n}') | ${ok:-0}/$CG_N | ${ir:-?} | ${ii:-?} |"
    callgrind_annotate --inclusive=yes --threshold=100 "$f" 2>/dev/null >"$OUT/cg-top-$b.txt"
  done
  stop "$pid" cg
}

LG=("$LOADGEN" -c "$CONNS" -d "$DUR" -w "$WARM")
PEER="-"
START="$(uptime)"
T0=$SECONDS
[ "$CG_ONLY" = 1 ] && STORES="" && ROWS_PEER=0
for st in $STORES; do
  case $st in
  memory) url() { echo "memory:"; } ;;
  sqlite) url() { echo "sqlite:$DATA/$1.db"; } ;;
  *) die "unknown store $st" ;;
  esac
  # Each row's files go when it ends: a deleted file's dirty pages are
  # dropped, not written back while the next row runs (the gRPC row, last,
  # met the writeback of the two rows before it).
  onced_up "$st-jsonrpc-wrk" "$(url jw)"
  wrk_row "$st-jsonrpc-wrk" "$PORT" "$PID"
  stop "$PID" "$st-jsonrpc-wrk"
  rm -f "$DATA"/*
  onced_up "$st-jsonrpc" "$(url j)"
  measure "$st-jsonrpc" "$PID" "${LG[@]}" -p "$PORT" -m jsonrpc -k new -x "j$RANDOM$RANDOM"
  stop "$PID" "$st-jsonrpc"
  rm -f "$DATA"/*
  onced_up "$st-grpc" "$(url g)"
  measure "$st-grpc" "$PID" "${LG[@]}" -p "$GPORT" -m grpc -k new -x "g$RANDOM$RANDOM"
  stop "$PID" "$st-grpc"
  rm -f "$DATA"/*
done

for binding in jsonrpc grpc; do
  [ "${ROWS_PEER:-1}" = 0 ] && break
  name="peer-$binding"
  PORT=$(free_port); GPORT=$(free_port)
  node "$root/bench/peer_server.mjs" "$PORT" "$GPORT" >"$OUT/$name.log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  wait_http "$PORT" "$PID" && wait_tcp "$GPORT" "$PID" ||
    { cat "$OUT/$name.log" >&2; die "peer did not start"; }
  PEER="$(head -2 "$OUT/$name.log" | tr '\n' ' ')"
  if [ "$binding" = jsonrpc ]; then p=$PORT; else p=$GPORT; fi
  measure "$name" "$PID" "${LG[@]}" -p "$p" -m "$binding" -k fresh -x "p$RANDOM$RANDOM"
  stop "$PID" "$name"
done
END="$(uptime)"
rm -rf "$DATA"
CG_TABLE=""
if [ "$CG_N" -gt 0 ]; then
  log "callgrind: $CG_N calls per binding"
  callgrind_rows
fi

ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "-"}'; }
errs() { # the error count, with its kinds when non-zero
  local n=$1
  local e=${R[$n.errors]:-?}
  if [ "$e" != 0 ] && [ -n "${R[$n.e_status]:-}" ]; then
    e="$e (status ${R[$n.e_status]}, answer ${R[$n.e_answer]}, transport ${R[$n.e_transport]})"
  fi
  echo "$e"
}

echo "### bench/grpc.sh $(date -u +%Y-%m-%dT%H:%MZ) — commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- src apps include tests/tools bench || echo '+local changes')"
echo
echo "Machine: $(nproc) CPUs, $(uname -sr). Load: start \`$START\`; end of the rows \`$END\`. Elapsed $((SECONDS - T0))s."
if [ "${#ROWS[@]}" -gt 0 ]; then
  echo "$CONNS connections, closed loop, ${WARM}s warm-up discarded, ${DUR}s measured; loopback; client and server share the CPUs."
  echo "Peer: $PEER"
  echo
  echo "| row | client | correct tasks/s | errors | p50 ms | p99 ms | server CPU µs/call | client CPU µs/call | CPU % srv/client | fsyncs / call | load1 at start | × JSON-RPC (grpc_load, same server) | × JSON-RPC (wrk, same store) | × peer gRPC |"
  echo "|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"
  for n in "${ROWS[@]}"; do
    client="grpc_load -m ${R[$n.mode]:-} -k ${R[$n.kind]:-}"
    [[ $n == *-wrk ]] && client="wrk -t2 -c$CONNS send.lua new block"
    st=${n%%-*}
    xj="-"; xw="-"; xp="-"
    if [[ $n == *-grpc ]]; then
      xj=$(ratio "${R[$n.rps]}" "${R[$st-jsonrpc.rps]:-0}")
      [ "$st" != peer ] && xw=$(ratio "${R[$n.rps]}" "${R[$st-jsonrpc-wrk.rps]:-0}")
      [ "$st" != peer ] && xp=$(ratio "${R[$n.rps]}" "${R[peer-grpc.rps]:-0}")
    fi
    echo "| $n | $client | ${R[$n.rps]:-} | $(errs "$n") | ${R[$n.p50_ms]:-} | ${R[$n.p99_ms]:-} | ${R[$n.srv_us]:-} | ${R[$n.cli_us]:-} | ${R[$n.cpu]:-} | ${R[$n.fsync]:-} | ${R[$n.load]:-} | $xj | $xw | $xp |"
  done
  echo
  for n in "${ROWS[@]}"; do
    [ -n "${R[$n.sample]:-}" ] && echo "- $n first error: \`${R[$n.sample]:0:300}\`"
  done
fi
if [ -n "$CG_TABLE" ]; then
  echo
  echo "Callgrind, onced \`--store memory:?cold=off\`, server side, all threads, one connection, $CG_N calls per binding:"
  echo
  echo "$CG_TABLE"
  # Where the instructions go: inclusive Ir per call of the functions that
  # separate the two paths (the engine's share is the same in both).
  echo
  echo "| function (inclusive) | JSON-RPC Ir / call | gRPC Ir / call | what it is |"
  echo "|---|---:|---:|---|"
  cg_fn() { # FILE NAME: inclusive Ir / CG_N of ???:NAME, or -
    awk -v fn="???:$2" -v n="$CG_N" '{ sub(/ \[[^]]*\]$/, "") }
      $NF == fn && $1 ~ /^[0-9,]+$/ { v = $1; gsub(/,/, "", v); printf "%.0f", v / n; f = 1; exit }
      END { if (!f) print "-" }' "$1"
  }
  while IFS='|' read -r fn what; do
    echo "| \`$fn\` | $(cg_fn "$OUT/cg-top-jsonrpc.txt" "$fn") | $(cg_fn "$OUT/cg-top-grpc.txt" "$fn") | $what |"
  done <<'FNS'
once__a2a_run|the codec: the method, the engine, the answer's JSON text (both bindings)
once__engine_send|the engine: register the task, run the echo turn, store
once__json_text|the answer serialised to JSON text (both bindings)
on_request|JSON-RPC: libmicrohttpd's request handler, all of the call
run_call|gRPC: the worker's part of the call, all of it
once__pbjson_from_pb|gRPC: request protobuf -> ProtoJSON (json_t)
json_loadb|gRPC: the answer's JSON text parsed back (jansson)
once__pbjson_answer_to_pb|gRPC: ProtoJSON -> the SendMessageResponse protobuf
nghttp2_session_mem_recv|gRPC: HTTP/2 frames in
nghttp2_session_mem_send|gRPC: HTTP/2 frames out
FNS
  for b in jsonrpc grpc; do
    echo
    echo "Top $CG_TOP inclusive, $b window (Ir, all threads):"
    echo '```'
    grep -E '^ *[0-9,]+ \(' "$OUT/cg-top-$b.txt" | head -"$CG_TOP" | sed 's/ \[[^]]*\]$//'
    echo '```'
  done
fi
echo "Raw output: $OUT"
