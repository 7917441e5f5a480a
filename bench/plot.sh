#!/usr/bin/env bash
# bench/plot.sh -- the pictures of bench/README.md, drawn by gnuplot from the
# data files of one bench/pictures.sh run (never by hand).
#
#   bash bench/plot.sh RUN_DIR [OUT_DIR]
#
# RUN_DIR is what pictures.sh wrote: sweep/ (bench/sweep.sh:
# throughput-<series>.dat), p99/ (bench/p99.sh: <store>-cdf.dat, paced's
# CDF), rss-*/ (bench/rss.sh: <setting>.csv), each with its "meta" (the
# code, the date, the load). Writes OUT_DIR (default bench/out) /
#   throughput.png   new blocking tasks/s against connections, per series
#   latency-cdf.png  the latency CDF at half the saturated rate, per store
#                    (above; below, the fraction slower on a log scale)
#   rss.png          onced's RSS against tasks registered, per store setting
# each with the code, the date and the load average of its own run under
# the title. A picture whose data is missing is skipped with a message; the
# exit status is 1 if any was.
set -uo pipefail
run=${1:?usage: bench/plot.sh RUN_DIR [OUT_DIR]}
root="$(cd "$(dirname "$0")/.." && pwd)"
outdir=${2:-$root/bench/out}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot is missing (bash scripts/deps.sh)" >&2; exit 1; }
mkdir -p "$outdir"
missing=0

# The terminal: pngcairo (antialiased) when this gnuplot has it, else png.
term="png"
gnuplot -e 'set terminal pngcairo' 2>/dev/null && term="pngcairo font 'sans,10'"

# metaval DIR KEY: a value of DIR/meta (bench/lib.sh's meta).
metaval() { sed -n "s/^$2=//p" "$1/meta" 2>/dev/null | tail -1; }

# caption DIR [LAST_DIR]: the line under a picture's title, for the run in
# DIR (or the runs from DIR to LAST_DIR): the code, the date, the load.
caption() {
  local mode last=${2:-$1}
  mode=$(metaval "$run" mode)
  echo "commit $(metaval "$1" code), $(metaval "$1" start), ${mode:+$mode run, }load average $(metaval "$1" load_start) at the start, $(metaval "$last" load_end) at the end ($(nproc) CPUs, shared)"
}

# gp OUTFILE SCRIPT [SIZE]: run gnuplot with the common settings first.
gp() {
  gnuplot <<EOF || { echo "plot.sh: gnuplot failed on $1" >&2; missing=1; }
set terminal $term size ${3:-960,600}
set termoption noenhanced
set output "$1"
set grid
set key box opaque
$2
EOF
}

# q TEXT: TEXT as a gnuplot string literal (double quotes escaped; a "\n"
# in TEXT stays a line break).
q() { printf '"%s"' "${1//\"/\\\"}"; }

# ------------------------------------------------------------- throughput
sweep="$run/sweep"
if ls "$sweep"/throughput-*.dat >/dev/null 2>&1; then
  plots=()
  for s in memory sqlite peer; do
    f="$sweep/throughput-$s.dat"
    [ -f "$f" ] || continue
    case $s in
      memory) t="onced, memory:" c="#1f77b4" ;;
      sqlite) t="onced, SQLite (synchronous=FULL)" c="#2ca02c" ;;
      peer) t="the peer: $(metaval "$sweep" peer), InMemoryTaskStore" c="#d62728" ;;
    esac
    plots+=("$(q "$f") using 1:2 with linespoints lw 2 pt 7 lc rgb '$c' title $(q "$t")")
    plots+=("$(q "$f") using 1:2:(\$5 > 0 ? sprintf('%d errors', \$5) : '') with labels offset 0,1 notitle")
  done
  gp "$outdir/throughput.png" "
set title $(q "New blocking tasks per second against connections\nwrk and bench/send.lua on loopback, a fresh server per point, $(metaval "$sweep" per_point)\n$(caption "$sweep")")
set xlabel 'connections (wrk -t min(2, C) -c C; log scale)'
set ylabel 'new blocking tasks / s (every answer checked; errors labelled)'
set logscale x 2
set xtics 2
set yrange [0:*]
# room for the end points' error labels, left and right, and for the key above the curves
set offsets graph 0.04, graph 0.04, graph 0.25, 0
set key top left
plot $(IFS=,; echo "${plots[*]}")"
else
  echo "plot.sh: no $sweep/throughput-*.dat: throughput.png not drawn" >&2
  missing=1
