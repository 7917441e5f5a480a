#!/usr/bin/env bash
# bench/rss.sh -- memory of the `memory:` store under a long stream of new
# tasks: issue 15's row "peak RSS after 1M tasks through memory: with
# --retention 1m: flat, <= 64 MB".
#
#   bash bench/rss.sh
#
# For each tombstone setting (the default 30d, and a short one), a fresh
# onced --store memory: (BENCH_STORE_URL) --retention 1m gets blocking new tasks from
# wrk -t2 -c64 (bench/send.lua "new block", fresh client-minted IDs) until
# it has registered BENCH_TASKS of them (or BENCH_MAX_SECONDS have passed:
# a store that slows down as it fills says so by not getting there); then it idles BENCH_AFTER more
# seconds with no load (retention keeps sweeping). Every BENCH_SAMPLE
# seconds VmRSS and VmHWM of onced and its engine counters
# (once/admin/stats: registered, swept, purged, and the memory store's own
# count: tasks and tombstones held, the bytes its budget counts) go into a
# CSV. Prints a markdown table per setting: RSS at every 100k tasks, the
# peak, the rate the load reached and what wrk counted as errors (refusals
# of a full store are non-2xx: 503), the store's peak bytes against its
# budget, and whether RSS is flat (the last quarter of the load grew it by
# less than 10% of what it was at half the load). A setting that is not
# flat, or whose store passed its budget, is printed as FAILED and the
# script exits 1. Raw CSVs (<setting>.csv: bench/plot.sh draws RSS against
# registered from them) and logs in $B/bench-out/rss-<date-time>/ (BENCH_OUT).
#
# Environment (all optional):
#   BENCH_TASKS        new tasks per setting              (1000000)
#   BENCH_STORE_URL    the store onced is given           (memory:), e.g.
#                      "memory:?max=32M&tombs=compact" for a memory budget
#   BENCH_SHORT_TOMB   the short --tombstone-retention   (1m)
#   BENCH_RSS_CONFIGS  which settings: default, short     ("default short")
#   BENCH_MAX_SECONDS  the longest the load may run       (600)
#   BENCH_SAMPLE       seconds between samples            (5)
#   BENCH_AFTER        idle seconds sampled after the load (70)
#   BENCH_ONCED        the onced to measure (default: built Release in
#                      BENCH_BUILD, like run.sh); BENCH_SKIP_BUILD=1 uses
#                      the one already there
TAG=rss
source "$(dirname "$0")/lib.sh"
NTASKS="${BENCH_TASKS:-1000000}"
STORE_URL="${BENCH_STORE_URL:-memory:}"
case $STORE_URL in memory:*) ;; *) die "BENCH_STORE_URL: a memory: URL, not $STORE_URL" ;; esac
SHORT="${BENCH_SHORT_TOMB:-1m}"
CONFIGS="${BENCH_RSS_CONFIGS:-default short}"
MAXS="${BENCH_MAX_SECONDS:-600}"
SAMPLE="${BENCH_SAMPLE:-5}"
AFTER="${BENCH_AFTER:-70}"
LUA="$root/bench/send.lua"

# run_config NAME ARGS...: one fresh onced, the load, the samples.
run_config() {
  local name=$1
  shift
  start_onced "$name" --store "$STORE_URL" --retention 1m "$@"
  local csv="$OUT/$name.csv" t0 wpid reg=0 sw pu
  echo "t_s,phase,registered,swept,purged,tasks_held,tombstones_held,store_bytes,max_bytes,rss_kb,hwm_kb,load1" >"$csv"
  t0=$(date +%s)
  wrk -t2 -c64 -d3600s --timeout 10s -s "$LUA" "http://127.0.0.1:$PORT/" -- new block \
    "r$name$(date +%s%N | tail -c 9)" >"$OUT/$name.wrk" 2>&1 &
  wpid=$!
  PIDS+=("$wpid")
  sample() { # PHASE
    local tasks tombs bytes maxb
    read -r reg sw pu tasks tombs bytes maxb <<<"$(engine_stats "$PORT" registered swept purged \
      memoryStore.tasks memoryStore.tombstones memoryStore.bytes memoryStore.maxBytes)"
    echo "$(($(date +%s) - t0)),$1,$reg,$sw,$pu,$tasks,$tombs,$bytes,$maxb,$(status_kb "$PID" VmRSS),$(status_kb "$PID" VmHWM),$(load1)" >>"$csv"
  }
  log "$name: $NTASKS blocking new tasks (load1 $(load1))"
  while [ "${reg:-0}" -lt "$NTASKS" ] && [ $(($(date +%s) - t0)) -lt "$MAXS" ] && kill -0 "$wpid" 2>/dev/null && kill -0 "$PID" 2>/dev/null; do
    sleep "$SAMPLE"
    sample load
    log "$name: $(tail -1 "$csv")"
  done
  kill -INT "$wpid" 2>/dev/null
  wait "$wpid"
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" != "$wpid" ] && keep+=("$p"); done
  PIDS=("${keep[@]}")
  log "$name: load stopped at $reg tasks; ${AFTER}s idle"
  local t1=$(($(date +%s) + AFTER))
  while [ "$(date +%s)" -lt "$t1" ] && kill -0 "$PID" 2>/dev/null; do
    sleep "$SAMPLE"
    sample idle
  done
  stop "$PID" "$name"
}

