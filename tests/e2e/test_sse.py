"""SSE streaming with real onced processes (docs/design.md section 6, docs/wire.md
"Streaming"): SendStreamingMessage and SubscribeToTask answer text/event-stream
whose frames carry `id: <generation>` and one JSON-RPC response per data line;
a stream cut mid-task and resumed with Last-Event-ID loses nothing and repeats
nothing (checked against the events table of the store itself); a retried
streaming send replays the stored events without running anything again;
subscribing to a terminal task is -32004; a replica streams a task another
replica executes; slow consumers cost bounded memory, the server keeps
answering, and the stream limit answers 503 until a slot frees.

Raw http.client reads the event stream; Python 3 standard library only.
"""
import http.client
import json
import os
import socket
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (GatedAgent, Onced, check, eq, error_info, generation, http_get, new_id,
                     result_task, run, scaled, scratch_dir, task_state, user_message, wait_until)

TMP = scratch_dir("once-sse-")
# A task that stays live until the test lets it finish: a subscription to it
# can never meet a task that already ended, however slow the machine.
GATED = GatedAgent("step 'first step'; gate go; step 'second step'", os.path.join(TMP, "gates"))
TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED")


def fresh_store():
    path = os.path.join(TMP, "registry-%s.db" % new_id())
    return path, "sqlite:" + path


class Stream:
    """One streaming call. If the answer is an event stream, next() yields
    events {"id": int or None, "data": parsed JSON}; otherwise doc holds the
    JSON-RPC answer."""

    def __init__(self, port, method, params, headers=None, rid=1, timeout=30):
        self.rid = rid
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.open(port, "POST", "/", body, headers, timeout)

    def open(self, port, verb, path, body, headers, timeout):
        """Send the request (body: JSON, or None) and read the answer's head."""
        self.comments = []
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(timeout))
        h = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
        if body is not None:
            h["Content-Type"] = "application/json"
            body = json.dumps(body).encode()
        h.update(headers or {})
        self.conn.request(verb, path, body=body, headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = dict((k.lower(), v) for k, v in self.resp.getheaders())
        self.sse = self.headers.get("content-type", "").startswith("text/event-stream")
        self.doc = None
        if not self.sse:
            self.doc = json.loads(self.resp.read())
            self.conn.close()

    def next(self):
        ev_id, data = None, []
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode("utf-8").rstrip("\n").rstrip("\r")
            if line == "":
                if data:
                    return {"id": ev_id, "data": json.loads("\n".join(data))}
                ev_id = None
                continue
            if line.startswith(":"):
                self.comments.append(line)
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "id":
                ev_id = int(value)
            elif field == "data":
                data.append(value)

    def rest(self):
        out = []
        while True:
            ev = self.next()
            if ev is None:
                return out
            out.append(ev)

    def close(self):
        try:
            self.resp.close()
        finally:
            self.conn.close()


def stored_events(db_path, task_id):
    db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=scaled(10))
    try:
        rows = db.execute("SELECT e.generation, e.payload FROM events e JOIN tasks t "
                          "ON e.tid=t.rid WHERE t.task_id=? ORDER BY e.generation",
                          (task_id,)).fetchall()
    finally:
        db.close()
    return [(g, json.loads(p)) for g, p in rows]


def result_of(ev, rid):
    d = ev["data"]
    eq(d.get("jsonrpc"), "2.0", "every data line is a JSON-RPC response")
    eq(d.get("id"), rid, "carrying the request's id")
    check("result" in d, "with a result: %r" % (d,))
    return d["result"]


def state_of(result):
    body = result.get("task") or result.get("statusUpdate") or {}
    return (body.get("status") or {}).get("state")


def body_generation(result):
    for k in ("task", "statusUpdate", "artifactUpdate"):
        if k in result:
            return generation(result[k])
    return None


