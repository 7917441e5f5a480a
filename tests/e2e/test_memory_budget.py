"""A memory: store's budget (memory:?max) is a bound at any request rate,
with real onced processes: the sweeper is turned off (ONCE_TEST_SWEEPER=off,
the limit of a sweeper that falls behind), four clients send new tasks as
fast as they can, and onced's own count of what its store holds
(once_memory_store_bytes on /metrics) never passes the budget. The oldest
finished tasks were expired by the writes that needed room: a retry of one
answers TASK_EXPIRED, a retry of the newest replays; nothing ran twice. Then
tasks that cannot be expired (waiting for input) fill the budget: a new task
gets a retryable 503 and nothing is stored, while every earlier ID still
answers as itself.
"""
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, check, eq, error_info, http_get, new_id, run, scratch_dir,
                     task_state, user_message)

TMP = scratch_dir("once-membudget-")
BUDGET = 1 << 20
PAD = "x" * 2000   # ~2 KiB of text per task, held twice (message and artifact)
CLIENTS = 4
PER_CLIENT = 300   # 1200 tasks of ~5 KiB: several times the budget


def gauge(port, name):
    st, _, body = http_get(port, "/metrics")
    eq(st, 200, "GET /metrics")
    m = re.search(r"^%s (\d+)$" % re.escape(name), body.decode(), re.M)
    check(m is not None, "/metrics has %s" % name)
    return int(m.group(1))


def stats(s):
    st, _, doc = s.rpc("once/admin/stats", {})
    check(st == 200 and "result" in (doc or {}), "once/admin/stats answered: %r" % (doc,))
    return doc["result"]["engine"]


def send(s, mid, text, ext_id=None):
    msg = user_message(text, message_id=mid, task_id=ext_id)
    return s.rpc("SendMessage", {"message": msg}, ext=ext_id is not None)


def test_bound_without_a_sweeper():
    with Onced(args=["--test-admin"], store="memory:?max=1M&tombs=compact&cold=off",
               env={"ONCE_TEST_SWEEPER": "off"}, tmpdir=TMP) as s:
        eq(gauge(s.port, "once_memory_store_budget_bytes"), BUDGET, "the budget on /metrics")
        ids, errors, peaks = {}, [], []
        lock = threading.Lock()

        def client(c):
            for i in range(PER_CLIENT):
                tid = "mb-%d-%04d" % (c, i)
                st, _, doc = send(s, "m-" + tid, "hello " + PAD, ext_id=tid)
                if st != 200 or task_state(doc) != "TASK_STATE_COMPLETED":
                    with lock:
                        errors.append((tid, st, doc))
                    return
                with lock:
                    ids[tid] = i
                if i % 50 == 49:   # the store's own count, while the others send
                    b = gauge(s.port, "once_memory_store_bytes")
                    with lock:
                        peaks.append(b)

        threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        eq(errors, [], "every new task completed")
        eq(len(ids), CLIENTS * PER_CLIENT, "every task registered")
        check(len(peaks) == CLIENTS * PER_CLIENT // 50, "the gauge was read during the load")
        held = gauge(s.port, "once_memory_store_bytes")
        check(max(peaks + [held]) <= BUDGET,
              "the store stayed within its budget: %d of %d bytes at most" %
              (max(peaks + [held]), BUDGET))
        e = stats(s)
        eq(e["sweeps"], 0, "no sweep ran (the hook held the sweeper)")
        eq(e["swept"], 0, "nothing was expired by retention")
        check(e["earlyExpired"] > CLIENTS * PER_CLIENT // 2,
              "the writes expired the oldest tasks to make room: %d" % e["earlyExpired"])
        m = e["memoryStore"]
        eq(m["tasks"] + m["tombstones"], CLIENTS * PER_CLIENT, "every task is held or a tombstone")
        eq(m["tombstones"], e["earlyExpired"], "each expired task left a tombstone")
        eq(m["cold"], 0, "nothing deflated: only the sweep deflates")
        eq(gauge(s.port, "once_memory_store_cold_tasks"), 0, "the cold gauge on /metrics")

        # The first task of a client is expired, the newest task replays; none ran twice.
        st, hd, doc = send(s, "m-mb-0-0000", "hello " + PAD, ext_id="mb-0-0000")
        eq(error_info(doc)[1], "TASK_EXPIRED", "a retry of the oldest task: %r" % (doc,))
        eq(e["executedTurns"], CLIENTS * PER_CLIENT, "one turn per task")
        st, hd, doc = send(s, "m-mb-last", "hello " + PAD, ext_id="mb-last")
        eq(task_state(doc), "TASK_STATE_COMPLETED", "a new task after the load")
        st, hd, doc = send(s, "m-mb-last", "hello " + PAD, ext_id="mb-last")
        eq(st, 200, "a retry of the newest task")
        eq(hd.get("idempotent-replayed"), "true", "the newest task replays")
        eq(stats(s)["executedTurns"], CLIENTS * PER_CLIENT + 1, "nothing ran twice")

        # Tasks waiting for input are never expired: they fill the budget,
        # then a new task is refused, retryable, and not stored.
        asked, refused = 0, None
        for i in range(1000):
            tid = "ask-%04d" % i
            st, hd, doc = send(s, "m-" + tid, "ask:" + PAD + PAD, ext_id=tid)
            if st != 200:
                refused = (tid, st, hd, doc)
                break
            eq(task_state(doc), "TASK_STATE_INPUT_REQUIRED", "an asking task waits")
            asked += 1
            check(gauge(s.port, "once_memory_store_bytes") <= BUDGET, "within the budget")
        check(refused is not None, "the budget filled with waiting tasks (%d of them)" % asked)
        tid, st, hd, doc = refused
        eq(st, 503, "a full store answers 503")
        check(hd.get("retry-after") is not None, "with Retry-After")
        eq(error_info(doc)[2].get("retryable"), "true", "retryable")
        st, _, doc = s.rpc("GetTask", {"id": tid}, ext=True)
        eq(error_info(doc)[1], "TASK_NOT_FOUND", "the refused task was not stored")
        for i in range(asked):
            st, _, doc = s.rpc("GetTask", {"id": "ask-%04d" % i}, ext=True)
            eq(task_state(doc), "TASK_STATE_INPUT_REQUIRED", "ask-%04d still waits" % i)
        check(stats(s)["memoryStore"]["tasks"] >= asked, "no waiting task was expired")


if __name__ == "__main__":
    run([test_bound_without_a_sweeper])
