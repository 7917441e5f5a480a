#!/usr/bin/env bash
# bench/scale.sh -- ListTasks, GetTask, the new-task rate and the bytes at
# rest as a store fills to a million tasks and more (issue 38 item 3: "every
# ListTasks filter p99 <= 10 ms; the new-task rate at the largest count
# within 15% of the empty store's").
#
#   bash bench/scale.sh
#
# For each store in BENCH_STORES: first a fresh onced on an empty store takes
# 5 s of blocking new tasks (wrk -t2 -c64 bench/send.lua "new block"): the
# empty store's rate. Then a fresh onced (--test-admin, one principal) on a
# fresh store is filled, checkpoint by checkpoint (BENCH_COUNTS), by two
# loads at once:
#   - wrk -t2 -c64 send.lua "new block": "hello" echo tasks, distinct
#     client-minted IDs, every 10th in the shared context <run>-ctx;
#   - wrk -t1 -c$BENCH_ASK_CONNS send.lua "ask block": "ask:more?" tasks the
#     echo executor leaves in TASK_STATE_INPUT_REQUIRED, every 2nd in the
#     shared context (so both filters together have matches);
# and, before each fill, BENCH_WORKING tasks "sleep:86400" (returnImmediately,
# in the shared context)
# that stay TASK_STATE_WORKING (each holds a turn worker, of onced's 64 on
# these stores: keep the total under that).
# The loads stop (SIGINT to wrk) once onced's own count of registered tasks
# (once/admin/stats) reaches the checkpoint, polled every 0.2 s, so a
# checkpoint is passed by what 0.2 s of load adds. With the load stopped
# and no turn queued, at each checkpoint:
#   - ListTasks, pageSize 50, BENCH_CALLS calls per filter over one
#     keep-alive connection (a Python http.client loop, one call at a
#     time: latency, not throughput), p50/p99 for: no filter; the shared
#     context; contextId "nope"; TASK_STATE_INPUT_REQUIRED;
#     TASK_STATE_WORKING; context and INPUT_REQUIRED together; and paging:
#     the no-filter list followed by nextPageToken for 5 pages
#     (BENCH_CALLS / 5 walks, every page call timed); every answer is
#     checked (a JSON-RPC error counts as an error, not a time);
#   - GetTask p50/p99 of BENCH_CALLS tasks picked at random from the fill
#     (IDs rebuilt from the fill's wrk runs: a run at random, then a task
#     from the first half of one of its threads, which favours old tasks
#     over the last, cached ones; "not found" is an error);
#   - the new-task rate: wrk -t2 -c64 -d5s "new block", answers that
#     passed send.lua's checks per second, errors counted (these tasks
#     stay in the store: the next checkpoint counts them);
#   - bytes at rest: SQLite, the file and its WAL, and (up to
#     BENCH_DBSTAT_MAX tasks: dbstat reads every page) the pages of the
#     tables and indexes per task; PostgreSQL, pg_total_relation_size of
#     the schema's tables (with their indexes and TOAST) per task.
# Compaction (SQLite's default: a minute after a task finished) runs beside
# all of this, as it would in service. Prints two markdown tables; raw
# output (wrk, the calls' timings, dbstat, logs) in
# $B/bench-out/scale-<date-time>/.
#
# Environment (all optional):
#   BENCH_COUNTS      checkpoints, in tasks        ("10000 100000 1000000";
#                     10M is opt-in: "... 1000000 10000000", about 11 min
#                     of load at 15k tasks/s and ~10 GB of disk on SQLite)
#   BENCH_STORES      which stores: sqlite (compact at its default),
#                     sqlite-c0 (compact=0: at the sweep after a task
#                     finished), pg, redis, dynamodb    ("sqlite pg")
#   BENCH_REDIS_URL   the Redis server, database and prefix reset at start
#                     (redis://127.0.0.1:26379/9?prefix=scale); its bytes
#                     are INFO memory's used_memory growth since the reset
#                     (the whole server's: give it a server of its own)
#   BENCH_DYNAMO_URL  the DynamoDB endpoint, a functional row (dynalite:
#                     its bytes are not DynamoDB's, so none are printed)
#                     (dynamodb://scale?region=us-east-1&endpoint=
#                     http://127.0.0.1:27432&create=1)
#   BENCH_SQLITE_DIR  where the SQLite files go (default: the output dir);
#                     they are deleted at the end unless BENCH_KEEP=1
#   BENCH_PG_URL      the PostgreSQL server
#                     (postgres://postgres@127.0.0.1:25432/once)
#   BENCH_PG_SCHEMA   the schema used, reset at start, dropped at the end
#                     (scale)
#   BENCH_CALLS       timed calls per ListTasks filter and for GetTask (200)
#   BENCH_ASK_CONNS   connections of the input-required load          (4)
#   BENCH_WORKING     sleeping (WORKING) tasks added before each fill (4)
#   BENCH_DBSTAT_MAX  the largest count read with dbstat        (2000000)
#   BENCH_ONCED       the onced to measure (default: built Release in
#                     BENCH_BUILD, like run.sh); BENCH_SKIP_BUILD=1 uses
#                     the one already there
TAG=scale
source "$(dirname "$0")/lib.sh"
COUNTS="${BENCH_COUNTS:-10000 100000 1000000}"
STORES="${BENCH_STORES:-sqlite pg}"
SQLDIR="${BENCH_SQLITE_DIR:-$OUT}"
PG_URL="${BENCH_PG_URL:-postgres://postgres@127.0.0.1:25432/once}"
PG_SCHEMA="${BENCH_PG_SCHEMA:-scale}"
REDIS_URL="${BENCH_REDIS_URL:-redis://127.0.0.1:26379/9?prefix=scale}"
DYNAMO_URL="${BENCH_DYNAMO_URL:-dynamodb://scale?region=us-east-1&endpoint=http://127.0.0.1:27432&create=1}"
CALLS="${BENCH_CALLS:-200}"
ASK_CONNS="${BENCH_ASK_CONNS:-4}"
WORKING="${BENCH_WORKING:-4}"
DBSTAT_MAX="${BENCH_DBSTAT_MAX:-2000000}"
LUA="$root/bench/send.lua"
RUN="s$(date +%s | tail -c 6)"   # prefix of every ID this run mints
CTX="$RUN-ctx"
command -v sqlite3 >/dev/null || die "sqlite3 is missing (bash scripts/deps.sh)"
case " $STORES " in *" pg "*) command -v psql >/dev/null || die "psql is missing" ;; esac