def check_consecutive(events, what, first=None):
    ids = [e["id"] for e in events]
    check(all(i is not None for i in ids), "%s: every event has an id: %r" % (what, ids))
    if first is not None and ids:
        eq(ids[0], first, "%s: first id" % what)
    eq(ids, list(range(ids[0], ids[0] + len(ids))) if ids else [],
       "%s: ids are consecutive generations" % what)


def streaming_send(port, text, rid=1, headers=None, **msg_extra):
    msg = user_message(text, **msg_extra)
    return msg, Stream(port, "SendStreamingMessage", {"message": msg}, headers=headers, rid=rid)


# --- the tests ----------------------------------------------------------------

def test_card_says_streaming():
    path, store = fresh_store()
    with Onced(tmpdir=TMP, store=store) as s:
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=scaled(10))
        conn.request("GET", "/.well-known/agent-card.json")
        card = json.loads(conn.getresponse().read())
        conn.close()
        eq(card["capabilities"].get("streaming"), True, "the card advertises streaming")


def test_streaming_send_events():
    path, store = fresh_store()
    with Onced(tmpdir=TMP, store=store) as s:
        t0 = time.time()
        _, st = streaming_send(s.port, "sleep:2", rid=41)
        eq(st.status, 200, "HTTP 200")
        check(st.sse, "SendStreamingMessage answers text/event-stream: %r" % st.headers)
        eq(st.headers.get("cache-control"), "no-cache", "Cache-Control: no-cache")
        evs = st.rest()   # ends by itself: the server closes after the terminal event
        took = time.time() - t0
        st.close()
        check(len(evs) >= 3, "several events: %d" % len(evs))
        check_consecutive(evs, "streaming send", first=1)
        results = [result_of(e, 41) for e in evs]
        check("task" in results[0], "the stream begins with the Task: %r" % results[0])
        for e, r in zip(evs, results):
            eq(body_generation(r), e["id"], "the event id is the generation in the payload")
        eq(state_of(results[-1]), "TASK_STATE_COMPLETED", "it ends with the terminal status")
        check(all(state_of(r) not in TERMINAL for r in results[:-1]), "only the last is terminal")
        check(took >= 1.8, "events arrived as the 2 s task ran (%.2fs)" % took)
        tid = results[0]["task"]["id"]
        stored = stored_events(path, tid)
        eq([g for g, _ in stored], [e["id"] for e in evs], "every stored event was streamed")
        eq([p for _, p in stored], results, "payloads equal the store's events")


def test_cut_and_resume():
    path, store = fresh_store()
    with Onced(GATED.args, tmpdir=TMP, store=store) as s:
        msg, st = streaming_send(s.port, "go", rid=7)
        first = st.next()
        st.close()   # the client drops mid-task, after one event
        check(first is not None and first["id"] == 1, "got the first event: %r" % (first,))
        tid = result_of(first, 7)["task"]["id"]
        # Resume the subscription where it broke; the task goes on after.
        sub = Stream(s.port, "SubscribeToTask", {"id": tid}, rid=8,
                     headers={"Last-Event-ID": str(first["id"])})
        check(sub.sse, "the resumed subscription streams: %r" % (sub.doc,))
        GATED.release(tid, "go")
        rest = sub.rest()
        sub.close()
        got = [first] + rest
        check_consecutive(got, "cut + resume", first=1)
        eq(state_of(result_of(rest[-1], 8)), "TASK_STATE_COMPLETED", "resumed to the end")
        stored = stored_events(path, tid)
        eq([g for g, _ in stored], [e["id"] for e in got], "no gap, no duplicate (store ids)")
        eq([p for _, p in stored], [e["data"]["result"] for e in got],
           "the concatenated stream equals the task's event list in the store")
        # A subscription from generation 0 replays the whole list too.
        full = Stream(s.port, "SubscribeToTask", {"id": tid}, rid=9,
                      headers={"Last-Event-ID": "0"})
        evs = full.rest()
        full.close()
        eq([e["data"]["result"] for e in evs], [p for _, p in stored],
           "Last-Event-ID 0 replays every stored event")
        # And the retried streaming send resumes by Last-Event-ID as well.
        again = Stream(s.port, "SendStreamingMessage", {"message": msg}, rid=10,
                       headers={"Last-Event-ID": "2"})
        check(again.sse, "a retried streaming send streams")
        eq(again.headers.get("idempotent-replayed"), "true", "and says it is a replay")
        evs = again.rest()
        again.close()
        eq([e["id"] for e in evs], [g for g, _ in stored if g > 2],
           "a replay resumed after id 2 starts at 3")


