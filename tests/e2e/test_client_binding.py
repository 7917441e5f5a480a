"""`once --binding grpc|http_json|auto` against a real onced serving all three
A2A bindings (--grpc-listen): the client's outbox, retries, stream resume
and recovery work the same over each (docs/wire.md, "The client's
bindings").

For gRPC and HTTP+JSON in turn:
- send --wait, continue of an input-required task, get and cancel: the
  answers are JSON-RPC's (state, task, artifacts), and the task is one
  task whichever binding carried which call: a task sent over the binding
  is read and continued over JSON-RPC, and the other way round;
- a send killed after onced answered (the answer lost): `once recover` over
  the binding resends the same intent and onced replays it
  (replayed: true), one task on onced; so does a recover over JSON-RPC of
  a send made over the binding (every binding carries the same request);
- an unknown task: refused, exit 3, with the code and reason JSON-RPC gives;
- with --auth-tokens: no token is exit 1 with the CLI's 401 advice, the
  token goes through;
- a wait whose stream is cut mid-task (onced killed, then restarted on the
  same store and ports) resumes (Last-Event-ID / last-event-id) and ends
  COMPLETED having seen every generation from its first on, once.
And:
- SIGINT stops a wait on either binding's stream (exit 130) and onced sees
  the stream closed;
- --agent A,B (two replicas, a gRPC port each): after A dies, get and
  recover over gRPC and HTTP+JSON go to B's own interfaces;
- auto follows the card: onced lists JSONRPC first, so auto is JSON-RPC;
- a forced binding the card does not list: exit 1, never retried.

Which binding carried a call is read from onced's request log: HTTP
requests are logged with their path (JSON-RPC "/", HTTP+JSON the route),
gRPC calls are not logged as HTTP requests at all.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (GatedAgent, Onced, check, eq, free_port, http_get, needs,  # noqa: E402
                     scaled, scratch_dir, wait_until)
from test_client import FAST, ONCE, once, once_json, outbox_intents, run_client_tests  # noqa: E402

TMP = scratch_dir("once-binding-")
BINDINGS = ("grpc", "http_json")
GATES = os.path.join(TMP, "gates")
STEPS = GatedAgent("step 'step 1'; step 'step 2'; gate a; step 'step 3'; gate b; "
                   "step 'step 4'", GATES)
LEASE = "%dms" % scaled(1500)


def serve(args=(), store=None, port=None, gport=None, tmpdir=None):
    """onced serving JSON-RPC and HTTP+JSON on port, gRPC on gport."""
    gport = gport or free_port()
    srv = Onced(args=["--grpc-listen", "127.0.0.1:%d" % gport] + list(args), store=store,
                port=port, tmpdir=tmpdir)
    srv.gport = gport
    srv.url = "http://127.0.0.1:%d/" % srv.port
    return srv


def requests(srv, tid):
    """onced's HTTP request log lines about task tid: (method, path)."""
    out = []
    for ln in srv.logtext_all().splitlines():
        try:
            d = json.loads(ln)
        except ValueError:
            continue
        if d.get("event") == "request" and d.get("task") == tid:
            out.append((d.get("method"), d.get("path")))
    return out


def carried_by(binding, srv, tid, method):
    """Check that the `method` calls about tid went over binding."""
    paths = [p for m, p in requests(srv, tid) if m == method]
    if binding == "grpc":
        eq(paths, [], "%s of %s over gRPC: no HTTP request for it" % (method, tid))
    elif binding == "http_json":
        check(paths and all(p != "/" for p in paths),
              "%s of %s over HTTP+JSON routes: %r" % (method, tid, paths))
    else:
        check(paths and all(p == "/" for p in paths), "%s over JSON-RPC: %r" % (method, paths))


def server_tasks(srv):
    st, _, doc = srv.rpc("ListTasks", {"pageSize": 100})
    eq(st, 200, "ListTasks")
    return sorted(t["id"] for t in doc["result"]["tasks"])


def ask(srv, outbox, b):
    """A send over b that stops at input-required; its task ID."""
    rc, doc = once_json(outbox, "--binding", b, "send", "--agent", srv.url, "--text",
                        "ask:Which court?", "--wait", *FAST)
    eq((rc, doc["state"]), (0, "TASK_STATE_INPUT_REQUIRED"),
       "%s: send --wait stops at input-required (%r)" % (b, doc))
    eq(doc["streamed"], True, "%s: followed on the binding's stream" % b)
    return doc["taskId"]