registered() { # PORT: onced's count of registered tasks, cheaply (polled)
  curl -s --max-time 10 "http://127.0.0.1:$1/" -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"once/admin/stats"}' |
    grep -o '"registered":[0-9]*' | cut -d: -f2
}

# untrack PID: a process that ended is no longer the EXIT trap's to stop.
untrack() {
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" != "$1" ] && keep+=("$p"); done
  PIDS=("${keep[@]+"${keep[@]}"}")
}

# rate NAME: 5 s of blocking new tasks; prints "ok/s errors".
rate() {
  wrk -t2 -c64 -d5s --timeout 10s -s "$LUA" "http://127.0.0.1:$PORT/" -- \
    new block "$RUN$1" >"$OUT/rate-$1.wrk" 2>&1
  python3 - "$OUT/rate-$1.wrk" <<'PY'
import re, sys
r = dict(re.findall(r"(\w+)=([0-9.]+)", open(sys.argv[1]).read().split("RESULT", 1)[-1]))
if "ok" not in r:
    print("0 no-result"); sys.exit()
bad = ["%s=%s" % (k, r[k]) for k in ("connect", "read", "write", "non2xx", "timeout", "rpc_err",
                                      "not_done") if float(r[k]) != 0]
print("%.0f %s" % (float(r["ok"]) / float(r["seconds"]), ",".join(bad) or "0"))
PY
}

