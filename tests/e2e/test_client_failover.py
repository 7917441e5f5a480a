"""The client against replicas addressed directly (no load balancer): two
onced processes share one SQLite file, and `once --agent A,B` names both as
endpoints of one agent (docs/design.md, "The client").

- kill -9 of replica A: `once recover` re-sends a pending intent and polls
  an acknowledged one through B (exit 0), `once wait ID` with no --agent
  follows the task to COMPLETED through B, a new `send --wait` completes
  through B; the outbox holds the final states and names B as the
  endpoint that answered; every task ran once (one task per ID on the
  shared store);
- an outbox that knows only the dead URL: `once recover` exits 4, then
  `once recover --agent B` says B is tried first for this run and finishes
  the intents through B; `once wait ID --agent B` prints COMPLETED and the
  outbox agrees (final, from B);
- a drain (SIGTERM, --drain) of the replica serving `send --wait`'s
  stream: with --agent A,B the wait resumes on B and ends COMPLETED, the
  outbox final; with A alone the client gives up, and what it prints
  about the intent is what `once outbox` shows: acknowledged, not pending.

The agent steps to working and waits for a gate file the test creates, so
no assertion depends on how fast anything runs.
"""
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (GatedAgent, Onced, check, eq, http_get, scaled, scratch_dir,  # noqa: E402
                     wait_until)
from test_client import (FAST, ONCE, once, once_json, outbox_intents,  # noqa: E402
                         run_client_tests)

TMP = scratch_dir("once-failover-")
GATES = os.path.join(TMP, "gates")
AGENT = GatedAgent("step 'working'; gate go", GATES)
# Short, so that B takes over a dead replica's task soon; scaled, so that
# a replica that is merely slow keeps its lease.
LEASE = "%dms" % scaled(1500)


def pair(name):
    """Two replicas on one SQLite file: (A, B, "urlA,urlB")."""
    d = os.path.join(TMP, name)
    os.mkdir(d)
    store = "sqlite:" + os.path.join(d, "registry.db")
    common = AGENT.args + ["--lease", LEASE, "--exec-grace", "1s", "--drain", "2s"]
    a = Onced(args=common + ["--replica-id", name + "-a"], tmpdir=d, store=store)
    b = Onced(args=common + ["--replica-id", name + "-b"], tmpdir=d, store=store)
    return a, b


def url(srv):
    return "http://127.0.0.1:%d/" % srv.port


def intent(outbox, tid):
    its = [i for i in outbox_intents(outbox) if i["taskId"] == tid]
    eq(len(its), 1, "one intent for %s" % tid)
    return its[0]


def task_ids(srv):
    st, _, doc = srv.rpc("ListTasks", {"pageSize": 100})
    eq(st, 200, "ListTasks")
    return sorted(t["id"] for t in doc["result"]["tasks"])


def test_kill9_then_everything_through_b():
    a, b = pair("kill")
    try:
        outbox = os.path.join(TMP, "kill.db")
        both = url(a) + "," + url(b)
        rc, doc = once_json(outbox, "send", "--agent", both, "--text", "first", *FAST)
        eq(rc, 0, "the send is answered (%r)" % doc)
        acked = doc["taskId"]
        eq(doc["endpoint"], url(a), "the first endpoint answered")
        it = intent(outbox, acked)
        eq((it["state"], it["agent"], it["endpoint"]), ("acknowledged", url(a), url(a)),
           "the intent is acknowledged, its agent named by its first URL")
        # A send killed after its outbox write: pending, never sent.
        rc, _, _ = once(outbox, "send", "--agent", both, "--text", "second",
                        env={"ONCE_TEST_CRASH": "after-outbox"})
        eq(rc, -signal.SIGKILL, "the send died after the outbox write")
        pending = [i for i in outbox_intents(outbox) if i["state"] == "pending"]
        eq(len(pending), 1, "one pending intent")
        pending = pending[0]["taskId"]

        a.kill9()
        rc, doc = once_json(outbox, "recover", *FAST)
        eq((rc, doc["resent"], doc["polled"]), (0, 1, 1), "recover goes through B (%r)" % doc)
        eq((doc["acknowledged"], doc["pending"], doc["exhausted"]), (2, 0, 0),
           "both are acknowledged now, as the outbox says")
        for tid in (acked, pending):
            it = intent(outbox, tid)
            eq((it["state"], it["endpoint"]), ("acknowledged", url(b)), "%s answered by B" % tid)
        eq(task_ids(b), sorted([acked, pending]), "one task per intent on the shared store")

        AGENT.release(acked, "go")
        AGENT.release(pending, "go")
        rc, out, err = once(outbox, "wait", acked)
        eq(rc, 0, "`once wait ID` follows the task through B (%s)" % err)
        eq(out.splitlines()[0].split("\t")[:2], [acked, "TASK_STATE_COMPLETED"],
           "it completed: %r" % out)
        it = intent(outbox, acked)
        eq((it["state"], it["taskState"], it["endpoint"]),
           ("final", "TASK_STATE_COMPLETED", url(b)), "the outbox holds B's answer")

        AGENT.release("fresh-one", "go")
        rc, doc = once_json(outbox, "send", "--agent", both, "--id", "fresh-one", "--text", "third",
                            "--wait", *FAST)
        eq((rc, doc["state"], doc["endpoint"]), (0, "TASK_STATE_COMPLETED", url(b)),
           "a new send completes through B (%r)" % doc)
        it = intent(outbox, "fresh-one")
        eq((it["state"], it["endpoint"]), ("final", url(b)), "the outbox agrees")
        eq(task_ids(b), sorted([acked, pending, "fresh-one"]), "no task twice")
    finally:
        a.stop()
        b.stop()


