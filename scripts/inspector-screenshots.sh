#!/usr/bin/env bash
# The inspector's pictures in docs/img (README, docs/wire.md), made again
# from a real onced in headless Chromium: tests/browser/screenshots.mjs.
# Needs Node, tests/browser's puppeteer-core and Chromium (scripts/deps.sh).
#
#   bash scripts/inspector-screenshots.sh [BUILD]   # BUILD: default build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
cd "$root/tests/browser"
ONCED=$build/onced exec node screenshots.mjs