# working N NAME: N tasks that stay TASK_STATE_WORKING (the echo executor
# sleeps a day on a turn worker).
working() {
  local i
  for ((i = 0; i < $1; i++)); do
    curl -s --max-time 10 "http://127.0.0.1:$PORT/" -H 'Content-Type: application/json' \
      -H 'A2A-Version: 1.0' -H 'A2A-Extensions: urn:once:a2a:idempotency:v1' \
      -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"$RUN-w$2-$i\",\"taskId\":\"$RUN-w$2-$i\",\"contextId\":\"$CTX\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"sleep:86400\"}]},\"configuration\":{\"returnImmediately\":true}}}" |
      grep -q TASK_STATE_ || die "a sleeping task was refused"
  done
}

# stop_wrk PID: SIGINT, which makes wrk print its summary and RESULT line.
# wrk installs its handler only once its threads run (until then the
# signal is ignored), so it is sent again until wrk has gone.
stop_wrk() {
  local i
  for ((i = 0; i < 300; i++)); do
    ((i % 20 == 0)) && kill -INT "$1" 2>/dev/null
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$1" 2>/dev/null && { kill -KILL "$1"; log "wrk $1 ignored SIGINT for 30 s"; }
  wait "$1"
  untrack "$1"
}

# fill NAME TARGET: both loads until onced has registered TARGET tasks.
# Appends "prefix requests" of the new-task load to $OUT/NAME.ids (what
# GetTask picks from) and a line per fill to $OUT/NAME.fill.
fill() {
  local name=$1 target=$2 tag="$RUN$1f$2" n0 t0 n w1 w2 i
  n0=$(registered "$PORT")
  # The last checkpoint's rate run may have passed this one already.
  [ "$n0" -ge "$target" ] && return 0
  t0=$(date +%s.%N)
  wrk -t2 -c64 -d24h --timeout 10s -s "$LUA" "http://127.0.0.1:$PORT/" -- \
    new block "$tag" "$CTX/10" >"$OUT/$name-fill$target.wrk" 2>&1 &
  w1=$!
  wrk -t1 -c"$ASK_CONNS" -d24h --timeout 10s -s "$LUA" "http://127.0.0.1:$PORT/" -- \
    ask block "${tag}a" "$CTX/2" >"$OUT/$name-fill$target-ask.wrk" 2>&1 &
  w2=$!
  PIDS+=("$w1" "$w2")
  # A signal before the exec would reach the forked shell (and its EXIT
  # trap, which stops onced) instead: wait until both are wrk.
  for ((i = 0; i < 100; i++)); do
    [ "$(cat "/proc/$w1/comm" "/proc/$w2/comm" 2>/dev/null)" = $'wrk\nwrk' ] && break
    sleep 0.05
  done
  n=$n0
  while [ "${n:-0}" -lt "$target" ]; do
    kill -0 "$w1" 2>/dev/null && kill -0 "$w2" 2>/dev/null && kill -0 "$PID" 2>/dev/null ||
      die "$name: a load or onced ended during the fill (see $OUT)"
    sleep 0.2
    n=$(registered "$PORT")
  done
  stop_wrk "$w1"
  stop_wrk "$w2"
  local secs req
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  req=$(grep -o 'RESULT requests=[0-9]*' "$OUT/$name-fill$target.wrk" | cut -d= -f2)
  echo "$tag ${req:-0}" >>"$OUT/$name.ids"
  echo "fill to $target: $n0 -> $(registered "$PORT") in ${secs}s; $(grep -h '^RESULT' \
    "$OUT/$name-fill$target.wrk" "$OUT/$name-fill$target-ask.wrk" | tr '\n' ' ')" >>"$OUT/$name.fill"
  log "$name: $(tail -1 "$OUT/$name.fill" | cut -c1-100)"
}

# idle: until no turn is queued (the last blocking answers are out).
idle() {
  local i q
  for ((i = 0; i < 300; i++)); do
    q=$(engine_stats "$PORT" queued)
    [ "$q" = 0 ] && return 0
    sleep 0.1
  done
  die "turns still queued after 30 s"
}

