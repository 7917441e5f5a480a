"""Tenancy through the gateway (`onced --upstream URL --auth-tokens FILE`), in
front of the real @a2a-js/sdk agent (tests/interop/upstream_agent.mjs): two
principals that send the very same message -- the same task ID, messageId
and contextId -- get two once tasks and two upstream tasks in two upstream
contexts, and a continuation of one principal's task reaches that
principal's upstream task only. Nothing of one principal's task reaches the
other's at the upstream: the upstream IDs are derived with the principal in
them. By default the agent sees no principal at all.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, new_id, run, scratch_dir, user_message  # noqa: E402
from test_gateway import Upstream, gateway, require_agent  # noqa: E402

TMP = scratch_dir("once-gateway-tenants-")


def send(gw, token, text, task_id, mid, ctx):
    msg = user_message(text, message_id=mid, task_id=task_id, context_id=ctx)
    st, _, doc = gw.rpc("SendMessage", {"message": msg}, ext=True, token=token, timeout=60)
    eq(st, 200, "SendMessage %s as %s" % (text, token))
    check("result" in doc, "answered: %r" % (doc,))
    return doc["result"]["task"]


def test_two_principals_same_ids():
    up = Upstream()
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        f.write("tok-alice alice\ntok-bob bob\n")
    try:
        with gateway(up.url, "--auth-tokens", tokens, tmpdir=TMP) as gw:
            tid, mid, ctx = new_id(), new_id(), new_id()
            before = up.counts()
            a = send(gw, "tok-alice", "ask:Which jurisdiction?", tid, mid, ctx)
            b = send(gw, "tok-bob", "ask:Which jurisdiction?", tid, mid, ctx)
            for t, who in ((a, "alice"), (b, "bob")):
                eq(t["id"], tid, "%s's task keeps its client-minted ID" % who)
                eq(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "%s's task asks" % who)
            c = up.counts()
            eq(c["tasksCreated"] - before["tasksCreated"], 2, "two upstream tasks, one per principal")
            new = [u for u in c["tasks"] if u not in before["tasks"]]
            eq(len(new), 2, "two new upstream task IDs")
            ctxs = set(c["tasks"][u]["contextId"] for u in new)
            eq(len(ctxs), 2, "two upstream contexts for one contextId of two principals")
            check(ctx not in ctxs, "the client's contextId is not reused upstream as it is")

            # alice continues: her upstream task gets the message, bob's does not.
            done = send(gw, "tok-alice", "English law", tid, new_id(), ctx)
            eq(done["status"]["state"], "TASK_STATE_COMPLETED", "alice's task completed")
            c2 = up.counts()
            msgs = sorted(c2["tasks"][u]["messages"] for u in new)
            eq(msgs, [1, 2], "the continuation reached one upstream task, alice's")
            st, _, doc = gw.rpc("GetTask", {"id": tid}, token="tok-bob")
            eq(doc["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "bob's still asks")

            sends = [q for q in up.requests()
                     if q["method"] in ("SendMessage", "SendStreamingMessage")]
            check(sends, "the agent saw the sends")
            for q in sends:
                for name, value in q["headers"].items():
                    check("alice" not in value and "bob" not in value,
                          "no principal reaches the agent by default (%s: %s)" % (name, value))
    finally:
        up.stop()


if __name__ == "__main__":
    require_agent()
    run([test_two_principals_same_ids])
