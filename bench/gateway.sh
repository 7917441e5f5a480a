#!/usr/bin/env bash
# bench/gateway.sh -- the throughput of an onced gateway (onced --upstream)
# in front of a trivial @a2a-js/sdk agent, as a ratio to that agent called
# directly, in the same run.
#
#   BENCH_BUILD=/path/to/build BENCH_SKIP_BUILD=1 bash bench/gateway.sh
#
# Three configurations, each driven by wrk -t2 -c64 -s bench/send.lua on
# loopback (WARMUP s discarded, then DURATION s measured with --latency):
#   direct      the agent alone, send.lua "fresh block": a fresh messageId per
#               request, no taskId (the agent mints the task), blocking
#   gw-new      onced --upstream AGENT in front of it, "new block": client-
#               minted task IDs through the once extension, blocking
#   gw-fresh    the same, "fresh block": plain A2A through the gateway (no
#               extension, no taskId: onced derives the task ID from the
#               messageId, --plain-ids derived)
# in that order, ROUNDS times (direct, gw-new, gw-fresh, direct, ...: A/B
# alternated), every segment in fresh processes (a new agent, a new onced on
# a new store), so no segment inherits another's tasks. send.lua's IDs are
# "<prefix>-<thread>-<n>" with a prefix new per wrk run: distinct per thread
# and per request (so per connection).
#
# Only correct answers count: tasks/s = send.lua's ok= (2xx answers with no
# JSON-RPC error and, blocking, the task completed) / the measured seconds;
# rpc_err, not_done, non2xx and socket errors are reported beside it. After
# each gateway segment the tasks the agent holds (ListTasks' totalSize) are
# compared with the tasks onced registered (warm-up included): one upstream
# task per once task.
#
# Prints markdown on stdout (progress on stderr); raw wrk output and logs
# stay in $OUT ($BENCH_BUILD/bench-out/gateway-<date-time>/).
#
# Environment (all optional):
#   BENCH_BUILD       build dir with onced             (build-bench)
#   BENCH_SKIP_BUILD  1 = use $BENCH_BUILD/onced as it is
#   BENCH_DURATION    measured seconds per segment     (10)
#   BENCH_WARMUP      discarded seconds per segment    (2)
#   BENCH_ROUNDS      rounds of the three segments     (2)
#   BENCH_GW_AGENT    peer = bench/peer_server.mjs, the minimal a2a-js echo
#                     agent of bench/run.sh's peer rows (the default), or
#                     upstream = tests/interop/upstream_agent.mjs --bindings
#                     jsonrpc (the gateway tests' counting agent; under
#                     wrk -c64 it answered 30 blocking sends/s where the peer
#                     answered 1073/s in the same minute: see bench/README.md)
#   BENCH_GW_STORE    sqlite (a file in $OUT/data, on disk, synchronous=FULL:
#                     the default) or memory
#   BENCH_GW_ARGS     more onced flags for the gateway (e.g. --turn-workers 64)
TAG=gateway
# shellcheck source=bench/lib.sh
source "$(cd "$(dirname "$0")" && pwd)/lib.sh"

DUR="${BENCH_DURATION:-10}"
WARM="${BENCH_WARMUP:-2}"
ROUNDS="${BENCH_ROUNDS:-2}"
AGENT_KIND="${BENCH_GW_AGENT:-peer}"
STORE_KIND="${BENCH_GW_STORE:-sqlite}"
read -r -a GW_ARGS <<<"${BENCH_GW_ARGS:-}"
LUA="$root/bench/send.lua"
NODE="$(command -v node || command -v nodejs)" || die "node is missing (bash scripts/deps.sh)"
[ -d "$root/tests/interop/node_modules/@a2a-js/sdk" ] ||
  die "tests/interop/node_modules has no @a2a-js/sdk (bash scripts/deps.sh)"
case $AGENT_KIND in upstream | peer) ;; *) die "BENCH_GW_AGENT is upstream or peer" ;; esac
case $STORE_KIND in sqlite | memory) ;; *) die "BENCH_GW_STORE is sqlite or memory" ;; esac
DATA="$OUT/data"   # on the build dir's disk (not tmpfs): fsync is real
mkdir -p "$DATA"
TCK="$(getconf CLK_TCK)"
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'; }

