#!/usr/bin/env bash
# bench/group_commit.sh -- two onced builds' group commit, side by side, in
# one run: new blocking tasks/s and context switches per task under wrk
# -t2 -c64, per store, the two builds alternated round by round so that the
# machine's load moves both alike (the ratio B/A is the figure; the
# absolute rates are not).
#
#   bash bench/group_commit.sh BUILD_A BUILD_B STORE_URL...
#
# STORE_URL: "sqlite" (a fresh file per run under the build dir, the default
# synchronous=full) or a postgres:// / redis:// URL of a running server
# (scripts/test-services.sh start: its PostgreSQL runs with fsync=off, so a
# commit there is a round trip, not a disk flush). Each run is one fresh
# onced (echo executor), WARMUP s of load discarded, then DURATION s
# measured; the switches are the growth of voluntary and nonvoluntary
# ctxt_switches over every thread of onced in that window, per request,
# printed as all(voluntary). Voluntary switches are threads going to sleep
# (hand-offs, waits): the number group commit's hand-off moves.
#   ROUNDS (3), WARMUP (1), DURATION (5)
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
eval "$(python3 "$root/scripts/reaper.py" guard $$)"
BENCH_LIB=helpers source "$root/bench/lib.sh"
[ $# -ge 3 ] || { echo "usage: $0 BUILD_A BUILD_B STORE_URL..." >&2; exit 2; }
A=$1 B=$2
shift 2
ROUNDS=${ROUNDS:-3} WARMUP=${WARMUP:-1} DURATION=${DURATION:-5}
for b in "$A" "$B"; do
  [ -x "$b/onced" ] || { echo "group_commit.sh: no $b/onced" >&2; exit 1; }
done
command -v wrk >/dev/null || { echo "group_commit.sh: wrk not found" >&2; exit 1; }

PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done' EXIT

switches() { # PID: "all voluntary", summed over its threads
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/ctxt_switches/ { s += $2 } /^voluntary_ctxt/ { v += $2 } END { print s + 0, v + 0 }'
}

# one BUILD URL TAG: one onced, warm-up, measured window; prints
# "rps all voluntary" (switches per request).
one() {
  local build=$1 url=$2 tag=$3 port pid db="" a0 v0 a1 v1 res rps n
  port=$(free_port)
  if [ "$url" = sqlite ]; then
    db="$build/gc-bench-$tag.db"
    rm -f "$db" "$db-wal" "$db-shm"
    url="sqlite:$db"
  fi
  "$build/onced" --drain-delay 0 --listen "127.0.0.1:$port" --store "$url" --log-level warn \
    >"$build/gc-bench-$tag.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  wait_http "$port" "$pid" || { tail -3 "$build/gc-bench-$tag.log" >&2; return 1; }
  wrk -t2 -c64 -d"${WARMUP}s" -s "$root/bench/send.lua" "http://127.0.0.1:$port/" -- \
    new block "w$tag" >/dev/null 2>&1
  read -r a0 v0 <<<"$(switches "$pid")"
  res=$(wrk -t2 -c64 -d"${DURATION}s" -s "$root/bench/send.lua" "http://127.0.0.1:$port/" -- \
    new block "m$tag" 2>&1 | grep '^RESULT')
  read -r a1 v1 <<<"$(switches "$pid")"
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  [ -n "$db" ] && rm -f "$db" "$db-wal" "$db-shm"
  rps=$(sed -n 's/.* rps=\([0-9]*\).*/\1/p' <<<"$res")
  n=$(sed -n 's/^RESULT requests=\([0-9]*\).*/\1/p' <<<"$res")
  grep -q 'non2xx=0 timeout=0 rpc_err=0 not_done=0' <<<"$res" ||
    echo "group_commit.sh: $tag had errors: $res" >&2
  awk -v r="$rps" -v n="$n" -v a=$((a1 - a0)) -v v=$((v1 - v0)) \
    'BEGIN { printf "%d %.2f %.2f\n", r, a / n, v / n }'
}

echo "| store | round | A tasks/s | B tasks/s | B/A | A switches/task all (vol) | B switches/task all (vol) |"
echo "|---|---:|---:|---:|---:|---|---|"
for url in "$@"; do
  label=${url%%:*}
  label=${label%%\?*}
  for ((r = 1; r <= ROUNDS; r++)); do
    # Alternate which build goes first, so neither always runs on a warmer machine.
    if ((r % 2)); then
      read -r ra aa va <<<"$(one "$A" "$url" "a$r$$")"
      read -r rb ab vb <<<"$(one "$B" "$url" "b$r$$")"
    else
      read -r rb ab vb <<<"$(one "$B" "$url" "b$r$$")"
      read -r ra aa va <<<"$(one "$A" "$url" "a$r$$")"
    fi
    awk -v l="$label" -v r="$r" -v ra="$ra" -v rb="$rb" -v aa="$aa" -v va="$va" -v ab="$ab" \
      -v vb="$vb" 'BEGIN { printf "| %s | %d | %d | %d | %.2f | %s (%s) | %s (%s) |\n",
                           l, r, ra, rb, ra ? rb / ra : 0, aa, va, ab, vb }'
  done
done
