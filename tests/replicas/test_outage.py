"""Restart the store under load (argv[1]: postgres, redis or dynamodb). The
test runs a server of its own on a free loopback port -- PostgreSQL with
fsync on, Redis with appendonly yes + appendfsync always, dynalite on
LevelDB files -- because restarting the shared test server would break the
tests using it. Two onced replicas share it; six clients keep sending new
tasks (client-minted IDs, blocking and returnImmediately sends, alternating
replicas, 0.3 s turns) while the server is killed (PostgreSQL: immediate
shutdown, WAL recovery at start; Redis: SIGKILL, AOF reload; dynalite:
SIGKILL, LevelDB reopened), kept down for 2 s and started again. Four 1 s turns
started just before the kill finish while the store is away. The lease
(10 s) outlasts the outage.

What a client relies on, checked from the clients' side and from the agent's
execution log (fleet.py):
- during the outage every answer is retryable: HTTP 503 with Retry-After and
  JSON-RPC -32603 STORE_UNAVAILABLE (docs/wire.md), or no answer at all;
  never a verdict (TASK_NOT_FOUND, a conflict, a 500);
- clients that retry the same message (honouring Retry-After) converge:
  every task is eventually accepted, and the retries make exactly one task
  each (ListTasks on both replicas lists exactly the tasks sent);
- no acknowledged task is lost, and an outage fails none: every send that
  got a result exists afterwards and completes;
- one completed result per task: the stored task's final status names the
  one run that completed it;
- an agent turn runs again only after its lease was lost: every later run
  of a task has a higher fence than the run before it and ONCE_RESUMED=1
  (a write held back by the outage is applied when the store returns while
  its fence holds; the lease, 10 s, outlasts the 2 s outage, so normally no
  task runs twice at all, but a busy machine may stretch the restart);
- every run of a task computes the same side-effect key (<task>:step-<n>),
  so a service deduplicating by it applies the effect once;
- no run at all for a task nobody sent;
- the replicas survive the outage and serve again soon after the restart.
"""
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import (Agent, DynaliteServer, PgServer, RedisServer, list_all, namespaced,  # noqa
                   start_fleet)
from harness import (check, eq, error_info, new_id, rpc, run, scaled, scratch_dir,  # noqa
                     status_text, task_state, user_message)

SERVERS = {"postgres": PgServer, "redis": RedisServer, "dynamodb": DynaliteServer}
if len(sys.argv) < 2 or sys.argv[1] not in SERVERS:
    sys.exit("usage: %s postgres|redis|dynamodb" % sys.argv[0])
BACKEND = sys.argv[1]
TMP = scratch_dir("once-outage-%s-" % BACKEND)
CLIENTS = 6
DOWN_S = 2.0
TASK_DEADLINE_S = scaled(45.0)
# Longer than the outage (2 s down + the restart, a few seconds more on a
# busy machine): a worker that still holds its lease when the store comes
# back has no reason to lose its turn. An outage longer than the lease is
# a different story (the lease ends, another replica may take over).
LEASE = "10s"


class Sent:
    """One task as its client saw it. Only its client thread writes it."""

    def __init__(self, k, n, work="work:0.3"):
        self.tid = "t-out-%s-%d-%s" % (k, n, new_id())
        self.msg = user_message(work, task_id=self.tid)
        self.immediately = n % 2 == 0
        self.first_at = time.time()
        self.attempts = 0
        self.retryable = 0      # 503 STORE_UNAVAILABLE answers
        self.transport = 0      # no answer (refused, reset, timeout)
        self.acked_at = None
        self.acked_state = None
        self.bad = []           # any other answer: a wrong verdict


def few(items, n=3):
    """A short failure message: how many, and the first n."""
    items = list(items)
    return "%d, e.g. %r" % (len(items), items[:n]) if items else "none"


def onced_lines(reps, tids):
    """The replicas' log lines that name one of tids."""
    out = []
    for r in reps:
        with open(r.log.name, errors="replace") as f:
            out.extend("%s: %s" % (r.name, ln.strip()) for ln in f
                       if any(t in ln for t in tids))
    return out


