"""Racing retries against real onced processes: 64 concurrent identical
first sends make exactly one task and exactly one execution, and all 64
responses name that task; and two onced replicas on one SQLite file agree,
so a retry sent to the other replica replays instead of running again.
With the built-in echo executor on SQLite the race takes the held path
(engine/held.c): each racer runs the turn on its HTTP thread and holds
its write; one create lands, every other lands ONCE_EEXISTS and its call is
run again, which replays: still one task, one registration, 63 replays.

Executions are counted by the --exec command itself, which appends its
ONCE_TASK_ID to a file: the count is what really ran, not what the server
says it ran.
"""
import os
import shlex
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, check, eq, error_info, new_id, rpc, run, scaled, user_message,
                     wait_until)

N = 64
tmp = tempfile.mkdtemp(prefix="once-conc-")
RUNS = os.path.join(tmp, "runs.log")
EXEC = 'echo "$ONCE_TASK_ID" >> %s' % shlex.quote(RUNS)


def fresh_store():
    return "sqlite:" + os.path.join(tmp, "registry-%s.db" % new_id())


def runs_of(task_id):
    try:
        with open(RUNS) as f:
            return sum(1 for line in f if line.strip() == task_id)
    except FileNotFoundError:
        return 0


def settle(*servers):
    """One more task through each server, waited for until it completed:
    the replicas have then run every turn queued before it, so a stray
    second execution of an earlier task would be in the log by now."""
    for s in servers:
        tid = "t-settle-" + new_id()
        st, _, doc = s.rpc("SendMessage", {"message": user_message("settle", task_id=tid)},
                           ext=True)
        wait_until(lambda: s.rpc("GetTask", {"id": tid})[2]["result"]["status"]["state"] ==
                   "TASK_STATE_COMPLETED", timeout=20, what="the settling task to complete")
        wait_until(lambda: runs_of(tid) == 1, timeout=10, what="the settling task's execution")


def race(port, msg, ext):
    """Send msg N times at once; return the (status, headers, doc) list."""
    barrier = threading.Barrier(N)
    out = [None] * N

    def one(i):
        barrier.wait()
        try:
            out[i] = rpc(port, "SendMessage", {"message": msg}, ext=ext, timeout=60)
        except Exception as ex:  # recorded and asserted below
            out[i] = (0, {}, {"_exception": repr(ex)})
    threads = [threading.Thread(target=one, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(scaled(90))
    return out


def check_race(out, what):
    ids = set()
    fresh = 0
    for st, hd, doc in out:
        eq(st, 200, what + ": every response is 200 (never a 5xx)")
        check("result" in doc, what + ": every response is a result: %r" % (doc,))
        ids.add(doc["result"]["task"]["id"])
        if hd.get("idempotent-replayed") != "true":
            fresh += 1
    eq(len(ids), 1, what + ": all %d responses name one task" % N)
    eq(fresh, 1, what + ": exactly one response registered, the others replayed")
    return ids.pop()


def test_client_minted_race():
    with Onced(args=["--exec", EXEC], tmpdir=tmp, store=fresh_store()) as s:
        tid = "t-race-" + new_id()
        out = race(s.port, user_message("race me", task_id=tid), ext=True)
        got = check_race(out, "client-minted ID")
        eq(got, tid, "the task has the client's ID")
        st, _, doc = s.rpc("GetTask", {"id": tid})
        eq(doc["result"]["status"]["state"], "TASK_STATE_COMPLETED", "the one task completed")
        eq(len(doc["result"]["history"]), 1, "one message accepted")
        settle(s)
        eq(runs_of(tid), 1, "exactly one execution")


def test_derived_id_race():
    with Onced(args=["--exec", EXEC], tmpdir=tmp, store=fresh_store()) as s:
        msg = user_message("plain 1.0 first message")
        out = race(s.port, msg, ext=False)
        tid = check_race(out, "derived ID")
        st, _, doc = s.rpc("ListTasks", {"pageSize": 100})
        eq([t["id"] for t in doc["result"]["tasks"]], [tid], "exactly one task exists")
        settle(s)
        eq(runs_of(tid), 1, "exactly one execution")


def test_held_race():
    with Onced(tmpdir=tmp, store=fresh_store()) as s:
        for round_ in range(3):
            tid = "t-held-%d-%s" % (round_, new_id())
            out = race(s.port, user_message("race me", task_id=tid), ext=True)
            got = check_race(out, "held write, round %d" % round_)
            eq(got, tid, "the task has the client's ID")
            for st, hd, doc in out:
                eq(doc["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
                   "every answer is the completed task")
        st, _, doc = s.rpc("ListTasks", {"pageSize": 100})
        eq(len(doc["result"]["tasks"]), 3, "three races, three tasks")


def test_two_replicas_one_file():
    store = "sqlite:" + os.path.join(tmp, "shared.db")
    a = Onced(args=["--exec", EXEC, "--replica-id", "replica-a"], store=store, tmpdir=tmp)
    b = Onced(args=["--exec", EXEC, "--replica-id", "replica-b"], store=store, tmpdir=tmp)
    try:
        # client-minted ID: sent to A, retried on B
        tid = "t-two-" + new_id()
        msg = user_message("once across replicas", task_id=tid)
        st, hd, doc = a.rpc("SendMessage", {"message": msg}, ext=True)
        eq(doc["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "A ran it")
        check("idempotent-replayed" not in hd, "A registered it")
        st, hd, doc = b.rpc("SendMessage", {"message": msg}, ext=True)
        eq(st, 200, "retry on B: status")
        eq(hd.get("idempotent-replayed"), "true", "retry on B replays")
        eq(doc["result"]["task"]["id"], tid, "B answers with A's task")
        eq(runs_of(tid), 1, "one execution across both replicas")
        # derived ID: same messageId lands on the same key on both replicas
        # (the derivation secret lives in the shared store)
        plain = user_message("plain across replicas")
        st, hd, da = a.rpc("SendMessage", {"message": plain})
        st, hd, db = b.rpc("SendMessage", {"message": plain})
        eq(db["result"]["task"]["id"], da["result"]["task"]["id"], "same derived ID on B")
        eq(hd.get("idempotent-replayed"), "true", "plain retry on B replays")
        eq(runs_of(da["result"]["task"]["id"]), 1, "one execution of the plain message")
        # a race split across both replicas still makes one task
        tid2 = "t-split-" + new_id()
        msg2 = user_message("split race", task_id=tid2)
        barrier = threading.Barrier(16)
        out = []
        lock = threading.Lock()

        def one(i):
            port = a.port if i % 2 else b.port
            barrier.wait()
            r = rpc(port, "SendMessage", {"message": msg2}, ext=True, timeout=60)
            with lock:
                out.append(r)
        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(scaled(90))
        eq(len(out), 16, "16 responses")
        for st, hd, doc in out:
            eq(st, 200, "split race: 200")
            eq(doc["result"]["task"]["id"], tid2, "split race: one task")
        eq(sum(1 for _, hd, _ in out if hd.get("idempotent-replayed") != "true"), 1,
           "split race: one registration")
        settle(a, b)
        eq(runs_of(tid2), 1, "split race: one execution")
    finally:
        a.stop()
        b.stop()


if __name__ == "__main__":
    run([test_client_minted_race, test_derived_id_race, test_held_race,
         test_two_replicas_one_file])
