#!/usr/bin/env python3
"""test_amplify.py -- the amplification experiment in its quick mode
(demo/amplify.sh --quick: p = 0.3, 10 root tasks, a 1 -> 2 -> 4 -> 8 tree,
both modes): with once, every leaf side effect happens exactly once and
every root task completes, although the links lost responses (retries were
deduplicated); the naive baseline, over the same seeds, duplicates side
effects. 10 roots at p = 0.3 put a few hundred requests through the lossy
links, so a naive run without a duplicate is practically impossible."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, check, eq, run, scaled  # noqa: E402

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))


def test_quick_mode():
    with tempfile.TemporaryDirectory(prefix="once-amplify-test-") as tmp:
        out = os.path.join(tmp, "rows.json")
        r = subprocess.run(["bash", os.path.join(ROOT, "demo", "amplify.sh"), BUILD, "--quick",
                            "--json", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=scaled(280))
        sys.stderr.write(r.stderr.decode(errors="replace"))
        eq(r.returncode, 0, "amplify.sh --quick exit status")
        with open(out) as f:
            rows = {row["mode"]: row for row in json.load(f)}
    check(b"| mode | p | root tasks | expected leaf side effects | observed | duplicates | lost |"
          in r.stdout, "the table is printed")
    once, naive = rows["once"], rows["naive"]
    for row in (once, naive):
        eq(row["p"], 0.3, "%s: p" % row["mode"])
        eq(row["roots"], 10, "%s: root tasks" % row["mode"])
        eq(row["expected"], 80, "%s: expected leaf side effects" % row["mode"])
    eq(once["duplicates"], 0, "once: duplicated side effects")
    eq(once["lost"], 0, "once: lost side effects")
    eq(once["observed"], 80, "once: side effects")
    eq(once["rootsCompleted"], 10, "once: root tasks completed")
    eq(once["agentTasks"], 150, "once: agent tasks (15 per root)")
    check(once["deduplicated"] > 0, "once: responses were lost and retries deduplicated "
          "(else zero duplicates proves nothing): %d" % once["deduplicated"])
    check(naive["duplicates"] > 0, "naive: duplicated side effects: %d" % naive["duplicates"])
    check(naive["observed"] > naive["expected"], "naive: more side effects than leaves")
    eq(naive["deduplicated"], 0, "naive: nothing deduplicated")


if __name__ == "__main__":
    run([test_quick_mode])
