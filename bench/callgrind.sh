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
