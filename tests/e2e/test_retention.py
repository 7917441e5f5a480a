"""Retention with a jumped clock (docs/design.md section 7), with real onced
processes: a finished task is kept in full for --retention, then becomes a
tombstone that answers TASK_EXPIRED (-32001, metadata.expiredAt) on every
method -- GetTask, CancelTask, SendMessage as a retry of the original message
and as a new message, and a retried plain A2A 1.0 first message (derived ID)
-- for --tombstone-retention, and after that TASK_NOT_FOUND. A task that is
still working (or waiting for input) is never swept. The clock is moved with
the test-only admin method once/admin/setClockOffset (answered -32601 without
--test-admin) or at start with --clock-offset; a second replica whose clock runs
ahead sweeps for both.
"""
import os
import sys
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, check, eq, error_info, new_id, result_task, run, scratch_dir,
                     task_state, user_message, wait_sweeps, wait_until)

TMP = scratch_dir("once-retention-")
MIN_MS = 60 * 1000
HOUR_MS = 60 * MIN_MS
SWEEP_WAIT = 15   # the sweeper runs every second; generous for a loaded box


def fresh_store():
    return "sqlite:" + os.path.join(TMP, "registry-%s.db" % new_id())


def parse_ts(s):
    """An A2A timestamp (RFC 3339, UTC, 'Z') as an aware datetime."""
    check(isinstance(s, str) and s.endswith("Z"), "a UTC timestamp: %r" % (s,))
    return datetime.fromisoformat(s[:-1]).replace(tzinfo=timezone.utc)


def set_offset(s, ms):
    st, _, doc = s.rpc("once/admin/setClockOffset", {"offsetMs": ms})
    eq(st, 200, "setClockOffset HTTP status")
    check("result" in doc, "setClockOffset answered: %r" % (doc,))
    eq(doc["result"]["offsetMs"], ms, "setClockOffset took the offset")
    now = parse_ts(doc["result"]["now"])
    want = datetime.now(timezone.utc) + timedelta(milliseconds=ms)
    check(abs((now - want).total_seconds()) < 30, "the server's clock moved: %s vs %s" % (now, want))
    return now


def send(s, msg, ext=False, immediately=False):
    params = {"message": msg}
    if immediately:
        params["configuration"] = {"returnImmediately": True}
    st, hd, doc = s.rpc("SendMessage", params, ext=ext)
    eq(st, 200, "SendMessage HTTP status")
    return doc


def error_of(doc):
    return error_info(doc) if isinstance(doc, dict) and "error" in doc else (None, None, {})


def get(s, tid):
    return s.rpc("GetTask", {"id": tid})[2]


def wait_reason(s, tid, reason):
    """Poll GetTask (bounded) until it answers the error reason."""
    wait_until(lambda: error_of(get(s, tid))[1] == reason, timeout=SWEEP_WAIT,
               what="GetTask %s to answer %s" % (tid, reason))


def expect(doc, code, reason, tid, what):
    c, r, m = error_of(doc)
    eq((c, r), (code, reason), what)
    eq(m.get("taskId"), tid, what + ": metadata.taskId")
    return m


