#!/usr/bin/env bash
# bench/callgrind.sh -- server-side instructions per new blocking task and
# per replay, by callgrind, with the functions that cost the most.
#
#   bash bench/callgrind.sh [BUILD_DIR]     (default: build)
#
# Runs BUILD_DIR/onced under valgrind --tool=callgrind with instrumentation
# off during start-up, for each store in CG_STORES ("memory sqlite"):
#   1. 20 uncounted new blocking tasks (first translations), counters zeroed;
#   2. CG_N new blocking SendMessage calls (fresh client-minted IDs, the
#      echo executor: each answer must be TASK_STATE_COMPLETED), one
#      keep-alive connection, dump;
#   3. an idle window as long as 2. took, dump (background threads: sweeper,
#      await poll, timers);
#   4. CG_N replays of one of those sends (each answer must carry
#      Idempotent-Replayed: true), dump; an idle window again, dump.
# The memory store runs with ?cold=off (see below). Per request = (window - its idle window) / CG_N. Prints one table row per
# store and the CG_TOP (25) costliest functions, inclusive, of the
# new-task window. Raw callgrind files stay in $CG_OUT (BUILD_DIR/cg-out).
# Instruction counts repeat to within about 1% between runs and do not
# depend on the machine's load, so this is the number to compare across
# commits.
#
#   CG_SWITCHES=1 bash bench/callgrind.sh [BUILD_DIR]
#
# counts context switches instead, without valgrind: onced alone, the same
# 20 warm-up tasks, then the two windows of CG_N requests each; per request
# = the growth of voluntary + nonvoluntary ctxt_switches summed over every
# thread of onced (/proc/PID/task/*/status) ÷ CG_N, printed as all(voluntary).
# A voluntary switch is a thread going to sleep (a hand-off to another
# thread, a wait); the nonvoluntary ones are preemptions and grow with the
# machine's load, so compare the voluntary figure across runs (CG_N=2000
# is a good size).
#
#   CG_ALLIN=1 CG_N=1000 bash bench/callgrind.sh [BUILD_DIR]
#
# measures a memory-store task all-in instead: `memory:` with its cold
# path on (the default), 20 uncounted new tasks and the wait until the
# sweeper has deflated them, counters zeroed; then CG_N new blocking tasks
# and the wait -- for the store's count of cold tasks (memoryStore.cold in
# once/admin/stats, polled every CG_POLL seconds, 1), not for a duration --
# until the sweeper has deflated every one of them, dump. Per task = that
# whole window (every thread: requests, sweeper, timers, the polls) / CG_N.
# Prints the row, the deflate's share (the sweeper's cool, inclusive) and
# the CG_TOP costliest functions of the window, inclusive.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
eval "$(python3 "$root/scripts/reaper.py" guard $$)"
B="${1:-$root/build}"
N="${CG_N:-200}"
TOP="${CG_TOP:-25}"
STORES="${CG_STORES:-memory sqlite}"
OUT="${CG_OUT:-$B/cg-out}/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
[ -x "$B/onced" ] || { echo "callgrind.sh: no $B/onced (build it first)" >&2; exit 1; }

PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done' EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# client PORT PREFIX COUNT MODE: COUNT SendMessage calls over one keep-alive
# connection; MODE new (a fresh task each, PREFIX-i) or replay (PREFIX-0
# again and again). Prints how many answers were as expected.
client() {
  python3 - "$@" <<'EOF'
import http.client, json, sys
port, prefix, count, mode = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
h = {"Content-Type": "application/json", "A2A-Version": "1.0",
     "A2A-Extensions": "urn:once:a2a:idempotency:v1"}
ok = 0
for i in range(count):
    tid = prefix + "-" + str(0 if mode == "replay" else i)
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": tid, "taskId": tid, "role": "ROLE_USER", "parts": [{"text": "hello"}]}}}
    c.request("POST", "/", json.dumps(body), h)
    r = c.getresponse()
    data = json.loads(r.read())
    st = data.get("result", {}).get("task", {}).get("status", {}).get("state")
    replayed = r.getheader("Idempotent-Replayed") == "true"
    ok += st == "TASK_STATE_COMPLETED" and replayed == (mode == "replay")
print(ok)
EOF
}

# wait_up PORT PID: until the server answers the agent card (60 s max).
wait_up() {
  local i
  for ((i = 0; i < 600; i++)); do
    kill -0 "$2" 2>/dev/null || return 1
    curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$1/.well-known/agent-card.json" && return 0
    sleep 0.1
  done
  return 1
}

