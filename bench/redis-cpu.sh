#!/usr/bin/env bash
# redis-cpu.sh -- the Redis server's own CPU per new task (issue 35 item 5).
#
#   bash bench/redis-cpu.sh [SECONDS [WAIT]]   (default 6 block)
#
# Starts a Redis of its own on a free loopback port, durable as
# bench/backends.sh makes it (appendonly yes, appendfsync everysec, data in
# a temp dir), and one onced (Release, BENCH_BUILD / BENCH_ONCED as in
# bench/lib.sh) on it with a fresh key prefix. A short warm-up loads the
# scripts and opens the connections; then `INFO cpu` and
# `INFO commandstats` are read, wrk -t2 -c64 sends new blocking tasks
# (bench/send.lua new WAIT: block, or ri for returnImmediately, whose task
# is a create and then updates) for SECONDS, and both are read again. The
# figures are differences divided by the tasks registered in between
# (once/admin/stats "registered"):
#   redis_cpu_us_per_task  used_cpu_sys + used_cpu_user of the server
#   used_memory_per_task   the server's used_memory grown, per task (what
#                          a finished task holds at rest, indexes included)
#   per command            usec_per_call x calls / tasks, and calls / tasks
#                          (a script's row, evalsha, includes the time of
#                          the commands it calls, which have rows too)
# The server's own counters hardly depend on the machine's speed or load
# (a busy machine slows the run, not the work per task), so builds can be
# compared run against run; alternate them all the same.
TAG=redis-cpu
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${1:-6}
WAIT=${2:-block}
command -v redis-server >/dev/null || die "redis-server is missing"

RDIR=$(mktemp -d "${TMPDIR:-/tmp}/once-redis-cpu.XXXXXX")
RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly yes \
  --appendfsync everysec --dir "$RDIR" --logfile "$RDIR/server.log" >/dev/null &
PIDS+=("$!")
RCLI=(redis-cli -h 127.0.0.1 -p "$RPORT")
for ((i = 0; i < 100; i++)); do
  [ "$("${RCLI[@]}" ping 2>/dev/null)" = PONG ] && break
  sleep 0.1
done
[ "$("${RCLI[@]}" ping 2>/dev/null)" = PONG ] || die "redis did not start (log: $RDIR/server.log)"
trap 'cleanup; rm -rf "$RDIR"' EXIT

PREFIX="cpu$$"
start_onced onced --store "redis://127.0.0.1:$RPORT/0?prefix=$PREFIX"
URL="http://127.0.0.1:$PORT/"

# cpu_us: the server's user + system CPU so far, in µs.
cpu_us() {
  "${RCLI[@]}" info cpu | tr -d '\r' |
    awk -F: '$1 == "used_cpu_sys" || $1 == "used_cpu_user" {t += $2} END {printf "%.0f\n", t * 1e6}'
}
mem() { "${RCLI[@]}" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}'; }
# cmdstats: "command calls usec" per line.
cmdstats() {
  "${RCLI[@]}" info commandstats | tr -d '\r' |
    sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2 \3/p'
}

log "warm-up"
wrk -t2 -c64 -d1s -s "$root/bench/send.lua" "$URL" -- new "$WAIT" "w$PREFIX" >"$OUT/warm.txt" 2>&1 ||
  die "warm-up failed"
read -r reg0 <<<"$(engine_stats "$PORT" registered)"
cpu0=$(cpu_us)
mem0=$(mem)
cmdstats >"$OUT/cmd0.txt"
log "wrk -t2 -c64 -d${SECS}s new $WAIT"
wrk -t2 -c64 -d"${SECS}s" -s "$root/bench/send.lua" "$URL" -- new "$WAIT" "m$PREFIX" >"$OUT/wrk.txt" 2>&1 ||
  die "wrk failed"
cpu1=$(cpu_us)
mem1=$(mem)
cmdstats >"$OUT/cmd1.txt"
read -r reg1 <<<"$(engine_stats "$PORT" registered)"
tasks=$((reg1 - reg0))
[ "$tasks" -gt 0 ] || die "no task registered (log: $OUT/onced.log)"
grep -m1 '^RESULT' "$OUT/wrk.txt" >&2

echo "onced $ONCED (tree $(code_rev)), load $(loadavg), $tasks tasks in ${SECS}s ($((tasks / SECS))/s)"
printf 'redis_cpu_us_per_task %s\n' "$(awk -v t="$tasks" -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.1f", (b - a) / t}')"
echo "used_memory_per_task $(((mem1 - mem0) / tasks))"
printf '%-16s %12s %10s\n' command calls/task us/task
awk -v t="$tasks" '
  FNR == NR { calls0[$1] = $2; usec0[$1] = $3; next }
  { dc = $2 - calls0[$1]; du = $3 - usec0[$1]
    if (dc > 0 && du / t >= 0.005) printf "%-16s %12.2f %10.2f\n", $1, dc / t, du / t }' \
  "$OUT/cmd0.txt" "$OUT/cmd1.txt" | sort -k3,3nr