# ---------------------------------------------------------------------------

def test_round_trip_each_binding():
    with serve() as srv:
        for b in BINDINGS:
            outbox = os.path.join(TMP, "round-%s.db" % b)
            tid = ask(srv, outbox, b)
            carried_by(b, srv, tid, "SendMessage")
            carried_by(b, srv, tid, "SubscribeToTask")
            rc, doc = once_json(outbox, "--binding", b, "continue", tid, "--text", "Zurich",
                                "--wait", *FAST)
            eq((rc, doc["state"], doc["taskId"]), (0, "TASK_STATE_COMPLETED", tid),
               "%s: continue --wait completes the same task (%r)" % (b, doc))
            arts = doc["task"].get("artifacts") or []
            check(any("Zurich" in json.dumps(a) for a in arts), "%s: the answer's artifact" % b)
            rc, doc = once_json(outbox, "--binding", b, "get", tid)
            eq((rc, doc["state"]), (0, "TASK_STATE_COMPLETED"), "%s: get" % b)
            carried_by(b, srv, tid, "GetTask")
            rc, doc = once_json(outbox, "--binding", b, "cancel", tid)
            eq((rc, doc["error"]["reason"], doc["state"]),
               (3, "TASK_NOT_CANCELABLE", "TASK_STATE_COMPLETED"),
               "%s: cancel of a completed task is refused as on JSON-RPC" % b)

            rc, doc = once_json(outbox, "--binding", b, "send", "--agent", srv.url, "--text",
                                "sleep:30", *FAST)
            eq(rc, 0, "%s: a long task" % b)
            long_id = doc["taskId"]
            rc, doc = once_json(outbox, "--binding", b, "cancel", long_id)
            eq((rc, doc["state"]), (0, "TASK_STATE_CANCELED"), "%s: cancel (%r)" % (b, doc))
            carried_by(b, srv, long_id, "CancelTask")
            for it in outbox_intents(outbox):
                eq(it["state"], "final", "%s: intent %s final" % (b, it["taskId"]))


def test_unknown_task_refused_as_on_jsonrpc():
    with serve() as srv:
        outbox = os.path.join(TMP, "unknown.db")
        rc, want = once_json(outbox, "--binding", "jsonrpc", "get", "no-such-task", "--agent",
                             srv.url)
        eq((rc, want["error"]["reason"]), (3, "TASK_NOT_FOUND"), "JSON-RPC refuses it")
        for b in BINDINGS:
            rc, doc = once_json(outbox, "--binding", b, "get", "no-such-task", "--agent", srv.url)
            eq(rc, 3, "%s: refused, exit 3 (%r)" % (b, doc))
            eq((doc["outcome"], doc["error"]["code"], doc["error"]["reason"]),
               (want["outcome"], want["error"]["code"], want["error"]["reason"]),
               "%s: the same outcome, code and reason as JSON-RPC" % b)
            eq(doc["attempts"], 1, "%s: a refusal is not retried" % b)


def test_lost_answer_replayed_on_recover():
    with serve() as srv:
        for b in BINDINGS:
            outbox = os.path.join(TMP, "lost-%s.db" % b)
            rc, _, err = once(outbox, "--binding", b, "send", "--agent", srv.url, "--text", "once",
                              env={"ONCE_TEST_CRASH": "after-send"})
            eq(rc, -signal.SIGKILL, "%s: killed after onced answered (%s)" % (b, err))
            its = outbox_intents(outbox)
            eq([(i["state"], i["attempts"]) for i in its], [("pending", 1)],
               "%s: the intent is pending, sent once" % b)
            tid = its[0]["taskId"]
            check(tid in server_tasks(srv), "%s: onced has the task" % b)
            rc, doc = once_json(outbox, "--binding", b, "recover", *FAST)
            eq((rc, doc["resent"]), (0, 1), "%s: recover resends it (%r)" % (b, doc))
            eq((doc["intents"][0]["taskId"], doc["intents"][0]["replayed"]), (tid, True),
               "%s: onced replays its first answer" % b)
            eq(server_tasks(srv).count(tid), 1, "%s: one task" % b)
            carried_by(b, srv, tid, "SendMessage")


