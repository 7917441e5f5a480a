#!/usr/bin/env bash
# bench/backends.sh -- onced throughput per store backend (memory, SQLite,
# PostgreSQL, Redis, DynamoDB on dynalite) with one load generator, each as a
# ratio to the raw store's own ceiling measured in the same run (issue 6,
# "Benchmark"; issue 19 for DynamoDB).
#
#   bash bench/backends.sh            (about 3-4 minutes; prints a markdown table)
#
# Per backend, one fresh onced process (echo executor) per mode:
#   new     wrk + bench/send.lua "new ri": every request a fresh
#           client-minted task, returnImmediately (one durable insert each)
#   replay  wrk + bench/send.lua "replay block": the same message every time
#           (sent once before the run), so every request is a replay (a read)
# Load: wrk -t2 -c64, WARMUP s discarded, DURATION s measured, --latency.
# Ceilings, same run, same machine, same durability settings as onced gets:
#   sqlite    bench/sqlite_ceiling: WAL, synchronous=FULL, 1 row per txn
#   postgres  pgbench -c8 -j2 -T DURATION: INSERT of a random text key and a
#             400-byte payload ... ON CONFLICT DO NOTHING, autocommit
#   redis     redis-benchmark -n 200000 -c 64 -r 1e9: SET key:<rand> <400 B> NX
#   dynamodb  wrk -t2 -c64 -d DURATION + bench/send.lua "putitem": PutItem of a
#             new key with 400 B and attribute_not_exists, on the same dynalite.
#             An EMULATOR figure (dynalite: Node.js on LevelDB, in memory
#             here): it says what onced's DynamoDB path costs over raw calls,
#             nothing about DynamoDB's own latency or capacity
#   memory    none (nothing to persist): "-"
# The ceilings are write ceilings: for "new" (one durable insert per task)
# the ratio is the share of the raw store's insert rate onced delivers; a
# replay writes nothing, so its ratio only says how far reads outrun the
# store's insert rate. The last column compares each backend with memory:
# in the same mode, i.e. what the store costs over no store.
#
# Services: scripts/test-services.sh start/stop (its own ports, below), but
# that script runs PostgreSQL with fsync=off and Redis with no persistence
# (fine for tests, flattering for a benchmark). So after it starts them this
# script restarts PostgreSQL with fsync=on, synchronous_commit=on,
# full_page_writes=on (command-line -c, which wins over the config file) and
# switches Redis to appendonly yes + appendfsync everysec (CONFIG SET), and
# checks both took effect. Both live in ONCE_SVC_DIR, on the same disk as
# the build dir. Everything is stopped at the end (by PID / the script).
#
# Environment (all optional):
#   BENCH_BUILD       build dir (Release)        (build-bench2)
#   BENCH_DURATION    measured seconds per row   (10)
#   BENCH_WARMUP      discarded seconds per row  (2)
#   BENCH_NEW_WAIT    new rows: ri (returnImmediately: the answer comes at
#                     registration, and a full turn queue answers 503
#                     OVERLOADED) or block (the answer comes when the task is
#                     done: every ok answer is a finished task)   (ri)
#   ONCE_PG_PORT      PostgreSQL port            (25900)
#   ONCE_REDIS_PORT   Redis port                 (26900)
#   ONCE_DYNAMO_PORT  dynalite port              (27900)
#   BENCH_BACKENDS    which rows                 ("memory sqlite postgres redis dynamodb");
#                     "postgres+batch=0" adds store URL parameters to a
#                     backend's rows (and measures its ceiling again)
#   BENCH_ONCED_ARGS  more onced flags for every row, e.g. "--turn-workers 16"
#   BENCH_SOURCE      the code measured, for the title (default: the commit)
#   BENCH_AUTOGROUP   0 or 1: kernel.sched_autogroup_enabled for the run
#                     (root; set back at the end); unset: left as it is. The
#                     value is printed with the load. With it on (Debian's
#                     default) the kernel shares the CPUs between sessions
#                     first: PostgreSQL (pg_ctl starts it in a session of its
#                     own), redis-server, onced, wrk and every other tenant's
#                     session each get a share, and on these 2 CPUs a runnable
#                     thread then waited up to ~2 s for one (`perf sched
#                     latency`): the PostgreSQL replay rows' p99 of 0.4-1.7 s
#                     (bench/README.md, "The PostgreSQL replay tail")
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# Whatever ends this script (Ctrl-C, SIGTERM, SIGKILL), every process it
# started ends with it (scripts/reaper.py); the EXIT trap below stops them
# gently first when it gets the chance.
eval "$(python3 "$root/scripts/reaper.py" guard $$)"
B="${BENCH_BUILD:-$root/build-bench2}"
DUR="${BENCH_DURATION:-10}"
WARM="${BENCH_WARMUP:-2}"
NEW_WAIT="${BENCH_NEW_WAIT:-ri}"
case $NEW_WAIT in ri | block) ;; *) echo "backends.sh: BENCH_NEW_WAIT is ri or block" >&2; exit 1 ;; esac
ALL_BACKENDS="memory sqlite postgres redis dynamodb"
BACKENDS="${BENCH_BACKENDS:-$ALL_BACKENDS}"
export ONCE_PG_PORT="${ONCE_PG_PORT:-25900}"
export ONCE_REDIS_PORT="${ONCE_REDIS_PORT:-26900}"
export ONCE_DYNAMO_PORT="${ONCE_DYNAMO_PORT:-27900}"
# dynalite checks no signature; onced signs with these.
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-bench}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-bench}"
export ONCE_SVC_DIR="/tmp/once-bench-backends-$ONCE_PG_PORT-$ONCE_REDIS_PORT"
OUT="$B/bench-backends/$(date +%Y%m%d-%H%M%S)"
LUA="$root/bench/send.lua"
SVC="$root/scripts/test-services.sh"
PG_BIN=/usr/lib/postgresql/15/bin
[ -x "$PG_BIN/pg_ctl" ] || PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
PGDATA="$ONCE_SVC_DIR/pg/data"

