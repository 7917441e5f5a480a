"""The demo's story (demo/story.py, what `make demo` runs) in its quick mode:
the contract-review story of docs/design.md section 9 with real processes (two
onced replicas on one SQLite registry, the once CLI, proxies that lose
answers, a webhook receiver, a signing service). Every claim of the story
must hold, the verdict table must say so line by line, and the run must stay
well under a minute.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, check, eq, run, scaled  # noqa: E402

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
CLAIMS = 9


def test_story_quick():
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, os.path.join(ROOT, "demo", "story.py"), "--quick",
                        "--build", BUILD], capture_output=True, timeout=scaled(120),
                       env=dict(os.environ, NO_COLOR="1"))
    elapsed = time.monotonic() - t0
    out = p.stdout.decode(errors="replace")
    if p.returncode != 0:
        sys.stderr.write(out[-6000:] + p.stderr.decode(errors="replace")[-3000:])
    eq(p.returncode, 0, "the story exits 0 (every claim held)")
    rows = re.findall(r"^\s*(\d+)  (.*\S)\s{2,}(held|FAILED)$", out, re.M)
    eq([int(n) for n, _, _ in rows], list(range(1, CLAIMS + 1)), "one verdict row per claim")
    eq([v for _, _, v in rows], ["held"] * CLAIMS, "every claim held")
    check("%d of %d claims held" % (CLAIMS, CLAIMS) in out, "the summary line")
    check(not re.search(r"^\s+FAIL ", out, re.M), "no check of the timeline failed")
    check("\033[" not in out, "no colours when stdout is not a terminal")
    for needle in ("ONCE_EFENCED", "TASK_EXPIRED", ":step-4", "Idempotent-Replayed"):
        check(needle in out, "the timeline shows %s" % needle)
    check(elapsed < scaled(60), "the quick story ran in %.1f s (< %g s)" % (elapsed, scaled(60)))


if __name__ == "__main__":
    run([test_story_quick])
