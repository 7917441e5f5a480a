"""The metrics an SRE expects beside once's own (issue 32): the standard
process_* families, the replica on once_build_info, the turn queue by state
(running, queued, parked) with its capacity, and, on a PostgreSQL or Redis
store, the connection pools' gauges.

Run without arguments for the first three (SQLite store). With a store URL
as argv[1] (ctest's e2e/test_metrics/postgres and /redis, on the shared
test servers) it runs the pool test alone on that store.
"""
import os
import sys
import uuid

from harness import (GatedAgent, Onced, check, eq, new_id, run, user_message, wait_until)
from test_ops import scrape, value_of

PROCESS = {
    "process_cpu_seconds_total": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_virtual_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "process_start_time_seconds": "gauge",
}


def proc_stat(pid):
    """Fields 3.. of /proc/PID/stat as a list (index 0 is field 3)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_seconds(pid):
    st = proc_stat(pid)
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def test_process_families():
    """Each family is there with its standard type and a value that agrees
    with what the kernel says of the process, read from outside it."""
    with Onced() as srv:
        pid = srv.proc.pid
        before = cpu_seconds(pid)
        m = scrape(srv.port)
        after = cpu_seconds(pid)
        for name, typ in PROCESS.items():
            check(name in m, "%s is exported" % name)
            eq(m[name]["type"], typ, "%s's type" % name)
            eq(len(m[name]["samples"]), 1, "%s has one sample" % name)
        v = lambda name: value_of(m, name)
        # CPU time only grows: the scrape's reading lies between two read
        # around it (the kernel's own ticks, the same unit).
        check(before - 1e-9 <= v("process_cpu_seconds_total") <= after + 1e-9,
              "CPU seconds %r between %r and %r" % (v("process_cpu_seconds_total"), before, after))
        # The start time is the kernel's: boot time plus the start in ticks.
        with open("/proc/stat") as f:
            btime = next(int(l.split()[1]) for l in f if l.startswith("btime "))
        started = btime + int(proc_stat(pid)[19]) / os.sysconf("SC_CLK_TCK")
        check(abs(v("process_start_time_seconds") - started) < 1e-3,
              "start time %r is the process's, %r" % (v("process_start_time_seconds"), started))
        check(v("process_resident_memory_bytes") > 0, "some memory is resident")
        check(v("process_virtual_memory_bytes") >= v("process_resident_memory_bytes"),
              "virtual memory holds the resident part")
        # At least the listening socket and the store's file are open.
        check(2 <= v("process_open_fds") <= v("process_max_fds"),
              "open fds %r within 2..max %r" % (v("process_open_fds"), v("process_max_fds")))
        import resource   # the limit onced inherited from this process
        eq(v("process_max_fds"), resource.getrlimit(resource.RLIMIT_NOFILE)[0],
           "max fds is the soft RLIMIT_NOFILE")


def test_build_info_replica():
    """once_build_info carries the replica id, escaped as the text format
    wants (a quote and a backslash survive the strict parser)."""
    name = 'replica "a"\\1'
    with Onced(["--replica-id", name]) as srv:
        m = scrape(srv.port)
        samples = m["once_build_info"]["samples"]
        eq(len(samples), 1, "one build info sample")
        eq(samples[0][1].get("replica"), name, "the replica label")
        eq(samples[0][2], 1, "build info is 1")
    with Onced() as srv:
        labels = scrape(srv.port)["once_build_info"]["samples"][0][1]
        check(labels.get("replica", "").endswith("-%d" % srv.proc.pid),
              "the default replica id (hostname-pid): %r" % labels)


def test_turn_gauges():
    """One turn worker and gated agents: the first task runs, the second
    waits in the queue; each gauge follows, and the capacity is --max-queue."""
    agent = GatedAgent("step started; gate finish")
    with Onced(agent.args + ["--turn-workers", "1", "--max-queue", "5"]) as srv:
        gauges = lambda: tuple(value_of(scrape(srv.port), n) for n in
                               ("once_turns_running", "once_turns_queued", "once_turns_parked"))
        m = scrape(srv.port)
        eq(value_of(m, "once_turns_queue_capacity"), 5, "capacity: --max-queue")
        eq(value_of(m, "once_turn_workers"), 1, "workers: --turn-workers")
        eq(gauges(), (0, 0, 0), "nothing running or queued at first")
        first, second = new_id(), new_id()
        for tid in (first, second):
            st, _, _ = srv.rpc("SendMessage", {"message": user_message("go", task_id=tid),
                                               "configuration": {"returnImmediately": True}},
                               ext=True)
            eq(st, 200, "task %s accepted" % tid)
        wait_until(lambda: gauges() == (1, 1, 0), timeout=30,
                   what="one turn running, one queued behind it")
        agent.release(first, "finish")
        wait_until(lambda: gauges() == (1, 0, 0), timeout=30,
                   what="the queued turn running on the freed worker")
        agent.release(second, "finish")
        wait_until(lambda: gauges() == (0, 0, 0), timeout=30, what="both turns done")


def test_pool_gauges(url):
    """On a networked store the pools' sizes are the URL's, the gauges
    stay within them, and the counters only grow. (Waits themselves are
    counted in unit/test_store_pool, where a test can hold connections.)"""
    sep = "&" if "?" in url else "?"
    if url.startswith("postgres"):
        url += sep + "schema=m_%s&pool=3&batch=1" % uuid.uuid4().hex[:12]
    else:
        url += sep + "prefix=m-%s&pool=3&batch=1" % uuid.uuid4().hex[:12]
    with Onced(store=url) as srv:
        for _ in range(3):
            st, _, _ = srv.rpc("SendMessage", {"message": user_message("hi")}, ext=True)
            eq(st, 200, "a send on the store")
        a = scrape(srv.port)
        for _ in range(3):
            srv.rpc("SendMessage", {"message": user_message("hi")}, ext=True)
        b = scrape(srv.port)
        for pool, size in (("calls", 3), ("batch", 1)):
            v = lambda m, n: value_of(m, n, pool=pool)
            for m in (a, b):
                eq(v(m, "once_store_pool_connections_max"), size, "%s pool's size" % pool)
                check(0 <= v(m, "once_store_pool_connections_in_use")
                      <= v(m, "once_store_pool_connections_open") <= size,
                      "%s pool: in use <= open <= max" % pool)
                check(v(m, "once_store_pool_waiting") >= 0, "%s pool: waiting" % pool)
            for n in ("once_store_pool_waits_total", "once_store_pool_wait_seconds_total"):
                check(v(a, n) <= v(b, n), "%s{pool=%s} only grows" % (n, pool))
        check(value_of(b, "once_store_pool_connections_open", pool="calls") >= 1,
              "the sends opened a connection")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        def test_pool_gauges_on_the_store():
            test_pool_gauges(sys.argv[1])
        run([test_pool_gauges_on_the_store])
    else:
        run([test_process_families, test_build_info_replica, test_turn_gauges])
