"""The HTTP+JSON binding (A2A 1.0 section 11, docs/wire.md "HTTP+JSON"):
every route reaches the same method as its JSON-RPC twin and gives the same
task; errors are AIP-193 objects with the section 5.4 HTTP status; streams
carry bare StreamResponses with `id: <generation>` and resume by
Last-Event-ID; the idempotency extension, bearer auth, the body limit, the
stream limit and the Content-Type check work exactly as on JSON-RPC.

Python 3 standard library only; tasks run on a gated --exec agent, so no
assertion depends on how fast the machine is.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, GatedAgent, Onced, call, check, eq, free_port, http_request, new_id,
                     run, scratch_dir, user_message)
from test_sse import Stream

TMP = scratch_dir("once-rest-")
GATED = GatedAgent("step working; gate go", os.path.join(TMP, "gates"))
TOKENS = os.path.join(TMP, "tokens")
with open(TOKENS, "w") as f:
    f.write("tok-alice alice\n")

srv = None     # the gated agent, no auth
guarded = None  # the same with --auth-tokens, a 1 KiB body limit and one stream


rest = call  # one HTTP+JSON request: (status, headers, parsed body)


def aip193(answer, status, grpc, reason, what, **meta):
    """The answer is HTTP `status` with an AIP-193 body naming reason."""
    st, hd, doc = answer
    eq(st, status, what + ": HTTP status (body %r)" % (doc,))
    check(hd.get("content-type", "").startswith("application/json"), what + ": JSON body")
    check(isinstance(doc, dict) and "jsonrpc" not in doc and isinstance(doc.get("error"), dict),
          what + ": an AIP-193 error object, got %r" % (doc,))
    err = doc["error"]
    eq(err.get("code"), status, what + ": error.code")
    eq(err.get("status"), grpc, what + ": error.status")
    check(isinstance(err.get("message"), str) and err["message"], what + ": error.message")
    infos = [d for d in err.get("details") or []
             if d.get("@type") == "type.googleapis.com/google.rpc.ErrorInfo"]
    # As on JSON-RPC: an A2A error carries A2A's ErrorInfo (domain
    # a2a-protocol.org) first and once's finer reason last; others one.
    check(len(infos) in (1, 2), what + ": one or two ErrorInfo entries in details")
    if len(infos) == 2:
        eq(infos[0].get("domain"), "a2a-protocol.org", what + ": the first ErrorInfo is A2A's")
    eq(infos[-1].get("reason"), reason, what + ": ErrorInfo.reason")
    for k, v in meta.items():
        eq(infos[-1].get("metadata", {}).get(k), v, what + ": metadata." + k)


class RestStream(Stream):
    """A streaming route (test_sse.Stream's reader over an HTTP+JSON request)."""

    def __init__(self, port, verb, path, body=None, headers=None, timeout=30):
        self.rid = None
        self.open(port, verb, path, body, headers, timeout)


def kind(ev):
    """The StreamResponse member of an event: task, statusUpdate, ..."""
    data = ev["data"]
    check("jsonrpc" not in data and len(data) == 1,
          "a bare StreamResponse on the data line, got %r" % (data,))
    return list(data)[0]


def state_of(ev):
    body = ev["data"].get("task") or ev["data"].get("statusUpdate") or {}
    return (body.get("status") or {}).get("state")


def send(port, text, task_id=None, ext=False, immediate=False, prefix="", **kw):
    """POST /message:send with one text message; the task id is client-minted
    (with the extension) when given."""
    body = {"message": user_message(text, task_id=task_id)}
    if immediate:
        body["configuration"] = {"returnImmediately": True}
    return rest(port, "POST", prefix + "/message:send", body, ext=ext, **kw)


def finished(port, text="hi", **kw):
    """A completed task (its gate opened before it runs): its JSON."""
    tid = new_id()
    GATED.release(tid, "go")
    st, hd, doc = send(port, text, task_id=tid, ext=True, **kw)
    eq(st, 200, "send: %r" % (doc,))
    eq(doc["task"]["status"]["state"], "TASK_STATE_COMPLETED", "the task completed")
    return doc["task"]


def live(port, **kw):
    """A task held working at its gate: its id."""
    tid = new_id()
    st, _, doc = send(port, "hold", task_id=tid, ext=True, immediate=True, **kw)
    eq(st, 200, "send (returnImmediately): %r" % (doc,))
    return tid


def test_card_declares_both_bindings():
    st, _, data = http_request(srv.port, "GET", "/.well-known/agent-card.json")
    card = json.loads(data)
    url = "http://127.0.0.1:%d/" % srv.port
    got = sorted((i["protocolBinding"], i["url"], i["protocolVersion"])
                 for i in card["supportedInterfaces"])
    eq(got, [("HTTP+JSON", url, "0.3"), ("HTTP+JSON", url, "1.0"), ("JSONRPC", url, "0.3"),
             ("JSONRPC", url, "1.0")],
       "supportedInterfaces: 1.0 and 0.3 on both bindings")
    eq([i["protocolVersion"] for i in card["supportedInterfaces"]][:2], ["1.0", "1.0"],
       "the 1.0 interfaces first")


def test_send_get_list():
    task = finished(srv.port)
    tid = task["id"]
    st, hd, doc = rest(srv.port, "GET", "/tasks/%s?historyLength=0" % tid)
    eq(st, 200, "GET /tasks/{id}")
    check(hd.get("content-type", "").startswith("application/json"), "application/json")
    eq(doc["id"], tid, "GetTask is the Task itself, no envelope")
    check("history" not in doc, "historyLength=0 from the query trims the history")
    # the same engine and the same shape as the JSON-RPC twin
    _, _, rpc_doc = srv.rpc("GetTask", {"id": tid, "historyLength": 0})
    eq(doc, rpc_doc["result"], "GET /tasks/{id} == JSON-RPC GetTask")
    ctx = task["contextId"]
    st, _, doc = rest(srv.port, "GET", "/tasks?contextId=%s&pageSize=1&includeArtifacts=true" % ctx)
    eq(st, 200, "GET /tasks")
    eq([t["id"] for t in doc["tasks"]], [tid], "ListTasks by contextId from the query")
    eq(doc["pageSize"], 1, "pageSize from the query, as an integer")
    # a boolean from the query is a JSON boolean (ListTasks refuses the string "true")
    aip193(rest(srv.port, "GET", "/tasks?includeArtifacts=yes"), 400, "INVALID_ARGUMENT",
           "INVALID_PARAMS", "includeArtifacts not a boolean", field="includeArtifacts")


def test_tenant_routes():
    task = finished(srv.port, prefix="/acme")
    st, _, doc = rest(srv.port, "GET", "/acme/tasks/" + task["id"])
    eq((st, doc.get("id")), (200, task["id"]), "GET /{tenant}/tasks/{id}")
    # a client joining a base URL ending in "/" with "/tasks/..." sends "//tasks/..."
    st, _, doc = rest(srv.port, "GET", "//tasks/" + task["id"])
    eq((st, doc.get("id")), (200, task["id"]), "GET //tasks/{id}")


def test_below_the_public_url():
    port = free_port()
    # two segments: no route takes them as a tenant
    base = "http://127.0.0.1:%d/v1/a2a/" % port
    with Onced(GATED.args + ["--public-url", base], port=port) as s:
        st, _, data = http_request(port, "GET", "/.well-known/agent-card.json")
        eq(sorted(i["url"] for i in json.loads(data)["supportedInterfaces"]), [base] * 4,
           "every interface at --public-url")
        task = finished(port, prefix="/v1/a2a")
        st, _, doc = rest(port, "GET", "/v1/a2a/tasks/" + task["id"])
        eq((st, doc.get("id")), (200, task["id"]), "GET <path of --public-url>/tasks/{id}")
        eq(s.rpc("GetTask", {"id": task["id"]})[2]["result"]["id"], task["id"],
           "JSON-RPC on the same task")


def test_cancel_and_not_cancelable():
    tid = live(srv.port)
    st, _, doc = rest(srv.port, "POST", "/tasks/%s:cancel" % tid)
    eq(st, 200, "POST /tasks/{id}:cancel: %r" % (doc,))
    eq((doc["id"], doc["status"]["state"]), (tid, "TASK_STATE_CANCELED"), "canceled")
    done = finished(srv.port)
    aip193(rest(srv.port, "POST", "/tasks/%s:cancel" % done["id"]), 409, "FAILED_PRECONDITION",
           "TASK_NOT_CANCELABLE", "cancel of a completed task", taskId=done["id"])


def test_push_config_crud():
    tid = live(srv.port)
    base = "/tasks/%s/pushNotificationConfigs" % tid
    cfg = {"id": "cfg-1", "url": "https://hooks.invalid/a2a", "token": "t-1"}
    st, _, doc = rest(srv.port, "POST", base, cfg)
    eq(st, 200, "create: %r" % (doc,))
    eq((doc["taskId"], doc["id"], doc["url"]), (tid, "cfg-1", cfg["url"]),
       "taskId comes from the path")
    st, _, doc = rest(srv.port, "GET", base + "/cfg-1")
    eq((st, doc.get("id")), (200, "cfg-1"), "get")
    st, _, doc = rest(srv.port, "GET", base + "?pageSize=10")
    eq((st, [c["id"] for c in doc["configs"]]), (200, ["cfg-1"]), "list")
    st, _, doc = rest(srv.port, "DELETE", base + "/cfg-1")
    eq((st, doc), (200, {}), "delete answers google.protobuf.Empty")
    aip193(rest(srv.port, "GET", base + "/cfg-1"), 404, "NOT_FOUND",
           "PUSH_NOTIFICATION_CONFIG_NOT_FOUND", "get after delete")
    aip193(rest(srv.port, "POST", base, dict(cfg, taskId="other")), 400, "INVALID_ARGUMENT",
           "INVALID_PARAMS", "a body taskId unlike the path's", field="taskId")
    rest(srv.port, "POST", "/tasks/%s:cancel" % tid)


def test_extended_card():
    aip193(rest(srv.port, "GET", "/extendedAgentCard"), 400, "FAILED_PRECONDITION",
           "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "GET /extendedAgentCard")


def test_errors():
    p = srv.port
    aip193(rest(p, "GET", "/tasks/" + new_id()), 404, "NOT_FOUND", "TASK_NOT_FOUND",
           "an unknown task")
    aip193(send(p, "hi", version="0.3"), 400, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED",
           "A2A-Version 0.3", version="0.3")
    aip193(rest(p, "GET", "/tasks/x?historyLength=many"), 400, "INVALID_ARGUMENT",
           "INVALID_PARAMS", "historyLength not a number", field="historyLength")
    aip193(rest(p, "GET", "/tasks?colour=red"), 400, "INVALID_ARGUMENT", "INVALID_PARAMS",
           "a query parameter the method does not take", field="colour")
    aip193(rest(p, "POST", "/message:send", '{"message": '), 400, "INVALID_ARGUMENT",
           "PARSE_ERROR", "a body that is not JSON")
    aip193(rest(p, "POST", "/message:send", "[1]"), 400, "INVALID_ARGUMENT", "INVALID_REQUEST",
           "a body that is not an object")
    aip193(rest(p, "POST", "/message:send", {"message": {"role": "ROLE_USER"}}), 400,
           "INVALID_ARGUMENT", "INVALID_PARAMS", "a message without parts")
    aip193(rest(p, "POST", "/message:send", {"message": user_message("x")}, ctype="text/plain"),
           415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", "Content-Type text/plain")
    ans = rest(p, "DELETE", "/tasks")
    aip193(ans, 405, "UNIMPLEMENTED", "METHOD_NOT_ALLOWED", "DELETE /tasks")
    eq(ans[1].get("allow"), "GET", "405 names the methods the path takes")
    eq(rest(p, "GET", "/no/such/route")[0], 404, "an unknown path")
    done = finished(p)
    aip193(send(p, "more", task_id=done["id"], ext=True), 400, "UNIMPLEMENTED", "TASK_TERMINAL",
           "a message for a completed task", taskId=done["id"])
    m = user_message("one")
    now = {"returnImmediately": True}
    eq(rest(p, "POST", "/message:send", {"message": m, "configuration": now})[0], 200,
       "a plain first message")
    m2 = dict(m, parts=[{"text": "two"}])
    aip193(rest(p, "POST", "/message:send", {"message": m2, "configuration": now}), 400,
           "INVALID_ARGUMENT",
           "MESSAGE_ID_REUSED", "its messageId with other content")


def v03_error(answer, status, code, what):
    """A2A 0.3's HTTP+JSON error: HTTP `status`, the JSON-RPC error object."""
    st, hd, doc = answer
    eq(st, status, what + ": HTTP status (body %r)" % (doc,))
    check(isinstance(doc, dict) and "error" not in doc and "jsonrpc" not in doc,
          what + ": no envelope, no AIP-193 object: %r" % (doc,))
    eq(doc.get("code"), code, what + ": code")
    check(isinstance(doc.get("message"), str) and isinstance(doc.get("data"), list),
          what + ": message and data")


def test_a2a_03_routes():
    """0.3's routes below /v1 (docs/wire.md "A2A versions"): proto JSON
    bodies, taken without A2A-Version; with A2A-Version 1.0 "/v1" is a
    tenant of the 1.0 routes, as before."""
    p = srv.port
    tid = new_id()
    GATED.release(tid, "go")
    msg = {"messageId": new_id(), "role": "ROLE_USER", "taskId": tid, "content": [{"text": "hi"}]}
    st, hd, doc = rest(p, "POST", "/v1/message:send", {"message": msg}, ext=True, version=None)
    eq(st, 200, "POST /v1/message:send: %r" % (doc,))
    eq((doc["task"]["id"], doc["task"]["status"]["state"]), (tid, "TASK_STATE_COMPLETED"),
       "a SendMessageResponse {task}, blocking without a configuration")
    eq(doc["task"]["history"][0]["content"], [{"text": "hi"}], "messages hold content")
    st, hd, again = rest(p, "POST", "/v1/message:send", {"message": msg}, ext=True, version=None)
    eq((st, hd.get("idempotent-replayed"), again), (200, "true", doc), "the retry replays")
    st, _, got = rest(p, "GET", "/v1/tasks/" + tid, version=None)
    eq((st, got), (200, doc["task"]), "GET /v1/tasks/{id}: the bare Task")
    st, _, t10 = rest(p, "GET", "/v1/tasks/" + tid)
    eq((st, t10.get("id"), "parts" in t10["history"][0]), (200, tid, True),
       "A2A-Version 1.0: GET /{tenant}/tasks/{id} with the tenant v1, in 1.0's shape")
    v03_error(rest(p, "GET", "/v1/tasks/" + new_id(), version=None), 404, -32001, "an unknown task")
    ans = rest(p, "DELETE", "/v1/message:send", version="0.3")
    v03_error(ans, 405, -32601, "DELETE /v1/message:send")
    eq(ans[1].get("allow"), "POST", "405 names the methods the path takes")
    v03_error(rest(p, "POST", "/v1/message:send", "[1]", version=None), 400, -32600,
              "a body that is not an object")
    live_id = live(p)
    st, _, c = rest(p, "POST", "/v1/tasks/%s:cancel" % live_id, "null", version=None)
    eq((st, c["status"]["state"]), (200, "TASK_STATE_CANCELLED"),
       "a cancel with the body null (Go and Python 0.3 clients), in 0.3's spelling")
    v03_error(rest(p, "POST", "/v1/tasks/%s:cancel" % tid, version=None), 400, -32002,
              "cancel of a completed task: 400, as 0.3 maps TaskNotCancelable")
    v03_error(rest(p, "GET", "/v1/card", version=None), 400, -32007, "no extended card")


def test_streaming_and_resume():
    p = srv.port
    tid = new_id()
    GATED.release(tid, "go")
    body = {"message": user_message("stream", task_id=tid)}
    ext = {"A2A-Extensions": EXT}
    s = RestStream(p, "POST", "/message:stream", body, headers=ext)
    eq((s.status, s.sse), (200, True), "POST /message:stream opens an event stream")
    events = s.rest()
    s.close()
    check(len(events) >= 3, "task, working, completed: %r" % (events,))
    eq(kind(events[0]), "task", "the stream starts with the Task")
    eq([e["id"] for e in events], list(range(1, len(events) + 1)), "ids are the generations")
    eq(state_of(events[-1]), "TASK_STATE_COMPLETED", "and ends with the terminal status")
    # the retry replays the stored events after Last-Event-ID; nothing runs again
    s = RestStream(p, "POST", "/message:stream", body, headers=dict(ext, **{"Last-Event-ID": "1"}))
    eq(s.headers.get("idempotent-replayed"), "true", "a replay")
    again = s.rest()
    s.close()
    eq(again, events[1:], "resumed after event 1: no gap, no duplicate")
    # SubscribeToTask, both verbs, on a live task; resume on a finished one
    live_id = live(p)
    for verb in ("POST", "GET"):
        s = RestStream(p, verb, "/tasks/%s:subscribe" % live_id)
        eq((s.status, s.sse), (200, True), "%s /tasks/{id}:subscribe" % verb)
        first = s.next()
        eq((kind(first), first["data"]["task"]["id"]), ("task", live_id), "the snapshot first")
        s.close()
    s = RestStream(p, "POST", "/tasks/%s:subscribe" % tid, headers={"Last-Event-ID": "2"})
    eq(s.rest(), events[2:], "subscribe resumed after event 2 sends what was missed")
    s.close()
    s = RestStream(p, "POST", "/tasks/%s:subscribe" % tid)
    eq(s.sse, False, "a finished task has nothing to subscribe to")
    aip193((s.status, s.headers, s.doc), 400, "UNIMPLEMENTED", "TASK_TERMINAL",
           "subscribe to a completed task")
    rest(p, "POST", "/tasks/%s:cancel" % live_id)


def test_extension_dedup():
    p = srv.port
    tid = new_id()
    GATED.release(tid, "go")
    m = user_message("once only", task_id=tid)
    st, hd, first = rest(p, "POST", "/message:send", {"message": m}, ext=True)
    eq((st, first["task"]["id"]), (200, tid), "the client-minted id registers the task")
    eq(hd.get("a2a-extensions"), EXT, "the extension is echoed")
    check(hd.get("idempotent-replayed") is None, "the first send is not a replay")
    st, hd, again = rest(p, "POST", "/message:send", {"message": m}, ext=True)
    eq((st, hd.get("idempotent-replayed")), (200, "true"), "the retry replays")
    eq(again, first, "with the same answer")
    other = user_message("plain", task_id=new_id())
    aip193(rest(p, "POST", "/message:send", {"message": other}), 404, "NOT_FOUND",
           "TASK_NOT_FOUND", "an unknown taskId without the extension")


def test_auth_and_limits():
    p = guarded.port
    ans = rest(p, "GET", "/tasks")
    aip193(ans, 401, "UNAUTHENTICATED", "UNAUTHENTICATED", "no bearer token")
    check(ans[1].get("www-authenticate", "").startswith("Bearer"), "WWW-Authenticate")
    aip193(rest(p, "GET", "/tasks", token="wrong"), 401, "UNAUTHENTICATED", "UNAUTHENTICATED",
           "an unknown token")
    eq(rest(p, "GET", "/tasks", token="tok-alice")[0], 200, "a known token")
    big = {"message": user_message("x" * 2048)}
    aip193(rest(p, "POST", "/message:send", big, token="tok-alice"), 413, "INVALID_ARGUMENT",
           "PAYLOAD_TOO_LARGE", "a body over --max-body")
    tid = live(p, token="tok-alice")
    auth = {"Authorization": "Bearer tok-alice"}
    one = RestStream(p, "GET", "/tasks/%s:subscribe" % tid, headers=auth)
    eq(kind(one.next()), "task", "the one stream is open")
    two = RestStream(p, "GET", "/tasks/%s:subscribe" % tid, headers=auth)
    aip193((two.status, two.headers, two.doc), 503, "UNAVAILABLE", "TOO_MANY_STREAMS",
           "a stream past --max-streams")
    eq(two.headers.get("retry-after"), "1", "Retry-After")
    one.close()
    rest(p, "POST", "/tasks/%s:cancel" % tid, token="tok-alice")


if __name__ == "__main__":
    with Onced(GATED.args) as srv, \
            Onced(GATED.args + ["--auth-tokens", TOKENS, "--max-body", "1KiB",
                                "--max-streams", "1"]) as guarded:
        run([test_card_declares_both_bindings, test_send_get_list, test_tenant_routes,
             test_below_the_public_url, test_cancel_and_not_cancelable, test_push_config_crud, test_extended_card,
             test_errors, test_a2a_03_routes, test_streaming_and_resume, test_extension_dedup,
             test_auth_and_limits])