# calls NAME COUNT: the timed ListTasks and GetTask calls; prints one line of
# "label=p50/p99/items/errors" fields (items: tasks in the first answer).
calls() {
  python3 - "$PORT" "$CTX" "$CALLS" "$OUT/$1.ids" "$OUT/$1-$2.calls" <<'PY'
import http.client, json, math, random, sys, time
port, ctx, calls, idfile, raw = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
hdr = {"Content-Type": "application/json", "A2A-Version": "1.0"}
out = open(raw, "w")

def call(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    t = time.perf_counter()
    conn.request("POST", "/", body, hdr)
    r = conn.getresponse()
    data = r.read()
    ms = (time.perf_counter() - t) * 1000
    doc = json.loads(data) if r.status == 200 else {}
    return ms, doc.get("result")

def pct(v, p):
    v = sorted(v)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]

def field(label, times, items, errors):
    out.write("%s %s\n" % (label, " ".join("%.3f" % t for t in times)))
    if not times:
        return "%s=-/-/%d/%d" % (label, items, errors)
    return "%s=%.2f/%.2f/%d/%d" % (label, pct(times, 50), pct(times, 99), items, errors)

res = []
IR = "TASK_STATE_INPUT_REQUIRED"
filters = [("all", {}), ("ctx", {"contextId": ctx}), ("nope", {"contextId": "nope"}),
           ("input", {"status": IR}), ("working", {"status": "TASK_STATE_WORKING"}),
           ("both", {"contextId": ctx, "status": IR})]
for label, f in filters:
    times, items, errors = [], -1, 0
    for _ in range(calls):
        ms, r = call("ListTasks", dict(f, pageSize=50))
        if r is None or not isinstance(r.get("tasks"), list):
            errors += 1
            continue
        times.append(ms)
        if items < 0:
            items = len(r["tasks"])
    res.append(field(label, times, items, errors))

# Paging: 5 pages of the unfiltered list, calls/5 times over.
times, items, errors = [], 0, 0
for _ in range(max(1, calls // 5)):
    tok = ""
    for page in range(5):
        ms, r = call("ListTasks", {"pageSize": 50, "pageToken": tok})
        if r is None or not isinstance(r.get("tasks"), list):
            errors += 1
            break
        times.append(ms)
        items += len(r["tasks"])
        tok = r.get("nextPageToken", "")
        if not tok:
            break
res.append(field("pages", times, items // max(1, calls // 5), errors))

# GetTask: IDs "<prefix>-<thread>-<n>" of the fill's new-task loads (two wrk
# threads; n at most a quarter of the run's requests, which each thread sent).
runs = [l.split() for l in open(idfile) if l.strip()]
rng = random.Random(38)
times, errors = [], 0
for _ in range(calls):
    prefix, req = rng.choice(runs)
    tid = "%s-%d-%d" % (prefix, rng.randrange(2), rng.randint(1, max(1, int(req) // 4)))
    ms, r = call("GetTask", {"id": tid, "historyLength": 0})
    if r is None or r.get("id") != tid:
        errors += 1
        continue
    times.append(ms)
res.append(field("get", times, 1, errors))
print(" ".join(res))
PY
}

# bytes_sqlite DB N: "file_bytes/task pages/task tasks,events,indexes free/task".
bytes_sqlite() {
  local db=$1 n=$2 file pages=- parts=- free
  file=$(($(stat -c %s "$db") + $(stat -c %s "$db-wal" 2>/dev/null || echo 0)))
  free=$(($(sqlite3 "$db" "PRAGMA freelist_count") * $(sqlite3 "$db" "PRAGMA page_size")))
  if [ "$n" -le "$DBSTAT_MAX" ]; then
    sqlite3 "$db" "SELECT name, sum(pgsize), sum(payload) FROM dbstat GROUP BY name ORDER BY 2 DESC" \
      >"$OUT/dbstat-$n.txt"
    read -r pages parts <<<"$(sqlite3 "$db" "
      SELECT sum(pgsize) / $n,
             (sum(CASE WHEN name = 'tasks' THEN pgsize END) / $n) || ',' ||
             (sum(CASE WHEN name = 'events' THEN pgsize END) / $n) || ',' ||
             (sum(CASE WHEN name NOT IN ('tasks', 'events') THEN pgsize END) / $n)
      FROM dbstat" | tr '|' ' ')"
  fi
  echo "$file $((file / n)) $pages $parts $((free / n))"
}

psql_q() { psql "$PG_URL" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

# bytes_pg N: "total_bytes total/task - tasks,events,indexes -" (per task:
# the two tables' heap+TOAST, and all the schema's indexes).
bytes_pg() {
  local n=$1
  psql_q "SELECT c.relname, pg_total_relation_size(c.oid), pg_indexes_size(c.oid)
          FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
          WHERE s.nspname = '$PG_SCHEMA' AND c.relkind = 'r' ORDER BY 2 DESC" >"$OUT/pgsize-$n.txt"
  psql_q "SELECT sum(pg_total_relation_size(c.oid)), sum(pg_total_relation_size(c.oid))::bigint / $n,
                 (sum(CASE WHEN relname = 'once_tasks' THEN pg_table_size(c.oid) END)::bigint / $n)
                 || ',' || (sum(CASE WHEN relname = 'once_events' THEN pg_table_size(c.oid) END)::bigint / $n)
                 || ',' || (sum(pg_indexes_size(c.oid))::bigint / $n)
          FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
          WHERE s.nspname = '$PG_SCHEMA' AND c.relkind = 'r'" |
    awk -F'|' '{print $1, $2, "-", $3, "-"}'
}

# The Redis server's used_memory, in bytes (redis-cli with the URL's host,
# port and database).
redis_used() {
  local hp=${REDIS_URL#redis://} db
  hp=${hp%%\?*}
  db=${hp#*/}
  hp=${hp%%/*}
  redis-cli -h "${hp%:*}" -p "${hp#*:}" -n "${db:-0}" INFO memory |
    awk -F: '/^used_memory:/ { print $2 + 0 }'
}

# bytes_redis N: "growth growth/task - - -" (used_memory since the reset).
bytes_redis() {
  local n=$1 used
  used=$(($(redis_used) - REDIS_BASE))
  echo "$used $((used / n)) - - -"
}

# run_store NAME URL [DB]: the empty store's rate, then the checkpoints.
run_store() {
  local name=$1 url=$2 db=${3:-} r0 e0 first="" count n line
  [ -n "$db" ] && rm -f "$db" "$db-wal" "$db-shm"
  start_onced "$name-empty" --store "$url"
  read -r r0 e0 <<<"$(rate "$name-empty")"
  stop "$PID" "$name-empty"
  log "$name: empty store $r0 tasks/s (errors $e0)"
  [ -n "$db" ] && rm -f "$db" "$db-wal" "$db-shm"
  echo "$name 0 $r0 $e0" >>"$OUT/rates.txt"
  start_onced "$name" --store "$url"
  [ "$name" = redis ] && REDIS_BASE=$(redis_used)   # the prefix reset: empty
  : >"$OUT/$name.ids"
  for count in $COUNTS; do
    working "$WORKING" "$count"
    fill "$name" "$count"
    idle
    n=$(registered "$PORT")
    line=$(calls "$name" "$count")
    local rr re
    read -r rr re <<<"$(rate "$name-$count")"
    idle
    first=${first:-$rr}
    local nb
    nb=$(registered "$PORT")
    case $name in
      sqlite*) bytes=$(bytes_sqlite "$db" "$nb") ;;
      pg) bytes=$(bytes_pg "$nb") ;;
      redis) bytes=$(bytes_redis "$nb") ;;
      *) bytes="0 - - - -" ;;
    esac
    echo "$name $n $(load1) $line" >>"$OUT/latency.txt"
    echo "$name $n $rr $re $first $r0 $nb $bytes" >>"$OUT/rates.txt"
    log "$name @ $n: $line"
    log "$name @ $n: $rr tasks/s ($re); $nb tasks: $bytes"
  done
  stop "$PID" "$name"
  [ -n "$db" ] && [ "${BENCH_KEEP:-0}" != 1 ] && rm -f "$db" "$db-wal" "$db-shm"
}

pg_url() { echo "$PG_URL?schema=$PG_SCHEMA&reset=1"; }

START_UPTIME="$(uptime)"
: >"$OUT/latency.txt"
: >"$OUT/rates.txt"
for s in $STORES; do
  case $s in
    sqlite) run_store sqlite "sqlite:$SQLDIR/scale.db" "$SQLDIR/scale.db" ;;
    sqlite-c0) run_store sqlite-c0 "sqlite:$SQLDIR/scale-c0.db?compact=0" "$SQLDIR/scale-c0.db" ;;
    pg)
      run_store pg "$(pg_url)"
      psql_q "DROP SCHEMA IF EXISTS $PG_SCHEMA CASCADE" || log "could not drop schema $PG_SCHEMA"
      ;;
    redis) run_store redis "$REDIS_URL&reset=1" ;;
    dynamodb) run_store dynamodb "$DYNAMO_URL&reset=1" ;;
    *) die "BENCH_STORES: unknown store $s" ;;
  esac
done
END_UPTIME="$(uptime)"

echo "## bench/scale.sh $(date -u +%Y-%m-%dT%H:%MZ) — $($ONCED --version | head -1)"
echo
echo "Machine: $(nproc) CPUs, $(uname -sr). Load: start \`${START_UPTIME# }\`; end \`${END_UPTIME# }\`."
echo "Fill: wrk -t2 -c64 send.lua new block (every 10th task in one shared context) with wrk -t1 -c$ASK_CONNS send.lua ask block (input-required, every 2nd in that context), $WORKING sleeping (working) tasks added before each fill."
echo
echo "ListTasks (pageSize 50) and GetTask, ms p50 / p99 over $CALLS calls each, one keep-alive connection; (n) = tasks in the first page; errors shown when not 0:"
echo
echo "| store | tasks | load1 | no filter | context | context \"nope\" | INPUT_REQUIRED | WORKING | context + INPUT_REQUIRED | 5 pages, per page | GetTask |"
echo "|---|---:|---:|---|---|---|---|---|---|---|---|"
while read -r store n load rest; do
  row="| $store | $n | $load |"
  for f in $rest; do
    IFS=/ read -r p50 p99 items errors <<<"${f#*=}"
    cell="$p50 / $p99"
    case ${f%%=*} in get) ;; *) cell="$cell ($items)" ;; esac
    [ "$errors" != 0 ] && cell="$cell, **$errors errors**"
    row="$row $cell |"
  done
  echo "$row"
done <"$OUT/latency.txt"
echo
echo "New blocking tasks/s (wrk -t2 -c64 -d5s, answers that passed send.lua's checks) and bytes at rest after it:"
echo
echo "| store | tasks | new tasks/s | errors | × first checkpoint | × empty store | tasks after | MB (SQLite: file+WAL; PG: tables+indexes; Redis: used_memory growth; DynamoDB: none) | bytes / task | per task: tasks, events, indexes (SQLite: dbstat pages) | SQLite pages / task, free / task |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---|---:|"
while read -r store n rr re first r0 nb total per pages parts free; do
  if [ "$n" = 0 ]; then
    echo "| $store | 0 (a fresh onced) | $rr | $re | | 1.00 | | | | | |"
    continue
  fi
  printf '| %s | %s | %s | %s | %.2f | %.2f | %s | %.1f | %s | %s | %s, %s |\n' "$store" "$n" "$rr" "$re" \
    "$(echo "$rr / $first" | bc -l)" "$(echo "$rr / $r0" | bc -l)" "$nb" "$(echo "${total:-0} / 1000000" | bc -l)" \
    "$per" "$parts" "$pages" "$free"
done <"$OUT/rates.txt"
echo
echo "Raw output: $OUT"
