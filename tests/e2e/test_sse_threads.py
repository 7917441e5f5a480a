"""Threads independent of streams (issue 39, src/http/sse.c): a thousand idle
SubscribeToTask streams on input-required tasks cost onced no thread each
(its thread count, /proc/PID/task, stays flat while they open) and about
15 KB of memory each (VmRSS, at most 20 KB a stream); a
continuation sent on another connection still reaches its stream (the
engine's watch wakes it); and clients that hang up give their slots back
(the once_sse_streams_open gauge drops to the streams still open).

Counts, not times: every wait is for a condition, bounded by a scaled
timeout. One selector loop drives every client socket (no thread per
client here either). Python 3 standard library only.
"""
import json
import os
import resource
import selectors
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, check, eq, result_task, run, scaled, scratch_dir, user_message,
                     wait_until)
from test_sse import open_streams

TMP = scratch_dir("once-sse-threads-")
STREAMS = int(os.environ.get("ONCE_SSE_THREADS_STREAMS", "1000"))
THREAD_GROWTH_MAX = 20
# RSS an idle stream may add (bench/streams.sh measures ~15-16 KB on
# memory:, 1,000 to 10,000 streams: libmicrohttpd's connection and its
# --conn-memory pool, the request's context, the cursor, the watch). A
# sanitizer build's allocator pads every block, so there it is not checked.
RSS_PER_STREAM_MAX_KB = 20


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(l.split()[1] for l in f if l.startswith("VmRSS:")))


def sanitized():
    cache = os.path.join(os.environ.get("ONCE_BUILD", ""), "CMakeCache.txt")
    try:
        text = open(cache).read()
    except OSError:
        return False
    return "ONCE_ASAN:BOOL=ON" in text or "ONCE_TSAN:BOOL=ON" in text


