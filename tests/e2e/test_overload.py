"""Overload: a replica whose turn queue is full refuses new work instead of
hoarding it, and never takes over its own queued tasks.

One onced, two turn workers, a queue of six, a 2 s lease. The --exec agent
holds every turn until the test opens a gate (a file), so the queue fills
deterministically; the queued tasks' registration leases run out while
they wait.

What a client and an operator rely on:
- past the queue every send is answered HTTP 503 with Retry-After and
  JSON-RPC -32603 OVERLOADED (retryable "true"), and nothing is stored for
  it (GetTask: TASK_NOT_FOUND);
- the queue never holds more than its bound (the queued gauge);
- a queued task whose lease ran out while it waited is not taken over by
  the replica holding it: after sweeps that ran past the lease, takeovers
  is still 0;
- the refused sends, retried as asked once the queue drains, are accepted:
  every intent ends as exactly one completed task that ran exactly once
  (executedTurns == registered == intents).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, admin_stats, check, eq, error_info, new_id, run, scaled,  # noqa
                     scratch_dir, task_state, user_message, wait_until)

TMP = scratch_dir("once-overload-")
QUEUE = 6
WORKERS = 2
BURST = 20
LEASE_S = 2


def send(srv, tid):
    return srv.rpc("SendMessage", {"message": user_message("work", task_id=tid),
                                   "configuration": {"returnImmediately": True}}, ext=True)


def test_queue_bound():
    gate = os.path.join(TMP, "gate")
    agent = ("while [ ! -e %s ]; do sleep 0.02; done; "
             "echo '{\"status\":\"completed\",\"text\":\"done\"}'" % gate)
    with Onced(args=["--exec", agent, "--turn-workers", str(WORKERS), "--max-queue", str(QUEUE),
                     "--lease", "%ds" % LEASE_S, "--test-admin"], tmpdir=TMP) as srv:
        tids = ["t-over-%02d-%s" % (n, new_id()[:8]) for n in range(BURST)]
        accepted, refused = [], []
        first_at = time.time()
        for tid in tids:
            st, hd, doc = send(srv, tid)
            if st == 200:
                eq(task_state(doc), "TASK_STATE_SUBMITTED", "an accepted send")
                accepted.append(tid)
                continue
            refused.append(tid)
            eq(st, 503, "a send past the queue: HTTP status")
            check(hd.get("retry-after", "").isdigit() and int(hd["retry-after"]) >= 1,
                  "a send past the queue carries Retry-After: %r" % hd.get("retry-after"))
            code, reason, meta = error_info(doc or {})
            eq((code, reason), (-32603, "OVERLOADED"), "a send past the queue: error")
            eq(meta.get("retryable"), "true", "a send past the queue is retryable")
        # The workers hold at most two turns, the queue six: whatever the
        # timing of the workers' first pops, 6..8 were accepted.
        check(QUEUE <= len(accepted) <= QUEUE + WORKERS,
              "accepted %d sends with %d workers and a queue of %d" %
              (len(accepted), WORKERS, QUEUE))
        for tid in refused:
            st, _, doc = srv.rpc("GetTask", {"id": tid})
            eq(error_info(doc or {})[1], "TASK_NOT_FOUND", "nothing was stored for a refused send")
        stats = admin_stats(srv)
        eq(stats.get("queued"), QUEUE, "the queue holds its bound and no more")
        eq(stats.get("overloaded"), len(refused), "overloaded counts the refused sends")

        # Let the queued tasks' leases run out, then see two sweeps pass.
        wait_until(lambda: time.time() > first_at + LEASE_S + 0.5, timeout=LEASE_S + 5,
                   what="the queued tasks' leases to run out")
        sweeps = admin_stats(srv).get("sweeps", 0)
        wait_until(lambda: admin_stats(srv).get("sweeps", 0) >= sweeps + 2,
                   what="two sweeps after the leases ran out")
        eq(admin_stats(srv).get("takeovers"), 0, "no takeover of work queued here")

        open(gate, "w").close()
        pending = list(refused)
        end = time.time() + scaled(120)
        while pending and time.time() < end:
            st, hd, doc = send(srv, pending[0])
            if st == 200:
                pending.pop(0)
                continue
            eq(st, 503, "a retried send is accepted or refused again, nothing else")
            time.sleep(int(hd.get("retry-after", "1")))
        check(not pending, "every refused send was accepted on retry; not: %r" % pending[:3])

        def all_completed():
            return all(task_state(srv.rpc("GetTask", {"id": tid})[2]) == "TASK_STATE_COMPLETED"
                       for tid in tids)
        wait_until(all_completed, timeout=60, step=0.2, what="every task completed")
        stats = admin_stats(srv)
        eq(stats.get("takeovers"), 0, "no takeovers")
        eq(stats.get("registered"), BURST, "one task per intent")
        eq(stats.get("executedTurns"), BURST, "every task ran exactly once")


if __name__ == "__main__":
    run([test_queue_bound])