die() { echo "backends.sh: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

mkdir -p "$OUT" || die "cannot create $OUT"
START_TIME=$(date +%s)
START_UPTIME="$(uptime)"

# ---------------------------------------------------------------- cleanup
PIDS=()
SVC_STARTED=0
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  [ "$SVC_STARTED" = 1 ] && "$SVC" stop >/dev/null 2>&1
  declare -F autogroup_restore >/dev/null && autogroup_restore
}
trap cleanup EXIT

as_pg() { # PostgreSQL refuses root: run as its owner, like test-services.sh
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# free_port, wait_http, read_result, code_rev, start_peer, autogroup_*
BENCH_LIB=helpers source "$root/bench/lib.sh"
autogroup_set || die "BENCH_AUTOGROUP: see above"

# ---------------------------------------------------------------- build
ONCED="$B/onced"
if [ ! -x "$ONCED" ]; then
  log "building onced (Release) in $B"
  { cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$B" -j2 --target onced; } >"$OUT/build.log" 2>&1 ||
    die "build failed (log: $OUT/build.log)"
fi
mkdir -p "$B/bench"
gcc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -o "$B/bench/sqlite_ceiling" \
  "$root/bench/sqlite_ceiling.c" -lsqlite3 2>>"$OUT/build.log" || die "sqlite_ceiling build failed"
DATA="$OUT/data"   # SQLite files: on the build dir's disk (not tmpfs)
mkdir -p "$DATA"

# ---------------------------------------------------------------- services
PG_URL="" REDIS_URL="" DYNAMO_URL=""
case " $BACKENDS " in *" postgres"* | *" redis"* | *" dynamodb"*)
  log "services: scripts/test-services.sh start (pg $ONCE_PG_PORT, redis $ONCE_REDIS_PORT)"
  SVC_STARTED=1
  env_out=$("$SVC" start) || die "test-services.sh start failed"
  eval "$env_out"
  PG_URL=$ONCE_TEST_PG_URL
  REDIS_URL=$ONCE_TEST_REDIS_URL
  DYNAMO_URL=$ONCE_TEST_DYNAMO_URL
  # Durable PostgreSQL: the same server, restarted with fsync on.
  as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null || die "pg stop failed"
  as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$ONCE_SVC_DIR/pg/server.log" -w -t 60 start \
    -o "-c port=$ONCE_PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$ONCE_SVC_DIR/pg \
        -c fsync=on -c synchronous_commit=on -c full_page_writes=on -c shared_buffers=128MB \
        -c max_connections=200" >/dev/null || die "pg restart with fsync=on failed"
  PSQL=(psql -X -q -h 127.0.0.1 -p "$ONCE_PG_PORT" -U postgres -d once -tA)
  PG_SETTINGS=$("${PSQL[@]}" -c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name)
      FROM pg_settings WHERE name IN ('fsync','synchronous_commit','full_page_writes','wal_sync_method')")
  case "$PG_SETTINGS" in *fsync=on*synchronous_commit=on*) ;; *) die "pg not durable: $PG_SETTINGS" ;; esac
  # Durable Redis: AOF, fsync once a second (Redis' recommended setting).
  RCLI=(redis-cli -h 127.0.0.1 -p "$ONCE_REDIS_PORT")
  "${RCLI[@]}" config set appendfsync everysec >/dev/null
  "${RCLI[@]}" config set appendonly yes >/dev/null
  for ((i = 0; i < 100; i++)); do
    "${RCLI[@]}" info persistence | grep -q '^aof_rewrite_in_progress:0' &&
      "${RCLI[@]}" info persistence | grep -q '^aof_enabled:1' && break
    sleep 0.1
  done
  REDIS_SETTINGS="appendonly=$("${RCLI[@]}" config get appendonly | tail -1) appendfsync=$("${RCLI[@]}" config get appendfsync | tail -1)"
  [ "$REDIS_SETTINGS" = "appendonly=yes appendfsync=everysec" ] || die "redis not durable: $REDIS_SETTINGS"
  log "pg: $PG_SETTINGS; redis: $REDIS_SETTINGS"
  ;;
