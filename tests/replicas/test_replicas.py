"""Three onced replicas on one shared store (the PostgreSQL or Redis URL in
argv[1]; each test uses a fresh schema / key prefix), with an --exec agent
that logs every start and every completed run (fleet.py):

- duplicate retries spread across replicas make one task each: 50 tasks
  (40 with client-minted IDs, 10 plain A2A 1.0 first messages whose IDs the
  replicas derive with the secret they share through the store), each sent
  3 times at once, once to each replica. Every send answers 200 with the
  finished task, exactly one of the three registered it, ListTasks on every
  replica shows exactly the 50 tasks, and the agent ran once per task;
- kill -9 of one replica under load (--lease 4s, 6s on dynalite, scaled by the suite's
  timeout factor; 24 running turns, 8 per replica, and three clients sending
  tasks round-robin; every turn waits at a gate the test opens only after
  the kill, so none of the dead replica's turns can have finished before
  it): the tasks it had leased are taken over by the two others (fence + 1,
  resumed) within lease + sweep interval and complete; every task ends
  completed with exactly one completed run; tasks of the live replicas are
  never taken over (their heartbeats hold the lease for longer than a
  lease); sends that hit the dead replica, retried with the same message on
  another one, make one task each;
- the built-in executor's tasks (stored with one create, started without
  waiting for it where the store commits in groups), 30 each sent 3 times
  at once, once to each replica: one task each, registered by exactly one
  (once_sends_total{outcome="registered"} sums to 30).
"""
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import Agent, backend_of, list_all, namespaced, start_fleet, store_url_from_argv  # noqa
from harness import (Onced, check, eq, http_get, new_id, rpc, run, scaled, scratch_dir,  # noqa
                     task_state, user_message, wait_until, wait_until_value)

BASE = store_url_from_argv()
TMP = scratch_dir("once-replicas-%s-" % backend_of(BASE))


def send(port, msg, ext, immediately=False, timeout=60):
    params = {"message": msg}
    if immediately:
        params["configuration"] = {"returnImmediately": True}
    return rpc(port, "SendMessage", params, ext=ext, timeout=timeout)


def get_state(port, tid):
    st, _, doc = rpc(port, "GetTask", {"id": tid}, timeout=30)
    return task_state(doc) if st == 200 else None


def settle(reps, agent):
    """One more task through each replica, until its run logged "done": the
    replicas have then run every turn queued before it, so a stray second
    run of an earlier task would be in the log by now."""
    for r in reps:
        tid = "t-settle-" + new_id()
        st, _, doc = send(r.port, user_message("settle", task_id=tid), True)
        eq(task_state(doc), "TASK_STATE_COMPLETED", "the settling task on %s completed" % r.name)
        wait_until(lambda: tid in agent.dones(), timeout=10, what="the settling run's end")


