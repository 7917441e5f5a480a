"""Bearer auth and tenant isolation on a real onced (--auth-tokens): no or
bad token -> HTTP 401 with a JSON-RPC error; two principals using the same
task ID each see only their own task; another principal's task looks
exactly like a missing one on every method (same code, reason, message and
metadata), and nothing one tenant does changes the other's task.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import EXT, Onced, check, eq, error_info, http_get, new_id, rpc, run, user_message

srv = None
ALICE, BOB = "tok-alice-" + new_id(), "tok-bob-" + new_id()


def a(method, params, **kw):
    return srv.rpc(method, params, token=ALICE, **kw)


def b(method, params, **kw):
    return srv.rpc(method, params, token=BOB, **kw)


def task(doc):
    check(doc is not None and "result" in doc, "expected a result, got %r" % (doc,))
    r = doc["result"]
    return r.get("task", r)


def normalised_error(doc, task_id):
    """The error object with the task id replaced, to compare 'someone
    else's task' with 'no task at all'."""
    text = json.dumps(doc.get("error"), sort_keys=True)
    return text.replace(task_id, "<ID>")


def test_unauthenticated():
    body = {"message": user_message("hi")}
    for token, what in ((None, "no token"), ("wrong-" + new_id(), "unknown token"),
                        (ALICE + "x", "a token with a suffix"), (ALICE[:-1], "a prefix")):
        st, hd, doc = srv.rpc("SendMessage", body, token=token)
        eq(st, 401, what + ": HTTP 401")
        check(hd.get("www-authenticate", "").lower().startswith("bearer"),
              what + ": WWW-Authenticate: Bearer")
        eq(doc.get("jsonrpc"), "2.0", what + ": JSON-RPC body")
        eq(error_info(doc)[1], "UNAUTHENTICATED", what + ": reason")
    st, hd, doc = srv.rpc("GetTask", {"id": "x"}, headers={"Authorization": "Basic " + ALICE})
    eq(st, 401, "Basic scheme is not bearer")
    # the card is public and says how to authenticate
    st, _, raw = http_get(srv.port, "/.well-known/agent-card.json")
    eq(st, 200, "card without a token")
    card = json.loads(raw)
    eq(card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
       "card declares the bearer scheme")
    check(card.get("securityRequirements"), "card requires it")
    st, _, doc = srv.rpc("GetTask", {"id": "x"}, headers={"Authorization": "bearer " + ALICE})
    eq(error_info(doc)[1], "TASK_NOT_FOUND", "scheme name is case-insensitive")


def test_same_id_two_tenants():
    tid = "t-shared-" + new_id()
    st, _, da = a("SendMessage", {"message": user_message("ask:alice's question", task_id=tid)},
                  ext=True)
    eq(task(da)["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "alice's task parks")
    st, _, db = b("SendMessage", {"message": user_message("bob's work", task_id=tid)}, ext=True)
    eq(task(db)["id"], tid, "bob registers the same ID under his principal")
    eq(task(db)["status"]["state"], "TASK_STATE_COMPLETED", "bob's task is his own")
    ga = task(a("GetTask", {"id": tid})[2])
    gb = task(b("GetTask", {"id": tid})[2])
    eq(ga["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "alice still sees hers")
    eq(gb["status"]["state"], "TASK_STATE_COMPLETED", "bob sees his")
    check(ga["contextId"] != gb["contextId"], "separate contexts")
    eq(ga["history"][0]["parts"][0]["text"], "ask:alice's question", "alice's history")
    eq(gb["history"][0]["parts"][0]["text"], "bob's work", "bob's history")
    # bob cancelling "his" tid touches only his (completed: not cancelable)
    st, _, doc = b("CancelTask", {"id": tid})
    eq(error_info(doc)[2].get("state"), "TASK_STATE_COMPLETED", "bob's cancel sees bob's task")
    eq(task(a("GetTask", {"id": tid})[2]), ga, "alice's task unchanged")


def test_others_task_is_missing():
    tid = "t-alice-" + new_id()
    st, _, da = a("SendMessage", {"message": user_message("ask:private?", task_id=tid)}, ext=True)
    before = task(a("GetTask", {"id": tid})[2])
    missing = "t-nobody-" + new_id()
    probes = [
        ("GetTask", lambda i: {"id": i}, {}),
        ("GetTask", lambda i: {"id": i, "historyLength": 1}, {}),
        ("CancelTask", lambda i: {"id": i}, {}),
        ("SendMessage", lambda i: {"message": user_message("let me in", task_id=i)}, {}),
        ("tasks/get", lambda i: {"id": i}, {"version": None}),
        ("tasks/cancel", lambda i: {"id": i}, {"version": None}),
    ]
    for method, params, kw in probes:
        st1, h1, other = b(method, params(tid), **kw)
        st2, h2, none = b(method, params(missing), **kw)
        eq(st1, st2, method + ": same HTTP status")
        eq(error_info(other)[1], "TASK_NOT_FOUND", method + " of another tenant's task")
        eq(normalised_error(other, tid), normalised_error(none, missing),
           method + ": another tenant's task is indistinguishable from a missing one")
    # listing: bob never sees alice's task
    st, _, doc = b("ListTasks", {"pageSize": 100})
    check(tid not in [t["id"] for t in doc["result"]["tasks"]], "bob's list lacks alice's task")
    st, _, doc = a("ListTasks", {"pageSize": 100})
    check(tid in [t["id"] for t in doc["result"]["tasks"]], "alice's list has it")
    # bob's 0.1 send with alice's id creates bob's own task, never continues hers
    st, _, doc = b("tasks/send", {"id": tid, "message": {
        "role": "user", "parts": [{"type": "text", "text": "bob via 0.1"}]}}, version=None)
    eq(doc["result"]["status"]["state"], "completed", "bob's 0.1 task ran")
    eq(task(a("GetTask", {"id": tid})[2]), before, "alice's task unchanged by everything bob did")
    # alice can still continue it
    st, _, doc = a("SendMessage", {"message": user_message("yes", task_id=tid)})
    eq(task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "alice continues her task")


def test_derived_ids_per_tenant():
    mid = new_id()
    st, _, da = a("SendMessage", {"message": user_message("same words", message_id=mid)})
    st, _, db = b("SendMessage", {"message": user_message("same words", message_id=mid)})
    check(task(da)["id"] != task(db)["id"],
          "the same messageId from two tenants derives two task IDs")
    st, hd, _ = b("SendMessage", {"message": user_message("same words", message_id=mid)})
    eq(hd.get("idempotent-replayed"), "true", "each tenant's retry replays its own task")


def main():
    global srv
    import tempfile
    tmp = tempfile.mkdtemp(prefix="once-auth-")
    path = os.path.join(tmp, "tokens")
    with open(path, "w") as f:
        f.write("# e2e tenants\n%s alice\n\n%s\tbob\n" % (ALICE, BOB))
    srv = Onced(args=["--auth-tokens", path], tmpdir=tmp)
    try:
        run([test_unauthenticated, test_same_id_two_tenants, test_others_task_is_missing,
             test_derived_ids_per_tenant])
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