def retryable_503(st, hd, doc):
    """None if (st, hd, doc) is a well-formed retryable outage answer, else why not."""
    if st != 503:
        return "HTTP %s" % st
    ra = hd.get("retry-after", "")
    if not ra.isdigit() or int(ra) < 1:
        return "Retry-After %r" % ra
    code, reason, meta = error_info(doc or {})
    if (code, reason) != (-32603, "STORE_UNAVAILABLE"):
        return "error %r %r" % (code, reason)
    if meta.get("retryable") != "true":
        return "metadata %r" % (meta,)
    return None


def client(k, reps, stop, out):
    n = 0
    while not stop.is_set():
        s = Sent(k, n)
        out.append(s)
        target = (k + n) % len(reps)
        while time.time() - s.first_at < TASK_DEADLINE_S:
            s.attempts += 1
            params = {"message": s.msg}
            if s.immediately:
                params["configuration"] = {"returnImmediately": True}
            try:
                st, hd, doc = rpc(reps[target].port, "SendMessage", params, ext=True, timeout=30)
            except OSError:
                s.transport += 1
                time.sleep(0.5)
                target = (target + 1) % len(reps)
                continue
            if st == 200 and task_state(doc) is not None:
                if doc["result"]["task"]["id"] != s.tid:
                    s.bad.append((st, "another task", doc))
                s.acked_at, s.acked_state = time.time(), task_state(doc)
                break
            why = retryable_503(st, hd, doc)
            if why is not None:
                s.bad.append((st, why, doc))
                break
            s.retryable += 1
            time.sleep(int(hd["retry-after"]))   # as asked, then the other replica
            target = (target + 1) % len(reps)
        n += 1
        time.sleep(0.1)