def test_duplicates_spread_across_replicas():
    tmp = tempfile.mkdtemp(dir=TMP)
    agent = Agent(tmp)
    reps = start_fleet(namespaced(BASE, "dup"), agent, tmp, ["a", "b", "c"])
    try:
        plan = []   # (message, ext)
        for i in range(50):
            if i % 5 == 4:
                plan.append((user_message("work:0.1"), False))
            else:
                plan.append((user_message("work:0.1", task_id="t-dup-%d-%s" % (i, new_id())), True))
        answers = [[None] * 3 for _ in plan]

        def one(i, r):
            msg, ext = plan[i]
            barriers[i].wait()
            try:
                answers[i][r] = send(reps[r].port, msg, ext)
            except Exception as ex:  # asserted below
                answers[i][r] = (0, {}, {"_exception": repr(ex)})
        barriers = [threading.Barrier(3) for _ in plan]
        for lo in range(0, len(plan), 10):   # 10 tasks = 30 concurrent sends at a time
            threads = [threading.Thread(target=one, args=(i, r))
                       for i in range(lo, min(lo + 10, len(plan))) for r in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(scaled(90))

        ids = []
        for i, (msg, ext) in enumerate(plan):
            named, fresh = set(), 0
            for st, hd, doc in answers[i]:
                eq(st, 200, "task %d: every send answers 200 (%r)" % (i, doc))
                check("result" in doc, "task %d: every send is a result: %r" % (i, doc))
                named.add(doc["result"]["task"]["id"])
                eq(task_state(doc), "TASK_STATE_COMPLETED",
                   "task %d: a blocking send answers the finished task" % i)
                fresh += hd.get("idempotent-replayed") != "true"
            eq(len(named), 1, "task %d: the 3 sends name one task" % i)
            eq(fresh, 1, "task %d: one send registered, two replayed" % i)
            tid = named.pop()
            if ext:
                eq(tid, msg["taskId"], "task %d: the client's ID" % i)
            ids.append(tid)
        eq(len(set(ids)), len(plan), "50 distinct tasks")
        for r in reps:
            got = sorted(t["id"] for t in list_all(r.port))
            eq(got, sorted(ids), "ListTasks on replica %s: exactly the 50 tasks" % r.name)
        # Every run logs "done" just after its answer: wait for them, then
        # for the replicas to move past any stray second run.
        wait_until(lambda: all(t in agent.dones() for t in ids), timeout=10,
                   what="every run to log its end")
        settle(reps, agent)
        starts = dict((t, v) for t, v in agent.starts().items() if not t.startswith("t-settle-"))
        dones = agent.dones()
        eq(sorted(starts), sorted(ids), "the agent ran for exactly these tasks")
        for tid in ids:
            eq(len(starts[tid]), 1, "task %s: one execution" % tid)
            eq(len(dones.get(tid, [])), 1, "task %s: one completed execution" % tid)
        ran_on = set(s[1] for v in starts.values() for s in v)
        check(len(ran_on) >= 2, "the work spread over the replicas: %r" % (ran_on,))
        for r in reps:
            check(r.proc.poll() is None, "replica %s still runs" % r.name)
    finally:
        for r in reps:
            r.stop()


def registered(port):
    """once_sends_total{outcome="registered"} of the replica on port."""
    st, _, body = http_get(port, "/metrics")
    eq(st, 200, "GET /metrics")
    for line in body.decode().splitlines():
        if line.startswith('once_sends_total{outcome="registered"} '):
            return int(float(line.split()[-1]))
    check(False, "no registered sample in /metrics")


def test_held_writes_race_across_replicas():
    """The built-in executor's tasks finish in their first turn and are
    stored with one create, started without waiting for it (held) where the
    store commits in groups: 30 tasks, each sent 3 times at once, once to
    each replica, still make one task each, registered by exactly one."""
    tmp = tempfile.mkdtemp(dir=TMP)
    url = namespaced(BASE, "held")
    reps = []
    try:
        for name in ("a", "b", "c"):
            o = Onced(args=["--replica-id", name], store=url, tmpdir=tmp)
            o.name = name
            reps.append(o)
        ids = ["t-held-%d-%s" % (i, new_id()) for i in range(30)]
        msgs = [user_message("hello", task_id=tid) for tid in ids]   # one message, 3 sends
        answers = [[None] * 3 for _ in ids]

        def one(i, r):
            barriers[i].wait()
            try:
                answers[i][r] = send(reps[r].port, msgs[i], True)
            except Exception as ex:  # asserted below
                answers[i][r] = (0, {}, {"_exception": repr(ex)})
        barriers = [threading.Barrier(3) for _ in ids]
        for lo in range(0, len(ids), 10):
            threads = [threading.Thread(target=one, args=(i, r))
                       for i in range(lo, lo + 10) for r in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(scaled(90))
        for i, tid in enumerate(ids):
            fresh = 0
            for st, hd, doc in answers[i]:
                eq(st, 200, "task %d: every send answers 200 (%r)" % (i, doc))
                check("result" in doc, "task %d: every send is a result: %r" % (i, doc))
                eq(doc["result"]["task"]["id"], tid, "task %d: the client's ID" % i)
                eq(task_state(doc), "TASK_STATE_COMPLETED", "task %d: the finished task" % i)
                fresh += hd.get("idempotent-replayed") != "true"
            eq(fresh, 1, "task %d: one send registered, two replayed" % i)
        eq(sum(registered(r.port) for r in reps), len(ids),
           "the replicas registered 30 tasks between them")
        for r in reps:
            got = sorted(t["id"] for t in list_all(r.port))
            eq(got, sorted(ids), "ListTasks on replica %s: exactly the 30 tasks" % r.name)
    finally:
        for r in reps:
            r.stop()


def test_kill9_replica_under_load():
    tmp = tempfile.mkdtemp(dir=TMP)
    agent = Agent(tmp)
    # The live replicas' heartbeats (every lease/3) must renew within a
    # lease however busy the machine is: had one replica's lapse, another
    # would take its gated turns over and fill its own workers with them
    # (CI saw c run none of the load's tasks for 20 s, its 16 workers
    # presumably full). On two oversubscribed CPUs a thread may wait ~2 s
    # for its turn (bench/README.md, the PostgreSQL replay tail): 4 s
    # leaves a heartbeat 2.7 s. dynalite (one Node process) answers a
    # renewal far more slowly still: 6 s. Every bound below is in units of
    # the lease.
    lease = scaled(6.0 if BASE.startswith("dynamodb:") else 4.0)
    reps = start_fleet(namespaced(BASE, "kill"), agent, tmp, ["a", "b", "c"],
                       ["--lease", "%dms" % (lease * 1000)])
    a, b, c = reps
    # Every turn waits at gate "go", opened after the kill: none of c's turns
    # can finish before it dies, and the live replicas' turns outlive a lease
    # (only heartbeats keep it). The load fits the 2 x 16 engine workers
    # left, so a takeover's run starts at once.
    lock = threading.Lock()
    sent = {}         # task id -> number of sends it took
    stop = threading.Event()
    try:
        # Phase 1: 24 tasks, 8 registered on each replica, all running.
        def first(i):
            tid = "t-kill-%d-%s" % (i, new_id())
            st, _, doc = send(reps[i % 3].port, user_message("gate:go", task_id=tid), True,
                              immediately=True)
            with lock:
                sent[tid] = (st, task_state(doc))
        threads = [threading.Thread(target=first, args=(i,)) for i in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(scaled(60))
        eq(len(sent), 24, "24 sends answered")
        for tid, (st, state) in sent.items():
            eq(st, 200, "phase 1 send of %s" % tid)
            check(state in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
                  "returnImmediately answers the accepted task: %s" % state)
            sent[tid] = 1
        wait_until(lambda: len(agent.starts()) >= 24, timeout=30, what="all 24 turns to start")
        eq(len(agent.starts()), 24, "all 24 turns started")

        # Phase 2: keep sending while c dies; a send that fails to reach a
        # replica is retried, same message, on the next one.
        errors = []

        tried = []        # (loader, task, replica, status or exception) of every send

        def loader(k):
            try:
                load(k)
            except Exception as ex:  # a loader that dies is reported, not silent
                errors.append(("loader %d" % k, repr(ex)))

        def load(k):
            n = 0
            while not stop.is_set():
                tid = "t-load-%d-%d-%s" % (k, n, new_id())
                msg = user_message("gate:go", task_id=tid)
                target, tries = (k + n) % 3, 0
                while True:
                    tries += 1
                    try:
                        st, _, doc = send(reps[target].port, msg, True, immediately=True,
                                          timeout=20)
                    except OSError as ex:   # refused, reset: the replica is gone
                        tried.append((k, tid, reps[target].name, repr(ex)))
                        if tries < 10:
                            target = (target + 1) % 3
                            continue
                        st, doc = 0, {"_exception": repr(ex)}
                    tried.append((k, tid, reps[target].name, st))
                    if st != 200 or task_state(doc) is None:
                        errors.append((tid, st, doc))
                    break
                with lock:
                    sent[tid] = tries
                n += 1
                stop.wait(0.8)   # gated turns pile up: keep them within the workers
        loaders = [threading.Thread(target=loader, args=(k,), daemon=True) for k in range(3)]
        for t in loaders:
            t.start()
        # c dies once it runs some of the loaders' tasks too.
        try:
            wait_until(lambda: any(s[1] == "c" for tid, v in agent.starts().items()
                                   if tid.startswith("t-load-") for s in v),
                       timeout=20, what="c to run a task of the load")
        except AssertionError:
            print("sends: %r\nerrors: %r\nruns: %r\nc alive: %r\nc's log:\n%s" %
                  (tried, errors, agent.starts(), c.proc.poll() is None, c.logtext_all()[-4000:]),
                  file=sys.stderr)
            raise
        c.kill9()
        killed_at = time.time()
        # The load goes on until sends met the dead replica, for at least 2 s.
        wait_until(lambda: (time.time() - killed_at >= 2.0 and
                            any(n > 1 for n in list(sent.values()))), timeout=30,
                   what="sends to hit the dead replica and be retried")
        stop.set()
        for t in loaders:
            t.join(scaled(60))
        eq(errors, [], "every send, retried past the dead replica, was accepted")
        check(any(n > 1 for n in sent.values()), "some sends hit the dead replica and were retried")
        c_runs = [tid for tid, v in agent.starts().items() for s in v if s[1] == "c"]
        check(len(c_runs) > 0, "c was running tasks when it died")
        # The live replicas' first turns have run for longer than a lease
        # when the gate opens: had their heartbeats not renewed it, they
        # would have been taken over.
        oldest = min(s[3] for v in agent.starts().values() for s in v if s[1] != "c")
        wait_until(lambda: time.time() >= oldest + 1.5 * lease, timeout=2 * lease + 10,
                   what="the live replicas' turns to outlive a lease")
        agent.release("go")

        # Everything completes on a and b.
        pending = set(sent)

        def all_completed():
            pending.intersection_update(
                set(t for t in pending if get_state(a.port, t) != "TASK_STATE_COMPLETED"))
            return not pending
        wait_until(all_completed, timeout=40, step=0.3, what="every task to complete")
        took = time.time() - killed_at
        check(took < lease + scaled(20), "everything completed %.1fs after the kill" % took)
        got = sorted(t["id"] for t in list_all(b.port))
        eq(got, sorted(sent), "ListTasks: one task per send, retries included")

        # Every completed run logs "done" just after its answer.
        missing = lambda: sorted(t for t in sent if t not in agent.dones())  # noqa: E731
        wait_until_value(lambda: None if missing() else True, timeout=10)
        eq(missing(), [], "every completed run logged its end (runs: %r)" %
           dict((t, agent.starts().get(t)) for t in missing()))
        settle((a, b), agent)
        starts, dones = agent.starts(), agent.dones()
        taken = 0
        for tid in sent:
            runs, done = starts.get(tid, []), dones.get(tid, [])
            eq(len(done), 1, "task %s: exactly one completed run (%r / %r)" % (tid, runs, done))
            check(done[0][1] in ("a", "b"), "task %s: completed by a live replica" % tid)
            if runs and runs[0][1] == "c":
                taken += 1
                check(len(runs) >= 2, "task %s of c was run again: %r" % (tid, runs))
                last = runs[-1]
                check(last[1] in ("a", "b") and last[2] and last[0] > runs[0][0],
                      "task %s: taken over by a live replica, resumed, fence + 1: %r" %
                      (tid, runs))
                # lease + sweep interval (1 s) + the agent's start: a bound
                # that a busy machine stays under, and a takeover that waits
                # for anything but the lease does not
                check(last[3] - killed_at < lease + scaled(10),
                      "task %s: taken over %.1fs after the kill" % (tid, last[3] - killed_at))
                eq(done[0], (last[0], last[1]), "task %s: the takeover's run completed" % tid)
            else:
                eq(len(runs), 1, "task %s of a live replica: never taken over: %r" % (tid, runs))
        check(taken >= 8, "c's leased tasks were taken over (%d)" % taken)
        for r in (a, b):
            check(r.proc.poll() is None, "replica %s still runs" % r.name)
    finally:
        stop.set()
        agent.release("go")
        for r in reps:
            r.stop()


if __name__ == "__main__":
    run([test_duplicates_spread_across_replicas, test_held_writes_race_across_replicas,
         test_kill9_replica_under_load])
