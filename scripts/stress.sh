#!/usr/bin/env bash
# The test suite on a busy machine: start ONCE_STRESS_HOGS (default 3)
# CPU-bound processes, run scripts/run-tests.sh over the build directories
# given, stop the processes. Same tests, same timeouts, same summary lines:
# no assertion of the suite may depend on how fast the machine is.
#
#   scripts/stress.sh build build-asan build-tsan     # what `make test-stress` runs
#   scripts/stress.sh build                           # the normal build only
#
# The busy processes never outlive the run: each is the leader of its own
# process group, killed by the EXIT trap (normal end, error, Ctrl-C,
# SIGTERM), and each also stops by itself as soon as this script is gone
# (even after a SIGKILL, which no trap sees).
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 BUILD_DIR..." >&2; exit 2; }

hogs=${ONCE_STRESS_HOGS:-3}
pids=()
stop_hogs() {
  local p
  for p in "${pids[@]}"; do
    kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
  done
  pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

for _ in $(seq 1 "$hogs"); do
  # A busy loop that checks, with a shell builtin, that this script is alive.
  setsid sh -c 'while kill -0 "$1" 2>/dev/null; do :; done' busy $$ &
  pids+=("$!")
done
echo "== stress: $hogs CPU-bound processes (pids ${pids[*]}) beside the suite, on $(nproc) CPUs"
start=$(date +%s)
bash scripts/run-tests.sh "$@"
rc=$?
echo "== stress: the suite took $(( $(date +%s) - start )) s under load"
exit $rc