def test_store_restart_under_load():
    server = SERVERS[BACKEND]()
    reps = []
    stop = threading.Event()
    try:
        tmp = tempfile.mkdtemp(dir=TMP)
        agent = Agent(tmp)
        reps = start_fleet(namespaced(server.url, "outage"), agent, tmp, ["a", "b"],
                           ["--lease", LEASE])
        outs = [[] for _ in range(CLIENTS)]
        threads = [threading.Thread(target=client, args=(k, reps, stop, outs[k]), daemon=True)
                   for k in range(CLIENTS)]
        for t in threads:
            t.start()

        def sent_now():
            return [s for o in outs for s in list(o)]

        def wait_for(cond, what, timeout=20):
            end = time.time() + scaled(timeout)
            while time.time() < end and not cond():
                time.sleep(0.02)
            check(cond(), "timed out waiting until " + what)

        wait_for(lambda: sum(1 for s in sent_now() if s.acked_at) >= CLIENTS,
                 "tasks were acknowledged before the outage")
        # Turns that will finish while the store is away: their completion
        # must still be written once, not lost and then run again.
        spanning = [Sent("x", n, "work:1.0") for n in range(4)]
        for n, s in enumerate(spanning):
            st, _, doc = rpc(reps[n % 2].port, "SendMessage",
                             {"message": s.msg, "configuration": {"returnImmediately": True}},
                             ext=True)
            eq(st, 200, "a long turn accepted before the outage")
            s.attempts, s.acked_at, s.acked_state = 1, time.time(), task_state(doc)
        end = time.time() + scaled(10)
        while time.time() < end and not all(s.tid in agent.starts() for s in spanning):
            time.sleep(0.02)
        check(all(s.tid in agent.starts() for s in spanning), "the long turns started")
        server.crash()
        down_at = time.time()
        time.sleep(DOWN_S)   # the outage itself, not a wait for anything
        wait_for(lambda: sum(1 for s in sent_now() if s.retryable) >= CLIENTS,
                 "the clients saw the outage as retryable errors")
        server.start()
        up_at = time.time()
        wait_for(lambda: sum(1 for s in sent_now() if s.acked_at and s.acked_at > up_at)
                 >= CLIENTS, "tasks were acknowledged after the restart")
        stop.set()
        for t in threads:
            t.join(TASK_DEADLINE_S + 30)
        check(not any(t.is_alive() for t in threads), "every client finished")
        sent = spanning + [s for o in outs for s in o]
        print("%s: %d tasks, %d sends, %d answered 503, %d unanswered; down %.1fs" %
              (BACKEND, len(sent), sum(s.attempts for s in sent),
               sum(s.retryable for s in sent), sum(s.transport for s in sent), up_at - down_at))

        bad = [(s.tid, s.bad) for s in sent if s.bad]
        check(not bad, "during the outage every answer was retryable (503 + Retry-After, "
              "STORE_UNAVAILABLE); other answers: " + few(bad))
        check(sum(s.retryable for s in sent) >= CLIENTS,
              "the clients saw the outage as retryable errors")
        lost = [s.tid for s in sent if s.acked_at is None]
        check(not lost, "every retried send converged; not accepted: " + few(lost))
        before = [s for s in sent if s.acked_at is not None and s.acked_at < down_at]
        during = [s for s in sent if s.retryable > 0]
        check(len(before) >= CLIENTS, "tasks were acknowledged before the outage")
        check(len(during) >= CLIENTS, "tasks were refused during the outage and retried")
        after = [s.acked_at - up_at for s in sent if s.acked_at and s.acked_at > up_at]
        check(after and min(after) < scaled(5.0),
              "the replicas serve again soon after the restart (%.1fs)" %
              (min(after) if after else -1))

        # Every acknowledged task survived the restart and completes (after
        # the lease + a sweep for one whose worker lost its write: a task
        # acknowledged by a reply that never arrived, say).
        end = time.time() + scaled(30)
        final = {}
        pending = [s.tid for s in sent]
        while pending and time.time() < end:
            for tid in pending:
                st, _, doc = reps[0].rpc("GetTask", {"id": tid})
                final[tid] = (st, task_state(doc), doc)
            pending = [t for t in pending if final[t][1] != "TASK_STATE_COMPLETED"]
            if pending:
                time.sleep(0.3)
        check(not pending, "every acknowledged task exists after the restart and completed; "
              "not: " + few((t, final[t][1] or final[t][2]) for t in pending))
        for r in reps:
            # reps[1] may have had no call since the restart: its first
            # may still meet the pool's reconnect backoff (<= 2 s).
            got = sorted(t["id"] for t in list_all(r.port, unavailable_for=10))
            eq(got, sorted(s.tid for s in sent),
               "ListTasks on %s: one task per task sent, retries included" % r.name)

        # Every task is completed, so every run that will ever start has
        # started: no replica holds a lease on any of them any more.
        starts, keys = agent.starts(), agent.effect_keys()
        eq(sorted(set(starts) - set(s.tid for s in sent)), [], "no run of a task nobody sent")
        never = [s.tid for s in sent if s.tid not in starts]
        check(not never, "every task ran; never: " + few(never))
        bad_rerun = []
        for tid, runs in starts.items():
            for before, later in zip(runs, runs[1:]):
                if not (later[0] > before[0] and later[2]):
                    bad_rerun.append((tid, runs))
                    break
        check(not bad_rerun, "a task ran again only after its lease was lost, with a higher "
              "fence and ONCE_RESUMED=1; not: " + few(bad_rerun, 2) +
              "; what the replicas logged about them: " +
              few(onced_lines(reps, set(t for t, _ in bad_rerun)), 2))
        split = [(t, k) for t, k in keys.items() if len(set(k)) != 1]
        check(not split, "every run of a task had the same side-effect key; not: " + few(split))
        wrong = []
        for tid, (st, state, doc) in final.items():
            text = status_text(doc["result"]) or ""
            who = text.split()   # "done by <replica> fence <fence>"
            ran = [(f, r) for f, r, _, _ in starts.get(tid, [])]
            if len(who) != 5 or (int(who[4]), who[2]) not in ran:
                wrong.append((tid, text))
        check(not wrong, "one completed result per task, from a run that started; not: " +
              few(wrong))
        reran = sum(1 for runs in starts.values() if len(runs) > 1)
        print("%s: %d of %d tasks ran more than once (each after losing its lease)" %
              (BACKEND, reran, len(starts)))
        for r in reps:
            check(r.proc.poll() is None, "replica %s survived the outage" % r.name)
    finally:
        stop.set()
        for r in reps:
            r.stop()
        server.close()


if __name__ == "__main__":
    run([test_store_restart_under_load])
