"""Push delivery by two onced replicas on one shared store (the PostgreSQL
or Redis URL in argv[1]; each test uses a fresh schema / key prefix), into
build/tools/webhook_sink, whose log is what the receiving application saw
(one line per handled event, after signature check and dedup by the
receiver library's processed-set):

- kill -9 of the delivering replica mid-delivery: the receiver holds the
  second event's request (--fail ok,slow) while the sender is killed; the
  other replica claims the delivery row once the dead one's lease has run
  out (FOR UPDATE SKIP LOCKED / the Redis lease script), sends from the
  unacknowledged event on, and the handler sees every event exactly once,
  in order; the store's row says every generation was delivered and the
  survivor's counters show it delivered;
- several tasks created on both replicas at once: every event of every
  task handled exactly once and in order, each task's row delivered to
  its generation, no delivery claimed twice (a duplicate would reach the
  receiver: it counts them).
"""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from fleet import backend_of, namespaced, store_url_from_argv  # noqa: E402
from harness import (Onced, admin_stats, check, eq, new_id, result_task, run,  # noqa: E402
                     scaled, scratch_dir, wait_until)
from test_push import SECRET, SINK, Sink, configs, expect_every_event_once, generation  # noqa
from test_push import send, wait_slow_done  # noqa: E402

BASE = store_url_from_argv()
TMP = scratch_dir("once-pushrep-%s-" % backend_of(BASE))
# Lease = 3 x --push-timeout = 6 s: a dead sender's rows come free after that.
FLAGS = ["--push-allow", "127.0.0.1/32", "--push-secret", SECRET, "--push-timeout", "2s",
         "--push-backoff", "100ms", "--test-admin"]


def pair(tag):
    """Two replicas r-a, r-b on a fresh namespace of the shared store."""
    url = namespaced(BASE, tag)
    d = os.path.join(TMP, tag)
    os.makedirs(d)
    a = Onced(FLAGS + ["--replica-id", "r-a"], store=url, tmpdir=d)
    try:
        b = Onced(FLAGS + ["--replica-id", "r-b"], store=url, tmpdir=d)
    except Exception:
        a.stop()
        raise
    return a, b


def test_kill9_delivering_replica():
    mark = os.path.join(TMP, "holding")
    sink = Sink("kill9", ["--fail", "ok,slow", "--slow-ms", "4000", "--mark", mark])
    a, b = pair("kill9")
    reps = {"r-a": a, "r-b": b}
    gen = 0
    try:
        tid = "t-" + new_id()
        st, _, doc = send(a, "hello", tid, sink.url)
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "the task completed")
        gen = generation(b, tid)   # the other replica reads the same store
        check(gen >= 3, "the task has several events (%d)" % gen)
        wait_until(lambda: os.path.exists(mark), timeout=15,
                   what="the receiver to hold the second delivery")
        d = configs(b, tid)[0]["delivery"]
        owner = d.get("leaseOwner")
        check(owner in reps, "one replica holds the delivery lease: %r" % (d,))
        eq(d["deliveredGeneration"], 1, "event 1 acknowledged before the hold")
        other = "r-b" if owner == "r-a" else "r-a"
        victim, survivor = reps[owner], reps[other]
        print("  lease owner %s; killing it" % owner)
        victim.kill9()   # mid-delivery: its POST of event 2 is in the receiver's hands
        t0 = time.time()
        wait_until(lambda: len(sink.handled()) >= gen, timeout=30,
                   what="the other replica to finish the delivery")
        took = time.time() - t0
        print("  delivery completed %.1fs after the kill" % took)
        wait_until(lambda: configs(survivor, tid)[0]["delivery"]["deliveredGeneration"] == gen,
                   timeout=10, what="the survivor to record the last delivery")
        d = configs(survivor, tid)[0]["delivery"]
        eq((d["deliveredGeneration"], d["disabled"]), (gen, False), "the store's row: all sent")
        check(d.get("leaseOwner") in (None, other),
              "the dead replica no longer holds the row: %r" % (d,))
        check(admin_stats(survivor).get("pushDelivered", 0) >= gen - 1,
              "the survivor delivered the rest after the takeover")
        check(took < scaled(25), "taken over after the lease, not later (%.1fs)" % took)
        # The dead sender's held request ends in the receiver, late: a
        # duplicate. The receiver finishes it before it exits.
        wait_slow_done(mark, 4000)
    finally:
        a.stop()
        b.stop()
        rx = sink.stop()
    expect_every_event_once(sink, tid, gen, "after kill -9 of the sender")
    eq(rx["handled"], gen, "the receiver handled each event once")
    check(rx["duplicates"] >= 1, "the held event was resent by the survivor: %r" % (rx,))
    eq(rx["pending"], 0, "nothing left pending")


def test_many_tasks_both_replicas():
    sink = Sink("many")
    a, b = pair("many")
    tasks, errors, total, gens = [], [], 0, {}
    try:
        def one(i):
            srv = a if i % 2 == 0 else b
            tid = "t-%d-%s" % (i, new_id())
            try:
                st, _, doc = send(srv, "hello", tid, sink.url)
                eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED",
                   "task %d completed" % i)
                tasks.append(tid)
            except Exception as ex:  # reported below
                errors.append(ex)
        threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(scaled(60))
        check(not errors, "every send answered: %r" % errors)
        gens = {tid: generation(a, tid) for tid in tasks}
        total = sum(gens.values())
        wait_until(lambda: len(sink.handled()) >= total, timeout=30,
                   what="every event of every task handled")
        # Every row delivered to its end: the replicas send nothing more.
        for tid, g in gens.items():
            wait_until(lambda: configs(b, tid)[0]["delivery"]["deliveredGeneration"] == g,
                       timeout=10, what="task %s: the row delivered to the end" % tid)
        delivered = [admin_stats(r).get("pushDelivered", 0) for r in (a, b)]
        eq(sum(delivered), total, "each event delivered once in all (%r)" % delivered)
    finally:
        a.stop()
        b.stop()
        rx = sink.stop()
    # The receiver has exited: its log is final.
    for tid, g in gens.items():
        expect_every_event_once(sink, tid, g, "task " + tid)
    eq(rx["handled"], total, "the receiver handled each event once")
    eq(rx["duplicates"], 0, "no event was sent twice: %r" % (rx,))


if __name__ == "__main__":
    check(os.path.exists(SINK), "webhook_sink is built (%s)" % SINK)
    run([test_kill9_delivering_replica, test_many_tasks_both_replicas])
