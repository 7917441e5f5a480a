#!/usr/bin/env python3
"""The gRPC binding end to end: onced --grpc-listen against grpcio, a real
gRPC client (Debian's python3-grpcio), with messages generated at test time
by Debian's protoc from proto/a2a.proto.

  test_a2a_grpc.py SOURCE_DIR

What it proves (docs/wire.md, "gRPC"):
  - the card lists the interface (protocolBinding GRPC, url host:port);
  - every unary method of lf.a2a.v1.A2AService answers as JSON-RPC does;
  - the idempotency extension works as on JSON-RPC: a retry replays with
    idempotent-replayed in the initial metadata, and the same request sent
    again over JSON-RPC is the same request (a replay, not a conflict);
  - errors are gRPC statuses with google.rpc.ErrorInfo details (TASK_NOT_FOUND
    NOT_FOUND; an unsupported a2a-version UNIMPLEMENTED; an unknown method
    UNIMPLEMENTED; no token UNAUTHENTICATED);
  - SendStreamingMessage and SubscribeToTask stream StreamResponses, and a
    continuation sent over JSON-RPC reaches a gRPC subscriber;
  - a blocking SendMessage waits for its task without a thread.
Exit 77 (skipped) when grpcio, protobuf or protoc is missing.
"""
import os
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from pbgen import generate  # noqa: E402
from harness import (EXT, Onced, check, eq, free_port, generation, http_get, needs,  # noqa: E402
                     new_id, result_task, run, scaled, scratch_dir, user_message)

SKIP = 77
SERVICE = "/lf.a2a.v1.A2AService/"
TMP = scratch_dir("once-grpc-")


try:
    import grpc
    from google.protobuf import json_format
except ImportError:
    print("SKIP: python3-grpcio or python3-protobuf is missing")
    sys.exit(SKIP)
if subprocess.run(["sh", "-c", "command -v protoc"], capture_output=True).returncode:
    print("SKIP: protoc is not installed")
    sys.exit(SKIP)
generate(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".."),
         tempfile.mkdtemp(prefix="py", dir=TMP))
import a2a_pb2  # noqa: E402
from google.rpc import error_details_pb2, error_info_pb2, status_pb2  # noqa: E402

srv = None
chan = None
GPORT = None
META = (("a2a-version", "1.0"), ("a2a-extensions", EXT))


def method(name, req_type, resp_type, stream=False):
    make = chan.unary_stream if stream else chan.unary_unary
    return make(SERVICE + name, request_serializer=req_type.SerializeToString,
                response_deserializer=resp_type.FromString)


def send(msg, configuration=None, metadata=META, timeout=30):
    """SendMessage: (response, initial metadata as a dict)."""
    req = a2a_pb2.SendMessageRequest()
    json_format.ParseDict({"message": msg, **({"configuration": configuration}
                                              if configuration else {})}, req)
    call = method("SendMessage", a2a_pb2.SendMessageRequest, a2a_pb2.SendMessageResponse)
    resp, c = call.with_call(req, metadata=metadata, timeout=scaled(timeout))
    return resp, dict(c.initial_metadata())


def as_dict(m):
    return json_format.MessageToDict(m)


def error_infos(err):
    """The google.rpc.ErrorInfo details of a failed call's status."""
    tr = dict(err.trailing_metadata() or ())
    raw = tr.get("grpc-status-details-bin")
    if raw is None:
        return []
    st = status_pb2.Status.FromString(raw)
    out = []
    for a in st.details:
        if a.type_url.endswith("google.rpc.ErrorInfo"):
            ei = error_info_pb2.ErrorInfo.FromString(a.value)
            out.append((ei.reason, ei.domain, dict(ei.metadata)))
    return out


