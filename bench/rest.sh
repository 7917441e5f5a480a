#!/usr/bin/env bash
# bench/rest.sh -- bytes at rest per finished task on SQLite and, given
# BENCH_PG_URL, PostgreSQL (issue 38, item 2: "a trivial finished task
# <= 1 KB"), with compaction off and on.
#
#   bash bench/rest.sh
#   BENCH_PG_URL=postgres://postgres@127.0.0.1:25432/once bash bench/rest.sh
#
# Then a third run with --retention 1s (every task a tombstone a second
# after it finished): bytes per tombstone, on SQLite and PostgreSQL.
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
# PostgreSQL (BENCH_PG_URL set): the same two runs against schemas
# rest_off and rest_0 of that database (emptied at start, dropped at the
# end), the wait on its rows, then VACUUM (the dead row versions the
# compaction's deletes and updates left become free space in the files,
# which new rows take, as SQLite's freelist) and pg_total_relation_size of
# once_tasks and once_events (heap, indexes, TOAST) per task, with the
# rows' own bytes (avg pg_column_size of a row: its data and a 24-byte
# header, without the line pointer and page overhead); then VACUUM FULL
# (the tables and indexes rewritten without the free space: what the
# tasks themselves take) and the total again, split. A second markdown
# table; per relation and per task column in pgsize-* and pgcols-*.
#
# Environment (all optional):
#   BENCH_SECONDS   seconds of load per setting         (5)
#   BENCH_ONCED     the onced to measure (default: built Release in
#                   BENCH_BUILD, like run.sh); BENCH_SKIP_BUILD=1 uses the
#                   one already there
#   BENCH_PG_URL    a PostgreSQL database URL without parameters: adds its
#                   rows (needs psql)
TAG=rest
source "$(dirname "$0")/lib.sh"
SECONDS_LOAD="${BENCH_SECONDS:-5}"
command -v sqlite3 >/dev/null || die "sqlite3 is missing (bash scripts/deps.sh)"

q() { sqlite3 "$1" "$2"; }
# PostgreSQL: SQL on schema $1 of BENCH_PG_URL, one value per line.
pq() { psql "$BENCH_PG_URL" -XAtq -v ON_ERROR_STOP=1 -c "SET search_path = $1" -c "$2"; }

# load NAME: echo tasks from wrk on $PORT for SECONDS_LOAD (client IDs
# prefixed rest<NAME>); its RESULT line in $OUT/wrk-NAME.txt, its error
# counts printed.
load() {
  local res
  res=$(wrk -t2 -c16 -d"${SECONDS_LOAD}s" -s "$root/bench/send.lua" "http://127.0.0.1:$PORT/" -- \
    new block "rest$1" 2>&1 | grep '^RESULT')
  echo "$res" >"$OUT/wrk-$1.txt"
  sed -n 's/.*\(non2xx=[0-9]* timeout=[0-9]* rpc_err=[0-9]* not_done=[0-9]*\).*/\1/p' <<<"$res"
}

# wait_compacted CMD...: compaction runs at each sweep (every second):
# wait until CMD, which counts what is left to compact, prints 0 (5
# minutes at most).
wait_compacted() {
  local left
  for ((i = 0; i < 600; i++)); do
    left=$("$@")
    [ "$left" = 0 ] && return 0
    sleep 0.5
  done
  die "compaction did not finish: $left rows left"
}
# SQLite: the tasks left unpacked plus the events past one per task.
sq_left() {
  q "$1" "SELECT (SELECT count(*) FROM tasks WHERE packed IS NULL) +
                 (SELECT count(*) - (SELECT count(*) FROM tasks) FROM events)"
}
# PostgreSQL keeps no event row of a compacted task (its generation is the
# row's trimmed): the rows not yet packed or trimmed, plus any event left.
pg_left() {
  pq "$1" "SELECT (SELECT count(*) FROM once_tasks WHERE packed IS NULL OR trimmed IS NULL) +
                  (SELECT count(*) FROM once_events)"
}

