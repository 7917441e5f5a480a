"""How a replica learns of another's writes (issue 39, src/engine/feed.c):
the store's change feed (PostgreSQL LISTEN/NOTIFY, Redis pub/sub), or, on a
store without one (SQLite, DynamoDB), the replica's one shared poller. Two
onced replicas A and B on one shared store (the URL in argv[1]: a fresh
schema / key prefix / table per run; "sqlite:" for a fresh file).

- idle followers cost the store nothing: a thousand SubscribeToTask streams
  open on B on input-required tasks A created; over a window of two SSE
  pings on every stream (the positive signal that time passed), B's store
  calls (the once_store_operation_duration_seconds counts on its /metrics,
  from every stream's first ping on: its catching up is then done)
  include no read of a follower's own (events, load: at most 20), and
  stay under 50 + 150 per second of the window in all (the shared
  poller's rounds are paced to 100 calls a second), where streams that
  polled on their own (50 ms) would make about 20 per stream per second;
  and a continuation sent to A reaches its stream on B, whole;
- (PostgreSQL and Redis) a lost feed loses nothing: with streams on B
  following 20 tasks, B's
  feed connection is killed from the server side (pg_terminate_backend of
  the LISTEN session; CLIENT KILL TYPE pubsub); B counts the loss
  (once_store_feed_lost_total) and is back (once_store_feed_up 1);
  continuations sent to A before and after it reach every stream, each
  generation exactly once, in order, up to the completion.

Counts, not times: every wait is for a condition, bounded by a scaled
timeout. Python 3 standard library only (psql and redis-cli to kill the
feed's session).
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import backend_of, namespaced, store_url_from_argv  # noqa: E402
from harness import (Onced, check, eq, http_get, result_task, run, scaled,  # noqa: E402
                     scratch_dir, user_message, wait_until)
from test_sse_threads import (Client, open_streams_on, pump_until, raise_nofile,  # noqa: E402
                              state_of)

BASE = store_url_from_argv()
KIND = "sqlite" if BASE.startswith("sqlite:") else backend_of(BASE)
TMP = scratch_dir("once-feed-%s-" % KIND)


def fresh(tag, tmp):
    """A store nobody else uses: a new file, or the shared server's fresh
    namespace."""
    if KIND == "sqlite":
        return "sqlite:" + os.path.join(tmp, tag + ".db")
    return namespaced(BASE, tag)
STREAMS = int(os.environ.get("ONCE_FEED_STREAMS", "1000"))


class PingClient(Client):
    """A stream that also counts the ": ping" comments it gets."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.pings = 0

    def frames(self):
        self.pings += self.text.count(b": ping\n\n")
        super().frames()


def metrics(srv):
    st, _, body = http_get(srv.port, "/metrics")
    eq(st, 200, "/metrics")
    return body.decode().splitlines()


def store_calls(srv):
    """B's store calls so far, by operation."""
    n = {}
    for line in metrics(srv):
        if line.startswith("once_store_operation_duration_seconds_count"):
            op = line.split('operation="')[1].split('"')[0]
            n[op] = n.get(op, 0) + int(float(line.split()[-1]))
    return n


def gauge(srv, name):
    for line in metrics(srv):
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    check(False, "/metrics has %s" % name)


def pair(url, tmp, extra=()):
    a = Onced(args=["--replica-id", "a"] + list(extra), store=url, tmpdir=tmp)
    b = Onced(args=["--replica-id", "b"] + list(extra), store=url, tmpdir=tmp)
    wait_until(lambda: gauge(b, "once_store_feed_up") == 1, timeout=20,
               what="B's change feed (or shared poller) up")
    return a, b


def ask(srv, i):
    _, _, doc = srv.rpc("SendMessage", {"message": user_message("ask:contract %d?" % i)})
    task = result_task(doc)
    eq(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "task %d asks" % i)
    return task["id"]


def whole(c, what):
    """The stream's events: consecutive generations, ending completed."""
    ids = [e["id"] for e in c.events]
    eq(ids, list(range(ids[0], ids[0] + len(ids))), what + ": each generation once, in order")
    check(len(ids) >= 2, what + ": the continuation's events came: %r" % ids)
    eq(state_of(c.events[-1]), "TASK_STATE_COMPLETED", what + ": up to the completion")