def retry_delays(err):
    """The retry delays (whole seconds) of a failed call's RetryInfo details."""
    raw = dict(err.trailing_metadata() or ()).get("grpc-status-details-bin")
    if raw is None:
        return []
    return [error_details_pb2.RetryInfo.FromString(a.value).retry_delay.seconds
            for a in status_pb2.Status.FromString(raw).details
            if a.type_url == "type.googleapis.com/google.rpc.RetryInfo"]


def fails(fn, code, what):
    try:
        fn()
    except grpc.RpcError as e:
        eq(e.code(), code, what + ": status")
        return e
    check(False, what + ": the call was answered")
    return None


def test_card():
    st, _, body = http_get(srv.port, "/.well-known/agent-card.json")
    import json
    card = json.loads(body)
    grpc_ifaces = [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    eq(len(grpc_ifaces), 1, "the card lists one GRPC interface")
    eq(grpc_ifaces[0]["url"], "127.0.0.1:%d" % GPORT, "its url is the gRPC target")
    eq(grpc_ifaces[0]["protocolVersion"], "1.0", "at protocol version 1.0")


def test_send_replay_and_cross_binding():
    tid = new_id()
    m = user_message("hello over grpc", task_id=tid)
    r1, md1 = send(m)
    task = as_dict(r1)["task"]
    eq(task["id"], tid, "the client's task ID")
    eq(task["status"]["state"], "TASK_STATE_COMPLETED", "the echo completes it")
    check("idempotent-replayed" not in md1, "a first send is not a replay")
    eq(md1.get("a2a-extensions"), EXT, "the activated extension is echoed")
    r2, md2 = send(m)
    eq(md2.get("idempotent-replayed"), "true", "the retry replays")
    eq(as_dict(r2)["task"], task, "the same task")
    # The same request over JSON-RPC: the same digest, so a replay.
    _, hd, doc = srv.rpc("SendMessage", {"message": m}, ext=True)
    eq(result_task(doc)["id"], tid, "JSON-RPC finds the task gRPC made")
    eq(hd.get("idempotent-replayed"), "true", "and replays it")
    # A different message under the same ID is refused on both bindings.
    other = dict(m, parts=[{"text": "something else"}])
    e = fails(lambda: send(other), grpc.StatusCode.INVALID_ARGUMENT,
              "another message under a finished task's messageId")
    check(e is not None and any(r == "MESSAGE_ID_REUSED" for r, _, _ in error_infos(e)),
          "its ErrorInfo says MESSAGE_ID_REUSED: %r" % (e and error_infos(e)))


def test_held_race():
    """32 identical first sends at once over gRPC on SQLite, where a new
    task's one write is held and its answer sent by whoever commits it:
    one task, one registration, every other answer a replay of the
    completed task."""
    n = 32
    tid = new_id()
    m = user_message("race me over grpc", task_id=tid)
    barrier = threading.Barrier(n)
    out = [None] * n

    def one(i):
        barrier.wait()
        try:
            out[i] = send(m, timeout=60)
        except grpc.RpcError as e:   # recorded and asserted below
            out[i] = e
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(scaled(90))
    fresh = 0
    for r in out:
        check(isinstance(r, tuple), "every racer got an answer: %r" % (r,))
        task = as_dict(r[0])["task"]
        eq((task["id"], task["status"]["state"]), (tid, "TASK_STATE_COMPLETED"),
           "every answer is the completed task")
        fresh += r[1].get("idempotent-replayed") != "true"
    eq(fresh, 1, "exactly one answer registered the task, the others replayed")
    _, _, doc = srv.rpc("ListTasks", {"contextId": task["contextId"]})
    eq([t["id"] for t in doc["result"]["tasks"]], [tid], "one task in its context")


def test_get_list_cancel():
    tid = new_id()
    send(user_message("ask:which contract?", task_id=tid))
    get = method("GetTask", a2a_pb2.GetTaskRequest, a2a_pb2.Task)
    t = as_dict(get(a2a_pb2.GetTaskRequest(id=tid), metadata=META, timeout=scaled(30)))
    eq(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "GetTask")
    lst = method("ListTasks", a2a_pb2.ListTasksRequest, a2a_pb2.ListTasksResponse)
    req = a2a_pb2.ListTasksRequest(context_id=t["contextId"])
    got = as_dict(lst(req, metadata=META, timeout=scaled(30)))
    eq([x["id"] for x in got.get("tasks", [])], [tid], "ListTasks by context")
    cancel = method("CancelTask", a2a_pb2.CancelTaskRequest, a2a_pb2.Task)
    c = as_dict(cancel(a2a_pb2.CancelTaskRequest(id=tid), metadata=META, timeout=scaled(30)))
    eq(c["status"]["state"], "TASK_STATE_CANCELED", "CancelTask")
    done = new_id()
    send(user_message("finish at once", task_id=done))
    e = fails(lambda: cancel(a2a_pb2.CancelTaskRequest(id=done), metadata=META,
                             timeout=scaled(30)),
              grpc.StatusCode.FAILED_PRECONDITION, "cancel of a completed task")
    check(e is not None and any(r == "TASK_NOT_CANCELABLE" and d == "a2a-protocol.org"
                                for r, d, _ in error_infos(e)),
          "TASK_NOT_CANCELABLE in domain a2a-protocol.org: %r" % (e and error_infos(e)))


def test_errors():
    get = method("GetTask", a2a_pb2.GetTaskRequest, a2a_pb2.Task)
    missing = new_id()
    e = fails(lambda: get(a2a_pb2.GetTaskRequest(id=missing), metadata=META,
                          timeout=scaled(30)), grpc.StatusCode.NOT_FOUND, "an unknown task")
    infos = e and error_infos(e)
    check(bool(infos) and infos[0][0] == "TASK_NOT_FOUND" and infos[0][1] == "a2a-protocol.org",
          "ErrorInfo TASK_NOT_FOUND first, in A2A's domain: %r" % infos)
    fails(lambda: get(a2a_pb2.GetTaskRequest(id=missing), metadata=(("a2a-version", "99.0"),),
                      timeout=scaled(30)), grpc.StatusCode.UNIMPLEMENTED,
          "a2a-version 99.0")
    nope = chan.unary_unary(SERVICE + "Nope", request_serializer=None,
                            response_deserializer=None)
    fails(lambda: nope(b"", metadata=META, timeout=scaled(30)), grpc.StatusCode.UNIMPLEMENTED,
          "a method the service does not have")
    bad = chan.unary_unary(SERVICE + "GetTask", request_serializer=None,
                           response_deserializer=None)
    fails(lambda: bad(b"\x12\xff\xff", metadata=META, timeout=scaled(30)),
          grpc.StatusCode.INVALID_ARGUMENT, "a request that is not a GetTaskRequest")


def test_streams():
    tid = new_id()
    req = a2a_pb2.SendMessageRequest()
    json_format.ParseDict({"message": user_message("stream me", task_id=tid)}, req)
    ss = method("SendStreamingMessage", a2a_pb2.SendMessageRequest, a2a_pb2.StreamResponse,
                stream=True)
    events = [as_dict(x) for x in ss(req, metadata=META, timeout=scaled(30))]
    check(len(events) >= 2, "SendStreamingMessage streams its events: %r" % events)
    last = events[-1]
    state = (last.get("statusUpdate") or last.get("task"))["status"]["state"]
    eq(state, "TASK_STATE_COMPLETED", "up to the completion")

    # A subscriber over gRPC sees a continuation sent over JSON-RPC.
    tid = new_id()
    send(user_message("ask:which one?", task_id=tid))
    sub = method("SubscribeToTask", a2a_pb2.SubscribeToTaskRequest, a2a_pb2.StreamResponse,
                 stream=True)
    it = sub(a2a_pb2.SubscribeToTaskRequest(id=tid), metadata=META, timeout=scaled(60))
    got = []
    first = threading.Event()

    def read():
        for x in it:
            got.append(as_dict(x))
            first.set()
        first.set()
    th = threading.Thread(target=read)
    th.start()
    check(first.wait(scaled(30)), "the subscription's first event")
    _, _, doc = srv.rpc("SendMessage", {"message": user_message("ACME", task_id=tid)}, ext=True)
    eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "the continuation")
    th.join(scaled(30))
    check(not th.is_alive(), "the subscription ends after the completion")
    last = got[-1] if got else {}
    state = ((last.get("statusUpdate") or last.get("task") or {}).get("status") or {}).get("state")
    eq(state, "TASK_STATE_COMPLETED", "the subscriber saw the completion: %r" % got)


