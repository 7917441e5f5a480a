#!/usr/bin/env bash
# bench/rest.sh -- bytes at rest per finished task on SQLite (issue 38,
# item 2: "a trivial finished task <= 1 KB"), with compaction off and on.
#
#   bash bench/rest.sh
#
# For each setting (compact=off, then compact=0: every finished task is
# compacted at the sweep after it finished), a fresh onced on a fresh file
# gets blocking new echo tasks from wrk -t2 -c16 (bench/send.lua "new block":
# "hello", fresh client-minted IDs) for BENCH_SECONDS; then, with compaction
# on, the script waits until the sweep has compacted every task (a query of
# the file's rows, not a sleep), stops onced and reads the file with
# SQLite's dbstat: the pages of each table and index per task (what the
# store holds), their payload (the bytes of the rows themselves), the
# freelist (pages compaction freed, which new tasks take next) and the
# file's size. Prints one markdown table; raw output in
# $B/bench-out/rest-<date-time>/.
#
# Environment (all optional):
#   BENCH_SECONDS   seconds of load per setting         (5)
#   BENCH_ONCED     the onced to measure (default: built Release in
#                   BENCH_BUILD, like run.sh); BENCH_SKIP_BUILD=1 uses the
#                   one already there
TAG=rest
source "$(dirname "$0")/lib.sh"
SECONDS_LOAD="${BENCH_SECONDS:-5}"
command -v sqlite3 >/dev/null || die "sqlite3 is missing (bash scripts/deps.sh)"

q() { sqlite3 "$1" "$2"; }

echo "Machine: $(nproc) CPUs, $(uname -sr). Load at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "wrk -t2 -c16 -d${SECONDS_LOAD}s bench/send.lua new block; onced $($ONCED --version | head -1)"
echo
echo "| compact | tasks | errors | pages / task | of which tasks, events, indexes | row payload / task (tasks, events) | freelist / task | file / task |"
echo "|---|---:|---|---:|---|---|---:|---:|"
for mode in off 0; do
  db="$OUT/rest-$mode.db"
  start_onced "onced-$mode" --store "sqlite:$db?compact=$mode"
  res=$(wrk -t2 -c16 -d"${SECONDS_LOAD}s" -s "$root/bench/send.lua" "http://127.0.0.1:$PORT/" -- \
    new block "rest$mode" 2>&1 | grep '^RESULT')
  echo "$res" >"$OUT/wrk-$mode.txt"
  errors=$(sed -n 's/.*\(non2xx=[0-9]* timeout=[0-9]* rpc_err=[0-9]* not_done=[0-9]*\).*/\1/p' <<<"$res")
  if [ "$mode" != off ]; then
    # Compaction runs at each sweep (every second): wait until no task is
    # left unpacked and no task keeps more than one event.
    for ((i = 0; i < 600; i++)); do
      left=$(q "$db" "SELECT (SELECT count(*) FROM tasks WHERE packed IS NULL) +
                      (SELECT count(*) - (SELECT count(*) FROM tasks) FROM events)")
      [ "$left" = 0 ] && break
      sleep 0.5
    done
    [ "$left" = 0 ] || die "compaction did not finish: $left rows left"
  fi
  stop "$PID" "onced-$mode"
  n=$(q "$db" "SELECT count(*) FROM tasks")
  q "$db" "SELECT name, sum(pgsize), sum(payload), sum(unused) FROM dbstat GROUP BY name ORDER BY 2 DESC" \
    >"$OUT/dbstat-$mode.txt"
  read -r pages tpages epages ipages tpay epay <<<"$(q "$db" "
    SELECT sum(pgsize) / $n,
           sum(CASE WHEN name = 'tasks' THEN pgsize END) / $n,
           sum(CASE WHEN name = 'events' THEN pgsize END) / $n,
           sum(CASE WHEN name NOT IN ('tasks', 'events') THEN pgsize END) / $n,
           sum(CASE WHEN name = 'tasks' THEN payload END) / $n,
           sum(CASE WHEN name = 'events' THEN payload END) / $n
    FROM dbstat" | tr '|' ' ')"
  free=$(($(q "$db" "PRAGMA freelist_count") * $(q "$db" "PRAGMA page_size") / n))
  file=$(($(stat -c %s "$db") / n))
  echo "| $mode | $n | $errors | $pages | $tpages, $epages, $ipages | $tpay, $epay | $free | $file |"
done
echo
echo "Load at end: $(cut -d' ' -f1-3 /proc/loadavg). Raw output: $OUT"
