"""The A2A 1.0 wire of a real onced: the agent card, every decide() row with
its exact JSON-RPC code, ErrorInfo reason and metadata.state, A2A-Version
handling, the 0.1 tasks/send|get|cancel compatibility, the
Idempotent-Replayed header, GetTask historyLength and ListTasks pagination.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, Onced, check, eq, error_info, http_get, http_request, new_id, rpc,
                     run, user_message, wait_until)

HOUR_MS = 3600 * 1000
srv = None


def send(msg, ext=False, config=None, **kw):
    params = {"message": msg}
    if config is not None:
        params["configuration"] = config
    return srv.rpc("SendMessage", params, ext=ext, **kw)


def task_of(doc):
    check(doc is not None and "result" in doc, "expected a result, got %r" % (doc,))
    return doc["result"]["task"]


def state_of(doc):
    return task_of(doc)["status"]["state"]


def get_task(tid, **params):
    p = {"id": tid}
    p.update(params)
    st, _, doc = srv.rpc("GetTask", p)
    eq(st, 200, "GetTask HTTP status")
    return doc


def wait_state(tid, want, timeout=10):
    def f():
        doc = get_task(tid)
        return doc.get("result", {}).get("status", {}).get("state") == want
    wait_until(f, timeout=timeout, what="%s to reach %s" % (tid, want))


def expect_error(doc, code, reason, what, **meta):
    c, r, m = error_info(doc)
    eq(c, code, what + ": code")
    eq(r, reason, what + ": reason")
    for k, v in meta.items():
        eq(m.get(k), v, what + ": metadata." + k)
    return m


def test_agent_card():
    st, hd, body = http_get(srv.port, "/.well-known/agent-card.json")
    eq(st, 200, "card status")
    check(hd.get("content-type", "").startswith("application/json"), "card content type")
    import json
    card = json.loads(body)
    for k in ("name", "description", "version", "supportedInterfaces", "capabilities",
              "defaultInputModes", "defaultOutputModes", "skills"):
        check(k in card, "card has " + k)
    itf = card["supportedInterfaces"][0]
    eq(itf["url"], "http://127.0.0.1:%d/" % srv.port, "interface url")
    eq(itf["protocolBinding"], "JSONRPC", "protocolBinding")
    eq(itf["protocolVersion"], "1.0", "protocolVersion")
    caps = card["capabilities"]
    eq(caps.get("streaming"), True, "streaming on (SSE: tests/e2e/test_sse.py)")
    eq(caps.get("pushNotifications"), True, "push on (the SQLite store keeps delivery rows)")
    exts = [e for e in caps.get("extensions", []) if e.get("uri") == EXT]
    eq(len(exts), 1, "idempotency extension declared once")
    eq(exts[0].get("required"), False, "extension not required")
    eq(exts[0]["params"], {"retentionSeconds": 7200, "tombstoneSeconds": 14400},
       "extension params carry the retention windows")
    check("securitySchemes" not in card, "no security scheme without --auth-tokens")


def test_register_and_replay():
    msg = user_message("hello there")
    st, hd, doc = send(msg)
    eq(st, 200, "first send HTTP status")
    t = task_of(doc)
    eq(t["status"]["state"], "TASK_STATE_COMPLETED", "blocking send waits for completion")
    check("idempotent-replayed" not in hd, "a first send is not a replay")
    eq(t["artifacts"][0]["parts"][0].get("text"), "hello there", "echo artifact")
    eq(t["history"][0]["messageId"], msg["messageId"], "history holds the message")
    # the same message again: REPLAY, nothing re-executed, header set
    st, hd, doc2 = send(msg)
    eq(st, 200, "replay HTTP status")
    eq(hd.get("idempotent-replayed"), "true", "replay header")
    eq(task_of(doc2)["id"], t["id"], "replay lands on the same task")
    eq(task_of(doc2)["contextId"], t["contextId"], "replay keeps the contextId")
    eq(len(task_of(doc2)["artifacts"]), 1, "nothing re-executed")
    # key order and whitespace do not change the digest
    reordered = {"parts": [{"text": "hello there"}], "role": "ROLE_USER",
                 "messageId": msg["messageId"]}
    st, hd, doc3 = send(reordered)
    eq(hd.get("idempotent-replayed"), "true", "reordered message replays")
    eq(task_of(doc3)["id"], t["id"], "reordered message, same task")


def test_client_id_needs_extension():
    tid = "t-" + new_id()
    st, hd, doc = send(user_message("x", task_id=tid))
    expect_error(doc, -32001, "TASK_NOT_FOUND", "unknown taskId without extension", taskId=tid)
    st, hd, doc = send(user_message("x", task_id=tid), ext=True)
    eq(task_of(doc)["id"], tid, "extension: client-minted ID registers")
    eq(hd.get("a2a-extensions"), EXT, "activated extension echoed")


def test_conflict():
    mid = new_id()
    st, _, doc = send(user_message("first", message_id=mid))
    tid = task_of(doc)["id"]
    st, _, doc = send(user_message("different", message_id=mid))
    expect_error(doc, -32602, "MESSAGE_ID_REUSED", "same messageId, other content",
                 taskId=tid, messageId=mid)
    # with a client ID and the extension
    tid2 = "t-" + new_id()
    mid2 = new_id()
    send(user_message("a", message_id=mid2, task_id=tid2), ext=True)
    st, hd, doc = send(user_message("b", message_id=mid2, task_id=tid2), ext=True)
    expect_error(doc, -32602, "MESSAGE_ID_REUSED", "client ID conflict", taskId=tid2,
                 messageId=mid2)
    check("idempotent-replayed" not in hd, "a conflict is not a replay")


def test_continue_and_terminal():
    tid = "t-" + new_id()
    ask = user_message("ask:Which account?", task_id=tid)
    st, _, doc = send(ask, ext=True)
    eq(state_of(doc), "TASK_STATE_INPUT_REQUIRED", "ask: parks the task")
    eq(task_of(doc)["status"]["message"]["parts"][0]["text"], "Which account?",
       "the question is in the status message")
    cont = user_message("savings", task_id=tid)
    st, hd, doc = send(cont)
    eq(state_of(doc), "TASK_STATE_COMPLETED", "continuation completes")
    check("idempotent-replayed" not in hd, "a continuation is not a replay")
    st, hd, doc = send(cont)
    eq(hd.get("idempotent-replayed"), "true", "retried continuation replays")
    eq(state_of(doc), "TASK_STATE_COMPLETED", "replay reports the current state")
    st, hd, doc = send(user_message("one more", task_id=tid))
    expect_error(doc, -32004, "TASK_TERMINAL", "new message to a completed task", taskId=tid,
                 state="TASK_STATE_COMPLETED")
    # the first message again (same messageId, same content): a replay of the
    # current state, not a refusal and not a re-run
    st, hd, doc = send(ask, ext=True)
    eq(hd.get("idempotent-replayed"), "true", "first message of a finished task replays")
    eq(state_of(doc), "TASK_STATE_COMPLETED", "replay shows the current state")


def test_busy():
    tid = "t-" + new_id()
    st, _, doc = send(user_message("sleep:20", task_id=tid), ext=True,
                      config={"returnImmediately": True})
    eq(st, 200, "returnImmediately HTTP status")
    check(state_of(doc) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
          "returnImmediately returns before the work ends")
    wait_state(tid, "TASK_STATE_WORKING")
    st, _, doc = send(user_message("hurry", task_id=tid))
    expect_error(doc, -32004, "TASK_NOT_ACCEPTING_INPUT", "new message to a working task",
                 taskId=tid, state="TASK_STATE_WORKING")
    st, _, doc = srv.rpc("CancelTask", {"id": tid})
    eq(doc["result"]["status"]["state"], "TASK_STATE_CANCELED", "cancel a working task")
    st, _, doc = srv.rpc("CancelTask", {"id": tid})
    eq(doc.get("result", {}).get("status", {}).get("state"), "TASK_STATE_CANCELED",
       "cancel is idempotent on a canceled task")
    st, _, doc = send(user_message("again", task_id=tid))
    expect_error(doc, -32004, "TASK_TERMINAL", "message to a canceled task", taskId=tid,
                 state="TASK_STATE_CANCELED")


def test_failed_and_not_cancelable():
    st, _, doc = send(user_message("fail"))
    t = task_of(doc)
    eq(t["status"]["state"], "TASK_STATE_FAILED", "fail -> failed")
    st, _, doc = send(user_message("retry?", task_id=t["id"]))
    expect_error(doc, -32004, "TASK_TERMINAL", "message to a failed task", taskId=t["id"],
                 state="TASK_STATE_FAILED")
    st, _, doc = srv.rpc("CancelTask", {"id": t["id"]})
    expect_error(doc, -32002, "TASK_NOT_CANCELABLE", "cancel a failed task", taskId=t["id"],
                 state="TASK_STATE_FAILED")
    st, _, doc = send(user_message("done"))
    tid = task_of(doc)["id"]
    st, _, doc = srv.rpc("CancelTask", {"id": tid})
    expect_error(doc, -32002, "TASK_NOT_CANCELABLE", "cancel a completed task", taskId=tid,
                 state="TASK_STATE_COMPLETED")
    missing = "t-" + new_id()
    for method in ("GetTask", "CancelTask"):
        st, _, doc = srv.rpc(method, {"id": missing})
        expect_error(doc, -32001, "TASK_NOT_FOUND", method + " of a missing task",
                     taskId=missing)


def test_not_supported_methods():
    rows = [# streaming is supported (test_sse.py): a subscription to a missing task
            ("SubscribeToTask", {"id": "t-1"}, -32001),
            # push is supported (test_push.py): a config of a missing task is not found
            ("CreateTaskPushNotificationConfig", {"taskId": "t-1", "url": "https://x/"}, -32001),
            ("GetTaskPushNotificationConfig", {"taskId": "t-1", "id": "c"}, -32001),
            ("ListTaskPushNotificationConfigs", {"taskId": "t-1"}, -32001),
            ("DeleteTaskPushNotificationConfig", {"taskId": "t-1", "id": "c"}, -32001),
            ("GetExtendedAgentCard", {}, -32007)]
    for method, params, code in rows:
        st, _, doc = srv.rpc(method, params)
        eq(error_info(doc)[0], code, method)
    st, _, doc = srv.rpc("message/send", {"message": user_message("x")}, version=None)
    eq(doc.get("result", {}).get("kind"), "task", "0.3 method names are served: %r" % (doc,))
    st, _, doc = srv.rpc("tasks/list", {})
    eq(error_info(doc)[0], -32601, "a name neither version has is unknown")


def test_version_handling():
    msg = user_message("versioned")
    for v in (None, "", "0.3", "2.0"):
        st, _, doc = send(msg, version=v)
        c, r, m = error_info(doc)
        eq(c, -32009, "A2A-Version %r refused" % (v,))
        eq(r, "VERSION_NOT_SUPPORTED", "reason for %r" % (v,))
    # the refused calls registered nothing: the first accepted one is no replay
    st, hd, doc = send(msg)
    check("idempotent-replayed" not in hd, "refused calls registered nothing")
    # the version as a query parameter
    import json
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                       "params": {"id": task_of(doc)["id"]}})
    st, hd, raw = http_request(srv.port, "POST", "/?A2A-Version=1.0", body=body,
                               headers={"Content-Type": "application/json"})
    eq(st, 200, "query-parameter version status")
    eq(json.loads(raw)["result"]["id"], task_of(doc)["id"], "query-parameter version accepted")


def test_legacy_01():
    tid = "legacy-" + new_id()
    sid = "session-" + new_id()
    params = {"id": tid, "sessionId": sid,
              "message": {"role": "user", "parts": [{"type": "text", "text": "hello 0.1"}]}}
    st, hd, doc = srv.rpc("tasks/send", params, version=None)
    eq(st, 200, "tasks/send status")
    t = doc["result"]
    eq(t["id"], tid, "0.1 client id kept")
    eq(t["sessionId"], sid, "sessionId echoed")
    eq(t["status"]["state"], "completed", "0.1 lowercase state")
    eq(t["artifacts"][0]["parts"][0], {"type": "text", "text": "hello 0.1"}, "0.1 typed parts")
    check("idempotent-replayed" not in hd, "first tasks/send is not a replay")
    st, hd, doc = srv.rpc("tasks/send", params, version=None)
    eq(hd.get("idempotent-replayed"), "true", "identical tasks/send replays (digest identity)")
    eq(doc["result"]["id"], tid, "replay, same id")
    st, _, doc = srv.rpc("tasks/get", {"id": tid}, version=None)
    eq(doc["result"]["status"]["state"], "completed", "tasks/get")
    eq(doc["result"]["history"][0]["role"], "user", "0.1 roles in history")
    # the same task over 1.0
    eq(get_task(tid)["result"]["status"]["state"], "TASK_STATE_COMPLETED", "GetTask of a 0.1 task")
    params2 = dict(params, message={"role": "user", "parts": [{"type": "text", "text": "other"}]})
    st, _, doc = srv.rpc("tasks/send", params2, version=None)
    expect_error(doc, -32004, "TASK_TERMINAL", "new 0.1 message to a completed task",
                 taskId=tid, state="TASK_STATE_COMPLETED")
    st, _, doc = srv.rpc("tasks/cancel", {"id": tid}, version=None)
    expect_error(doc, -32002, "TASK_NOT_CANCELABLE", "tasks/cancel of a completed task")
    # input-required over 0.1, continued with the same id
    tid2 = "legacy-" + new_id()
    st, _, doc = srv.rpc("tasks/send", {"id": tid2, "message": {
        "role": "user", "parts": [{"type": "text", "text": "ask:Really?"}]}}, version=None)
    eq(doc["result"]["status"]["state"], "input-required", "0.1 input-required")
    eq(doc["result"]["status"]["message"]["role"], "agent", "0.1 agent role")
    st, _, doc = srv.rpc("tasks/send", {"id": tid2, "message": {
        "role": "user", "parts": [{"type": "text", "text": "yes"}]}}, version=None)
    eq(doc["result"]["status"]["state"], "completed", "0.1 continuation completes")
    st, _, doc = srv.rpc("tasks/get", {"id": "legacy-" + new_id()}, version=None)
    expect_error(doc, -32001, "TASK_NOT_FOUND", "tasks/get of a missing id")


def test_history_length():
    tid = "t-" + new_id()
    send(user_message("ask:q1", task_id=tid), ext=True)
    send(user_message("a1", task_id=tid))
    full = get_task(tid)["result"]
    n = len(full["history"])
    check(n >= 2, "history holds both user messages (got %d)" % n)
    one = get_task(tid, historyLength=1)["result"]
    eq(len(one["history"]), 1, "historyLength=1")
    eq(one["history"][0], full["history"][-1], "historyLength keeps the most recent")
    zero = get_task(tid, historyLength=0)["result"]
    check("history" not in zero or zero["history"] == [], "historyLength=0 omits history")
    st, _, doc = srv.rpc("GetTask", {"id": tid, "historyLength": -1})
    expect_error(doc, -32602, "INVALID_PARAMS", "negative historyLength", field="historyLength")
    st, _, doc = send(user_message("ask:again?"), config={"historyLength": 0})
    check("history" not in task_of(doc), "configuration.historyLength=0 on SendMessage")


def test_list_pagination():
    ctx = "ctx-" + new_id()
    ids = set()
    first = send(user_message("list me", context_id=ctx))
    ctx_real = task_of(first[2])["contextId"]
    ids.add(task_of(first[2])["id"])
    for i in range(6):
        st, _, doc = send(user_message("page %d" % i, context_id=ctx_real))
        ids.add(task_of(doc)["id"])
    eq(len(ids), 7, "seven tasks created")
    seen, token, pages = [], "", 0
    while True:
        params = {"contextId": ctx_real, "pageSize": 3}
        if token:
            params["pageToken"] = token
        st, _, doc = srv.rpc("ListTasks", params)
        res = doc["result"]
        check(len(res["tasks"]) <= 3, "page respects pageSize")
        check("nextPageToken" in res, "nextPageToken always present")
        for t in res["tasks"]:
            check("artifacts" not in t, "artifacts omitted by default")
        seen += [t["id"] for t in res["tasks"]]
        token = res["nextPageToken"]
        pages += 1
        if not token or pages > 10:
            break
    eq(sorted(seen), sorted(ids), "pages cover every task of the context exactly once")
    check(pages >= 3, "seven tasks in pages of three take three pages")
    st, _, doc = srv.rpc("ListTasks", {"contextId": ctx_real, "status": "TASK_STATE_FAILED"})
    eq(doc["result"]["tasks"], [], "status filter")
    st, _, doc = srv.rpc("ListTasks", {"contextId": ctx_real, "pageSize": 1,
                                       "includeArtifacts": True})
    check("artifacts" in doc["result"]["tasks"][0], "includeArtifacts")
    st, _, doc = srv.rpc("ListTasks", {"pageSize": 101})
    expect_error(doc, -32602, "INVALID_PARAMS", "pageSize over 100", field="pageSize")
    st, _, doc = srv.rpc("ListTasks", {"pageToken": "not-a-token"})
    expect_error(doc, -32602, "INVALID_PARAMS", "forged pageToken", field="pageToken")


def test_expired():
    """TASK_EXPIRED over the wire: a finished task past --retention."""
    with Onced(args=["--retention", "1h", "--tombstone-retention", "2h", "--test-admin"]) as s:
        tid = "t-" + new_id()
        msg = user_message("to expire", task_id=tid)
        st, _, doc = s.rpc("SendMessage", {"message": msg}, ext=True)
        eq(task_of(doc)["status"]["state"], "TASK_STATE_COMPLETED", "completed before expiry")
        st, _, doc = s.rpc("once/admin/setClockOffset", {"offsetMs": HOUR_MS + 60000},
                           version=None)
        eq(doc["result"]["offsetMs"], HOUR_MS + 60000, "clock moved")

        def expired():
            return error_info(s.rpc("GetTask", {"id": tid})[2])[1] == "TASK_EXPIRED"
        wait_until(expired, timeout=15, what="the sweeper to tombstone the task")
        st, _, doc = s.rpc("GetTask", {"id": tid})
        m = expect_error(doc, -32001, "TASK_EXPIRED", "GetTask of an expired task", taskId=tid)
        check(len(m.get("expiredAt", "")) >= 20 and m["expiredAt"].endswith("Z"),
              "expiredAt is RFC 3339 UTC: %r" % m.get("expiredAt"))
        st, hd, doc = s.rpc("SendMessage", {"message": msg}, ext=True)
        expect_error(doc, -32001, "TASK_EXPIRED", "resend of an expired task", taskId=tid)
        st, _, doc = s.rpc("CancelTask", {"id": tid})
        expect_error(doc, -32001, "TASK_EXPIRED", "cancel of an expired task", taskId=tid)


def main():
    global srv
    srv = Onced(args=["--retention", "2h", "--tombstone-retention", "4h"])
    try:
        run([test_agent_card, test_register_and_replay, test_client_id_needs_extension,
             test_conflict, test_continue_and_terminal, test_busy, test_failed_and_not_cancelable,
             test_not_supported_methods, test_version_handling, test_legacy_01,
             test_history_length, test_list_pagination, test_expired])
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
