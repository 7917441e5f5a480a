"""Fencing and takeover with real processes (docs/design.md section 5): two onced
replicas share one SQLite file with a short --lease. A task registered on
replica A runs an --exec turn that checkpoints (step 3) and then blocks; A is
frozen with SIGSTOP, its lease expires, and replica B takes the task over with
fence 2, resuming from A's checkpoint and step, and completes it. Then A's
command is let go (it prints its fence-1 artifact and completion) and A is
resumed with SIGCONT: A's writes are refused and nothing of them becomes
visible on either replica, A runs nothing again, and A keeps serving. The
inspector's timeline (read on either replica) shows both turns, the
takeover from A (fence 1) to B (fence 2), and A's refused write or lease
renewal with its fence 1 and the task's fence 2.

The --exec command names every artifact and message after $ONCE_FENCE and
logs each run (fence, step, resumed, checkpoint) to a file, so the test sees
which worker wrote what and what each run was handed.
"""
import json
import os
import shlex
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, admin_stats, check, eq, http_request, new_id, result_task, run,
                     scaled, scratch_dir, status_text, task_state, user_message, wait_sweeps,
                     wait_until)

TMP = scratch_dir("once-fencing-")
STATE = os.path.join(TMP, "state")
os.mkdir(STATE)
RUNS = os.path.join(STATE, "runs.log")
# Short, so that the takeover comes quickly; scaled, so that a replica that
# is merely slow (not frozen) keeps its lease.
LEASE = "%dms" % scaled(1500)

AGENT = r'''
import json, os, sys, time
D = sys.argv[1]
turn = json.loads(sys.stdin.readline())
fence = os.environ["ONCE_FENCE"]
text = ""
for p in turn["message"].get("parts", []):
    if "text" in p:
        text = p["text"]
        break

def emit(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()

def mark(name, content=""):
    tmp = os.path.join(D, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(content)
    os.rename(tmp, os.path.join(D, name))

def finish():
    emit({"artifact": {"artifactId": "result-fence-" + fence,
                       "parts": [{"text": "written by the worker with fence " + fence}]},
          "lastChunk": True})
    emit({"status": "completed", "text": "done by fence " + fence})

if text == "quick":
    emit({"artifact": {"artifactId": "quick", "parts": [{"text": "quick"}]}})
    emit({"status": "completed"})
    sys.exit(0)

with open(os.path.join(D, "runs.log"), "a") as f:
    f.write(json.dumps({"fence": fence, "step": os.environ["ONCE_STEP"],
                        "resumed": os.environ["ONCE_RESUMED"], "stdin_step": turn["step"],
                        "stdin_resumed": turn["resumed"], "checkpoint": turn["checkpoint"],
                        "task": os.environ["ONCE_TASK_ID"]}) + "\n")
if os.environ["ONCE_RESUMED"] == "1":
    finish()                       # the takeover: resume after the checkpoint
    sys.exit(0)
emit({"checkpoint": "phase 1 done by fence " + fence, "step": 3})
emit({"status": "working", "text": "checkpointed by fence " + fence})
mark("started-" + fence)
end = time.time() + 40
while not os.path.exists(os.path.join(D, "release")) and time.time() < end:
    time.sleep(0.05)
finish()                           # A's late output: must be refused
# /bin/sh -c runs this script as its child: the shell is onced's child.
mark("printed-" + fence, str(os.getppid()))
'''

AGENT_PY = os.path.join(TMP, "agent.py")
with open(AGENT_PY, "w") as f:
    f.write(AGENT)
EXEC = "%s %s %s" % (shlex.quote(sys.executable), shlex.quote(AGENT_PY), shlex.quote(STATE))


def runs():
    try:
        with open(RUNS) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def write_lock_free(db):
    """True if a write transaction can start on the SQLite file now."""
    import sqlite3
    c = sqlite3.connect(db, timeout=0.3, isolation_level=None)
    try:
        c.execute("BEGIN IMMEDIATE")
        c.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        c.close()


def freeze(srv, db):
    """SIGSTOP srv, but never while it holds SQLite's write lock: a process
    frozen inside a commit would block every replica (a property of file
    locks, not of fencing), so thaw it and try again a moment later."""
    for _ in range(20):
        srv.signal(signal.SIGSTOP)
        wait_until(lambda: proc_state(srv.proc.pid) == "T", timeout=5, step=0.01,
                   what="the replica to stop")
        if write_lock_free(db):
            return
        srv.signal(signal.SIGCONT)
        time.sleep(0.05)
    check(False, "could not freeze the replica outside a write transaction")


def proc_state(pid):
    """The /proc state letter of pid ('Z' for a zombie), None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def get(s, tid):
    st, _, doc = s.rpc("GetTask", {"id": tid}, timeout=20)
    eq(st, 200, "GetTask HTTP status")
    return doc


def timeline(srv, tid):
    st, _, body = http_request(srv.port, "GET", "/inspect/api/task/" + tid)
    eq(st, 200, "the timeline's HTTP status")
    return json.loads(body)


def check_journal(a, b, tid):
    """The task's journal as the inspector shows it, the same on A and B."""
    # A's refused write (or renewal) is written by A's sweeper after A woke:
    # wait_sweeps(a, 2) ran before this, so it is there.
    tl = timeline(b, tid)
    turns = [(e["replica"], e["fence"], e["resumed"], e.get("result"))
             for e in tl["entries"] if e["kind"] == "turn"]
    eq(turns, [("replica-a", 1, False, None), ("replica-b", 2, True, "TASK_STATE_COMPLETED")],
       "the turns: A's (never ended), B's resumed one")
    tk = [(e["from"], e["to"], e["fence"], e["newFence"])
          for e in tl["entries"] if e["kind"] == "takeover"]
    eq(tk, [("replica-a", "replica-b", 1, 2)], "the takeover names both owners and fences")
    fz = [(e["replica"], e["fence"], e["storedFence"]) for e in tl["entries"]
          if e["kind"] == "fenced"]
    check(fz and all(f == ("replica-a", 1, 2) for f in fz),
          "A's refused write names both fences: %r" % (fz,))
    eq([e["kind"] for e in timeline(a, tid)["entries"]], [e["kind"] for e in tl["entries"]],
       "A shows the same timeline")
    _, _, page = http_request(b.port, "GET", "/inspect/task/" + tid)
    for want in ("takeover: lease of replica-a (fence 1) to replica-b (fence 2)",
                 "of replica-a: its fence 1, the task&#39;s 2"):
        check(want in page.decode(), "the page shows %r" % want)