def gen_of(event):
    g = generation(next(iter(event.values())))
    return int(g) if isinstance(g, float) and g.is_integer() else g


def test_resume():
    """last-event-id resumes a stream after a generation, as Last-Event-ID
    does on SSE: every event after it once, none before it; one past the
    task's last generation is refused."""
    tid = new_id()
    req = a2a_pb2.SendMessageRequest()
    json_format.ParseDict({"message": user_message("stream me twice", task_id=tid)}, req)
    ss = method("SendStreamingMessage", a2a_pb2.SendMessageRequest, a2a_pb2.StreamResponse,
                stream=True)
    full = [as_dict(x) for x in ss(req, metadata=META, timeout=scaled(30))]
    # A google.protobuf.Struct holds numbers as doubles: 3 reads back as 3.0.
    gens = [gen_of(e) for e in full]
    check(all(isinstance(g, int) and g > 0 for g in gens),
          "every event carries its generation: %r" % gens)
    sub = method("SubscribeToTask", a2a_pb2.SubscribeToTaskRequest, a2a_pb2.StreamResponse,
                 stream=True)
    after = gens[0]
    md = META + (("last-event-id", str(after)),)
    rest = [as_dict(x) for x in sub(a2a_pb2.SubscribeToTaskRequest(id=tid), metadata=md,
                                    timeout=scaled(30))]
    eq([gen_of(e) for e in rest], [g for g in gens if g > after],
       "resumed after generation %d: the rest, once each" % after)
    md = META + (("last-event-id", str(gens[-1] + 5)),)
    fails(lambda: list(sub(a2a_pb2.SubscribeToTaskRequest(id=tid), metadata=md,
                           timeout=scaled(30))),
          grpc.StatusCode.INVALID_ARGUMENT, "a last-event-id past the task's generation")


