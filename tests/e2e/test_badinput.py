"""Bad input against a real onced: bodies over the limit, JSON nested too
deep, invalid UTF-8, too many parts, bad IDs, missing fields, wrong types,
batches, wrong content types, oversized headers. Each gets the right
JSON-RPC error (or HTTP status), the server stays up, and the task stored
before the barrage is byte-for-byte unchanged afterwards, and no task was
created by any refused request.
"""
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, ONCED, Onced, check, free_port, eq, error_info, http_request, new_id, rpc, run, scaled,
                     user_message)

srv = None
BASE_ID = "t-base-" + new_id()
baseline = None


def snapshot():
    st, _, doc = srv.rpc("GetTask", {"id": BASE_ID})
    eq(st, 200, "GetTask of the baseline task")
    st, _, lst = srv.rpc("ListTasks", {"pageSize": 100, "includeArtifacts": True})
    return doc["result"], sorted(t["id"] for t in lst["result"]["tasks"])


def still_fine(what):
    """The server answers, the stored task is unchanged, no task appeared."""
    eq(snapshot(), baseline, "after %s: stored tasks unchanged" % what)


def post_raw(body, headers=None, version="1.0"):
    h = {"Content-Type": "application/json"}
    if version:
        h["A2A-Version"] = version
    h.update(headers or {})
    st, hd, data = http_request(srv.port, "POST", "/", body=body, headers=h)
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    return st, hd, doc


