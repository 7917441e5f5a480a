#!/usr/bin/env bash
# Install the Debian (and npm) packages once needs, by profile:
#
#   scripts/deps.sh demo    build onced, once and the demo's helpers; run
#                           `make demo` and `make amplify`
#   scripts/deps.sh [all]   everything: the demo's set plus what the test
#                           suite and the benchmarks start or use (PostgreSQL,
#                           Redis, valgrind, clang, spin, wrk, strace, openssl, node,
#                           the @a2a-js/sdk peer, dynalite, and Chromium with
#                           puppeteer-core for the inspector's browser test,
#                           promtool from prometheus for the alert rules,
#                           dpkg-dev, debhelper and lintian for the Debian
#                           packages' test, packaging/deb, and gnuplot-nox
#                           for `make bench`'s pictures)
#
# Idempotent and quiet when everything is present. Run as root (or with sudo).
set -euo pipefail

profile=${1:-all}

# Building with the default options needs every library once can link
# (PostgreSQL, Redis, GnuTLS, libsystemd and jemalloc are build options, all ON by
# default: README, "Build options"), CMake's configure step checks for
# cmocka (BUILD_TESTING, ON; the demo's helpers are test tools), and the gRPC binding's messages
# are generated with protoc-c from proto/ and the google protos of
# libprotobuf-dev and libgoogle-common-protos-java; running the demo needs python3 and curl (demo/amplify_agent.sh).
DEMO_PKGS=(
  build-essential cmake pkg-config ca-certificates curl python3
  libmicrohttpd-dev libjansson-dev libsqlite3-dev libpq-dev libhiredis-dev
  libcurl4-openssl-dev libssl-dev libgnutls28-dev libcmocka-dev libsystemd-dev zlib1g-dev libjemalloc-dev
  protobuf-c-compiler libprotobuf-c-dev libprotobuf-dev libgoogle-common-protos-java libnghttp2-dev
)
TEST_PKGS=(
  git sqlite3 postgresql postgresql-contrib redis-server
  valgrind clang libclang-rt-dev spin wrk strace openssl nodejs npm chromium
  prometheus protobuf-compiler python3-protobuf python3-grpcio python3-h2
  dpkg-dev debhelper lintian gnuplot-nox
)

case "$profile" in
demo) PKGS=("${DEMO_PKGS[@]}") ;;
all) PKGS=("${DEMO_PKGS[@]}" "${TEST_PKGS[@]}") ;;
*)
  echo "usage: $0 [demo|all]" >&2
  exit 2
  ;;
esac

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    # nodejs/npm may come from outside Debian's archive (a newer Node is fine).
    case "$p" in
      nodejs) command -v node >/dev/null 2>&1 && continue ;;
      npm) command -v npm >/dev/null 2>&1 && continue ;;
    esac
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps.sh: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  # The tests want prometheus' promtool, never its server, which the
  # package would start at once on :9090 and at every boot after. A
  # policy-rc.d answering 101 (action forbidden) keeps the install from
  # starting it (invoke-rc.d and deb-systemd-invoke both ask it); one the
  # machine already has is left as it is.
  policy=""
  if [[ " ${missing[*]} " == *" prometheus "* ]] && [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    trap '$SUDO rm -f "$policy"' EXIT
  fi
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  if [[ " ${missing[*]} " == *" prometheus "* ]]; then
    # Not at boot either (the package enabled it for both init systems).
    $SUDO update-rc.d prometheus disable >/dev/null 2>&1 || true
    $SUDO deb-systemd-helper disable prometheus.service >/dev/null 2>&1 || true
  fi
  if [ -n "$policy" ]; then
    $SUDO rm -f "$policy"
    trap - EXIT
  fi
fi

[ "$profile" = all ] || exit 0

root="$(cd "$(dirname "$0")/.." && pwd)"

# The npm packages of one test folder ($1), unless every marker package
# named after it ($2...) is installed there.
npm_dir() {
  local dir=$1 pkg missing=0
  shift
  [ -f "$root/$dir/package.json" ] || return 0
  for pkg in "$@"; do
    [ -d "$root/$dir/node_modules/$pkg" ] || missing=1
  done
  [ "$missing" -eq 1 ] || return 0
  echo "deps.sh: installing npm packages for $dir"
  (cd "$root/$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1 \
     || npm install --no-audit --no-fund --loglevel=error >/dev/null)
}

# The real A2A peer for interop tests and benchmarks (@a2a-js/sdk 1.3.0),
# with the peer dependencies of its gRPC transport (@a2a-js/sdk/client/grpc).
npm_dir tests/interop @a2a-js/sdk @grpc/grpc-js @bufbuild/protobuf
# dynalite, DynamoDB's API on LevelDB, for the DynamoDB store tests (4.0.0).
npm_dir tests/dynamo dynalite
# puppeteer-core drives Debian's chromium in the inspector's browser test.
npm_dir tests/browser puppeteer-core
exit 0