fi

# ------------------------------------------------------------- latency CDF
p99="$run/p99"
if ls "$p99"/*-cdf.dat >/dev/null 2>&1; then
  plots=() tails=()
  for st in sqlite memory; do
    f="$p99/$st-cdf.dat"
    [ -f "$f" ] || continue
    # the RESULT line paced wrote as the file's first comment
    res=$(sed -n '1s/^# RESULT //p' "$f")
    val() { tr ' ' '\n' <<<"$res" | sed -n "s/^$1=//p"; }
    ms() { awk -v v="$(val "$1")" 'BEGIN{printf "%.3g", v}'; } # 3 digits are all a slot holds
    label="memory:" c="#1f77b4"
    [ "$st" = sqlite ] && label="SQLite FULL" c="#2ca02c"
    t="$label at $(val rate)/s (half of $(metaval "$p99" "$st.saturated")): p50 $(ms p50_ms), p99 $(ms p99_ms), p99.9 $(ms p999_ms) ms, $(val errors) errors"
    plots+=("$(q "$f") using 1:2 with steps lw 2 lc rgb '$c' notitle")
    tails+=("$(q "$f") using 1:(\$2 < 1 ? 1 - \$2 : NaN) with steps lw 2 lc rgb '$c' title $(q "$t")")
  done
  # Left the CDF itself; right the same data as the fraction still
  # unanswered, on a log scale, where p99 and p99.9 can be read.
  gp "$outdir/latency-cdf.png" "
set multiplot layout 2,1 title $(q "Latency of new blocking tasks at half the saturated rate\nbench/paced.c: open loop, 64 connections, each latency from the request's scheduled send time\n$(caption "$p99")")
set xlabel 'latency (ms, log scale)'
set logscale x 10
set ylabel 'fraction answered within'
set yrange [0:1]
set ytics 0.1
unset key
plot $(IFS=,; echo "${plots[*]}")
set key bottom left
set ylabel 'fraction slower (log scale)'
set logscale y 10
set yrange [*:1]
set ytics auto
set format y '10^{%L}'
set termoption enhanced
plot $(IFS=,; echo "${tails[*]}")
unset multiplot" 960,820
else
  echo "plot.sh: no $p99/*-cdf.dat: latency-cdf.png not drawn" >&2
  missing=1
fi

# ------------------------------------------------------------- RSS
plots=()
rss_dirs=()
for d in $(ls -dtr "$run"/rss-*/ 2>/dev/null); do # in the order they ran
  d=${d%/}
  for f in "$d"/*.csv; do
    [ -f "$f" ] || continue
    tomb="30d (default)"
    [ "$(basename "$f" .csv)" = short ] && tomb=$(metaval "$d" short_tomb)
    t="--store $(metaval "$d" store) --retention 1m --tombstone-retention $tomb"
    # load samples only: the idle ones after it all sit at the last count
    plots+=("$(q "$f") every ::1 using (\$3/1e6):(strcol(2) eq 'load' ? \$10/1024 : NaN) with linespoints lw 2 pt 7 ps 0.6 title $(q "$t")")
    rss_dirs+=("$d")
  done
done
if [ ${#plots[@]} -gt 0 ]; then
  gp "$outdir/rss.png" "
set title $(q "onced's resident memory against tasks registered\nbench/rss.sh: wrk -t2 -c64, new blocking tasks, VmRSS sampled every few seconds\n$(caption "${rss_dirs[0]}" "${rss_dirs[-1]}")")
set xlabel 'new tasks registered (millions)'
set ylabel 'VmRSS (MiB)'
set datafile separator ','
set xrange [0:*]
set yrange [0:*]
set key at graph 0.98, graph 0.35 right top
set arrow from graph 0, first 61.035 to graph 1, first 61.035 nohead dt 2 lw 1.5
set label 'issue 15 bound: 64 MB (61 MiB)' at graph 0.99, first 61.035 right offset 0,0.7
plot $(IFS=,; echo "${plots[*]}")"
else
  echo "plot.sh: no $run/rss-*/*.csv: rss.png not drawn" >&2
  missing=1
fi

ls -l "$outdir"/*.png >&2
exit "$missing"