# start_agent NAME: a fresh agent on a free port; sets APORT, APID.
start_agent() {
  local name=$1
  APORT=$(free_port)
  if [ "$AGENT_KIND" = upstream ]; then
    "$NODE" "$root/tests/interop/upstream_agent.mjs" --port "$APORT" --bindings jsonrpc \
      >"$OUT/$name.agent.out" 2>"$OUT/$name.agent.log" &
  else
    "$NODE" "$root/bench/peer_server.mjs" "$APORT" >"$OUT/$name.agent.log" 2>&1 &
  fi
  APID=$!
  PIDS+=("$APID")
  wait_http "$APORT" "$APID" || { tail "$OUT/$name.agent.log" >&2; die "the agent ($name) did not start"; }
}

agent_tasks() { # the tasks the agent holds: ListTasks' totalSize (A2A 1.0, the SDK's own)
  curl -s --max-time 60 "http://127.0.0.1:$APORT/" -H 'Content-Type: application/json' \
    -H 'A2A-Version: 1.0' -d '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":1}}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["totalSize"])' 2>/dev/null || echo "?"
}

declare -A R
SEGS=()

# segment NAME CONFIG MODE: one measured segment of CONFIG (direct, gw-new,
# gw-fresh) with send.lua MODE (fresh or new), blocking.
segment() {
  local name=$1 config=$2 mode=$3 port pid=""
  start_agent "$name"
  port=$APORT
  if [ "$config" != direct ]; then
    local store=memory:
    [ "$STORE_KIND" = sqlite ] && store="sqlite:$DATA/$name.db"
    start_onced "$name.onced" --store "$store" --upstream "http://127.0.0.1:$APORT/" \
      "${GW_ARGS[@]+"${GW_ARGS[@]}"}"
    port=$PORT
    pid=$PID
  fi
  local pfx
  pfx="g$(date +%s%N | tail -c 10)$RANDOM"
  log "$name ($config, send.lua $mode block): warm-up ${WARM}s, then ${DUR}s"
  wrk -t2 -c64 -d"${WARM}s" -s "$LUA" "http://127.0.0.1:$port/" -- "$mode" block "${pfx}w" \
    >"$OUT/$name.warmup.wrk" 2>&1
  local a0 o0 a1 o1 t0 t1
  a0=$(cpu_ticks "$APID")
  o0=$([ -n "$pid" ] && cpu_ticks "$pid" || echo 0)
  t0=$(date +%s%N)
  wrk -t2 -c64 -d"${DUR}s" --latency -s "$LUA" "http://127.0.0.1:$port/" -- "$mode" block "$pfx" \
    >"$OUT/$name.wrk" 2>&1
  t1=$(date +%s%N)
  a1=$(cpu_ticks "$APID")
  o1=$([ -n "$pid" ] && cpu_ticks "$pid" || echo 0)
  local line kv
  line=$(grep '^RESULT' "$OUT/$name.wrk")
  [ -n "$line" ] || { cat "$OUT/$name.wrk" >&2; die "$name: wrk printed no RESULT"; }
  for kv in ${line#RESULT }; do R[$name.${kv%%=*}]=${kv#*=}; done
  R[$name.config]=$config
  R[$name.tps]=$(awk -v ok="${R[$name.ok]}" -v s="${R[$name.seconds]}" 'BEGIN{printf "%.0f", ok / s}')
  R[$name.cpu]=$(awk -v a="$((a1 - a0))" -v o="$((o1 - o0))" -v t="$TCK" -v ns="$((t1 - t0))" \
    'BEGIN{s = ns / 1e9; printf "%.0f/%.0f", 100 * a / t / s, 100 * o / t / s}')
  R[$name.sample]=$(sed -n 's/^SAMPLE //p' "$OUT/$name.wrk" | head -1)
  R[$name.check]=-
  if [ -n "$pid" ]; then
    # every answer is in; let the turns of the last answers' tasks settle
    local reg up i
    for ((i = 0; i < 50; i++)); do
      read -r reg <<<"$(engine_stats "$port" registered)"
      up=$(agent_tasks)
      [ "$up" = - ] || [ "$up" = "$reg" ] && break
      sleep 0.2
    done
    R[$name.check]="$up / $reg"
    stop "$pid" "$name.onced"
  fi
  stop "$APID" "$name.agent"
  SEGS+=("$name")
  log "$name: $(echo "$line" | cut -c8-)"
}

START_UPTIME="$(uptime)"
START_TIME=$(date +%s)
log "agent: $AGENT_KIND, gateway store: $STORE_KIND, onced: $ONCED; load at start: $START_UPTIME"
for ((r = 1; r <= ROUNDS; r++)); do
  segment "r$r-direct" direct fresh
  segment "r$r-gw-new" gw-new new
  segment "r$r-gw-fresh" gw-fresh fresh
done
END_UPTIME="$(uptime)"
rm -rf "$DATA"

# ---------------------------------------------------------------- report
errs() {
  local n=$1 s="" k
  for k in non2xx timeout connect read write rpc_err not_done; do
    local v=${R[$n.$k]:-?}
    [ "$v" != 0 ] && s+="$k=$v "
  done
  echo "${s:-0}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b == "" || b == 0) print "-"; else printf "%.2f", a/b}'; }
mean() { # mean CONFIG: the mean tasks/s of its segments
  local c=$1 n sum=0 k=0
  for n in "${SEGS[@]}"; do
    [ "${R[$n.config]}" = "$c" ] && sum=$((sum + R[$n.tps])) && k=$((k + 1))
  done
  [ "$k" -gt 0 ] && echo $((sum / k))
}
agent_desc() {
  if [ "$AGENT_KIND" = upstream ]; then
    echo "tests/interop/upstream_agent.mjs --bindings jsonrpc (@a2a-js/sdk 1.3.0, echo; counts what it is asked)"
  else
    echo "bench/peer_server.mjs (@a2a-js/sdk 1.3.0 DefaultRequestHandler + InMemoryTaskStore, express JSON-RPC; completes every task at once with an echo artifact)"
  fi
}
store_desc() {
  if [ "$STORE_KIND" = sqlite ]; then echo "sqlite: (a file on disk, WAL, synchronous=FULL)"; else echo "memory:"; fi
}

echo
echo "## bench/gateway.sh $(date -u +%Y-%m-%dT%H:%MZ) — commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null)$(git -C "$root" diff --quiet HEAD -- src apps include 2>/dev/null || echo '+local changes')"
echo
echo "Machine: $(nproc) CPUs ($(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)), $(uname -sr); node $("$NODE" --version)."
echo "Load: start \`${START_UPTIME# }\`; end \`${END_UPTIME# }\`. Elapsed $(($(date +%s) - START_TIME))s."
echo "Agent: $(agent_desc). Gateway: \`onced --upstream http://127.0.0.1:AGENT/ --store $STORE_KIND${BENCH_GW_ARGS:+ $BENCH_GW_ARGS}\` ($(store_desc))."
echo "wrk -t2 -c64 -s bench/send.lua, ${WARM}s warm-up discarded, ${DUR}s measured, --latency; loopback; every segment in fresh processes; wrk, onced and node share the CPUs."
echo
echo "| segment | what | send.lua | tasks/s (correct answers) | × direct (same round) | p50 ms | p99 ms | errors | CPU % agent/onced | upstream tasks / once tasks |"
echo "|---|---|---|---:|---:|---:|---:|---|---|---|"
for n in "${SEGS[@]}"; do
  rd=${n%%-*}
  case ${R[$n.config]} in
    direct) what="the agent alone"; ml="fresh block" ;;
    gw-new) what="gateway, client-minted IDs (extension)"; ml="new block" ;;
    gw-fresh) what="gateway, plain A2A (derived IDs)"; ml="fresh block" ;;
  esac
  x=-
  [ "${R[$n.config]}" != direct ] && x=$(ratio "${R[$n.tps]}" "${R[$rd-direct.tps]:-}")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "$what" "$ml" "${R[$n.tps]}" \
    "$x" "${R[$n.p50_ms]}" "${R[$n.p99_ms]}" "$(errs "$n")" "${R[$n.cpu]}" "${R[$n.check]}"
done
echo
md=$(mean direct)
mn=$(mean gw-new)
mf=$(mean gw-fresh)
echo "| mean over $ROUNDS rounds | tasks/s | × direct |"
echo "|---|---:|---:|"
echo "| direct (the agent alone) | $md | 1.00 |"
echo "| gateway, client-minted IDs (new block) | $mn | $(ratio "$mn" "$md") |"
echo "| gateway, plain A2A (fresh block) | $mf | $(ratio "$mf" "$md") |"
echo
for n in "${SEGS[@]}"; do
  [ -n "${R[$n.sample]:-}" ] && echo "First bad answer in $n: ${R[$n.sample]}"
done
echo "Raw output: $OUT"
