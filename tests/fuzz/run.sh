#!/usr/bin/env bash
# Build one libFuzzer target with clang (ASan+UBSan) and run it over its
# committed seed corpus plus a bounded number of new inputs. Used by ctest
# (fuzz/<name>) so every parser's target keeps compiling and stays clean.
#   tests/fuzz/run.sh NAME RUNS OUTDIR -- SOURCES...
# FUZZ_EXTRA in the environment: more compiler arguments (include
# directories, libraries) for a target that needs them.
set -euo pipefail
name=$1 runs=$2 out=$3
shift 4
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
cflags="$(pkg-config --cflags jansson libcrypto)"
libs="$(pkg-config --libs jansson libcrypto) -lm"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
      -D_GNU_SOURCE -std=c11 -I"$root/include" -I"$root/src" $cflags \
      "$root/tests/fuzz/fuzz_$name.c" "$@" $libs ${FUZZ_EXTRA:-} -o "$out/fuzz_$name"
work="$out/corpus_$name"
rm -rf "$work" && mkdir -p "$work"
cp "$root/tests/fuzz/corpus/$name/"* "$work/"
"$out/fuzz_$name" -runs="$runs" -max_len=4096 -seed=1 "$work" 2>"$out/fuzz_$name.log" || {
    tail -40 "$out/fuzz_$name.log"; exit 1; }
tail -1 "$out/fuzz_$name.log"