cold_tasks() { # PORT: the memory store's count of tasks held deflated
  curl -s --max-time 60 "http://127.0.0.1:$1/" -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"once/admin/stats"}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["engine"]["memoryStore"]["cold"])' 2>/dev/null ||
    echo 0
}

# wait_cold PORT PID COUNT: until COUNT tasks are cold (CG_COLD_WAIT s at
# most, 600: a bound for a broken build, not a measure). Prints the polls.
wait_cold() {
  local polls=0 until=$((SECONDS + ${CG_COLD_WAIT:-600}))
  while [ "$(cold_tasks "$1")" -lt "$3" ]; do
    polls=$((polls + 1))
    kill -0 "$2" 2>/dev/null && [ "$SECONDS" -lt "$until" ] || { echo "-$polls"; return 1; }
    sleep "${CG_POLL:-1}"
  done
  echo "$polls"
}

# allin: the CG_ALLIN=1 run (see the head of this file).
allin() {
  local port pid ok polls ir f
  port=$(free_port)
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg-allin.%p.out" \
    "$B/onced" --drain-delay 0 --listen "127.0.0.1:$port" --store memory: --test-admin \
    --log-level warn >"$OUT/cg-allin.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  wait_up "$port" "$pid" || { tail "$OUT/cg-allin.log" >&2; exit 1; }
  callgrind_control -i on "$pid" >/dev/null 2>&1
  client "$port" warm 20 new >/dev/null
  wait_cold "$port" "$pid" 20 >/dev/null || { echo "callgrind.sh: the warm-up never went cold" >&2; exit 1; }
  callgrind_control -z "$pid" >/dev/null 2>&1
  ok=$(client "$port" new "$N" new)
  polls=$(wait_cold "$port" "$pid" $((20 + N))) ||
    { echo "callgrind.sh: $N tasks not cold after ${CG_COLD_WAIT:-600} s" >&2; exit 1; }
  callgrind_control -d allin "$pid" >/dev/null 2>&1
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null
  PIDS=()
  f=$(grep -l '^desc: Trigger: .*allin$' "$OUT"/cg-allin.*.out* | head -1)
  ir=$(awk '/^(summary|totals):/{print $2; exit}' "$f" 2>/dev/null)
  callgrind_annotate --inclusive=yes "$f" 2>/dev/null >"$OUT/allin-inclusive.txt"
  echo "| store | instructions / new task, all-in | answers ok | polls of once/admin/stats |"
  echo "|---|---:|---:|---:|"
  awk -v r="${ir:-0}" -v n="$N" -v ok="$ok" -v p="$polls" \
    'BEGIN{printf "| memory (cold path on) | %.0f | %s/%d | %s |\n", r / n, ok, n, p}'
  echo
  echo "Per task, inclusive, of the window (Ir / $N):"
  # The store's sweep (its deflating of cold tasks: copy, deflate, swap;
  # the static functions inline into it), zip.c's three calls (end: the
  # encoder), and the polls.
  for fn in mem_sweep once__zip_begin once__zip_add once__zip_end once__a2a_h_admin_stats; do
    awk -v fn="$fn" -v n="$N" '
      $0 ~ /^ *[0-9,]+ \(/ { x = $0; sub(/ \[[^]]*\]$/, "", x); m = x; sub(/^.*:/, "", m)
        if (m == fn || m ~ ("^" fn " ")) { v = $1; gsub(",", "", v); printf "  %-22s %8.0f\n", fn, v / n; exit } }' \
      "$OUT/allin-inclusive.txt"
  done
  echo
  echo "Top $TOP inclusive, all-in window ($N new tasks and their deflating; all threads):"
  echo '```'
  grep -E '^ *[0-9,]+ \(' "$OUT/allin-inclusive.txt" | head -"$TOP" | sed 's/ \[[^]]*\]$//'
  echo '```'
  echo "Raw output: $OUT"
}

switches() { # PID: "all voluntary" context switches, summed over its threads
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/ctxt_switches/ { s += $2 } /^voluntary_ctxt/ { v += $2 } END { print s + 0, v + 0 }'
}

# switch_window PID PORT PREFIX MODE: switches per request over CG_N
# requests, as "all(voluntary) answers-ok".
switch_window() {
  local a0 v0 a1 v1 ok
  read -r a0 v0 <<<"$(switches "$1")"
  ok=$(client "$2" "$3" "$N" "$4")
  read -r a1 v1 <<<"$(switches "$1")"
  awk -v a="$a0" -v b="$a1" -v c="$v0" -v d="$v1" -v n="$N" -v ok="$ok" \
    'BEGIN{printf "%.2f(%.2f) %s", (b - a) / n, (d - c) / n, ok}'
}