def test_streaming_replay():
    path, store = fresh_store()
    with Onced(tmpdir=TMP, store=store, args=["--test-admin"]) as s:
        msg, st = streaming_send(s.port, "hello", rid=1)
        first = st.rest()
        st.close()
        again = Stream(s.port, "SendStreamingMessage", {"message": msg}, rid=2)
        eq(again.headers.get("idempotent-replayed"), "true", "Idempotent-Replayed: true")
        second = again.rest()
        again.close()
        eq([e["id"] for e in second], [e["id"] for e in first], "the same event ids")
        eq([e["data"]["result"] for e in second], [e["data"]["result"] for e in first],
           "the same events: a replay streams what was stored")
        eq([e["data"]["id"] for e in second], [2] * len(second), "under the new request id")
        st_, _, doc = s.rpc("once/admin/stats", {})
        eng = doc["result"]["engine"]
        eq(eng["executedTurns"], 1, "the task ran once")
        eq(eng["registered"], 1, "and was registered once")


def test_subscribe_live_task():
    path, store = fresh_store()
    with Onced(GATED.args, tmpdir=TMP, store=store) as s:
        st_, _, doc = s.rpc("SendMessage", {"message": user_message("go"),
                                            "configuration": {"returnImmediately": True}})
        tid = result_task(doc)["id"]
        sub = Stream(s.port, "SubscribeToTask", {"id": tid}, rid="sub-1")
        check(sub.sse, "SubscribeToTask streams a live task: %r" % (sub.doc,))
        GATED.release(tid, "go")
        evs = sub.rest()
        sub.close()
        snap = result_of(evs[0], "sub-1")
        check("task" in snap, "the first event is the Task as it is now: %r" % snap)
        eq(evs[0]["id"], generation(snap["task"]), "its id is the Task's generation")
        check_consecutive(evs, "subscription")
        eq(state_of(result_of(evs[-1], "sub-1")), "TASK_STATE_COMPLETED", "to the terminal status")
        stored = dict(stored_events(path, tid))
        for e in evs[1:]:
            eq(e["data"]["result"], stored[e["id"]], "event %d as stored" % e["id"])