echo "Machine: $(nproc) CPUs, $(uname -sr). Load at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "wrk -t2 -c16 -d${SECONDS_LOAD}s bench/send.lua new block; onced $($ONCED --version | head -1)"
echo
echo "| compact | tasks | errors | pages / task | of which tasks, events, indexes | row payload / task (tasks, events) | freelist / task | file / task |"
echo "|---|---:|---|---:|---|---|---:|---:|"
for mode in off 0; do
  db="$OUT/rest-$mode.db"
  start_onced "onced-$mode" --store "sqlite:$db?compact=$mode"
  errors=$(load "$mode")
  [ "$mode" = off ] || wait_compacted sq_left "$db"
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

# Tombstones: --retention 1s turns each task into one a second after it
# finished (TASK_EXPIRED for its ID until --tombstone-retention); wait until
# no task is left, then the same reading per tombstone.
sq_tasks_left() { q "$1" "SELECT count(*) FROM tasks"; }
db="$OUT/rest-tomb.db"
start_onced "onced-tomb" --retention 1s --store "sqlite:$db?compact=0"
errors=$(load tomb)
wait_compacted sq_tasks_left "$db"
stop "$PID" "onced-tomb"
n=$(q "$db" "SELECT count(*) FROM tombstones")
q "$db" "SELECT name, sum(pgsize), sum(payload), sum(unused) FROM dbstat GROUP BY name ORDER BY 2 DESC" \
  >"$OUT/dbstat-tomb.txt"
read -r pages tbpages ipages tbpay <<<"$(q "$db" "
  SELECT sum(pgsize) / $n,
         sum(CASE WHEN name = 'tombstones' THEN pgsize END) / $n,
         sum(CASE WHEN name NOT IN ('tasks', 'events', 'tombstones') THEN pgsize END) / $n,
         sum(CASE WHEN name = 'tombstones' THEN payload END) / $n
  FROM dbstat WHERE name NOT IN ('tasks', 'events')" | tr '|' ' ')"
free=$(($(q "$db" "PRAGMA freelist_count") * $(q "$db" "PRAGMA page_size") / n))
echo
echo "Tombstones (\`--retention 1s\`, every task expired; pages of the tombstones table and its index, the tasks and events tables left empty):"
echo
echo "| tombstones | errors | pages / tombstone | of which table, index | row payload / tombstone | freelist / tombstone |"
echo "|---:|---|---:|---|---:|---:|"
echo "| $n | $errors | $pages | $tbpages, $ipages | $tbpay | $free |"

size() { pq "$1" "SELECT $2"; }