def test_expired_then_not_found():
    with Onced(args=["--test-admin", "--retention", "1h", "--tombstone-retention", "2h"],
               tmpdir=TMP, store=fresh_store()) as s:
        # A finished task with a client-minted ID, one with a derived ID (plain
        # A2A 1.0), a task still working, one waiting for input.
        tid = "t-ret-" + new_id()
        first = user_message("hello retention", task_id=tid)
        eq(task_state(send(s, first, ext=True)), "TASK_STATE_COMPLETED", "task 1 completes")
        plain = user_message("plain first message")
        ptid = result_task(send(s, plain), "plain send")["id"]
        eq(task_state(get(s, ptid)), "TASK_STATE_COMPLETED", "the derived-ID task completes")
        busy = result_task(send(s, user_message("sleep:55"), immediately=True), "busy")["id"]
        wait_until(lambda: task_state(get(s, busy)) == "TASK_STATE_WORKING", timeout=10,
                   what="the sleep task to be working")
        asking = result_task(send(s, user_message("ask:still there?")), "ask")
        eq(asking["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the ask task parks")
        asking = asking["id"]

        # Inside the retention window nothing changes.
        set_offset(s, 50 * MIN_MS)
        wait_sweeps(s, 2, what="sweeps on the moved clock")
        eq(task_state(get(s, tid)), "TASK_STATE_COMPLETED", "kept in full inside the window")

        # Past retention: TASK_EXPIRED everywhere, with expiredAt.
        before = datetime.now(timezone.utc) + timedelta(minutes=70) - timedelta(seconds=5)
        set_offset(s, 70 * MIN_MS)
        wait_reason(s, tid, "TASK_EXPIRED")
        m = expect(get(s, tid), -32001, "TASK_EXPIRED", tid, "GetTask past retention")
        expired_at = parse_ts(m.get("expiredAt"))
        check(before <= expired_at <= datetime.now(timezone.utc) + timedelta(minutes=71),
              "expiredAt %s is the (jumped) time of the sweep" % expired_at)
        expect(send(s, first, ext=True), -32001, "TASK_EXPIRED", tid,
               "a retry of the original message")
        expect(send(s, user_message("a new message", task_id=tid), ext=True), -32001,
               "TASK_EXPIRED", tid, "a new message to the expired task")
        expect(send(s, user_message("without the extension", task_id=tid)), -32001,
               "TASK_EXPIRED", tid, "a new message without the extension")
        expect(s.rpc("CancelTask", {"id": tid})[2], -32001, "TASK_EXPIRED", tid, "CancelTask")
        wait_reason(s, ptid, "TASK_EXPIRED")
        expect(send(s, plain), -32001, "TASK_EXPIRED", ptid,
               "a retried plain first message is not silently re-executed")
        st, _, doc = s.rpc("ListTasks", {})
        listed = [t["id"] for t in (doc.get("result") or {}).get("tasks", [])]
        check(tid not in listed and ptid not in listed, "expired tasks are not listed: %r" % listed)

        # Unfinished tasks are never swept.
        check(task_state(get(s, busy)) in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"),
              "the working task is still there: %r" % (get(s, busy),))
        eq(task_state(get(s, asking)), "TASK_STATE_INPUT_REQUIRED", "the ask task is still there")

        # The tombstone lives for --tombstone-retention after it was made.
        set_offset(s, 150 * MIN_MS)
        wait_sweeps(s, 2, what="sweeps on the moved clock")
        expect(get(s, tid), -32001, "TASK_EXPIRED", tid, "GetTask inside the tombstone window")

        # Past the tombstone window: forgotten.
        set_offset(s, 200 * MIN_MS)
        wait_reason(s, tid, "TASK_NOT_FOUND")
        expect(get(s, tid), -32001, "TASK_NOT_FOUND", tid, "GetTask after the tombstone window")
        expect(s.rpc("CancelTask", {"id": tid})[2], -32001, "TASK_NOT_FOUND", tid,
               "CancelTask after the tombstone window")
        expect(send(s, user_message("new, no extension", task_id=tid)), -32001,
               "TASK_NOT_FOUND", tid, "a message for a forgotten task without the extension")
        wait_reason(s, ptid, "TASK_NOT_FOUND")
        check(task_state(get(s, busy)) in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"),
              "the working task survived every sweep")
        eq(task_state(get(s, asking)), "TASK_STATE_INPUT_REQUIRED", "so did the ask task")
        # onced is still serving.
        eq(task_state(send(s, user_message("still alive"))), "TASK_STATE_COMPLETED",
           "a new task after the sweeps completes")


def test_clock_offset_flag():
    """--clock-offset at start: timestamps run ahead, and a replica whose clock
    is past the retention window sweeps tasks another replica finished."""
    store = fresh_store()
    with Onced(args=["--retention", "1h", "--tombstone-retention", "2h"], tmpdir=TMP,
               store=store) as a:
        tid = "t-off-" + new_id()
        msg = user_message("finished by A", task_id=tid)
        t = result_task(send(a, msg, ext=True), "send to A")
        eq(t["status"]["state"], "TASK_STATE_COMPLETED", "A completes the task")
        ts = parse_ts(t["status"]["timestamp"])
        check(abs((ts - datetime.now(timezone.utc)).total_seconds()) < 60,
              "A's clock is real time: %s" % ts)
        with Onced(args=["--retention", "1h", "--tombstone-retention", "2h",
                         "--clock-offset", "90m"], tmpdir=TMP, store=store) as b:
            t2 = result_task(send(b, user_message("on B's clock")), "send to B")
            ts2 = parse_ts(t2["status"]["timestamp"])
            ahead = (ts2 - datetime.now(timezone.utc)).total_seconds()
            check(80 * 60 < ahead < 100 * 60, "B's timestamps run 90 min ahead (%.0fs)" % ahead)
            wait_reason(b, tid, "TASK_EXPIRED")
            # The tombstone is in the shared store: A sees it too.
            expect(get(a, tid), -32001, "TASK_EXPIRED", tid, "A sees B's sweep")
            expect(send(a, msg, ext=True), -32001, "TASK_EXPIRED", tid, "a retry sent to A")
            # B's own fresh task is younger than the window on B's clock.
            eq(task_state(get(b, t2["id"])), "TASK_STATE_COMPLETED", "B's own task is kept")


def test_admin_needs_test_admin():
    with Onced(tmpdir=TMP, store=fresh_store()) as s:
        for method, params in (("once/admin/setClockOffset", {"offsetMs": HOUR_MS}),
                               ("once/admin/stats", {})):
            st, _, doc = s.rpc(method, params)
            eq(st, 200, method + ": HTTP status")
            eq((doc.get("error") or {}).get("code"), -32601,
               method + " without --test-admin is an unknown method")
    with Onced(args=["--test-admin"], tmpdir=TMP, store=fresh_store()) as s:
        st, _, doc = s.rpc("once/admin/setClockOffset", {"offsetMs": "soon"})
        c, r, m = error_of(doc)
        eq(c, -32602, "a non-integer offsetMs is invalid params")


if __name__ == "__main__":
    run([test_expired_then_not_found, test_clock_offset_flag, test_admin_needs_test_admin])
