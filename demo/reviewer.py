#!/usr/bin/env python3
"""reviewer.py -- the contract reviewer of the demo, an `onced --exec` agent
(docs/protocol.md). Both reviewer replicas run it; each turn is a new process.

Its plan numbers every unit of work with the persisted step counter, so the
side effect of step 4 carries the key <task>:step-4 on any replica, in any
turn, after any crash:

  turn 1 (fence 1)
    step 0  read the contract                      -> checkpoint, step 1
    step 1  extract the clauses                    -> checkpoint, step 2
    step 2  start the deep analysis in the
            background (demo/analysis.py, a process
            of its own holding ONCE_FENCE)         -> checkpoint, step 3
    step 3  ask which jurisdiction governs it      -> checkpoint, step 4,
                                                      input-required
  turn 2 (fence 2, the continuation)
    step 4  have the reviewed contract signed by the signing service
            (build/tools/effect_call: Idempotency-Key <task>:step-4, retried
            with the same key)                     -> checkpoint, step 5
            publish the signed-contract artifact, complete

Staging. The demo is a story told in a fixed order, so at two points the
agent waits for the narrator's cue (a file DEMO_DIR/cues/<name>-<task>,
at most 30 s): before asking (so the orchestrator's retry finds the task
working and its webhook subscription exists), and before signing (so the
paused phase-1 worker comes back while fence 2 works). Without DEMO_DIR it
runs straight through.

Everything it does is also appended to DEMO_DIR/journal.jsonl (one JSON
object per line: who, replica, task, fence, step, what), which the demo
checks. Python 3 standard library only.
"""
import base64
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO_DIR = os.environ.get("DEMO_DIR")
REPLICA = os.environ.get("DEMO_REPLICA", "reviewer")
TOOLS = os.environ.get("DEMO_TOOLS", "")
SIGN_URL = os.environ.get("DEMO_SIGN_URL", "")


def emit(obj):
    """One protocol line, flushed: onced applies it now."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def checkpoint(state, step):
    emit({"checkpoint": json.dumps(state, separators=(",", ":")), "step": step})


def journal(what, **fields):
    if not DEMO_DIR:
        return
    rec = {"t": time.time(), "who": "reviewer", "replica": REPLICA,
           "task": os.environ.get("ONCE_TASK_ID"), "fence": int(os.environ.get("ONCE_FENCE", "0")),
           "what": what}
    rec.update(fields)
    line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
    fd = os.open(os.path.join(DEMO_DIR, "journal.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)   # one write per line: O_APPEND keeps lines whole
    finally:
        os.close(fd)


def cue(name, task_id, timeout=30.0):
    """Wait for the narrator's cue; returns True if it came."""
    if not DEMO_DIR:
        return True
    path = os.path.join(DEMO_DIR, "cues", "%s-%s" % (name, task_id))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.02)
    return False


def first_text(message):
    for part in (message or {}).get("parts", []):
        if isinstance(part.get("text"), str):
            return part["text"]
    return ""


def start_analysis(task_id, fence):
    """The deep analysis runs in a process of its own (setsid: it outlives
    the turn, whose process group onced kills when the turn ends). It holds
    the turn's fence in ONCE_FENCE and writes its result with it."""
    log = open(os.path.join(DEMO_DIR or "/tmp", "analysis-%s.log" % task_id), "ab")
    # The analysis is due a fixed time after it starts (CLOCK_MONOTONIC is
    # one clock for every process), however long its process is held up.
    seconds = float(os.environ.get("DEMO_ANALYSIS_SECONDS", "3"))
    env = dict(os.environ, DEMO_ANALYSIS_DUE="%.3f" % (time.monotonic() + seconds))
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "analysis.py")],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                         start_new_session=True, close_fds=True)
    log.close()
    if DEMO_DIR:
        pidfile = os.path.join(DEMO_DIR, "analysis-%s.pid" % task_id)
        with open(pidfile + ".tmp", "w") as f:
            f.write("%d\n" % p.pid)
        os.rename(pidfile + ".tmp", pidfile)
    return p.pid


