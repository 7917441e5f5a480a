#!/usr/bin/env python3
"""analysis.py -- the reviewer's deep analysis, a background worker of turn 1
(started by demo/reviewer.py in a session of its own, so it outlives the
turn). It holds the turn's fence (ONCE_FENCE) and, when its analysis is
done, writes its result on the task through the engine's fenced write
(build/tools/fenced_write on the shared store, DEMO_STORE).

In the story this worker is paused (SIGSTOP) soon after it starts -- think
of a stop-the-world pause or a frozen VM -- and resumed (SIGCONT) after the
orchestrator continued the task, so its write carries fence 1 while the
task's fence is 2: the write is refused with ONCE_EFENCED and its
half-result appears nowhere. The outcome goes to DEMO_DIR/journal.jsonl.
With DEMO_ANALYSIS_FREEZE=1 (the story sets it) the pause is the process's
own, right after it journals "analysing": the story's SIGSTOP, sent when
it sees the process, could otherwise come after the analysis was due on a
busy machine, and the story would have nothing to fence.
"""
import json
import os
import signal
import subprocess
import sys
import time

DEMO_DIR = os.environ.get("DEMO_DIR")
TASK = os.environ.get("ONCE_TASK_ID", "")
FENCE = int(os.environ.get("ONCE_FENCE", "0"))
MARKER = "DRAFT-RISK-NOTES"


def journal(what, **fields):
    if not DEMO_DIR:
        return
    rec = {"t": time.time(), "who": "analysis", "replica": os.environ.get("DEMO_REPLICA"),
           "task": TASK, "fence": FENCE, "what": what, "pid": os.getpid()}
    rec.update(fields)
    line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
    fd = os.open(os.path.join(DEMO_DIR, "journal.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def main():
    journal("analysing")
    if os.environ.get("DEMO_ANALYSIS_FREEZE") == "1":
        os.kill(os.getpid(), signal.SIGSTOP)   # runs on at the story's SIGCONT
    # The analysis is due at DEMO_ANALYSIS_DUE (time.monotonic(), set by the
    # reviewer when it started this process): after a pause longer than
    # that, the result is written as soon as the process runs again.
    due = float(os.environ.get("DEMO_ANALYSIS_DUE", "0") or 0)
    time.sleep(max(0.0, due - time.monotonic()))
    half = {"artifactId": "deep-analysis", "name": "deep-analysis (draft)",
            "parts": [{"text": "%s (fence %d): clause 7 caps no liability; clause 12 renews "
                               "silently; governing law unknown" % (MARKER, FENCE)}]}
    tool = os.path.join(os.environ.get("DEMO_TOOLS", ""), "fenced_write")
    p = subprocess.run([tool, "--store", os.environ.get("DEMO_STORE", ""),
                        "--artifact", json.dumps(half), "--last-chunk"],
                       capture_output=True, timeout=60)
    try:
        result = json.loads(p.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = {"result": "unreadable", "stdout": p.stdout.decode(errors="replace")}
    journal("wrote half-result", exit=p.returncode, result=result, marker=MARKER,
            stderr=p.stderr.decode(errors="replace").strip())
    sys.exit(0)


if __name__ == "__main__":
    main()