esac

# ---------------------------------------------------------------- rows
declare -A R
ROWS=()
H=(-H 'Content-Type: application/json' -H 'A2A-Version: 1.0' -H 'A2A-Extensions: urn:once:a2a:idempotency:v1')

# CPU time (clock ticks, user + system) of the processes given, summed; and
# of the whole machine (every CPU's non-idle ticks), for the per-request CPU
# columns: what onced, the store's server and everything together spent.
ticks() { local p; for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done |
  awk '{s += $1} END {print s + 0}'; }
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
# The store server's processes for a backend, this script's own (not the
# test services' that may run beside them): PostgreSQL's postmaster and its
# children (every backend, the WAL writer and checkpointer), redis-server
# and dynalite on this script's ports; none in-process.
server_pids() {
  local pm
  case $1 in
    postgres)
      pm=$(head -1 "$PGDATA/postmaster.pid" 2>/dev/null) || return 0
      echo "$pm $(pgrep -P "$pm" -d ' ')" ;;
    redis) pgrep -f "^redis-server .*:$ONCE_REDIS_PORT\$" -d ' ' ;;
    dynamodb) pgrep -f "dynalite/cli.js .*--port $ONCE_DYNAMO_PORT( |\$)" -d ' ' ;;
  esac
}

# fsync and fdatasync calls of the processes given while CMD runs (perf's
# syscall tracepoints: root and perf, else "-"), into R[NAME.fsyncs]: what
# a durable row paid, onced's own (SQLite) and its server's (PostgreSQL's WAL
# writes, Redis' appendfsync) together.
fsyncs_during() {
  local name=$1 pids=$2 pstat="$OUT/$1.perfstat" perf_pid=""
  shift 2
  if command -v perf >/dev/null && [ -n "$pids" ]; then
    perf stat -x, -e syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync \
      -p "$(echo "$pids" | tr -s ' ' ',' | sed 's/^,//; s/,$//')" -o "$pstat" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  "$@"
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null
    wait "$perf_pid" 2>/dev/null
    R[$name.fsyncs]=$(awk -F, '/sys_enter_f/ {n += $1; ok = 1} END { if (ok) print n; else print "-" }' \
      "$pstat" 2>/dev/null)
  fi
}

# wrk_row PORT MODE WAIT PREFIX FILE: the measured window.
wrk_row() {
  wrk -t2 -c64 -d"${DUR}s" --timeout 5s --latency -s "$LUA" "http://127.0.0.1:$1/" -- \
    "$2" "$3" "$4" >"$5" 2>&1
}

