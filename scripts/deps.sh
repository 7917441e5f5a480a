#!/usr/bin/env bash
# Install every Debian package once needs to build, test and benchmark.
# Idempotent and quiet when everything is present. Run as root (or with sudo).
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config git ca-certificates curl
  libmicrohttpd-dev libjansson-dev libsqlite3-dev sqlite3 libpq-dev libhiredis-dev
  libcurl4-openssl-dev libssl-dev libcmocka-dev
  postgresql postgresql-contrib redis-server
  valgrind clang libclang-rt-dev spin wrk strace python3 nodejs npm
)

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
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# The real A2A peer for interop tests and benchmarks (@a2a-js/sdk 1.3.0).
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -f "$root/tests/interop/package.json" ] && [ ! -d "$root/tests/interop/node_modules/@a2a-js/sdk" ]; then
  echo "deps.sh: installing npm packages for tests/interop"
  (cd "$root/tests/interop" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1 \
     || npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi
exit 0