pg_row() {
  local mode=$1 ns=rest_$1 errors n t vac trow erow total theap eheap tidx eidx toast
  start_onced "onced-pg-$mode" --store "$BENCH_PG_URL?schema=$ns&reset=1&compact=$mode"
  errors=$(load "pg-$mode")
  [ "$mode" = off ] || wait_compacted pg_left "$ns"
  stop "$PID" "onced-pg-$mode"
  pq "$ns" "VACUUM once_tasks, once_events" || die "VACUUM failed"
  n=$(pq "$ns" "SELECT count(*) FROM once_tasks")
  t="pg_total_relation_size('once_tasks') + pg_total_relation_size('once_events')"
  vac=$(size "$ns" "($t) / $n")
  read -r trow erow <<<"$(size "$ns" "(SELECT avg(pg_column_size(t.*))::int FROM once_tasks t),
    (SELECT coalesce(sum(pg_column_size(e.*)), 0) / $n FROM once_events e)" | tr '|' ' ')"
  # What a task row's columns hold, on average (the raw output).
  pq "$ns" "SELECT 'principal', avg(pg_column_size(principal))::int, 'task_id',
            avg(pg_column_size(task_id))::int, 'context_id', avg(pg_column_size(context_id))::int,
            'digests', avg(pg_column_size(digests))::int, 'first_digest',
            avg(pg_column_size(first_digest))::int, 'lease_owner',
            avg(pg_column_size(lease_owner))::int, 'task_json', avg(pg_column_size(task_json))::int,
            'journal', avg(coalesce(pg_column_size(journal), 0))::int, 'packed',
            avg(coalesce(pg_column_size(packed), 0))::int, 'trimmed',
            avg(coalesce(pg_column_size(trimmed), 0))::int FROM once_tasks" >"$OUT/pgcols-$mode.txt"
  pq "$ns" "VACUUM FULL once_tasks, once_events" || die "VACUUM FULL failed"
  pq "$ns" "SELECT relname, pg_relation_size(c.oid) / $n FROM pg_class c JOIN pg_namespace s
            ON s.oid = c.relnamespace WHERE s.nspname = '$ns' ORDER BY 2 DESC" >"$OUT/pgsize-$mode.txt"
  read -r total theap eheap tidx eidx toast <<<"$(size "$ns" "($t) / $n,
    pg_relation_size('once_tasks') / $n, pg_relation_size('once_events') / $n,
    pg_indexes_size('once_tasks') / $n, pg_indexes_size('once_events') / $n,
    ($t - pg_relation_size('once_tasks') - pg_relation_size('once_events')
       - pg_indexes_size('once_tasks') - pg_indexes_size('once_events')) / $n" | tr '|' ' ')"
  echo "| $mode | $n | $errors | $vac | $total | $theap, $eheap | $tidx, $eidx | $toast | $trow, $erow |"
  pq "$ns" "DROP SCHEMA $ns CASCADE" >/dev/null
}

if [ -n "${BENCH_PG_URL:-}" ]; then
  command -v psql >/dev/null || die "psql is missing (BENCH_PG_URL needs it)"
  echo
  echo "PostgreSQL ($(psql "$BENCH_PG_URL" -XAtc 'SHOW server_version')), bytes per task:"
  echo
  echo "| compact | tasks | errors | total / task after VACUUM | after VACUUM FULL | of which heap (tasks, events) | indexes (tasks, events) | TOAST | rows / task (tasks, events) |"
  echo "|---|---:|---|---:|---:|---|---|---:|---|"
  for mode in off 0; do
    pg_row "$mode"
  done
  # Tombstones: a row of once_tasks each (tomb, its texts emptied), with the
  # key and the indexes that still hold it (the primary key and the purge
  # index), after VACUUM FULL.
  ns=rest_tomb
  start_onced "onced-pg-tomb" --retention 1s --store "$BENCH_PG_URL?schema=$ns&reset=1&compact=0"
  errors=$(load pg-tomb)
  wait_compacted pq "$ns" "SELECT count(*) FROM once_tasks WHERE NOT tomb"
  stop "$PID" "onced-pg-tomb"
  pq "$ns" "VACUUM FULL once_tasks, once_events" || die "VACUUM FULL failed"
  n=$(pq "$ns" "SELECT count(*) FROM once_tasks")
  read -r total theap tidx trow <<<"$(size "$ns" "(pg_total_relation_size('once_tasks')
    + pg_total_relation_size('once_events')) / $n, pg_relation_size('once_tasks') / $n,
    pg_indexes_size('once_tasks') / $n, (SELECT avg(pg_column_size(t.*))::int FROM once_tasks t)" |
    tr '|' ' ')"
  echo
  echo "Tombstones (\`--retention 1s\`), after VACUUM FULL:"
  echo
  echo "| tombstones | errors | total / tombstone | heap | indexes | row |"
  echo "|---:|---|---:|---:|---:|---:|"
  echo "| $n | $errors | $total | $theap | $tidx | $trow |"
  pq "$ns" "DROP SCHEMA $ns CASCADE" >/dev/null
fi
echo
echo "Load at end: $(cut -d' ' -f1-3 /proc/loadavg). Raw output: $OUT"
