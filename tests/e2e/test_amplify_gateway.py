#!/usr/bin/env python3
"""test_amplify_gateway.py -- the amplification experiment's tree of PLAIN
@a2a-js/sdk agents (demo/amplify.sh --gateway --quick: p = 0.3, 10 root
tasks, a 1 -> 2 -> 4 -> 8 tree of demo/amplify_js_agent.mjs processes, one
per level), in two modes over the same seeds:

- js-gateway: each agent behind `onced --upstream` (the gateway); parents
  and the root client call the child's gateway through lossy links, and
  retry blindly with the messageId of their first attempt. Every leaf side
  effect happens exactly once, every root task completes, and no level has
  a duplicated a2a-js task (one upstream task per tree node), although
  answers were lost and retries replayed by the gateways;
- js-naive: the same agents calling each other directly: the SDK's server
  makes a new task for every retry that reached it, so tasks and side
  effects are duplicated. 10 roots at p = 0.3 put a few hundred requests
  through the lossy links, so a run without a duplicate is practically
  impossible (and the proxies' drops are seeded).

Real processes only: node agents on @a2a-js/sdk 1.3.0, onced gateways on
SQLite, tests/tools/proxy, the counting service. No assertion depends on
speed; the run's one bound is scaled (ONCE_TEST_TIMEOUT_FACTOR)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, check, eq, run, scaled  # noqa: E402

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
SDK = os.path.join(ROOT, "tests", "interop", "node_modules", "@a2a-js", "sdk")


def test_gateway_quick_mode():
    check(shutil.which("node") is not None, "node is installed (scripts/deps.sh)")
    check(os.path.isdir(SDK), "@a2a-js/sdk is in tests/interop/node_modules (scripts/deps.sh)")
    with tempfile.TemporaryDirectory(prefix="once-amplify-gw-test-") as tmp:
        out = os.path.join(tmp, "rows.json")
        r = subprocess.run(["bash", os.path.join(ROOT, "demo", "amplify.sh"), BUILD, "--gateway",
                            "--quick", "--json", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=scaled(280))
        sys.stderr.write(r.stderr.decode(errors="replace"))
        eq(r.returncode, 0, "amplify.sh --gateway --quick exit status")
        with open(out) as f:
            rows = {row["mode"]: row for row in json.load(f)}
    check(b"| mode | p | root tasks | a2a-js tasks L0/L1/L2/L3 | expected |" in r.stdout,
          "the per-level table is printed")
    gw, naive = rows["js-gateway"], rows["js-naive"]
    for row in (gw, naive):
        eq(row["p"], 0.3, "%s: p" % row["mode"])
        eq(row["roots"], 10, "%s: root tasks" % row["mode"])
        eq(row["expected"], 80, "%s: expected leaf side effects" % row["mode"])
        eq([lv["expected"] for lv in row["levels"]], [10, 20, 40, 80],
           "%s: tree nodes per level" % row["mode"])

    eq(gw["observed"], 80, "js-gateway: leaf side effects")
    eq(gw["duplicates"], 0, "js-gateway: duplicated side effects")
    eq(gw["lost"], 0, "js-gateway: lost side effects")
    eq(gw["rootsCompleted"], 10, "js-gateway: root tasks completed")
    eq([lv["duplicates"] for lv in gw["levels"]], [0, 0, 0, 0],
       "js-gateway: duplicated a2a-js tasks per level")
    eq([lv["created"] for lv in gw["levels"]], [10, 20, 40, 80],
       "js-gateway: a2a-js tasks per level (one per tree node)")
    eq(gw["gateway"]["onceTasks"], 150, "js-gateway: once tasks (one per tree node)")
    eq(gw["gateway"]["unverifiedResends"], 0, "js-gateway: no re-send the gateway could not check")
    check(gw["gateway"]["replayed"] > 0, "js-gateway: answers were lost and the plain retries "
          "(same messageId) replayed by the gateways, else zero duplicates proves nothing: %d"
          % gw["gateway"]["replayed"])

    check(naive["duplicates"] > 0, "js-naive: duplicated side effects: %d" % naive["duplicates"])
    check(naive["observed"] > naive["expected"], "js-naive: more side effects than leaves")
    check(sum(lv["duplicates"] for lv in naive["levels"]) > 0,
          "js-naive: duplicated a2a-js tasks: %r" % [lv["duplicates"] for lv in naive["levels"]])


if __name__ == "__main__":
    run([test_gateway_quick_mode])