def test_cross_binding_same_task():
    with serve() as srv:
        for b in BINDINGS:
            outbox = os.path.join(TMP, "cross-%s.db" % b)
            tid = ask(srv, outbox, b)
            rc, doc = once_json(outbox, "--binding", "jsonrpc", "get", tid)
            eq((rc, doc["taskId"], doc["state"]), (0, tid, "TASK_STATE_INPUT_REQUIRED"),
               "sent over %s, read over JSON-RPC: the same task" % b)
            rc, doc = once_json(outbox, "--binding", "jsonrpc", "continue", tid, "--text", "Zurich",
                                "--wait", *FAST)
            eq((rc, doc["taskId"], doc["state"]), (0, tid, "TASK_STATE_COMPLETED"),
               "continued over JSON-RPC (%r)" % doc)
            # And back: a task sent over JSON-RPC, read over the binding.
            rc, doc = once_json(outbox, "--binding", "jsonrpc", "send", "--agent", srv.url,
                                "--text", "hello", "--wait", *FAST)
            eq(rc, 0, "sent over JSON-RPC")
            rc, got = once_json(outbox, "--binding", b, "get", doc["taskId"])
            eq((rc, got["taskId"], got["state"]), (0, doc["taskId"], doc["state"]),
               "read over %s: the same task" % b)
            # A send over the binding whose answer was lost, resent over
            # JSON-RPC by recover: the same request to onced, replayed.
            rc, _, _ = once(outbox, "--binding", b, "send", "--agent", srv.url, "--text", "lost",
                            env={"ONCE_TEST_CRASH": "after-send"})
            eq(rc, -signal.SIGKILL, "%s: killed after onced answered" % b)
            rc, doc = once_json(outbox, "--binding", "jsonrpc", "recover", *FAST)
            eq((rc, doc["resent"], doc["intents"][0]["replayed"]), (0, 1, True),
               "sent over %s, resent over JSON-RPC: replayed (%r)" % (b, doc))
            eq(len(server_tasks(srv)), 3 * (BINDINGS.index(b) + 1), "no task twice")


def test_auth_token():
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        f.write("tok-alice alice\n")
    with serve(["--auth-tokens", tokens]) as srv:
        for b in BINDINGS:
            outbox = os.path.join(TMP, "auth-%s.db" % b)
            rc, out, err = once(outbox, "--binding", b, "send", "--agent", srv.url, "--text", "hi",
                                *FAST)
            eq(rc, 1, "%s: no token: an error (%s)" % (b, err))
            check("pass --token or set ONCE_TOKEN" in err, "%s: the 401 advice: %r" % (b, err))
            rc, doc = once_json(outbox, "--binding", b, "send", "--agent", srv.url, "--text", "hi",
                                "--token", "tok-alice", "--wait", *FAST)
            eq((rc, doc["state"]), (0, "TASK_STATE_COMPLETED"), "%s: the token goes through" % b)
            rc, doc = once_json(outbox, "--binding", b, "get", doc["taskId"], "--token",
                                "tok-alice")
            eq((rc, doc["state"]), (0, "TASK_STATE_COMPLETED"), "%s: get with the token" % b)


def stored_generations(db, tid):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=scaled(10))
    try:
        return [g for (g,) in c.execute("SELECT e.generation FROM events e JOIN tasks t "
                                        "ON e.tid=t.rid WHERE t.task_id=? "
                                        "ORDER BY e.generation", (tid,))]
    finally:
        c.close()


def streams_open(srv):
    st, _, body = http_get(srv.port, "/metrics")
    for ln in body.decode().splitlines():
        if ln.startswith("once_sse_streams_open "):
            return float(ln.split()[1])
    return 0


def status_text(task):
    parts = ((task.get("status") or {}).get("message") or {}).get("parts") or []
    return parts[0].get("text") if parts else None