ir_of() { # the total Ir of the dump whose trigger names $1
  local f
  f=$(grep -l "^desc: Trigger: .*$1\$" "$OUT"/cg-"$2".*.out* 2>/dev/null | head -1)
  awk '/^(summary|totals):/{print $2; exit}' "$f" 2>/dev/null
}

# window STORE PID PORT NAME PREFIX MODE: one counted window and its idle twin.
window() {
  local store=$1 pid=$2 port=$3 name=$4 prefix=$5 mode=$6 t0 t1 ok
  callgrind_control -z "$pid" >/dev/null 2>&1
  t0=$(date +%s%N)
  ok=$(client "$port" "$prefix" "$N" "$mode")
  t1=$(date +%s%N)
  callgrind_control -d "$name" "$pid" >/dev/null 2>&1
  sleep "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b-a)/1e9}')"
  callgrind_control -d "$name-idle" "$pid" >/dev/null 2>&1
  local ir ii
  ir=$(ir_of "$name" "$store")
  ii=$(ir_of "$name-idle" "$store")
  awk -v r="${ir:-0}" -v i="${ii:-0}" -v n="$N" -v ok="$ok" \
    'BEGIN{ if (r > 0) printf "%.0f %s", (r - i) / n, ok; else printf "? %s", ok}'
}

if [ "${CG_ALLIN:-0}" = 1 ]; then
  allin
  exit 0
fi
what="instructions"
[ "${CG_SWITCHES:-0}" = 1 ] && what="context switches"
echo "| store | $what / new blocking task | answers ok | $what / replay | answers ok |"
echo "|---|---:|---:|---:|---:|"
for store in $STORES; do
  case $store in
    # The memory store deflates tasks finished 2 s ago on its sweep: work
    # per task, but not the request's, and it would land in whichever
    # window runs 2 s later. Off here; test_store_mem_map measures it.
    memory) url="memory:?cold=off" ;;
    sqlite) url="sqlite:$OUT/cg.db" ;;
    *) echo "callgrind.sh: unknown store $store" >&2; exit 1 ;;
  esac
  port=$(free_port)
  if [ "${CG_SWITCHES:-0}" = 1 ]; then
    "$B/onced" --drain-delay 0 --listen "127.0.0.1:$port" --store "$url" --log-level warn \
      >"$OUT/sw-$store.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_up "$port" "$pid" || { tail "$OUT/sw-$store.log" >&2; exit 1; }
    client "$port" "warm-$store" 20 new >/dev/null
    read -r new_sw new_ok <<<"$(switch_window "$pid" "$port" "new-$store" new)"
    read -r rep_sw rep_ok <<<"$(switch_window "$pid" "$port" "new-$store" replay)"
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
    PIDS=()
    echo "| $store | $new_sw | $new_ok/$N | $rep_sw | $rep_ok/$N |"
    continue
  fi
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/cg-$store.%p.out" \
    "$B/onced" --drain-delay 0 --listen "127.0.0.1:$port" --store "$url" --log-level warn \
    >"$OUT/cg-$store.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  wait_up "$port" "$pid" || { tail "$OUT/cg-$store.log" >&2; exit 1; }
  callgrind_control -i on "$pid" >/dev/null 2>&1
  client "$port" "warm-$store" 20 new >/dev/null
  read -r new_ir new_ok <<<"$(window "$store" "$pid" "$port" new "new-$store" new)"
  read -r rep_ir rep_ok <<<"$(window "$store" "$pid" "$port" replay "new-$store" replay)"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null
  PIDS=()
  echo "| $store | $new_ir | $new_ok/$N | $rep_ir | $rep_ok/$N |"
  f=$(grep -l '^desc: Trigger: .*new$' "$OUT"/cg-"$store".*.out* | head -1)
  callgrind_annotate --inclusive=yes "$f" 2>/dev/null | head -$((TOP + 25)) >"$OUT/top-$store.txt"
done
[ "${CG_SWITCHES:-0}" = 1 ] && exit 0
for store in $STORES; do
  echo
  echo "Top $TOP inclusive, $store, new blocking tasks ($N; Ir over the window, all threads):"
  echo '```'
  grep -E '^ *[0-9,]+ \(' "$OUT/top-$store.txt" | head -"$TOP" | sed 's/ \[[^]]*\]$//'
  echo '```'
done
echo "Raw output: $OUT"