def raise_nofile(need):
    """Raise this process's open-file limit (onced inherits it) to need."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return
    want = need if hard == resource.RLIM_INFINITY else min(need, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    check(want >= need, "an open-file limit of %d (hard limit %s)" % (need, hard))


def threads_of(pid):
    return len(os.listdir("/proc/%d/task" % pid))


class Client:
    """One SubscribeToTask stream over a raw non-blocking socket: the
    response head, then chunked SSE frames, decoded as they come."""

    def __init__(self, port, task_id, rid):
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "SubscribeToTask",
                           "params": {"id": task_id}}).encode()
        head = ("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
                "Accept: text/event-stream\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % len(body)).encode()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=scaled(30))
        self.sock.sendall(head + body)
        self.sock.setblocking(False)
        self.raw = b""        # bytes not decoded yet
        self.head = None      # the status line and headers, once read
        self.text = b""       # the event stream, de-chunked
        self.events = []      # {"id": int or None, "data": JSON}
        self.eof = False

    def feed(self):
        try:
            got = self.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            got = b""
        if not got:
            self.eof = True
            return
        self.raw += got
        if self.head is None:
            end = self.raw.find(b"\r\n\r\n")
            if end < 0:
                return
            self.head, self.raw = self.raw[:end].decode(), self.raw[end + 4:]
        self.dechunk()
        self.frames()

    def dechunk(self):
        while True:
            nl = self.raw.find(b"\r\n")
            if nl < 0:
                return
            size = int(self.raw[:nl].split(b";")[0], 16)
            if len(self.raw) < nl + 2 + size + 2:
                return
            self.text += self.raw[nl + 2:nl + 2 + size]
            self.raw = self.raw[nl + 2 + size + 2:]
            if size == 0:
                self.eof = True
                return

    def frames(self):
        while b"\n\n" in self.text:
            frame, self.text = self.text.split(b"\n\n", 1)
            ev_id, data = None, []
            for line in frame.decode().split("\n"):
                if line.startswith("id: "):
                    ev_id = int(line[4:])
                elif line.startswith("data: "):
                    data.append(line[6:])
            if data:
                self.events.append({"id": ev_id, "data": json.loads("\n".join(data))})

    def close(self):
        self.sock.close()


def pump_until(sel, cond, what, timeout=60):
    """Read every client that has bytes until cond() holds."""
    end = time.time() + scaled(timeout)
    while not cond():
        check(time.time() < end, "in time: " + what)
        for key, _ in sel.select(timeout=0.1):
            key.data.feed()
            if key.data.eof:
                sel.unregister(key.fileobj)


def state_of(ev):
    r = ev["data"].get("result", {})
    body = r.get("task") or r.get("statusUpdate") or {}
    return body.get("status", {}).get("state")


def open_streams_on(srv, tids, cls=Client):
    """A SubscribeToTask stream (cls) on srv per input-required task, each
    open with its snapshot: (selector, clients)."""
    sel = selectors.DefaultSelector()
    clients = []
    for i, tid in enumerate(tids):
        c = cls(srv.port, tid, rid=i + 1)
        clients.append(c)
        sel.register(c.sock, selectors.EVENT_READ, c)
    pump_until(sel, lambda: all(c.events or c.eof for c in clients),
               "every stream's first event")
    for i, c in enumerate(clients):
        check(c.head is not None and " 200 " in c.head.split("\r\n")[0],
              "stream %d answered 200: %r" % (i, c.head))
        check(not c.eof, "stream %d stays open" % i)
        eq(state_of(c.events[0]), "TASK_STATE_INPUT_REQUIRED", "stream %d's snapshot" % i)
    return sel, clients


def test_thousand_idle_streams():
    raise_nofile(2 * STREAMS + 1024)
    n = STREAMS
    args = ["--max-streams", str(2 * n), "--max-streams-per-principal", str(2 * n),
            "--max-connections", str(4 * n), "--max-connections-per-ip", str(4 * n),
            "--sse-ping", "1h"]
    with Onced(tmpdir=TMP, store="memory:", args=args) as s:
        tids = []
        for i in range(n):
            _, _, doc = s.rpc("SendMessage", {"message": user_message("ask:contract %d?" % i)})
            task = result_task(doc)
            eq(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "task %d asks" % i)
            tids.append(task["id"])
        pid = s.proc.pid
        before = threads_of(pid)
        rss_before = rss_kb(pid)

        sel, clients = open_streams_on(s, tids)
        eq(open_streams(s), n, "the streams open")
        after = threads_of(pid)
        print("onced threads: %d before %d streams, %d with them" % (before, n, after))
        check(after - before < THREAD_GROWTH_MAX,
              "onced's threads: %d before %d streams, %d with them" % (before, n, after))
        per = (rss_kb(pid) - rss_before) / n
        print("onced RSS: %.1f KB per idle stream" % per)
        if not sanitized():
            check(per <= RSS_PER_STREAM_MAX_KB, "RSS per idle stream %.1f KB <= %d KB"
                  % (per, RSS_PER_STREAM_MAX_KB))

        # A continuation sent on another connection reaches its stream.
        first = clients[0]
        _, _, doc = s.rpc("SendMessage", {"message": user_message("ACME", task_id=tids[0])})
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "the continuation")
        pump_until(sel, lambda: first.eof, "the continued task's stream to end")
        ids = [e["id"] for e in first.events]
        eq(ids, list(range(ids[0], ids[0] + len(ids))), "its events, consecutive")
        check(len(ids) >= 2, "the stream got the continuation's events: %r" % ids)
        eq(state_of(first.events[-1]), "TASK_STATE_COMPLETED", "up to the completion")
        first.close()
        wait_until(lambda: open_streams(s) == n - 1, timeout=10,
                   what="the ended stream's slot to come back")

        # Half the clients hang up: their slots come back.
        gone = clients[1:1 + n // 2]
        for c in gone:
            if c.sock in sel.get_map():
                sel.unregister(c.sock)
            c.close()
        left = n - 1 - len(gone)
        wait_until(lambda: open_streams(s) == left, timeout=20,
                   what="the hung-up streams' slots to come back (%d open)" % left)
        check(threads_of(pid) - before < THREAD_GROWTH_MAX, "threads still flat")

        for c in clients[1 + n // 2:]:
            c.close()
        wait_until(lambda: open_streams(s) == 0, timeout=20,
                   what="every slot back")
        sel.close()


if __name__ == "__main__":
    run([test_thousand_idle_streams])