def test_subscribe_interrupted_and_continue():
    path, store = fresh_store()
    with Onced(tmpdir=TMP, store=store) as s:
        st_, _, doc = s.rpc("SendMessage", {"message": user_message("ask:which contract?")})
        task = result_task(doc)
        eq(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the task asks")
        # A2A 1.0 section 3.1.6: a subscription works on any non-terminal
        # task and ends at a terminal state, so it stays open past the
        # snapshot of an input-required task.
        sub = Stream(s.port, "SubscribeToTask", {"id": task["id"]}, rid=3)
        snap = sub.next()
        eq(state_of(result_of(snap, 3)), "TASK_STATE_INPUT_REQUIRED", "snapshot state")
        eq(snap["id"], generation(task), "at the task's generation")
        # A streaming continuation (another call) starts with the Task at its
        # new generation and ends at the completion.
        _, st = streaming_send(s.port, "ACME", rid=4, task_id=task["id"])
        evs = st.rest()
        st.close()
        check(st.sse and len(evs) >= 2, "the continuation streams: %r" % (st.doc,))
        check("task" in result_of(evs[0], 4), "beginning with the Task")
        eq(evs[0]["id"], generation(task) + 1, "at the continuation's generation")
        check_consecutive(evs, "continuation")
        eq(state_of(result_of(evs[-1], 4)), "TASK_STATE_COMPLETED", "to completion")
        # The subscription saw every event of the continuation, then closed.
        more = sub.rest()
        sub.close()
        check_consecutive([snap] + more, "the subscription", first=generation(task))
        eq(more[-1]["id"], evs[-1]["id"], "up to the completion")
        eq(state_of(result_of(more[-1], 3)), "TASK_STATE_COMPLETED", "which ends it")


def test_errors_before_the_stream():
    path, store = fresh_store()
    with Onced(tmpdir=TMP, store=store) as s:
        st_, _, doc = s.rpc("SendMessage", {"message": user_message("done")})
        task = result_task(doc)
        eq(task["status"]["state"], "TASK_STATE_COMPLETED", "a finished task")
        sub = Stream(s.port, "SubscribeToTask", {"id": task["id"]}, rid=5)
        check(not sub.sse, "subscribing to a terminal task is not a stream")
        eq(sub.status, 200, "but a JSON-RPC error")
        code, reason, meta = error_info(sub.doc)
        eq(code, -32004, "UnsupportedOperation (A2A 1.0)")
        eq((reason, meta.get("taskId"), meta.get("state")),
           ("TASK_TERMINAL", task["id"], "TASK_STATE_COMPLETED"), "naming the task and state")
        eq(sub.doc.get("id"), 5, "answering the request id")
        sub = Stream(s.port, "SubscribeToTask", {"id": "t-" + new_id()})
        eq(error_info(sub.doc)[:2], (-32001, "TASK_NOT_FOUND"), "unknown task")
        sub = Stream(s.port, "SubscribeToTask", {})
        eq(error_info(sub.doc)[0], -32602, "missing id")
        for bad in ("x", "-1", "1.5"):
            sub = Stream(s.port, "SubscribeToTask", {"id": task["id"]},
                         headers={"Last-Event-ID": bad})
            eq(error_info(sub.doc)[2].get("field"), "Last-Event-ID", "malformed Last-Event-ID " + bad)
        sub = Stream(s.port, "SubscribeToTask", {"id": task["id"]},
                     headers={"Last-Event-ID": str(generation(task) + 5)})
        eq(error_info(sub.doc)[:2], (-32602, "INVALID_PARAMS"), "a Last-Event-ID past the task")
        st = Stream(s.port, "SendStreamingMessage", {"message": {"role": "ROLE_USER",
                                                                 "parts": [{"text": "x"}]}})
        check(not st.sse, "an invalid streaming send is not a stream")
        eq(error_info(st.doc)[0], -32602, "missing messageId: -32602 as for SendMessage")
        st = Stream(s.port, "SendStreamingMessage",
                    {"message": user_message("x", task_id=task["id"])})
        eq(error_info(st.doc)[:2], (-32004, "TASK_TERMINAL"), "a message to a finished task")
        st = Stream(s.port, "SendStreamingMessage", {"message": user_message("x")},
                    headers={"A2A-Version": ""})
        eq(error_info(st.doc)[0], -32009, "the version check applies")


def test_two_replicas():
    path, store = fresh_store()
    with Onced(tmpdir=TMP, store=store, args=GATED.args + ["--replica-id", "A"]) as a, \
            Onced(tmpdir=TMP, store=store, args=GATED.args + ["--replica-id", "B"]) as b:
        st_, _, doc = a.rpc("SendMessage", {"message": user_message("go"),
                                            "configuration": {"returnImmediately": True}})
        tid = result_task(doc)["id"]
        sub = Stream(b.port, "SubscribeToTask", {"id": tid}, rid=1,
                     headers={"Last-Event-ID": "0"})
        check(sub.sse, "B streams a task A executes")
        t0 = time.time()
        GATED.release(tid, "go")
        evs = sub.rest()
        sub.close()
        check(time.time() - t0 < scaled(15), "and follows it to the end promptly")
        stored = stored_events(path, tid)
        eq([e["id"] for e in evs], [g for g, _ in stored], "B saw every event, in order")
        eq([e["data"]["result"] for e in evs], [p for _, p in stored], "exactly as stored")
        eq(state_of(evs[-1]["data"]["result"]), "TASK_STATE_COMPLETED", "to completion")


# --- bounded resources --------------------------------------------------------

AGENT = r'''
import json, sys
turn = json.loads(sys.stdin.readline())
if turn["message"]["parts"][0].get("text") == "big":
    chunk = "x" * 131072
    for i in range(32):
        print(json.dumps({"artifact": {"artifactId": "a%d" % i, "parts": [{"text": chunk}]},
                          "lastChunk": True}), flush=True)
print(json.dumps({"status": "completed"}), flush=True)
'''


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def maps_library(pid, name):
    with open("/proc/%d/maps" % pid) as f:
        return any(name in line for line in f)


def rss_settled(pid, what):
    """RSS of pid once it stopped changing: three samples in a row within
    256 KiB of each other (the server has done what it will do for now)."""
    samples = []

    def steady():
        samples.append(rss_kib(pid))
        last = samples[-3:]
        return len(last) == 3 and max(last) - min(last) <= 256 and last[-1]
    return wait_until(steady, timeout=20, step=0.2, what=what)


def queued_bytes(sk):
    import fcntl
    import struct
    import termios
    return struct.unpack("i", fcntl.ioctl(sk.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


def slow_subscriber(port, tid):
    """A client that asks for the whole event list and, once the stream has
    started, reads nothing more: a tiny receive window, so what it does not
    take stays on the server's side."""
    sk = socket.socket()
    sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sk.settimeout(scaled(30))
    sk.connect(("127.0.0.1", port))
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                       "params": {"id": tid}}).encode()
    head = ("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            "A2A-Version: 1.0\r\nLast-Event-ID: 0\r\nContent-Length: %d\r\n\r\n" % len(body))
    sk.sendall(head.encode() + body)
    got = b""
    while b"\r\n\r\n" not in got:   # the response head: the stream is open
        chunk = sk.recv(1)
        if not chunk:
            check(False, "the server answered the subscription: %r" % got)
        got += chunk
    check(b"text/event-stream" in got, "a stream opened: %r" % got[:200])
    return sk


def test_slow_subscribers_bounded():
    agent = os.path.join(TMP, "big_agent.py")
    with open(agent, "w") as f:
        f.write(AGENT)
    path, store = fresh_store()
    # Allocator settings, so that RSS shows what the server keeps alive:
    # glibc gives the 50 producer threads up to 8 arenas per core whose
    # freed memory stays resident (RSS then grows with the number of arenas,
    # not with any backlog), and ASan keeps a 1 MiB quarantine per thread.
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = {"MALLOC_ARENA_MAX": "2",
           "ASAN_OPTIONS": (asan + ":" if asan else "") + "thread_local_quarantine_size_kb=64"}
    with Onced(tmpdir=TMP, store=store, env=env,
               args=["--exec", "%s %s" % (sys.executable, agent), "--max-streams", "80",
                     "--max-task-size", "16MiB"]) as s:
        st_, _, doc = s.rpc("SendMessage", {"message": user_message("big")}, timeout=120)
        task = result_task(doc)
        eq(task["status"]["state"], "TASK_STATE_COMPLETED", "the big task finished")
        total = sum(len(json.dumps(p)) for _, p in stored_events(path, task["id"]))
        check(total > 4000000, "its events hold %d bytes" % total)
        # Warm up: one full replay read to the end (allocator, store caches).
        warm = Stream(s.port, "SubscribeToTask", {"id": task["id"]},
                      headers={"Last-Event-ID": "0"})
        eq(len(warm.rest()), generation(task), "a reading client gets every event")
        warm.close()
        before = rss_settled(s.proc.pid, "the server's memory to settle after the warm-up")
        # One after the other: what is measured is what open streams hold,
        # not 50 concurrent record reads (each subscribe call reads the task
        # once, like a GetTask).
        socks = [slow_subscriber(s.port, task["id"]) for _ in range(50)]
        # Every stream has been written to, up to what the client does not
        # take; then the server holds what it holds.
        wait_until(lambda: all(queued_bytes(sk) > 0 for sk in socks), timeout=20,
                   what="events queued on every slow subscriber's socket")
        during = rss_settled(s.proc.pid, "the server's memory to settle with 50 stalled streams")
        grew = during - before
        # Holding each subscriber's backlog would take 50 x 4 MB (> 190 MB
        # beyond what the kernel buffers); a bounded stream holds ~64 KiB
        # plus one event, and its thread. (ThreadSanitizer's per-thread
        # shadow memory alone exceeds that: no bound under TSan.)
        if not maps_library(s.proc.pid, "libtsan"):
            check(grew < 100 * 1024, "50 slow subscribers grew RSS by %d KiB only" % grew)
        # The server keeps answering meanwhile.
        t0 = time.time()
        st_, _, doc = s.rpc("SendMessage", {"message": user_message("ping")}, timeout=20)
        eq(task_state(doc), "TASK_STATE_COMPLETED", "a send is answered during the stall")
        st_, _, doc = s.rpc("GetTask", {"id": task["id"], "historyLength": 0})
        eq(result_task(doc)["id"], task["id"], "a GetTask too")
        check(time.time() - t0 < scaled(10), "promptly (%.2fs)" % (time.time() - t0))
        for sk in socks:
            sk.close()
        # Their slots come back: streams still open after the cut.
        def fresh_stream_works():
            st = Stream(s.port, "SubscribeToTask", {"id": task["id"]},
                        headers={"Last-Event-ID": str(generation(task) - 1)})
            ok = st.sse and len(st.rest()) == 1
            st.close()
            return ok
        check(fresh_stream_works(), "a new stream opens after the slow ones left")


def test_stream_limit_and_pings():
    path, store = fresh_store()
    with Onced(tmpdir=TMP, store=store,
               args=["--max-streams", "2", "--sse-ping", "200ms"]) as s:
        st_, _, doc = s.rpc("SendMessage", {"message": user_message("sleep:30"),
                                            "configuration": {"returnImmediately": True}})
        tid = result_task(doc)["id"]
        # Subscribe once the task is WORKING: a later SUBMITTED -> WORKING
        # event would end the idle wait below before any ping is due.
        wait_until(lambda: s.rpc("GetTask", {"id": tid})[2]["result"]["status"]["state"] ==
                   "TASK_STATE_WORKING", timeout=10, what="the task to be working")
        one = Stream(s.port, "SubscribeToTask", {"id": tid})
        two = Stream(s.port, "SubscribeToTask", {"id": tid})
        check(one.sse and two.sse, "two streams open")
        one.next()
        two.next()
        three = Stream(s.port, "SubscribeToTask", {"id": tid})
        eq(three.status, 503, "past --max-streams: HTTP 503")
        check(three.headers.get("retry-after") is not None, "with Retry-After")
        eq(error_info(three.doc)[:2], (-32603, "TOO_MANY_STREAMS"), "and a clear reason")
        # An idle stream carries keep-alive comments.
        t0 = time.time()
        box = {}

        def read_more():
            box["ev"] = one.next()
        th = threading.Thread(target=read_more, daemon=True)
        th.start()
        wait_until(lambda: len(one.comments) >= 2, timeout=10,
                   what="': ping' comments while the task works")
        check("ev" not in box, "and no event: %r" % (box,))
        check(all(c.startswith(": ping") for c in one.comments), "comment lines only")
        # A client that leaves frees its slot.
        two.close()

        def can_open():
            st = Stream(s.port, "SubscribeToTask", {"id": tid})
            if st.sse:
                st.close()
                return True
            return False
        wait_until(can_open, timeout=10, what="the slot of the closed stream to free")
        s.rpc("CancelTask", {"id": tid})
        th.join(scaled(10))
        ev = box.get("ev")
        check(ev is not None and state_of(ev["data"]["result"]) == "TASK_STATE_CANCELED",
              "the open stream ends with the cancel: %r" % (ev,))
        check(one.next() is None, "and closes")
        one.close()
        check(time.time() - t0 < scaled(20), "in time")


def open_streams(srv):
    """The once_sse_streams_open gauge on /metrics."""
    st, _, body = http_get(srv.port, "/metrics")
    eq(st, 200, "/metrics")
    for line in body.decode().splitlines():
        if line.startswith("once_sse_streams_open "):
            return int(line.split()[1])
    check(False, "/metrics has once_sse_streams_open")


def test_stream_share_per_principal():
    """One principal's subscriptions take at most its share of the stream
    slots (a quarter of --max-streams with --auth-tokens): past it that
    principal alone is refused, others still get streams; and a stream whose
    client hangs up gives its slot back at once, not at the next ping (60 s
    here, so only the hang-up can free it within the test's bounds)."""
    tokens = os.path.join(TMP, "tokens-share")
    toks = {"alice": "tok-alice-" + new_id()[:8], "bob": "tok-bob-" + new_id()[:8]}
    with open(tokens, "w") as f:
        for who, tok in toks.items():
            f.write("%s %s\n" % (tok, who))
    auth = dict((who, {"Authorization": "Bearer " + tok}) for who, tok in toks.items())
    share = 16 // 4
    with Onced(tmpdir=TMP, args=["--max-streams", "16", "--auth-tokens", tokens,
                                 "--sse-ping", "60s"]) as s:
        tids = {}
        for who in toks:
            _, _, doc = s.rpc("SendMessage", {"message": user_message("sleep:120"),
                                              "configuration": {"returnImmediately": True}},
                              token=toks[who])
            tids[who] = result_task(doc)["id"]
            wait_until(lambda: s.rpc("GetTask", {"id": tids[who]}, token=toks[who])[2]
                       ["result"]["status"]["state"] == "TASK_STATE_WORKING", timeout=10,
                       what="%s's task to be working" % who)

        def subscribe(who):
            return Stream(s.port, "SubscribeToTask", {"id": tids[who]}, headers=auth[who])

        alice = [subscribe("alice") for _ in range(share)]
        for st in alice:
            check(st.sse, "Alice's streams within her share open")
            st.next()
        over = subscribe("alice")
        eq(over.status, 503, "Alice's stream past her share: HTTP 503")
        eq(error_info(over.doc)[:2], (-32603, "TOO_MANY_STREAMS"), "and the reason")
        check(over.headers.get("retry-after") is not None, "with Retry-After")
        bob = subscribe("bob")
        check(bob.sse, "Bob still gets a stream: %r" % (bob.doc,))
        bob.next()
        eq(open_streams(s), share + 1, "the streams open")

        # Alice hangs up one stream: its slot comes back when the socket
        # closes (the gauge drops), and a new stream of hers is accepted.
        alice.pop().close()
        wait_until(lambda: open_streams(s) == share, timeout=10,
                   what="the closed stream's slot to come back (the gauge to drop)")

        def alice_again():
            st = subscribe("alice")
            if st.sse:
                alice.append(st)
                return True
            return False
        wait_until(alice_again, timeout=10, what="a new stream of Alice's to be accepted")
        for who in toks:
            s.rpc("CancelTask", {"id": tids[who]}, token=toks[who])
        for st in alice + [bob]:
            st.close()


if __name__ == "__main__":
    run([test_card_says_streaming, test_streaming_send_events, test_cut_and_resume,
         test_streaming_replay, test_subscribe_live_task,
         test_subscribe_interrupted_and_continue, test_errors_before_the_stream,
         test_two_replicas, test_slow_subscribers_bounded, test_stream_limit_and_pings,
         test_stream_share_per_principal])