def test_idle_streams_cost_nothing():
    raise_nofile(2 * STREAMS + 1024)
    n = STREAMS
    tmp = tempfile.mkdtemp(dir=TMP)
    args = ["--max-streams", str(2 * n), "--max-streams-per-principal", str(2 * n),
            "--max-connections", str(4 * n), "--max-connections-per-ip", str(4 * n),
            "--sse-ping", "1s"]
    a, b = pair(fresh("idle", tmp), tmp, args)
    try:
        tids = [ask(a, i) for i in range(n)]
        sel, clients = open_streams_on(b, tids, PingClient)
        # A stream pings from a pump whose read found nothing: after its
        # first ping, a stream's catching up (the read after its snapshot)
        # is behind it.
        pump_until(sel, lambda: all(c.pings >= 1 for c in clients), "a ping on every stream")
        base = [c.pings for c in clients]
        c0, t0 = store_calls(b), time.monotonic()
        pump_until(sel, lambda: all(c.pings >= p + 2 for c, p in zip(clients, base)),
                   "two pings on every stream")
        c1, secs = store_calls(b), time.monotonic() - t0
        by_op = {op: c1[op] - c0.get(op, 0) for op in c1 if c1[op] != c0.get(op, 0)}
        calls = sum(by_op.values())
        own = by_op.get("events", 0) + by_op.get("load", 0)
        check(own <= 20, "B's followers read the store on their own: %r" % by_op)
        bound = 50 + 150 * secs
        print("B's store calls with %d idle streams: %d in %.2f s (bound %d; a polling "
              "stream makes ~20 a second): %r" % (n, calls, secs, bound, by_op))
        check(calls <= bound, "B's store calls over the window: %d > %d" % (calls, bound))

        first = clients[0]
        _, _, doc = a.rpc("SendMessage", {"message": user_message("ACME", task_id=tids[0])})
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "the continuation on A")
        pump_until(sel, lambda: first.eof, "the continued task's stream on B to end")
        whole(first, "the stream on B")
        for c in clients:
            c.close()
        sel.close()
    finally:
        a.stop()
        b.stop()


def kill_feed(url):
    """End B's feed session from the server side."""
    if backend_of(url) == "postgres":
        schema = url.split("schema=")[1].split("&")[0]
        sql = ("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
               "WHERE query = 'LISTEN \"once.%s\"'" % schema)
        out = subprocess.run(["psql", url.split("?")[0], "-Atc", sql], capture_output=True,
                             text=True, check=True).stdout.strip()
    else:
        hp = url[len("redis://"):].split("/")[0]
        host, port = hp.rsplit(":", 1)
        out = subprocess.run(["redis-cli", "-h", host, "-p", port, "CLIENT", "KILL", "TYPE",
                              "pubsub"], capture_output=True, text=True, check=True).stdout.strip()
    check(out not in ("", "0"), "a feed session to kill: %r" % out)


def test_lost_feed_loses_nothing():
    tmp = tempfile.mkdtemp(dir=TMP)
    url = namespaced(BASE, "lost")   # PostgreSQL and Redis only
    a, b = pair(url, tmp)
    try:
        tids = [ask(a, i) for i in range(20)]
        sel, clients = open_streams_on(b, tids)
        kill_feed(url)
        for tid in tids[:10]:   # while B's feed is down, or already back
            a.rpc("SendMessage", {"message": user_message("ACME", task_id=tid)})
        wait_until(lambda: gauge(b, "once_store_feed_lost_total") >= 1, timeout=20,
                   what="B to see its feed lost")
        wait_until(lambda: gauge(b, "once_store_feed_up") == 1, timeout=20,
                   what="B's feed back")
        for tid in tids[10:]:
            a.rpc("SendMessage", {"message": user_message("ACME", task_id=tid)})
        pump_until(sel, lambda: all(c.eof for c in clients), "every stream on B to end")
        for i, c in enumerate(clients):
            whole(c, "stream %d" % i)
            c.close()
        sel.close()
    finally:
        a.stop()
        b.stop()


if __name__ == "__main__":
    run([test_idle_streams_cost_nothing] +
        ([test_lost_feed_loses_nothing] if KIND in ("postgres", "redis") else []))