def test_blocking_wait():
    tid = new_id()
    r, _ = send(user_message("sleep:0.5", task_id=tid), timeout=60)
    eq(as_dict(r)["task"]["status"]["state"], "TASK_STATE_COMPLETED",
       "a blocking send answers once its task settled")


def test_push_configs():
    tid = new_id()
    send(user_message("ask:push?", task_id=tid))
    create = method("CreateTaskPushNotificationConfig", a2a_pb2.TaskPushNotificationConfig,
                    a2a_pb2.TaskPushNotificationConfig)
    cfg = a2a_pb2.TaskPushNotificationConfig(task_id=tid, id="c1",
                                             url="https://example.com/hook")
    made = as_dict(create(cfg, metadata=META, timeout=scaled(30)))
    eq(made.get("taskId"), tid, "Create: its task")
    getc = method("GetTaskPushNotificationConfig", a2a_pb2.GetTaskPushNotificationConfigRequest,
                  a2a_pb2.TaskPushNotificationConfig)
    got = as_dict(getc(a2a_pb2.GetTaskPushNotificationConfigRequest(task_id=tid, id="c1"),
                       metadata=META, timeout=scaled(30)))
    eq(got.get("url"), "https://example.com/hook", "Get")
    lst = method("ListTaskPushNotificationConfigs",
                 a2a_pb2.ListTaskPushNotificationConfigsRequest,
                 a2a_pb2.ListTaskPushNotificationConfigsResponse)
    ls = as_dict(lst(a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=tid),
                     metadata=META, timeout=scaled(30)))
    eq([c.get("id") for c in ls.get("configs", [])], ["c1"], "List")
    from google.protobuf import empty_pb2
    dele = method("DeleteTaskPushNotificationConfig",
                  a2a_pb2.DeleteTaskPushNotificationConfigRequest, empty_pb2.Empty)
    dele(a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id=tid, id="c1"), metadata=META,
         timeout=scaled(30))
    fails(lambda: getc(a2a_pb2.GetTaskPushNotificationConfigRequest(task_id=tid, id="c1"),
                       metadata=META, timeout=scaled(30)), grpc.StatusCode.NOT_FOUND,
          "Get after Delete")