def turn_one(turn):
    task_id, fence = turn["taskId"], turn["fence"]
    contract = first_text(turn["message"])
    journal("turn started", step=turn["step"], turn=1)
    emit({"status": "working", "text": "reading the contract (%d characters)" % len(contract)})
    checkpoint({"phase": "read"}, 1)
    clauses = [c.strip() for c in contract.split(";") if c.strip()]
    emit({"status": "working", "text": "extracted %d clauses" % len(clauses)})
    checkpoint({"phase": "clauses", "clauses": len(clauses)}, 2)
    pid = start_analysis(task_id, fence)
    journal("analysis started", step=2, pid=pid)
    emit({"status": "working", "text": "deep analysis running in the background (fence %d)" % fence})
    checkpoint({"phase": "analysing", "analysisPid": pid}, 3)
    if not cue("ask", task_id):
        journal("no cue to ask; asking anyway")
    checkpoint({"phase": "asked", "clauses": len(clauses)}, 4)
    journal("asked", step=3)
    emit({"status": "input-required",
          "message": {"parts": [{"text": "Which jurisdiction governs this contract?"}],
                      "metadata": {"question": "jurisdiction"}}})


def sign(task_id, step, jurisdiction):
    """Step `step`: the signing call, keyed <task>:step-<step>."""
    body = json.dumps({"document": {"task": task_id, "jurisdiction": jurisdiction,
                                    "review": "no blocking issues"}})
    p = subprocess.run([os.path.join(TOOLS, "effect_call"), task_id, str(step), SIGN_URL, body],
                       capture_output=True, timeout=60)
    attempts = [l for l in p.stderr.decode(errors="replace").splitlines()
                if l.startswith("effect_call: attempt")]
    answer = None
    if p.returncode == 0:
        try:
            answer = json.loads(p.stdout)
        except ValueError:
            answer = None
    journal("signing call", step=step, key="%s:step-%d" % (task_id, step), attempts=attempts,
            exit=p.returncode, answer=answer)
    return answer


def turn_two(turn):
    task_id, step = turn["taskId"], turn["step"]
    jurisdiction = first_text(turn["message"])
    journal("turn started", step=step, turn=2,
            effectKeyPrefix=os.environ.get("ONCE_EFFECT_KEY_PREFIX"))
    emit({"status": "working", "text": "resuming the review under %s" % jurisdiction})
    if not cue("sign", task_id):
        journal("no cue to sign; signing anyway")
    answer = sign(task_id, step, jurisdiction)
    if answer is None or "signatureId" not in answer:
        emit({"status": "failed", "text": "the signing service did not sign"})
        return
    checkpoint({"phase": "signed", "signatureId": answer["signatureId"]}, step + 1)
    # The review as a file too: the inspector lists it by name and type and
    # offers it for download.
    review = ("# Contract review\n\nTask: %s\nGoverning law: %s\nBlocking issues: none\n"
              "Signature: %s\n" % (task_id, jurisdiction, answer["signatureId"]))
    emit({"artifact": {"artifactId": "signed-contract", "name": "signed-contract",
                       "description": "the reviewed contract, signed",
                       "parts": [{"text": "Contract reviewed under %s: no blocking issues. "
                                          "Signed as %s." % (jurisdiction, answer["signatureId"])},
                                 {"raw": base64.b64encode(review.encode()).decode(),
                                  "filename": "review.md", "mediaType": "text/markdown"},
                                 {"data": answer, "mediaType": "application/json"}]},
          "lastChunk": True})
    journal("completed", step=step + 1, signatureId=answer["signatureId"])
    emit({"status": "completed", "text": "review filed; contract signed as %s (key %s)"
                                         % (answer["signatureId"], answer.get("idempotencyKey"))})


def main():
    turn = json.loads(sys.stdin.readline())
    cp = json.loads(turn["checkpoint"]) if turn.get("checkpoint") else {}
    if cp.get("phase") == "asked":
        turn_two(turn)
    elif not cp:
        turn_one(turn)
    else:
        # A takeover in the middle of turn 1 (not part of this story).
        journal("resumed", step=turn["step"], phase=cp.get("phase"))
        emit({"status": "failed", "text": "resumed at phase %s: not supported" % cp.get("phase")})


if __name__ == "__main__":
    main()