# row NAME STORE MODE: fresh onced, [first send], warm-up, measured wrk.
row() {
  local name=$1 store=$2 mode=$3 wait=$NEW_WAIT port pid pfx
  port=$(free_port)
  # --log-level warn: no request log (as when the rows were measured)
  # shellcheck disable=SC2086 # BENCH_ONCED_ARGS: words, split on purpose
  "$ONCED" --drain-delay 0 --listen "127.0.0.1:$port" --store "$store" --log-level warn ${BENCH_ONCED_ARGS:-} \
    >"$OUT/$name.log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  wait_http "$port" "$pid" || { tail "$OUT/$name.log" >&2; die "onced ($store) did not start"; }
  pfx="b$(date +%s%N | tail -c 10)$RANDOM"
  local wpfx="${pfx}w"
  if [ "$mode" = replay ]; then
    wait=block; wpfx=$pfx
    curl -s --max-time 30 "http://127.0.0.1:$port/" "${H[@]}" -d \
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"$pfx\",\"taskId\":\"$pfx\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hello\"}]}}}" \
      >"$OUT/$name.first.json"
    grep -q TASK_STATE_COMPLETED "$OUT/$name.first.json" ||
      echo "backends.sh: $name: first send did not complete: $(head -c 300 "$OUT/$name.first.json")" >&2
  fi
  log "$name: warm-up ${WARM}s, ${DUR}s measured (load1 $(cut -d' ' -f1 /proc/loadavg))"
  wrk -t2 -c64 -d"${WARM}s" -s "$LUA" "http://127.0.0.1:$port/" -- "$mode" "$wait" "$wpfx" \
    >"$OUT/$name.warmup.wrk" 2>&1
  local srv o0 s0 b0
  srv=$(server_pids "${name%%[-+]*}")
  o0=$(ticks "$pid"); s0=$(ticks $srv); b0=$(busy_ticks)
  fsyncs_during "$name" "$pid $srv" wrk_row "$port" "$mode" "$wait" "$pfx" "$OUT/$name.wrk"
  R[$name.cpu_onced]=$(($(ticks "$pid") - o0))
  [ -n "$srv" ] && R[$name.cpu_server]=$(($(ticks $srv) - s0))
  R[$name.cpu_busy]=$(($(busy_ticks) - b0))
  local line kv
  line=$(grep '^RESULT' "$OUT/$name.wrk")
  [ -n "$line" ] || { echo "backends.sh: $name: no RESULT from wrk:" >&2; cat "$OUT/$name.wrk" >&2; }
  for kv in ${line#RESULT }; do R[$name.${kv%%=*}]=${kv#*=}; done
  grep -q '^SAMPLE' "$OUT/$name.wrk" && R[$name.sample]=$(grep '^SAMPLE' "$OUT/$name.wrk" | head -1)
  kill -TERM "$pid"; wait "$pid"; local rc=$?
  [ "$rc" = 0 ] || R[$name.exit]=$rc
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" != "$pid" ] && keep+=("$p"); done
  PIDS=("${keep[@]+"${keep[@]}"}")
  ROWS+=("$name")
}

declare -A CEIL CEIL_NAME
for tok in $BACKENDS; do
  # "postgres+batch=0": the backend with extra store URL parameters, its
  # own rows (named by the whole token) and its own ceiling.
  be=${tok%%+*} extra=""
  [ "$tok" != "$be" ] && extra="&${tok#*+}"
  tag="b$(date +%s)$RANDOM"
  case $be in
    memory) store=memory: ;;
    sqlite) store="sqlite:$DATA/$tag.db" ;;
    postgres) store="$PG_URL?schema=$tag$extra" ;;
    redis) store="$REDIS_URL?prefix=$tag$extra" ;;
    dynamodb) store="dynamodb://$tag?${DYNAMO_URL#*\?}$extra" ;;
    *) die "unknown backend $be" ;;
  esac
  # SQLite: each mode its own fresh file
  row "$tok-new" "${store/$tag.db/$tag-new.db}" new
  row "$tok-replay" "${store/$tag.db/$tag-replay.db}" replay

  # The ceiling right after the backend's rows, with the same server/disk.
  case $be in
    memory) CEIL_NAME[$tok]="-" ;;
    sqlite)
      log "sqlite ceiling: 1 row/txn, WAL, synchronous=FULL, 3 s"
      CEIL_NAME[$tok]="sqlite_ceiling 1 row/txn (WAL, sync=FULL)"
      CEIL[$tok]=$("$B/bench/sqlite_ceiling" "$DATA/ceiling.db" 3 1 | tee "$OUT/sqlite-ceiling.txt" |
        sed -n 's/.*rows_per_s=\([0-9]*\).*/\1/p') ;;
    postgres)
      log "pg ceiling: pgbench -c8 -j2 -T$DUR INSERT .. ON CONFLICT DO NOTHING"
      "${PSQL[@]}" -c "SET client_min_messages = warning; DROP TABLE IF EXISTS bench_kv; CREATE TABLE bench_kv(k text PRIMARY KEY, payload bytea NOT NULL);" ||
        die "psql create failed"
      cat >"$OUT/$tok-pg-insert.sql" <<'EOF'