def test_stream_cut_resumes():
    for b in BINDINGS:
        tmp = scratch_dir()
        db = os.path.join(tmp, "registry.db")
        outbox = os.path.join(tmp, "outbox.db")
        args = STEPS.args + ["--lease", LEASE, "--exec-grace", "1s"]
        srv = serve(args, store="sqlite:" + db, tmpdir=tmp)
        port, gport = srv.port, srv.gport
        p = subprocess.Popen([ONCE, "--outbox", outbox, "--json", "--binding", b, "send",
                              "--agent", srv.url, "--text", "go", "--wait", "--attempts", "200",
                              "--backoff-base", "50ms", "--backoff-cap", "200ms",
                              "--budget-burst", "400"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        srv2 = None
        try:
            def tid():
                its = outbox_intents(outbox)
                return its[0]["taskId"] if its and its[0]["state"] != "pending" else None
            task = wait_until(tid, timeout=15, what="%s: the send acknowledged" % b)

            def task_state():
                st, _, d = srv.rpc("GetTask", {"id": task})
                return d.get("result") or {}
            wait_until(lambda: status_text(task_state()) == "step 2", timeout=15,
                       what="%s: the agent's first events" % b)
            # The wait's stream is open (onced counts gRPC's streams with
            # SSE's): the cut lands mid-stream.
            wait_until(lambda: streams_open(srv) >= 1, timeout=15,
                       what="%s: the wait's stream to open" % b)
            srv.kill9()   # every connection cut mid-stream, the task mid-way
            srv.stop()
            srv2 = serve(args, store="sqlite:" + db, port=port, gport=gport, tmpdir=tmp)
            STEPS.release(task, "a")
            STEPS.release(task, "b")
            out, err = p.communicate(timeout=scaled(60))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        try:
            eq(p.returncode, 0, "%s: the wait ends well (stderr %r)" % (b, err))
            doc = json.loads(out)
            eq((doc["taskId"], doc["state"]), (task, "TASK_STATE_COMPLETED"),
               "%s: the wait reports the terminal state" % b)
            gens = doc["generations"]
            stored = stored_generations(db, task)
            eq(gens, stored[stored.index(gens[0]):],
               "%s: every generation from the first seen on, across the cut: no gap, no repeat" % b)
            eq(doc["streamed"], True, "%s: followed over the binding's stream" % b)
            check(doc["attempts"] >= 2, "%s: reconnected (%d attempts)" % (b, doc["attempts"]))
        finally:
            srv2.stop()


def test_interrupt_stops_a_stream():
    """SIGINT while a wait follows a task over the binding's stream: exit 130,
    the stream closed on onced's side."""
    with serve() as srv:
        for b in BINDINGS:
            outbox = os.path.join(TMP, "interrupt-%s.db" % b)
            rc, doc = once_json(outbox, "--binding", b, "send", "--agent", srv.url, "--text",
                                "sleep:60", *FAST)
            eq(rc, 0, "%s: a long task" % b)
            w = subprocess.Popen([ONCE, "--outbox", outbox, "--binding", b, "wait",
                                  doc["taskId"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            try:
                wait_until(lambda: streams_open(srv) >= 1, timeout=15,
                           what="%s: the wait's stream to open" % b)
                w.send_signal(signal.SIGINT)
                w.communicate(timeout=scaled(10))
            finally:
                if w.poll() is None:
                    w.kill()
                    w.wait()
            eq(w.returncode, 130, "%s: interrupted" % b)
            wait_until(lambda: streams_open(srv) == 0, timeout=15,
                       what="%s: onced to see the stream closed" % b)
            once(outbox, "--binding", b, "cancel", doc["taskId"])


def test_failover_between_replicas():
    """--agent A,B: two onced replicas on one SQLite file, each with a gRPC
    port of its own. Over gRPC and HTTP+JSON a call that fails over to B
    goes to B's own interface (read from B's card), not A's."""
    tmp = scratch_dir()
    store = "sqlite:" + os.path.join(tmp, "registry.db")
    a = serve(["--replica-id", "a"], store=store, tmpdir=tmp)
    b = serve(["--replica-id", "b"], store=store, tmpdir=tmp)
    try:
        both = a.url + "," + b.url
        sent = {}
        for bd in BINDINGS:
            outbox = os.path.join(tmp, "failover-%s.db" % bd)
            rc, doc = once_json(outbox, "--binding", bd, "send", "--agent", both, "--text", "hi",
                                "--wait", *FAST)
            eq((rc, doc["state"], doc["endpoint"]), (0, "TASK_STATE_COMPLETED", a.url),
               "%s: A answered (%r)" % (bd, doc))
            carried_by(bd, a, doc["taskId"], "SendMessage")
            rc, _, _ = once(outbox, "--binding", bd, "send", "--agent", both, "--text", "later",
                            env={"ONCE_TEST_CRASH": "after-outbox"})
            eq(rc, -signal.SIGKILL, "%s: a send that died before it was sent" % bd)
            sent[bd] = (outbox, doc["taskId"])
        a.kill9()
        for bd in BINDINGS:
            outbox, tid = sent[bd]
            rc, doc = once_json(outbox, "--binding", bd, "get", tid, *FAST)
            eq((rc, doc["state"], doc["endpoint"]), (0, "TASK_STATE_COMPLETED", b.url),
               "%s: get goes through B (%r)" % (bd, doc))
            carried_by(bd, b, tid, "GetTask")
            rc, doc = once_json(outbox, "--binding", bd, "recover", *FAST)
            eq((rc, doc["resent"]), (0, 1), "%s: the pending send goes through B (%r)" % (bd, doc))
            pending = [i for i in doc["intents"] if i["taskId"] != tid][0]
            eq((pending["outcome"], pending["endpoint"]), ("ok", b.url),
               "%s: answered by B" % bd)
            carried_by(bd, b, pending["taskId"], "SendMessage")
    finally:
        a.stop()
        b.stop()


def test_grpc_over_tls():
    """An https:// agent: gRPC over TLS to the card's host:port, verified
    against --cacert; a certificate the client cannot trust fails the call
    at once, nothing sent, as over HTTPS; --insecure skips the check."""
    if not needs("tls", "gRPC over TLS"):
        return
    import test_tls
    test_tls.make_pki()
    gport = free_port()
    with test_tls.TlsOnced(args=["--grpc-listen", "127.0.0.1:%d" % gport]) as srv:
        outbox = os.path.join(TMP, "tls.db")
        ca = test_tls.path("ca.pem")
        rc, doc = once_json(outbox, "--binding", "grpc", "--cacert", ca, "send", "--agent",
                            srv.url(), "--text", "over tls", "--wait", *FAST)
        eq((rc, doc["state"]), (0, "TASK_STATE_COMPLETED"), "grpc over TLS (%r)" % doc)
        carried_by("grpc", srv, doc["taskId"], "SendMessage")
        # The card is remembered (its interfaces too): this send goes
        # straight to gRPC, whose handshake fails without the CA.
        rc, doc = once_json(outbox, "--binding", "grpc", "send", "--agent", srv.url(), "--text",
                            "untrusted", *FAST)
        eq((rc, doc["outcome"], doc["attempts"]), (1, "error", 1),
           "an untrusted certificate is not retried (%r)" % doc)
        check("--cacert" in doc["error"]["message"], "says what to do: %r" % doc["error"])
        check(doc["taskId"] not in srv.task_ids(), "nothing reached onced")
        # --insecure skips the check over gRPC as over HTTPS (the card is
        # remembered: the send goes straight to gRPC, so only gRPC can
        # have carried it).
        rc, doc = once_json(outbox, "--binding", "grpc", "--insecure", "send", "--agent",
                            srv.url(), "--text", "insecure", "--wait", *FAST)
        eq((rc, doc["state"]), (0, "TASK_STATE_COMPLETED"), "--insecure over gRPC (%r)" % doc)
        carried_by("grpc", srv, doc["taskId"], "SendMessage")


def test_auto_follows_the_card():
    with serve() as srv:
        outbox = os.path.join(TMP, "auto.db")
        rc, doc = once_json(outbox, "send", "--agent", srv.url, "--text", "hi", *FAST)
        eq(rc, 0, "auto: sent")
        carried_by("jsonrpc", srv, doc["taskId"], "SendMessage")
        rc, doc = once_json(outbox, "--binding", "auto", "get", doc["taskId"])
        eq(rc, 0, "auto: get")
        carried_by("jsonrpc", srv, doc["taskId"], "GetTask")
    # No gRPC listener: the card lists no GRPC interface.
    with Onced() as plain:
        outbox = os.path.join(TMP, "nogrpc.db")
        url = "http://127.0.0.1:%d/" % plain.port
        rc, doc = once_json(outbox, "--binding", "grpc", "send", "--agent", url, "--text", "x",
                            *FAST)
        eq((rc, doc["outcome"], doc["attempts"]), (1, "error", 1),
           "a forced binding the card lacks fails at once (%r)" % doc)
        check("no GRPC interface" in doc["error"]["message"], "says why: %r" % doc["error"])
        eq(server_tasks(plain), [], "nothing reached onced")


if __name__ == "__main__":
    run_client_tests([test_round_trip_each_binding, test_unknown_task_refused_as_on_jsonrpc,
         test_lost_answer_replayed_on_recover, test_cross_binding_same_task, test_auth_token,
         test_stream_cut_resumes, test_interrupt_stops_a_stream, test_failover_between_replicas,
         test_grpc_over_tls,
         test_auto_follows_the_card])