START_UPTIME="$(uptime)"
for c in $CONFIGS; do
  case $c in
    default) run_config default ;;
    short) run_config short --tombstone-retention "$SHORT" ;;
    *) die "BENCH_RSS_CONFIGS: unknown setting $c" ;;
  esac
done
END_UPTIME="$(uptime)"
meta load_end "$(loadavg)"
meta store "$STORE_URL"
meta short_tomb "$SHORT"

echo
echo "## bench/rss.sh $(date -u +%Y-%m-%dT%H:%MZ) — $ONCED"
echo
echo "Load: start \`${START_UPTIME# }\`; end \`${END_UPTIME# }\`. $NTASKS blocking new tasks per setting, wrk -t2 -c64, --store $STORE_URL --retention 1m."
for c in $CONFIGS; do
  tomb="30d (default)"
  [ "$c" = short ] && tomb="$SHORT"
  echo
  echo "### --tombstone-retention $tomb"
  echo
  python3 - "$OUT/$c.csv" "$NTASKS" "$OUT/$c.wrk" <<'PY' || FAILED=1
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
n = int(sys.argv[2])
wrk = open(sys.argv[3]).read()
load = [r for r in rows if r["phase"] == "load"]
if not load:
    print("no samples"); sys.exit()
mib = lambda kb: "%.1f" % (int(kb) / 1024)
print("| tasks registered | at s | RSS MiB | tasks held | tombstones held | load1 |")
print("|---:|---:|---:|---:|---:|---:|")
step = max(n // 10, 1)
shown = set()
for k in range(step, n + step, step):
    r = next((r for r in load if int(r["registered"]) >= k), None)
    if r and r["t_s"] not in shown:
        shown.add(r["t_s"])
        print("| %s | %s | %s | %s | %s | %s |" % (r["registered"], r["t_s"], mib(r["rss_kb"]),
              r["tasks_held"], r["tombstones_held"], r["load1"]))
idle = [r for r in rows if r["phase"] == "idle"]
if idle:
    r = idle[-1]
    print("| %s (idle end) | %s | %s | %s | %s | %s |" % (r["registered"], r["t_s"], mib(r["rss_kb"]),
          r["tasks_held"], r["tombstones_held"], r["load1"]))
last = load[-1]
secs = max(int(last["t_s"]), 1)
half = next((r for r in load if int(r["registered"]) >= int(last["registered"]) // 2), load[0])
q3 = next((r for r in load if int(r["registered"]) >= int(last["registered"]) * 3 // 4), load[-1])
peak_rss = max(int(r["rss_kb"]) for r in rows)
top_late = max(int(r["rss_kb"]) for r in load if int(r["registered"]) >= int(q3["registered"]))
top_half = max(int(r["rss_kb"]) for r in load if int(r["registered"]) <= int(q3["registered"]))
growth = (top_late - top_half) / max(int(half["rss_kb"]), 1)
print()
print("Peak VmHWM %s MiB (peak sampled VmRSS %s MiB); %s tasks in %s s (%.0f/s)." %
      (mib(max(int(r["hwm_kb"]) for r in rows)), mib(peak_rss), last["registered"], secs,
       int(last["registered"]) / secs))
res = re.search(r"^RESULT (.*)$", wrk, re.M)
res = dict(kv.split("=") for kv in res.group(1).split()) if res else {}
print("wrk: %s requests at %s/s; errors: connect %s, read %s, write %s, timeout %s, non-2xx %s "
      "(a full store's 503), JSON-RPC errors %s, not completed %s." %
      tuple(res.get(k, "?") for k in ("requests", "rps", "connect", "read", "write", "timeout",
                                      "non2xx", "rpc_err", "not_done")))
maxb = int(rows[-1]["max_bytes"] or 0)
peak_store = max(int(r["store_bytes"] or 0) for r in rows)
within = maxb == 0 or peak_store <= maxb
if maxb:
    print("Store: peak %s MiB of a %s MiB budget (sampled; the store counts its own bytes)." %
          (mib(peak_store // 1024), mib(maxb // 1024)))
flat = growth < 0.10
print("Flat: %s (the last quarter of the load raised RSS by %.0f%% of its value at half the load; flat = under 10%%)." %
      ("yes" if flat else "NO", 100 * growth))
if not flat or not within:
    print("**FAILED: %s**" % ("RSS is not flat" if not flat else "the store passed its budget"))
    sys.exit(1)
PY
done
echo
echo "Raw output: $OUT"
[ -z "${FAILED:-}" ] || { echo "bench/rss.sh: FAILED (above)" >&2; exit 1; }
