"""Blocking semantics of SendMessage with real onced processes: without
returnImmediately the call waits until the task is terminal or interrupted
(bounded by --max-wait); with it, the call returns at once; and a blocking
send on replica B for a task that replica A executes returns when A finishes
it -- B watches the shared store, not an in-process signal (docs/design.md section 13).
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, admin_stats, check, eq, new_id, result_task, run, scaled,
                     scratch_dir, task_state, user_message, wait_until)

TMP = scratch_dir("once-blocking-")


def fresh_store():
    return "sqlite:" + os.path.join(TMP, "registry-%s.db" % new_id())


def epoch(ts):
    """An A2A timestamp (RFC 3339, UTC) as seconds since the epoch."""
    from datetime import datetime, timezone
    check(ts.endswith("Z"), "a UTC timestamp: %r" % ts)
    return datetime.fromisoformat(ts[:-1]).replace(tzinfo=timezone.utc).timestamp()


def timed_send(s, msg, ext=False, immediately=None, timeout=60):
    params = {"message": msg}
    if immediately is not None:
        params["configuration"] = {"returnImmediately": immediately}
    t0 = time.time()
    st, hd, doc = s.rpc("SendMessage", params, ext=ext, timeout=timeout)
    took = time.time() - t0
    eq(st, 200, "SendMessage HTTP status")
    return doc, hd, took


def test_blocking_waits_for_completion():
    with Onced(tmpdir=TMP, store=fresh_store()) as s:
        doc, _, took = timed_send(s, user_message("sleep:2"))
        eq(task_state(doc), "TASK_STATE_COMPLETED", "a blocking send answers the finished task")
        check(took >= 1.8, "it waited for the 2 s of work (%.2fs)" % took)
        check(took < scaled(10), "and returned soon after (%.2fs)" % took)
        doc, _, took = timed_send(s, user_message("sleep:2"), immediately=False)
        eq(task_state(doc), "TASK_STATE_COMPLETED", "returnImmediately false blocks too")
        check(took >= 1.8, "returnImmediately false waited (%.2fs)" % took)


def test_blocking_returns_on_interrupt():
    with Onced(tmpdir=TMP, store=fresh_store()) as s:
        doc, _, took = timed_send(s, user_message("ask:which one?"))
        eq(task_state(doc), "TASK_STATE_INPUT_REQUIRED", "input-required ends the wait")
        check(took < scaled(5), "without waiting longer (%.2fs)" % took)


def test_return_immediately():
    with Onced(tmpdir=TMP, store=fresh_store()) as s:
        # The answer is the proof: a blocking send could only answer the
        # finished task, which cannot exist before the agent's 3 s are over.
        doc, _, took = timed_send(s, user_message("sleep:3"), immediately=True)
        t = result_task(doc, "returnImmediately")
        check(t["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
              "returnImmediately answers a task still in progress (after %.2fs): %s"
              % (took, t["status"]["state"]))
        wait_until(lambda: task_state(s.rpc("GetTask", {"id": t["id"]})[2]) ==
                   "TASK_STATE_COMPLETED", timeout=15, what="the task to complete later")


def test_max_wait_bounds_the_wait():
    with Onced(args=["--max-wait", "1s"], tmpdir=TMP, store=fresh_store()) as s:
        msg = user_message("sleep:30")   # far longer than both waits together
        doc, _, took = timed_send(s, msg)
        t = result_task(doc, "send past --max-wait")
        eq(t["status"]["state"], "TASK_STATE_WORKING", "past --max-wait the send answers working")
        check(0.8 <= took < scaled(4), "after about --max-wait (%.2fs)" % took)
        # A blocking retry of the same message waits again (bounded) and replays.
        doc, hd, took = timed_send(s, msg)
        eq(result_task(doc, "retry")["id"], t["id"], "the retry names the same task")
        eq(hd.get("idempotent-replayed"), "true", "the retry is a replay")
        eq(task_state(doc), "TASK_STATE_WORKING", "the task goes on working")
        check(0.8 <= took < scaled(4), "the retry waited about --max-wait too (%.2fs)" % took)


def test_cross_replica_wait():
    store = fresh_store()
    with Onced(args=["--test-admin", "--replica-id", "rep-a"], tmpdir=TMP, store=store) as a, \
            Onced(args=["--test-admin", "--replica-id", "rep-b"], tmpdir=TMP, store=store) as b:
        tid = "t-xwait-" + new_id()
        msg = user_message("sleep:3", task_id=tid)
        doc, _, _ = timed_send(a, msg, ext=True, immediately=True)
        eq(result_task(doc, "send to A")["id"], tid, "A registered the task")
        # When A registered it, by A's clock: our receipt of the answer may
        # come late on a busy machine.
        t_registered = epoch(result_task(doc, "send to A")["status"]["timestamp"])
        # The retry lands on B and blocks there while A works.
        doc, hd, took = timed_send(b, msg, ext=True)
        elapsed = time.time() - t_registered
        t = result_task(doc, "blocking retry on B")
        eq(t["id"], tid, "B answers the same task")
        eq(hd.get("idempotent-replayed"), "true", "B's answer is a replay")
        eq(t["status"]["state"], "TASK_STATE_COMPLETED", "B returned when A completed the task")
        check(elapsed >= 2.5, "B waited for A's 3 s of work (%.2fs since registration)" % elapsed)
        check(took < scaled(15), "and returned promptly (%.2fs)" % took)
        eq(t["artifacts"][0]["parts"][0]["text"], "sleep:3", "A's result")
        sa, sb = admin_stats(a), admin_stats(b)
        eq(sa.get("executedTurns"), 1, "A ran the one turn")
        eq(sb.get("executedTurns"), 0, "B ran nothing")
        eq(sb.get("takeovers"), 0, "B did not take the task over")
        eq(sb.get("registered"), 0, "B registered nothing")
        eq(sb.get("replayed"), 1, "B replayed once")

        # Several blocked callers on B at once all wake on A's completion.
        tid2 = "t-xwait2-" + new_id()
        msg2 = user_message("sleep:2", task_id=tid2)
        timed_send(a, msg2, ext=True, immediately=True)
        out = []

        def waiter():
            st, _, d = b.rpc("SendMessage", {"message": msg2}, ext=True, timeout=60)
            out.append(task_state(d))
        threads = [threading.Thread(target=waiter) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(scaled(30))
        eq(out, ["TASK_STATE_COMPLETED"] * 4, "every blocked caller on B saw the completion")


if __name__ == "__main__":
    run([test_blocking_waits_for_completion, test_blocking_returns_on_interrupt,
         test_return_immediately, test_max_wait_bounds_the_wait, test_cross_replica_wait])