def big_head_refused(port, body, size):
    """onced answers a head over its connection memory with 431 and closes;
    if it closes before the client has sent all of its request, the client
    sees the connection closed instead."""
    try:
        st, hd, data = http_request(port, "POST", "/", body=body,
                                    headers={"Content-Type": "application/json",
                                             "A2A-Version": "1.0", "X-Big": "a" * size})
        eq(st, 431, "a %d KiB header: 431" % (size // 1024))
    except OSError:
        pass   # refused: closed while the client was still sending


def test_conn_memory():
    """--conn-memory sizes the head a connection may carry; out of its range
    onced refuses to start, naming the flag."""
    body = envelope("GetTask", {"id": BASE_ID}).encode()
    big = Onced(["--conn-memory", "32KiB"])
    try:
        st, hd, data = http_request(big.port, "POST", "/", body=body,
                                    headers={"Content-Type": "application/json",
                                             "A2A-Version": "1.0", "X-Big": "a" * (20 * 1024)})
        eq(st, 200, "--conn-memory 32KiB: a 20 KiB header is served")
        big_head_refused(big.port, body, 40 * 1024)
    finally:
        big.stop()
    for bad in ("1KiB", "2MiB"):
        out = subprocess.run([ONCED, "--listen", "127.0.0.1:%d" % free_port(), "--store",
                              "memory:", "--conn-memory", bad], capture_output=True, text=True,
                             timeout=scaled(30))
        check(out.returncode != 0, "--conn-memory %s: onced does not start" % bad)
        check("--conn-memory" in out.stderr, "--conn-memory %s: the error names the flag (%r)"
              % (bad, out.stderr[-300:]))


def expect(st, doc, http, code, what, field=None):
    eq(st, http, what + ": HTTP status")
    check(doc is not None and doc.get("jsonrpc") == "2.0", what + ": a JSON-RPC body")
    c, r, m = error_info(doc)
    eq(c, code, what + ": code")
    if field is not None:
        eq(r, "INVALID_PARAMS", what + ": reason")
        eq(m.get("field"), field, what + ": metadata.field")
    still_fine(what)


def envelope(method, params):
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": method, "params": params})


def send_params(msg, **extra):
    p = {"message": msg}
    p.update(extra)
    return p


def test_setup():
    global baseline
    st, _, doc = srv.rpc("SendMessage", {"message": user_message("ask:keep me?",
                                                                  task_id=BASE_ID)}, ext=True)
    eq(doc["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "baseline task")
    baseline = snapshot()


def test_body_limits():
    # just over the 1 MiB default
    big = envelope("SendMessage", send_params(user_message("x" * (1 << 20), task_id=BASE_ID)))
    st, hd, doc = post_raw(big.encode())
    expect(st, doc, 413, -32600, "body over 1 MiB")
    # exactly at the limit is read (and judged on its merits)
    pad = (1 << 20) - len(envelope("GetTask", {"id": BASE_ID, "x": ""}))
    st, hd, doc = post_raw(envelope("GetTask", {"id": BASE_ID, "x": "y" * pad}).encode())
    eq(st, 200, "a body of exactly 1 MiB is accepted")
    eq(doc["result"]["id"], BASE_ID, "and answered")
    # far over the limit: refused without reading it all; the client may see
    # the 413 or a closed connection, but the server stays up
    try:
        st, hd, doc = post_raw(b"[" * (20 << 20))
        eq(st, 413, "20 MiB body status")
    except OSError:
        pass
    still_fine("a 20 MiB body")


def test_json_errors():
    deep = '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":%s}}' % (
        "[" * 100 + "]" * 100)
    st, hd, doc = post_raw(deep.encode())
    expect(st, doc, 200, -32700, "JSON nested 100 deep")
    msg = user_message("ok", task_id=BASE_ID)
    msg["metadata"] = {"k": json.loads("[" * 70 + "]" * 70)}
    st, hd, doc = post_raw(envelope("SendMessage", send_params(msg)).encode())
    expect(st, doc, 200, -32700, "metadata nested 70 deep")
    body = envelope("SendMessage", send_params(user_message("PLACEHOLDER", task_id=BASE_ID)))
    st, hd, doc = post_raw(body.encode().replace(b"PLACEHOLDER", b"caf\xe9 \xff\xfe"))
    expect(st, doc, 200, -32700, "invalid UTF-8 in a string")
    st, hd, doc = post_raw(body.encode().replace(b"PLACEHOLDER", b"\xed\xa0\x80"))
    expect(st, doc, 200, -32700, "encoded surrogate")
    st, hd, doc = post_raw(b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a\x00"}}')
    expect(st, doc, 200, -32700, "NUL byte")
    for raw in (b"", b"{", b"not json", b'{"jsonrpc":"2.0",}', b'{"a":1}{"b":2}'):
        st, hd, doc = post_raw(raw)
        expect(st, doc, 200, -32700, "malformed JSON %r" % raw[:20])
    st, hd, doc = post_raw(b'{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask"}')
    expect(st, doc, 200, -32700, "duplicate keys")


def test_envelope_errors():
    one = json.loads(envelope("GetTask", {"id": BASE_ID}))
    st, hd, doc = post_raw(json.dumps([one, one]).encode())
    expect(st, doc, 200, -32600, "batch request")
    check("batch" in doc["error"]["message"].lower(), "the batch refusal says why")
    st, hd, doc = post_raw(b"[]")
    expect(st, doc, 200, -32600, "empty batch")
    for body, what in ((b'"GetTask"', "a string"), (b"42", "a number"),
                       (b'{"jsonrpc":"2.0","method":"GetTask","params":{}}', "a notification"),
                       (b'{"jsonrpc":"2.0","id":{},"method":"GetTask"}', "an object id"),
                       (b'{"jsonrpc":"1.0","id":1,"method":"GetTask"}', "jsonrpc 1.0"),
                       (b'{"id":1,"method":"GetTask"}', "no jsonrpc"),
                       (b'{"jsonrpc":"2.0","id":1}', "no method"),
                       (b'{"jsonrpc":"2.0","id":1,"method":["GetTask"]}', "method not a string")):
        st, hd, doc = post_raw(body)
        expect(st, doc, 200, -32600, what)
    st, hd, doc = post_raw(envelope("NoSuchMethod", {}).encode())
    expect(st, doc, 200, -32601, "unknown method")
    st, hd, doc = post_raw(envelope("once/admin/setClockOffset", {"offsetMs": 10 ** 9}).encode())
    expect(st, doc, 200, -32601, "admin method without --test-admin")


def test_param_errors():
    tid = BASE_ID
    ok = user_message("fine", task_id=tid)
    parts65 = dict(ok, parts=[{"text": "p"}] * 65)
    cases = [
        # (params, field)
        ({}, "message"),
        ({"message": "hello"}, "message"),
        ({"message": dict(ok, messageId=None)}, "message.messageId"),
        ({"message": {k: v for k, v in ok.items() if k != "messageId"}}, "message.messageId"),
        ({"message": dict(ok, messageId="")}, "message.messageId"),
        ({"message": dict(ok, messageId="has space")}, "message.messageId"),
        ({"message": {k: v for k, v in ok.items() if k != "role"}}, "message.role"),
        ({"message": dict(ok, role="ROLE_AGENT")}, "message.role"),
        ({"message": dict(ok, role="user")}, "message.role"),
        ({"message": dict(ok, role=1)}, "message.role"),
        ({"message": {k: v for k, v in ok.items() if k != "parts"}}, "message.parts"),
        ({"message": dict(ok, parts="hi")}, "message.parts"),
        ({"message": dict(ok, parts=[])}, "message.parts"),
        ({"message": parts65}, "message.parts"),
        ({"message": dict(ok, parts=[{"text": "a", "url": "b"}])}, "message.parts[0]"),
        ({"message": dict(ok, parts=[{"metadata": {}}])}, "message.parts[0]"),
        ({"message": dict(ok, parts=[{"text": 5}])}, "message.parts[0].text"),
        ({"message": dict(ok, parts=[{"raw": "***"}])}, "message.parts[0].raw"),
        ({"message": dict(ok, parts=[{"text": "a", "kind": "text"}])}, "message.parts[0].kind"),
        ({"message": dict(ok, taskId="bad id")}, "message.taskId"),
        ({"message": dict(ok, taskId="x" * 129)}, "message.taskId"),
        ({"message": dict(ok, taskId="-dash")}, "message.taskId"),
        ({"message": dict(ok, taskId=12)}, "message.taskId"),
        ({"message": dict(ok, contextId="c/1")}, "message.contextId"),
        ({"message": dict(ok, metadata=[1])}, "message.metadata"),
        ({"message": dict(ok, referenceTaskIds="t")}, "message.referenceTaskIds"),
        ({"message": ok, "configuration": []}, "configuration"),
        ({"message": ok, "configuration": {"historyLength": "2"}}, "configuration.historyLength"),
        ({"message": ok, "configuration": {"acceptedOutputModes": "text/plain"}},
         "configuration.acceptedOutputModes"),
        ({"message": ok, "configuration": {"acceptedOutputModes": ["text/plain", 3]}},
         "configuration.acceptedOutputModes"),
        ({"message": ok, "configuration": {"returnImmediately": "yes"}},
         "configuration.returnImmediately"),
        ({"message": ok, "metadata": "m"}, "metadata"),
        ({"message": ok, "tenant": 7}, "tenant"),
    ]
    for params, field in cases:
        st, hd, doc = srv.rpc("SendMessage", params, ext=True)
        expect(st, doc, 200, -32602, "SendMessage %s" % field, field=field)
    for method, params, field in (
            ("GetTask", {}, "id"), ("GetTask", {"id": 7}, "id"),
            ("GetTask", {"id": "a b"}, "id"), ("GetTask", {"id": "é"}, "id"),
            ("GetTask", {"id": BASE_ID, "historyLength": "all"}, "historyLength"),
            ("CancelTask", {"id": ["x"]}, "id"),
            ("SubscribeToTask", {"id": BASE_ID, "tenant": ["t"]}, "tenant"),
            ("ListTasks", {"pageSize": "10"}, "pageSize"),
            ("ListTasks", {"status": "RUNNING"}, "status"),
            ("tasks/send", {"message": {"role": "user", "parts": [{"text": "x"}]}}, "id"),
            ("tasks/send", {"id": BASE_ID, "message": {"role": "user", "parts": []}},
             "message.parts")):
        st, hd, doc = srv.rpc(method, params)
        expect(st, doc, 200, -32602, "%s %s" % (method, field), field=field)
    st, hd, doc = srv.rpc("GetTask", [BASE_ID])
    expect(st, doc, 200, -32602, "params by position", field="params")


def test_http_errors():
    body = envelope("GetTask", {"id": BASE_ID}).encode()
    # A2A 1.0 section 5.4 pairs HTTP 415 with ContentTypeNotSupportedError.
    st, hd, doc = post_raw(body, headers={"Content-Type": "text/plain"})
    expect(st, doc, 415, -32005, "Content-Type text/plain")
    eq(error_info(doc)[1], "CONTENT_TYPE_NOT_SUPPORTED", "Content-Type text/plain: reason")
    st, hd, doc = post_raw(body, headers={"Content-Type": "application/json; charset=latin1"})
    expect(st, doc, 415, -32005, "a non-UTF-8 charset")
    st, hd, doc = post_raw(body, headers={"Content-Type": "application/a2a+json; charset=utf-8"})
    eq(doc["result"]["id"], BASE_ID, "application/a2a+json is accepted")
    st, hd, data = http_request(srv.port, "GET", "/")
    eq(st, 405, "GET / is not JSON-RPC")
    st, hd, data = http_request(srv.port, "POST", "/nope", body=body)
    eq(st, 404, "unknown path")
    # The request head's limit (docs/wire.md, Limits; --conn-memory, 12 KiB
    # by default): 10 KiB of headers are served, 20 KiB are not (the
    # connection's memory is sized to what A2A requests need: libmicrohttpd
    # clears all of it after every request, and an open stream keeps it).
    st, hd, doc = post_raw(body, headers={"X-Big": "a" * (10 * 1024)})
    eq(st, 200, "a 10 KiB header is served")
    big_head_refused(srv.port, body, 20 * 1024)
    still_fine("a 20 KiB header")
    # a header larger than the per-connection memory limit
    try:
        st, hd, doc = post_raw(body, headers={"X-Big": "a" * (200 * 1024)})
        check(st in (400, 413, 431), "oversized header refused (got %d)" % st)
    except OSError:
        pass
    still_fine("an oversized header")
    # a client that disconnects in the middle of a body
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: 1000\r\n\r\n{\"jsonrpc\":")
    s.close()
    still_fine("a half-sent body")


def test_keepalive_after_errors():
    """Errors do not poison a keep-alive connection."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=scaled(10))
    try:
        h = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        for body, code in ((b"{", -32700), (b"[]", -32600),
                           (envelope("GetTask", {"id": BASE_ID}).encode(), None)):
            c.request("POST", "/", body=body, headers=h)
            r = c.getresponse()
            doc = json.loads(r.read())
            if code is None:
                eq(doc["result"]["id"], BASE_ID, "the same connection still answers")
            else:
                eq(doc["error"]["code"], code, "error on a kept-alive connection")
    finally:
        c.close()


def main():
    global srv
    srv = Onced()
    try:
        run([test_setup, test_body_limits, test_json_errors, test_envelope_errors,
             test_param_errors, test_http_errors, test_keepalive_after_errors,
             test_conn_memory])
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
