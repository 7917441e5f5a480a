"""A slow upstream task does not hold a gateway turn worker. onced
(`--upstream`, two turn workers) in front of the real @a2a-js/sdk agent
(tests/interop/upstream_agent.mjs): ten "hold:K" tasks stay WORKING at the
upstream until the test releases K.

- all ten reach the upstream and work there at once, though two workers
  could follow only two of them if following held a worker: the turns park
  (once_turns_parked reads ten) once their upstream task goes quiet, a
  stream without events as well as a poll that finds nothing new;
- a blocking send of one more held task waits (a deferred wait, no thread)
  and is answered COMPLETED when it is released;
- released, every task completes with the upstream's artifact: one upstream
  task per once task;
- a cancel of a parked task reaches the upstream (CancelTask): the parked
  turn runs once more, canceled, and cancels its upstream task.
On a streaming upstream and on one started with --no-streaming (polled).
Every wait is a bound on a condition (scaled by ONCE_TEST_TIMEOUT_FACTOR).
"""
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (check, eq, http_get, http_request, new_id, run, scratch_dir,  # noqa: E402
                     task_state, wait_until)
from test_gateway import AGENT, NODE, Upstream, art_text, gateway, get, send  # noqa: E402

TMP = scratch_dir("once-gateway-park-")
TASKS = 10


def gauge(gw, name):
    st, _, body = http_get(gw.port, "/metrics")
    eq(st, 200, "GET /metrics")
    m = re.search(r"^%s (\d+)$" % re.escape(name), body.decode(), re.M)
    return int(m.group(1)) if m else -1


def working_upstream(up):
    return sum(1 for t in up.counts()["tasks"].values() if t["state"] == "TASK_STATE_WORKING")


def parked_through(*flags):
    up = Upstream(*flags)
    try:
        with gateway(up.url, "--turn-workers", "2") as gw:
            key = new_id()
            ids = [new_id() for _ in range(TASKS)]
            for tid in ids:
                send(gw, "hold:" + key, task_id=tid, blocking=False)
            wait_until(lambda: working_upstream(up) == TASKS, timeout=60,
                       what="all %d tasks working at the upstream at once" % TASKS)
            wait_until(lambda: gauge(gw, "once_turns_parked") == TASKS, timeout=60,
                       what="every turn parked")
            for tid in ids:
                eq(get(gw, tid)["status"]["state"], "TASK_STATE_WORKING", "%s works" % tid)

            # One more, blocking: answered when released, holding no thread.
            answer = {}
            last = new_id()

            def blocking():
                answer["task"] = send(gw, "hold:" + key, task_id=last)[1]["task"]

            th = threading.Thread(target=blocking)
            th.start()
            wait_until(lambda: working_upstream(up) == TASKS + 1, timeout=60,
                       what="the blocking send's task works upstream")
            check(th.is_alive(), "the blocking send waits for its task")

            st, _, _ = http_request(up.port, "POST", "/release/" + key)
            eq(st, 200, "released upstream")
            th.join(60)
            check(not th.is_alive(), "the blocking send was answered")
            eq(answer["task"]["status"]["state"], "TASK_STATE_COMPLETED", "blocking send completed")
            for tid in ids:
                wait_until(lambda: get(gw, tid)["status"]["state"] == "TASK_STATE_COMPLETED",
                           timeout=60, what="%s completed" % tid)
                eq(art_text(get(gw, tid)), ["released " + key], "%s: the upstream's artifact" % tid)
            eq(up.counts()["tasksCreated"], TASKS + 1, "one upstream task per once task")
            check(gauge(gw, "once_turns_parks_total") >= TASKS, "parks counted")
            wait_until(lambda: gauge(gw, "once_turns_parked") == 0, timeout=30,
                       what="no turn parked any more")

            # A cancel of a parked task reaches its upstream task.
            tid = new_id()
            cancels = up.counts()["cancels"]
            send(gw, "hold:" + new_id(), task_id=tid, blocking=False)
            wait_until(lambda: gauge(gw, "once_turns_parked") == 1, timeout=60,
                       what="the task's turn parked")
            st, _, doc = gw.rpc("CancelTask", {"id": tid})
            eq(task_state(doc), "TASK_STATE_CANCELED", "once task canceled")
            wait_until(lambda: up.counts()["cancels"] > cancels, timeout=30,
                       what="CancelTask reached the upstream")
            wait_until(lambda: any(t["state"] == "TASK_STATE_CANCELED"
                                   for t in up.counts()["tasks"].values()), timeout=30,
                       what="the upstream task canceled")
            wait_until(lambda: gauge(gw, "once_turns_parked") == 0, timeout=30,
                       what="the canceled turn left")
            eq(get(gw, tid)["status"]["state"], "TASK_STATE_CANCELED", "stays canceled")
    finally:
        up.stop()


def test_parked_streaming():
    parked_through()


def test_parked_polled():
    parked_through("--no-streaming")


if __name__ == "__main__":
    if NODE is None or not os.path.exists(AGENT):
        print("node or %s missing: run scripts/deps.sh" % AGENT, file=sys.stderr)
        print("0 passed, 1 failed")
        sys.exit(1)
    run([test_parked_streaming, test_parked_polled])
