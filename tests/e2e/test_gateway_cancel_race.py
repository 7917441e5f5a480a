"""A cancel that races completion through the gateway ends in exactly one
terminal state. onced (`--upstream`) in front of the real @a2a-js/sdk agent
(tests/interop/upstream_agent.mjs): tasks that finish at once upstream
("sleep:0", sent with returnImmediately) are canceled at once, as soon as
the gateway wrote WORKING (its completion a moment away: the race), or
after the end, so the cancel lands before and after the gateway wrote the
upstream's completion. Whichever wins, the cancel's own answer says which
(CANCELED, or TASK_NOT_CANCELABLE naming COMPLETED), the task ends in that
state, and it stays there once no turn is queued or running (the positive
signal: once_turns_queued 0 and every started turn finished, on /metrics):
a completion written after a cancel is refused by the fence, never shown.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (check, eq, error_info, http_get, new_id, run, scratch_dir,  # noqa: E402
                     task_state, wait_until)
from test_gateway import AGENT, NODE, Upstream, gateway, get, send  # noqa: E402

TMP = scratch_dir("once-gateway-cancel-")
ROUNDS = 12
TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED")


def quiet(port):
    """No turn queued or running: every turn started has finished (a
    canceled task's turn may end fenced off, or never start)."""
    st, _, body = http_get(port, "/metrics")
    eq(st, 200, "GET /metrics")
    text = body.decode()
    finished = sum(int(v) for v in re.findall(r"^once_turns_finished_total\{[^}]*\} (\d+)$",
                                              text, re.M))
    started = int(re.search(r"^once_turns_started_total (\d+)$", text, re.M).group(1))
    queued = int(re.search(r"^once_turns_queued (\d+)$", text, re.M).group(1))
    return queued == 0 and started == finished


def test_cancel_races_completion():
    up = Upstream()
    outcomes = {}
    try:
        with gateway(up.url, tmpdir=TMP) as gw:
            for i in range(ROUNDS):
                tid = new_id()
                send(gw, "sleep:0", task_id=tid, blocking=False)
                # Three moments: at once; once the gateway wrote WORKING (its
                # completion is then a moment away: the race); once it is
                # finished (the cancel must lose).
                if i % 3 == 1:
                    wait_until(lambda: get(gw, tid)["status"]["state"] != "TASK_STATE_SUBMITTED",
                               timeout=30, what="round %d: the turn began" % i)
                elif i % 3 == 2:
                    wait_until(lambda: get(gw, tid)["status"]["state"] in TERMINAL,
                               timeout=30, what="round %d: finished" % i)
                st, _, doc = gw.rpc("CancelTask", {"id": tid})
                if "result" in doc:
                    want = task_state(doc)
                    eq(want, "TASK_STATE_CANCELED", "a cancel that won answers CANCELED")
                else:
                    code, reason, meta = error_info(doc)
                    eq(reason, "TASK_NOT_CANCELABLE", "a cancel that lost: %r" % (doc,))
                    want = meta.get("state")
                    check(want in TERMINAL, "the refusal names the final state: %r" % (meta,))
                outcomes[want] = outcomes.get(want, 0) + 1
                # The turn has ended (it wrote its result or was fenced off).
                wait_until(lambda: quiet(gw.port), timeout=30,
                           what="round %d: no turn left running" % i)
                eq(get(gw, tid)["status"]["state"], want,
                   "round %d: the task stays in the state the cancel reported" % i)
    finally:
        up.stop()
    print("outcomes:", outcomes)
    check(sum(outcomes.values()) == ROUNDS, "every round ended in one state")
    check(outcomes.get("TASK_STATE_COMPLETED", 0) >= ROUNDS // 3,
          "the cancels sent after the end lost to it: %r" % outcomes)


if __name__ == "__main__":
    if NODE is None or not os.path.exists(AGENT):
        print("node or %s missing: run scripts/deps.sh" % AGENT, file=sys.stderr)
        print("0 passed, 1 failed")
        sys.exit(1)
    run([test_cancel_races_completion])