def test_agent_on_the_command_line_overrides_a_dead_url():
    a, b = pair("override")
    try:
        outbox = os.path.join(TMP, "override.db")
        rc, doc = once_json(outbox, "send", "--agent", url(a), "--text", "only A", *FAST)
        eq(rc, 0, "sent to A alone")
        tid = doc["taskId"]
        a.kill9()
        rc, doc = once_json(outbox, "recover", "--attempts", "2", *FAST)
        eq((rc, doc["polled"], doc["exhausted"]), (4, 1, 1),
           "the stored URL alone is dead: exhausted (%r)" % doc)
        eq((doc["acknowledged"], doc["intents"][0]["intentState"]), (1, "acknowledged"),
           "the counts and the intent say what the outbox holds")
        eq(intent(outbox, tid)["state"], "acknowledged", "still acknowledged")

        rc, out, err = once(outbox, "recover", "--agent", url(b), *FAST)
        eq(rc, 0, "--agent B on recover reaches the agent (%s)" % err)
        check(url(b) in err and "for this run" in err and url(a) in err,
              "it says B is tried first for this run, then the stored URL: %r" % err)
        eq(intent(outbox, tid)["endpoint"], url(b), "B answered the poll")

        AGENT.release(tid, "go")
        rc, out, err = once(outbox, "wait", tid, "--agent", url(b))
        eq(rc, 0, "`once wait ID --agent B` (%s)" % err)
        eq(out.splitlines()[0].split("\t")[:2], [tid, "TASK_STATE_COMPLETED"],
           "it completed: %r" % out)
        it = intent(outbox, tid)
        eq((it["state"], it["taskState"], it["agent"], it["endpoint"]),
           ("final", "TASK_STATE_COMPLETED", url(a), url(b)),
           "the outbox holds what B said, for the agent it knows as A")
        rc, out, err = once(outbox, "recover")
        check(rc == 0 and "nothing to recover" in err, "nothing is left (%s)" % err)
    finally:
        a.stop()
        b.stop()


def streams_open(srv):
    try:
        st, _, body = http_get(srv.port, "/metrics", timeout=5)
    except OSError:
        return 0
    for ln in body.decode().splitlines():
        if ln.startswith("once_sse_streams_open "):
            return int(float(ln.split()[1]))
    return 0


def send_wait(outbox, agent, tid, *extra):
    """`once --json send --wait`, left running: the caller drains a replica."""
    e = dict(os.environ, XDG_STATE_HOME=TMP)
    e.pop("ONCE_TEST_CRASH", None)
    return subprocess.Popen([ONCE, "--outbox", outbox, "--json", "send", "--agent", agent, "--id",
                             tid, "--text", "drained", "--wait"] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)


def drain_under_the_stream(srv, p, tid):
    """Once p's wait streams from srv, drain srv (SIGTERM) and let it exit."""
    wait_until(lambda: streams_open(srv) >= 1 or p.poll() is not None, timeout=20,
               what="the wait's stream on the replica")
    check(p.poll() is None, "the send is still waiting on %s" % tid)
    srv.signal(signal.SIGTERM)
    srv.proc.wait(scaled(30))


def test_drain_under_send_wait():
    a, b = pair("drain")
    try:
        outbox = os.path.join(TMP, "drain.db")
        p = send_wait(outbox, url(a) + "," + url(b), "drained-both", *FAST)
        drain_under_the_stream(a, p, "drained-both")
        AGENT.release("drained-both", "go")
        out, err = p.communicate(timeout=scaled(60))
        doc = json.loads(out)
        eq((p.returncode, doc["state"]), (0, "TASK_STATE_COMPLETED"),
           "the wait resumed on B and saw the end (%s)" % err)
        eq(doc["intentState"], "final", "the output names the outbox's state")
        it = intent(outbox, "drained-both")
        eq((it["state"], it["taskState"]), ("final", "TASK_STATE_COMPLETED"), "the outbox agrees")
    finally:
        a.stop()
        b.stop()

    # One replica alone: nothing to fail over to, the client gives up.
    d = os.path.join(TMP, "alone")
    os.mkdir(d)
    srv = Onced(args=AGENT.args + ["--drain", "2s"], tmpdir=d)
    try:
        outbox = os.path.join(TMP, "alone.db")
        e = dict(os.environ, XDG_STATE_HOME=TMP)
        p = subprocess.Popen([ONCE, "--outbox", outbox, "send", "--agent", url(srv), "--id",
                              "drained-alone", "--text", "drained", "--wait", "--attempts", "2"] +
                             FAST, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
        drain_under_the_stream(srv, p, "drained-alone")
        out, err = p.communicate(timeout=scaled(60))
        eq(p.returncode, 4, "the wait lost its only replica: exhausted (%s)" % err)
        it = intent(outbox, "drained-alone")
        eq(it["state"], "acknowledged", "the agent has the task: the intent is acknowledged")
        check("stays pending" not in err, "the message does not call it pending: %r" % err)
        check("intent %d is acknowledged in the outbox" % it["seq"] in err and
              "once wait drained-alone" in err,
              "it says what the outbox holds, and how to resume: %r" % err)
    finally:
        srv.stop()


if __name__ == "__main__":
    run_client_tests([test_kill9_then_everything_through_b,
                      test_agent_on_the_command_line_overrides_a_dead_url,
                      test_drain_under_send_wait])