def test_takeover_and_fenced_write():
    store = "sqlite:" + os.path.join(TMP, "registry.db")
    common = ["--exec", EXEC, "--lease", LEASE, "--test-admin", "--exec-grace", "1s", "--inspect"]
    a = Onced(args=common + ["--replica-id", "replica-a"], tmpdir=TMP, store=store)
    b = None
    stopped = False
    try:
        b = Onced(args=common + ["--replica-id", "replica-b"], tmpdir=TMP, store=store)
        tid = "t-fence-" + new_id()
        st, _, doc = a.rpc("SendMessage", {"message": user_message("long work", task_id=tid),
                                           "configuration": {"returnImmediately": True}}, ext=True)
        eq(result_task(doc, "register on A")["id"], tid, "A registered the task")
        # The checkpoint line is applied before the status line after it.
        wait_until(lambda: status_text(result_task(get(a, tid))) == "checkpointed by fence 1",
                   timeout=15, what="A's worker to checkpoint")
        eq(len(runs()), 1, "one run so far (A held its lease)")

        freeze(a, store[len("sqlite:"):])
        stopped = True
        t0 = time.time()
        wait_until(lambda: task_state(get(b, tid)) == "TASK_STATE_COMPLETED", timeout=25,
                   step=0.1, what="B to take the task over and complete it")
        took = time.time() - t0
        check(took >= 1.0, "B waited for A's lease to expire (%.2fs)" % took)

        rs = runs()
        eq(len(rs), 2, "two runs: A's and B's takeover")
        eq((rs[0]["fence"], rs[0]["step"], rs[0]["resumed"], rs[0]["checkpoint"]),
           ("1", "0", "0", None), "A's run: fence 1, step 0, fresh")
        eq((rs[1]["fence"], rs[1]["resumed"], rs[1]["stdin_resumed"]), ("2", "1", True),
           "B's run: fence + 1, resumed")
        eq((rs[1]["step"], rs[1]["stdin_step"]), ("3", 3),
           "B resumed at the step A persisted")
        eq(rs[1]["checkpoint"], "phase 1 done by fence 1", "B got A's checkpoint")

        final = result_task(get(b, tid))
        eq([x["artifactId"] for x in final.get("artifacts", [])], ["result-fence-2"],
           "only B's artifact")
        eq(status_text(final), "done by fence 2", "B's completion message")
        sb = admin_stats(b)
        eq(sb.get("takeovers"), 1, "B counted one takeover")

        # Let A's command print its fence-1 output while A is still frozen.
        open(os.path.join(STATE, "release"), "w").close()
        wait_until(lambda: os.path.exists(os.path.join(STATE, "printed-1")), timeout=15,
                   what="A's command to print its late output")
        with open(os.path.join(STATE, "printed-1")) as f:
            child = int(f.read())
        # A's turn ended while A was frozen: its child waits to be reaped.
        wait_until(lambda: proc_state(child) == "Z", timeout=10,
                   what="A's command (pid %d) to exit and wait, unreaped, for frozen A" % child)
        a.signal(signal.SIGCONT)
        stopped = False
        # A wakes and its worker handles the turn: the lines it reads are
        # refused by the fence (or its heartbeat notices the lost lease first
        # and the worker stops applying output); it reaps the command.
        wait_until(lambda: proc_state(child) is None, timeout=15,
                   what="A's worker to finish the fenced turn (reap pid %d)" % child)
        # Both replicas' sweepers have looked at the task since: a wrong
        # takeover or re-run would have happened by now.
        wait_sweeps(a, 2, what="sweeps of A after its wake-up")
        wait_sweeps(b, 2, what="sweeps of B")
        for name, srv in (("A", a), ("B", b)):
            eq(result_task(get(srv, tid)), final, "%s: the task is exactly B's result" % name)
        eq(len(runs()), 2, "A ran nothing again")
        check_journal(a, b, tid)
        sa = admin_stats(a)
        eq(sa.get("takeovers"), 0, "A took nothing over")
        print("A's counters after SIGCONT: fencedWrites=%s (0 when its heartbeat saw the lost "
              "lease before the worker read the late lines)" % sa.get("fencedWrites"))

        # A keeps serving.
        st, _, doc = a.rpc("SendMessage", {"message": user_message("quick")})
        eq(task_state(doc), "TASK_STATE_COMPLETED", "A serves a new task after the fence")
        check(a.proc.poll() is None and b.proc.poll() is None, "both replicas still run")
    except AssertionError:
        for name, srv in (("A", a), ("B", b)):
            if srv is not None:
                print("--- log of replica %s:\n%s" % (name, srv.logtext()), file=sys.stderr)
        raise
    finally:
        if stopped:
            a.signal(signal.SIGCONT)
        if b is not None:
            b.stop()
        a.stop()


if __name__ == "__main__":
    run([test_takeover_and_fenced_write])