\set k random(1, 1000000000)
INSERT INTO bench_kv(k, payload) VALUES ('task-' || :k, convert_to(repeat('x', 400), 'UTF8')) ON CONFLICT DO NOTHING;
EOF
      pgbench -n -h 127.0.0.1 -p "$ONCE_PG_PORT" -U postgres -c8 -j2 -T"$DUR" -f "$OUT/$tok-pg-insert.sql" once \
        >"$OUT/$tok-pgbench.txt" 2>&1
      CEIL_NAME[$tok]="pgbench -c8 -j2 INSERT..ON CONFLICT DO NOTHING"
      CEIL[$tok]=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$OUT/$tok-pgbench.txt" | head -1 | cut -d. -f1) ;;
    redis)
      log "redis ceiling: redis-benchmark -n 200000 -c 64 SET key:<rand> <400 B> NX"
      val=$(head -c 400 /dev/zero | tr '\0' x)
      redis-benchmark -h 127.0.0.1 -p "$ONCE_REDIS_PORT" -n 200000 -c 64 -r 1000000000 --csv \
        SET "bench:key:__rand_int__" "$val" NX >"$OUT/$tok-redis-benchmark.txt" 2>&1
      CEIL_NAME[$tok]="redis-benchmark -c64 SET NX (AOF everysec)"
      CEIL[$tok]=$(awk -F'"' 'NR == 2 {print $4}' "$OUT/$tok-redis-benchmark.txt" | cut -d. -f1) ;;
    dynamodb)
      log "dynamodb ceiling: wrk -c64 PutItem attribute_not_exists on the same dynalite (emulator)"
      dyn="http://127.0.0.1:$ONCE_DYNAMO_PORT/"
      curl -s --max-time 30 "$dyn" -H 'Content-Type: application/x-amz-json-1.0' \
        -H 'X-Amz-Target: DynamoDB_20120810.CreateTable' --aws-sigv4 aws:amz:us-east-1:dynamodb \
        --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -d "{\"TableName\":\"c$tag\",
          \"BillingMode\":\"PAY_PER_REQUEST\",\"KeySchema\":[{\"AttributeName\":\"pk\",
          \"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],
          \"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},
          {\"AttributeName\":\"sk\",\"AttributeType\":\"S\"}]}" >"$OUT/$tok-dynamo-create.json"
      grep -q TableDescription "$OUT/$tok-dynamo-create.json" || die "dynalite CreateTable failed"
      wrk -t2 -c64 -d"${DUR}s" --latency -s "$LUA" "$dyn" -- putitem - "c$tag" \
        >"$OUT/$tok-dynamo-ceiling.wrk" 2>&1
      grep -q '^RESULT.* non2xx=0 .* rpc_err=0 ' "$OUT/$tok-dynamo-ceiling.wrk" ||
        echo "backends.sh: dynamodb ceiling had errors: $(grep '^RESULT' "$OUT/$tok-dynamo-ceiling.wrk")" >&2
      CEIL_NAME[$tok]="wrk -c64 PutItem attribute_not_exists (dynalite, an emulator)"
      CEIL[$tok]=$(sed -n 's/^RESULT.* rps=\([0-9]*\).*/\1/p' "$OUT/$tok-dynamo-ceiling.wrk") ;;
  esac
done

END_UPTIME="$(uptime)"
ELAPSED=$(($(date +%s) - START_TIME))
rm -rf "$DATA"

# ---------------------------------------------------------------- report
errs() {
  local n=$1 s="" k v
  for k in non2xx timeout connect read write rpc_err not_done not_replayed; do
    v=${R[$n.$k]:-?}
    [ "$v" != 0 ] && s+="$k=$v "
  done
  [ -n "${R[$n.exit]:-}" ] && s+="onced-exit=${R[$n.exit]} "
  echo "${s:-0}"
}
# Answers per second that did their job: every checked answer minus the
# bad ones (a 503 carries a JSON-RPC error, so it counts once).
okps() {
  local n=$1
  [ -n "${R[$n.checked]:-}" ] || return 0
  awk -v c="${R[$n.checked]}" -v h="${R[$n.non2xx]:-0}" -v e="${R[$n.rpc_err]:-0}" \
    -v d="${R[$n.not_done]:-0}" -v r="${R[$n.not_replayed]:-0}" -v s="${R[$n.seconds]}" \
    'BEGIN { b = e + d + r; if (h > b) b = h; printf "%.0f", (c - b) / s }'
}
# us_per NAME KEY: the row's CPU ticks under KEY per request, in microseconds.
us_per() {
  awk -v t="${R[$1.$2]:-}" -v n="${R[$1.requests]:-}" -v hz="$(getconf CLK_TCK)" \
    'BEGIN{ if (t == "" || n == "" || n == 0) print "-"; else printf "%.0f", t * 1e6 / hz / n}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a/b}'; }
# per_ok NAME KEY: the row's count under KEY per correct answer (okps × s).
per_ok() {
  local ok
  ok=$(awk -v r="$(okps "$1")" -v s="${R[$1.seconds]:-}" 'BEGIN{ if (r == "" || s == "") print 0; else print r * s }')
  awk -v v="${R[$1.$2]:-}" -v n="$ok" 'BEGIN{ if (v == "" || v == "-" || n == 0) print "-"; else printf "%.3f", v / n}'
}

echo
echo "## bench/backends.sh$([ "$BACKENDS" != "$ALL_BACKENDS" ] && echo " (BENCH_BACKENDS=\"$BACKENDS\")") $(date -u +%Y-%m-%dT%H:%MZ) — ${BENCH_SOURCE:-commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null)$(git -C "$root" diff --quiet HEAD -- src apps include 2>/dev/null || echo '+local changes')}${BENCH_ONCED_ARGS:+, onced $BENCH_ONCED_ARGS}"
echo
echo "Machine: $(nproc) CPUs ($(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)), $(uname -sr); shared."
echo "Load: start \`${START_UPTIME# }\`; end \`${END_UPTIME# }\`. Elapsed ${ELAPSED}s. kernel.sched_autogroup_enabled=$(autogroup_state)."
echo "wrk -t2 -c64, ${WARM}s warm-up discarded, ${DUR}s measured, --latency, bench/send.lua (new rows: new $NEW_WAIT); loopback; wrk, onced and the store share the CPUs."
[ -n "${PG_SETTINGS:-}" ] && echo "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}'): $PG_SETTINGS. Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'): $REDIS_SETTINGS."
case " $BACKENDS " in *" dynamodb "*)
  echo "DynamoDB rows: dynalite $(sed -n 's/.*"version": "\([^"]*\)".*/\1/p' "$root/tests/dynamo/node_modules/dynalite/package.json") (Node.js $(node --version), in memory): an emulator, so the ratio is onced's cost over raw PutItem calls to it, not a DynamoDB figure." ;;
esac
echo
echo "ok/s: answers that were neither an error nor incomplete, per second (a new row's 503 OVERLOADED answers register nothing); both ratios use it."
echo
echo "CPU µs/req: CPU time per request (every request, refusals included) during the measured window, of onced, of the store's server processes (PostgreSQL's, redis-server, dynalite: this script's own), and of the whole machine (wrk and other tenants included). fsyncs / ok: fsync and fdatasync calls of onced and the store's server in the window, per correct answer (perf's syscall tracepoints; \"-\" without perf or root)."
echo
echo "| backend | mode | req/s | ok/s | p50 ms | p99 ms | max ms | errors | ceiling | ceiling ops/s | onced ok / ceiling | onced ok / memory same mode | CPU µs/req onced | server | machine | fsyncs / ok |"
echo "|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"
for n in "${ROWS[@]}"; do
  be=${n%-*} mode=${n##*-}
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$be" "$mode" "${R[$n.rps]:-}" \
    "$(okps "$n")" "${R[$n.p50_ms]:-}" "${R[$n.p99_ms]:-}" "${R[$n.max_ms]:-}" "$(errs "$n")" "${CEIL_NAME[$be]:-}" \
    "${CEIL[$be]:--}" "$(ratio "$(okps "$n")" "${CEIL[$be]:-}")" \
    "$(ratio "$(okps "$n")" "$(okps "memory-$mode")")" "$(us_per "$n" cpu_onced)" \
    "$(us_per "$n" cpu_server)" "$(us_per "$n" cpu_busy)" "$(per_ok "$n" fsyncs)"
done
echo
for n in "${ROWS[@]}"; do
  [ -n "${R[$n.sample]:-}" ] && echo "First bad answer in $n: ${R[$n.sample]}"
done
echo "Raw output: $OUT"
