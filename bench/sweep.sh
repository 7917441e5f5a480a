#!/usr/bin/env bash
# bench/sweep.sh -- throughput against concurrency: new blocking tasks per
# second for 1 to 256 connections, on onced with `memory:`, on onced with
# SQLite (the default synchronous=FULL) and on the @a2a-js/sdk 1.3.0 peer
# (bench/peer_server.mjs), in one run.
#
#   bash bench/sweep.sh
#
# For each connection count C (BENCH_CONNS), each series in turn (the three
# series interleaved, so a load that drifts during the run moves every
# series at that C alike): a fresh server process with an empty store, then
# wrk -t min(2, C) -cC with bench/send.lua, BENCH_WARMUP s discarded and
# BENCH_DURATION s measured. onced gets "new block" (client-minted task IDs,
# distinct per wrk thread and request, so no two connections ever share
# one); the peer, which mints its own, "fresh block". Every answer is
# checked by send.lua: socket errors, non-2xx, JSON-RPC errors and tasks not
# completed are all counted as errors, and shown. onced runs with its
# default flags but --max-connections-per-ip 1024: all of wrk's connections
# come from 127.0.0.1, and the default 128 per address (meant for one
# client, raised behind a load balancer) would close half of them at 256.
#
# Writes, under $B/bench-out/sweep-<date-time>/ (BENCH_OUT), one data file
# per series, throughput-<series>.dat ("conns rps p50_ms p99_ms errors
# load1", one line per C; bench/plot.sh draws them), raw wrk output and
# server logs; prints a markdown table with each onced series' ratio to the
# peer at the same C. SQLite files live in the run's directory (a real disk:
# fsync is real) and go when their point is done.
#
# Environment (all optional):
#   BENCH_CONNS     connection counts                 ("1 4 16 64 256")
#   BENCH_SERIES    which series: memory sqlite peer  ("memory sqlite peer")
#   BENCH_DURATION  measured seconds per point        (10)
#   BENCH_WARMUP    discarded seconds per point       (2)
#   BENCH_ONCED / BENCH_SKIP_BUILD / BENCH_BUILD as in rss.sh (bench/lib.sh)
TAG=sweep
source "$(dirname "$0")/lib.sh"
CONNS="${BENCH_CONNS:-1 4 16 64 256}"
SERIES="${BENCH_SERIES:-memory sqlite peer}"
DUR="${BENCH_DURATION:-10}"
WARM="${BENCH_WARMUP:-2}"
LUA="$root/bench/send.lua"
DATA="$OUT/data"
mkdir -p "$DATA"
declare -A R
PER_IP=(--max-connections-per-ip 1024)

for s in $SERIES; do
  case $s in memory | sqlite | peer) ;; *) die "BENCH_SERIES: unknown series $s" ;; esac
done
[[ " $SERIES " != *" peer "* ]] || [ -d "$root/tests/interop/node_modules/@a2a-js/sdk" ] ||
  die "the peer needs @a2a-js/sdk (bash scripts/deps.sh)"

# errors KEY: everything send.lua counted as wrong for the point KEY.
errors() {
  local k n=0
  for k in connect read write timeout non2xx rpc_err not_done; do
    n=$((n + ${R[$1.$k]:-0}))
  done
  echo "$n"
}

# point SERIES C: one fresh server, warm-up, the measured run; fills R[SERIES-cC.*]
# and appends a line to the series' data file.
point() {
  local s=$1 c=$2 name="$1-c$2" mode=new threads=$(($2 < 2 ? $2 : 2))
  case $s in
    memory) start_onced "$name" --store memory: "${PER_IP[@]}" ;;
    sqlite) start_onced "$name" --store "sqlite:$DATA/$name.db" "${PER_IP[@]}" ;;
    peer) start_peer "$name"; mode=fresh ;;
  esac
  local pfx
  pfx="w$(date +%s%N | tail -c 10)$RANDOM"
  wrk -t"$threads" -c"$c" -d"${WARM}s" -s "$LUA" "http://127.0.0.1:$PORT/" -- "$mode" block \
    "${pfx}w" >"$OUT/$name.warmup.wrk" 2>&1
  R[$name.load1]=$(load1)
  log "$name: ${DUR}s measured, wrk -t$threads -c$c (load $(loadavg))"
  wrk -t"$threads" -c"$c" -d"${DUR}s" --timeout 5s -s "$LUA" "http://127.0.0.1:$PORT/" -- \
    "$mode" block "$pfx" >"$OUT/$name.wrk" 2>&1
  stop "$PID" "$name"
  rm -f "$DATA/$name".db*
  read_result "$OUT/$name.wrk" "$name" || die "$name: wrk printed no RESULT (see $OUT/$name.wrk)"
  R[$name.errors]=$(errors "$name")
  printf '%s %s %s %s %s %s\n' "$c" "${R[$name.rps]}" "${R[$name.p50_ms]}" "${R[$name.p99_ms]}" \
    "${R[$name.errors]}" "${R[$name.load1]}" >>"$OUT/throughput-$s.dat"
}

START_UPTIME="$(uptime)"
for s in $SERIES; do
  echo "# $s: conns rps p50_ms p99_ms errors load1 (wrk, send.lua block, ${WARM}s + ${DUR}s per point)" \
    >"$OUT/throughput-$s.dat"
done
for c in $CONNS; do
  for s in $SERIES; do point "$s" "$c"; done
done
rm -rf "$DATA"
END_UPTIME="$(uptime)"
meta load_end "$(loadavg)"
meta series "$SERIES"
meta peer "$(sed -n 's/.*(\(.*\))$/\1/p' <<<"${PEER_VERSION:-}")" # "@a2a-js/sdk 1.3.0, node v..."
meta per_point "${WARM}s warm-up + ${DUR}s measured"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b == "" || b == 0) print "-"; else printf "%.2f", a/b}'; }
echo
echo "## bench/sweep.sh $(date -u +%Y-%m-%dT%H:%MZ) — commit $(code_rev)"
echo
echo "Load: start \`${START_UPTIME# }\`; end \`${END_UPTIME# }\`."
echo "New blocking tasks (send.lua new/fresh block), wrk -t min(2, C) -cC, ${WARM}s warm-up discarded,"
echo "${DUR}s measured; each point a fresh server process; loopback, wrk and the server share the $(nproc) CPUs."
[ -n "${PEER_VERSION:-}" ] && echo "Peer: $PEER_VERSION"
echo
hdr="| connections |" sep="|---:|"
for s in $SERIES; do hdr+=" $s req/s (p99 ms, errors) |"; sep+="---:|"; done
if [[ " $SERIES " == *" peer "* ]]; then
  for s in $SERIES; do [ "$s" = peer ] || { hdr+=" $s × peer |"; sep+="---:|"; }; done
fi
hdr+=" load1 at the first point |"; sep+="---:|"
echo "$hdr"
echo "$sep"
for c in $CONNS; do
  row="| $c |"
  for s in $SERIES; do row+=" ${R[$s-c$c.rps]} (${R[$s-c$c.p99_ms]}, ${R[$s-c$c.errors]}) |"; done
  if [[ " $SERIES " == *" peer "* ]]; then
    for s in $SERIES; do
      [ "$s" = peer ] || row+=" $(ratio "${R[$s-c$c.rps]}" "${R[peer-c$c.rps]}") |"
    done
  fi
  first=${SERIES%% *}
  row+=" ${R[$first-c$c.load1]} |"
  echo "$row"
done
echo
echo "Raw output and data files: $OUT"