def test_auth():
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        f.write("s3cret-token-for-alice alice\n")
    gport = free_port()
    with Onced(tmpdir=TMP, store="memory:", args=["--grpc-listen", "127.0.0.1:%d" % gport,
                                                  "--auth-tokens", tokens]):
        with grpc.insecure_channel("127.0.0.1:%d" % gport) as ch:
            get = ch.unary_unary(SERVICE + "GetTask",
                                 request_serializer=a2a_pb2.GetTaskRequest.SerializeToString,
                                 response_deserializer=a2a_pb2.Task.FromString)
            fails(lambda: get(a2a_pb2.GetTaskRequest(id=new_id()), metadata=META,
                              timeout=scaled(30)),
                  grpc.StatusCode.UNAUTHENTICATED, "no token")
            md = META + (("authorization", "Bearer s3cret-token-for-alice"),)
            fails(lambda: get(a2a_pb2.GetTaskRequest(id=new_id()), metadata=md,
                              timeout=scaled(30)),
                  grpc.StatusCode.NOT_FOUND, "with alice's token, an unknown task")


def test_tls():
    """--grpc-listen with --tls-cert: TLS with ALPN h2, the HTTPS pair; a client
    trusting only the test CA completes a send; a plaintext client gets none."""
    if not needs("tls", "gRPC over TLS"):
        return
    d = os.path.join(TMP, "pki")
    os.makedirs(d, exist_ok=True)

    def ssl_(*args):
        p = subprocess.run(["openssl"] + list(args), capture_output=True, text=True,
                           timeout=scaled(60), cwd=d)
        check(p.returncode == 0, "openssl %s: %s" % (args[0], p.stderr[-300:]))
    ssl_("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=grpc CA",
         "-keyout", "ca.key", "-out", "ca.pem")
    ssl_("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "srv.key",
         "-out", "srv.csr")
    with open(os.path.join(d, "srv.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    ssl_("x509", "-req", "-days", "2", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-extfile", "srv.ext", "-out", "srv.pem")
    gport = free_port()
    args = ["--grpc-listen", "127.0.0.1:%d" % gport, "--tls-cert", os.path.join(d, "srv.pem"),
            "--tls-key", os.path.join(d, "srv.key")]
    s = TlsWait(args)
    try:
        creds = grpc.ssl_channel_credentials(open(os.path.join(d, "ca.pem"), "rb").read())
        with grpc.secure_channel("127.0.0.1:%d" % gport, creds) as ch:
            call = ch.unary_unary(SERVICE + "SendMessage",
                                  request_serializer=a2a_pb2.SendMessageRequest.SerializeToString,
                                  response_deserializer=a2a_pb2.SendMessageResponse.FromString)
            req = a2a_pb2.SendMessageRequest()
            tid = new_id()
            json_format.ParseDict({"message": user_message("over tls", task_id=tid)}, req)
            r = as_dict(call(req, metadata=META, timeout=scaled(30)))
            eq(r["task"]["id"], tid, "a send over gRPC with TLS")
        with grpc.insecure_channel("127.0.0.1:%d" % gport) as ch:
            get = ch.unary_unary(SERVICE + "GetTask",
                                 request_serializer=a2a_pb2.GetTaskRequest.SerializeToString,
                                 response_deserializer=a2a_pb2.Task.FromString)
            fails(lambda: get(a2a_pb2.GetTaskRequest(id=tid), metadata=META, timeout=scaled(10)),
                  grpc.StatusCode.UNAVAILABLE, "plaintext to the TLS port")
    finally:
        s.stop()


class TlsWait(Onced):
    """onced whose HTTP side serves TLS: ready when its process is up and its
    gRPC port accepts (the harness's readiness probe speaks plain HTTP)."""

    def wait_ready(self, timeout=15.0):
        import socket
        import time
        end = time.time() + scaled(timeout)
        port = int(self.args[self.args.index("--grpc-listen") + 1].rsplit(":", 1)[1])
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("onced exited: " + self.logtext())
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("onced's gRPC port never opened: " + self.logtext())

    def __init__(self, args):
        super().__init__(tmpdir=TMP, store="memory:", args=args)


def test_stream_share():
    """A principal's share of the stream slots counts gRPC streams too: past
    it, its next stream is refused (UNAVAILABLE, TOO_MANY_STREAMS)."""
    gport = free_port()
    with Onced(tmpdir=TMP, store="memory:", args=["--grpc-listen", "127.0.0.1:%d" % gport,
                                                  "--max-streams-per-principal", "1"]) as s:
        with grpc.insecure_channel("127.0.0.1:%d" % gport) as ch:
            send_ = ch.unary_unary(SERVICE + "SendMessage",
                                   request_serializer=a2a_pb2.SendMessageRequest.SerializeToString,
                                   response_deserializer=a2a_pb2.SendMessageResponse.FromString)
            sub = ch.unary_stream(SERVICE + "SubscribeToTask",
                                  request_serializer=a2a_pb2.SubscribeToTaskRequest.SerializeToString,
                                  response_deserializer=a2a_pb2.StreamResponse.FromString)
            tids = []
            for i in range(2):
                tid = new_id()
                req = a2a_pb2.SendMessageRequest()
                json_format.ParseDict({"message": user_message("ask:q%d" % i, task_id=tid)}, req)
                send_(req, metadata=META, timeout=scaled(30))
                tids.append(tid)
            first = sub(a2a_pb2.SubscribeToTaskRequest(id=tids[0]), metadata=META,
                        timeout=scaled(60))
            next(first)   # the first stream is open (its first event arrived)
            second = sub(a2a_pb2.SubscribeToTaskRequest(id=tids[1]), metadata=META,
                         timeout=scaled(30))
            e = fails(lambda: next(second), grpc.StatusCode.UNAVAILABLE, "a second stream")
            check(e is not None and any(r == "TOO_MANY_STREAMS" for r, _, _ in error_infos(e)),
                  "its ErrorInfo says TOO_MANY_STREAMS: %r" % (e and error_infos(e)))
            # HTTP's Retry-After: 1, as gRPC says it: google.rpc.RetryInfo
            eq(retry_delays(e), [1], "a RetryInfo detail asks for a retry in a second")
            first.cancel()


def main():
    global srv, chan, GPORT
    GPORT = free_port()
    srv = Onced(tmpdir=TMP, args=["--grpc-listen", "127.0.0.1:%d" % GPORT])
    chan = grpc.insecure_channel("127.0.0.1:%d" % GPORT)
    try:
        run([test_card, test_send_replay_and_cross_binding, test_held_race, test_get_list_cancel,
             test_errors,
             test_streams, test_resume, test_blocking_wait, test_push_configs, test_auth, test_tls,
             test_stream_share])
    finally:
        chan.close()
        srv.stop()


if __name__ == "__main__":
    main()
