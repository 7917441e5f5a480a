"""onced's log (docs/production.md, "Logs"): with --log-format json every line
onced writes, on stderr and stdout, is one JSON object: the start-up line, the
request lines, an --exec agent's stderr and log lines, libmicrohttpd's own
messages, a takeover, the shutdown summary, and the refusal of a bad command
line or an unusable store. A request line names the path, the client's
address, the principal (or, on a 401, why there is none) and the request id
its answer carries in X-Request-Id. --log-format text still reads as one
"TIME LEVEL EVENT key=value ..." record per line.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ONCED, GatedAgent, Onced, call, check, eq, http_get, new_id, read_all,
                     result_task, run, scaled, scratch_dir, task_state, user_message, wait_until)

TMP = scratch_dir("once-logs-")
TOKEN = "tok-logs-" + new_id()
TOKENS = os.path.join(TMP, "tokens")
with open(TOKENS, "w") as f:
    f.write("%s alice\n" % TOKEN)
# Short, so that the takeover comes quickly; scaled, so that a replica that
# is merely slow keeps its lease.
LEASE = "%dms" % scaled(1500)
# An agent that writes to its stderr and sends a log line before it answers.
AGENT = ("echo 'agent stderr: \"quoted\" \\\\ and a tab\t.' >&2; "
         "printf '%s\\n' '{\"log\":\"agent log line\"}'; "
         "printf '%s\\n' '{\"status\":\"completed\",\"text\":\"ok\"}'")



def sqlite_schema_version():
    """The SQLite schema version this once writes (src/store/sqlite_int.h)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "store",
                        "sqlite_int.h")
    with open(path) as f:
        return int(re.search(r"#define SQ_SCHEMA_VERSION (\d+)", f.read()).group(1))

def records(srv):
    """Every line srv wrote (stdout and stderr share the file), each parsed:
    a line that is not one JSON object fails the test."""
    out = []
    for line in srv.logtext_all().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        check(isinstance(rec, dict), "every line is one JSON object: %r" % line[:300])
        for key in ("ts", "level", "event"):
            check(key in rec, "every record has %s: %r" % (key, rec))
        out.append(rec)
    return out


def events(srv, name):
    return [r for r in records(srv) if r["event"] == name]


def request_line(srv, request_id):
    """The request line with this request_id, once it is in the log."""
    return wait_until(lambda: [r for r in events(srv, "request")
                               if r.get("request_id") == request_id],
                      timeout=10, what="the request line of %s" % request_id)[0]


def raw(port, data):
    """Send bytes on a fresh connection; everything the server answers."""
    s = socket.create_connection(("127.0.0.1", port), timeout=scaled(10))
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        return read_all(s)
    finally:
        s.close()


def stop_and_wait(srv):
    srv.signal(signal.SIGTERM)
    eq(srv.proc.wait(scaled(60)), 0, "onced exits 0 after SIGTERM")


def test_json_log():
    srv = Onced(["--log-format", "json", "--auth-tokens", TOKENS, "--exec", AGENT,
                 "--replica-id", "replica-logs"])
    try:
        # A request with the caller's id: echoed, and on its line.
        tid = new_id()
        st, hd, doc = call(srv.port, "POST", "/", {"jsonrpc": "2.0", "id": 1,
                                                   "method": "SendMessage",
                                                   "params": {"message": user_message(
                                                       "hi", task_id=tid)}},
                           ext=True, token=TOKEN, headers={"X-Request-Id": "req-logs-1"})
        eq((st, task_state(doc)), (200, "TASK_STATE_COMPLETED"), "the send completes")
        eq(hd.get("x-request-id"), "req-logs-1", "the caller's request id comes back")
        line = request_line(srv, "req-logs-1")
        eq((line["method"], line["principal"], line["task"], line["status"], line["path"],
            line["client"]), ("SendMessage", "alice", tid, 200, "/", "127.0.0.1"),
           "the request line: %r" % line)

        # No id, or one that is not sane: a fresh one, in the header and the line.
        for given in (None, "has space", "x" * 65, "caf\u00e9"):
            h = {} if given is None else {"X-Request-Id": given.encode("utf-8").decode("latin-1")}
            st, hd, _ = call(srv.port, "GET", "/tasks/" + tid, token=TOKEN, headers=h)
            eq(st, 200, "GetTask over HTTP+JSON")
            rid = hd.get("x-request-id") or ""
            check(re.match(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$", rid),
                  "a generated id (UUIDv4) when given %r: %r" % (given, rid))
            line = request_line(srv, rid)
            eq((line["method"], line["path"], line["status"]), ("GetTask", "/tasks/" + tid, 200),
               "the REST request's line names its path")

        # 401s: no principal, and why.
        for token, why in ((None, "no_credentials"), ("wrong-" + new_id(), "unknown_token")):
            st, hd, _ = call(srv.port, "POST", "/", {"jsonrpc": "2.0", "id": 2,
                                                     "method": "GetTask", "params": {"id": tid}},
                             token=token)
            eq(st, 401, "refused without a known token")
            line = request_line(srv, hd.get("x-request-id"))
            eq((line["status"], line["principal"], line["auth"], line["outcome"], line["path"]),
               (401, "-", why, "UNAUTHENTICATED", "/"), "the 401's line: %r" % line)
        st, hd, _ = call(srv.port, "POST", "/", "{}", token=TOKEN, version=None,
                         headers={"Authorization": "Basic eDp5"})
        eq((st, request_line(srv, hd.get("x-request-id"))["auth"]), (401, "not_bearer"),
           "a scheme other than Bearer")

        # Every answer carries an id: probes, the card, a 404, a stream.
        for path in ("/healthz", "/readyz", "/.well-known/agent-card.json", "/nowhere"):
            st, hd, _ = http_get(srv.port, path)
            check(hd.get("x-request-id"), "%s (HTTP %d) carries X-Request-Id" % (path, st))
        st, hd, body = call(srv.port, "POST", "/", {"jsonrpc": "2.0", "id": 3,
                                                    "method": "SendStreamingMessage",
                                                    "params": {"message": user_message("s")}},
                            token=TOKEN, headers={"X-Request-Id": "req-stream"})
        eq((st, hd.get("content-type"), hd.get("x-request-id")),
           (200, "text/event-stream", "req-stream"), "a stream carries the id")

        # The agent's stderr and log lines: records naming the task.
        def of_task(name):
            return [r for r in events(srv, name) if r.get("task") == tid]
        wait_until(lambda: of_task("agent_stderr") and of_task("agent_log"),
                   timeout=15, what="the agent's stderr and log lines")
        eq([r["text"] for r in of_task("agent_stderr")], ['agent stderr: "quoted" \\ and a tab\t.'],
           "the agent's stderr line, exact")
        eq([r["text"] for r in of_task("agent_log")], ["agent log line"], "the agent's log line")

        # libmicrohttpd's own messages (a request it refuses itself).
        got = raw(srv.port, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: zz\r\n\r\n")
        check(got.startswith(b"HTTP/1.1 400"), "libmicrohttpd answers 400: %r" % got[:80])
        wait_until(lambda: events(srv, "http"), timeout=10, what="libmicrohttpd's message")
        check("Content-Length" in events(srv, "http")[0]["message"],
              "its message, as a record: %r" % events(srv, "http"))

        stop_and_wait(srv)
        recs = records(srv)
        start = [r for r in recs if r["event"] == "start"]
        eq(len(start), 1, "one start-up line")
        s = start[0]
        version = subprocess.run([ONCED, "--version"], capture_output=True, text=True,
                                 timeout=scaled(10)).stdout.split()[-1]
        eq((s["version"], s["listen"], s["url"], s["store"], s["replica"], s["schema_version"]),
           (version, "127.0.0.1:%d" % srv.port, "http://127.0.0.1:%d/" % srv.port, srv.store,
            "replica-logs", sqlite_schema_version()), "the start-up line: %r" % s)
        for limit in ("lease_ms", "max_body", "max_task_size", "max_connections",
                      "max_connections_per_ip", "max_streams", "turn_workers", "max_queue",
                      "request_timeout_ms"):
            check(isinstance(s.get(limit), int) and s[limit] > 0, "the start-up line has %s" % limit)
        eq(s["max_body"], 1 << 20, "the limits are the ones in force (the defaults filled in)")
        stopped = [r for r in recs if r["event"] == "stopped"]
        eq(len(stopped), 1, "one shutdown summary")
        last = stopped[0]
        check(recs[-1] is last, "the summary is the last line: %r" % recs[-1])
        eq((last["exit"], last["tasks_registered"], last["takeovers"]), (0, 2, 0),
           "the summary's counts: %r" % last)
        check(last["http_responses"] >= 12 and last["turns"] >= 2 and last["uptime_ms"] >= 0,
              "the summary counts what was served: %r" % last)
    finally:
        srv.stop()


def refusal(args, status, env=None):
    """onced with args refused at start: its one JSON line (stdout empty)."""
    p = subprocess.run([ONCED] + args, capture_output=True, text=True, timeout=scaled(30),
                       env=dict(os.environ, **(env or {})))
    eq(p.returncode, status, "onced %s exits %d: %r" % (args, status, p.stderr))
    eq(p.stdout, "", "nothing on stdout")
    lines = p.stderr.splitlines()
    eq(len(lines), 1, "one line: %r" % p.stderr)
    rec = json.loads(lines[0])
    eq((rec["level"], rec["event"], rec["exit"]), ("error", "refused", status),
       "the refusal: %r" % rec)
    return rec


def test_refusals_are_json():
    listen = ["--listen", "127.0.0.1:%d" % 1, "--log-format", "json"]
    missing = os.path.join(TMP, "no-such-dir", "registry.db")
    rec = refusal(["--store", "sqlite:" + missing] + listen, 1)
    check("--store" in rec["message"], "it names the store: %r" % rec)
    rec = refusal(["--store", "redis://:hunter2@127.0.0.1:1/"] + listen, 1)
    check("hunter2" not in json.dumps(rec), "no password in the refusal: %r" % rec)
    rec = refusal(["--store", "memory:", "--push-secret", "short"] + listen, 1)
    check("push secret" in rec["message"], "the unusable push secret: %r" % rec)
    # A bad flag before --log-format: the format was looked for first.
    rec = refusal(["--bogus", "--store", "memory:"] + listen, 2)
    eq(rec["message"], "unknown option --bogus", "the usage error")
    rec = refusal(["--store", "memory:", "--log-format", "xml"] + listen[:2], 2)
    check("--log-format" in rec["message"], "a bad --log-format is refused in the default "
          "(json when stderr is not a terminal): %r" % rec)
    # Text: the message as a person reads it.
    p = subprocess.run([ONCED, "--bogus", "--listen", "127.0.0.1:1", "--store", "memory:",
                        "--log-format", "text"], capture_output=True, text=True,
                       timeout=scaled(30))
    eq((p.returncode, p.stderr), (2, "onced: unknown option --bogus\nTry 'onced --help'.\n"),
       "the text refusal")


def test_takeover_names_the_lost_owner():
    store = "sqlite:" + os.path.join(TMP, "takeover.db")
    agent = GatedAgent("gate finish")
    common = agent.args + ["--lease", LEASE, "--log-format", "json"]
    a = Onced(common + ["--replica-id", "replica-a"], store=store)
    b = None
    try:
        b = Onced(common + ["--replica-id", "replica-b"], store=store)
        tid = new_id()
        st, _, doc = a.rpc("SendMessage", {"message": user_message("work", task_id=tid),
                                           "configuration": {"returnImmediately": True}},
                           ext=True)
        eq(result_task(doc)["id"], tid, "A registered the task")
        wait_until(lambda: task_state(a.rpc("GetTask", {"id": tid}, ext=True)[2]) == "TASK_STATE_WORKING",
                   timeout=15, what="A's turn working")
        a.kill9()
        took = wait_until(lambda: [r for r in events(b, "takeover") if r["task"] == tid],
                          timeout=60, what="B taking the task over")[0]
        eq((took["replica"], took["lost_owner"], took["fence"]), ("replica-b", "replica-a", 2),
           "the takeover line names the replica that lost the lease: %r" % took)
        check(took["lease_expired_ms"] >= 0, "and how long ago its lease ran out: %r" % took)
        records(a)   # A's lines, up to its kill, are JSON too
        agent.release(tid, "finish")
        wait_until(lambda: task_state(b.rpc("GetTask", {"id": tid}, ext=True)[2]) ==
                   "TASK_STATE_COMPLETED", timeout=30, what="the task completing on B")
        stop_and_wait(b)
        eq(events(b, "stopped")[0]["takeovers"], 1, "B's summary counts the takeover")
    finally:
        a.stop()
        if b is not None:
            b.stop()


TEXT = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warn|info|debug) [a-z_]+'
                  r'( [a-z_]+=([^ "=\\]+|"([^"\\]|\\.)*"))*$')


def test_text_log_reads_well():
    srv = Onced(["--log-format", "text", "--auth-tokens", TOKENS])
    try:
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("hi")}, token=TOKEN,
                             headers={"X-Request-Id": "req-text"})
        eq(task_state(doc), "TASK_STATE_COMPLETED", "served")
        eq(srv.rpc("GetTask", {"id": "x"})[0], 401, "a 401")
        stop_and_wait(srv)
        lines = srv.logtext_all().splitlines()
        eq(lines[0].split(" replica=")[0], "onced listening on http://127.0.0.1:%d/" % srv.port,
           "the line a person at a terminal reads first, on stdout")
        for line in lines[1:]:
            check(TEXT.match(line), "a text record: %r" % line)
        text = "\n".join(lines)
        check(re.search(r" info start version=\S+ listen=127\.0\.0\.1:%d " % srv.port, text),
              "the start-up line: %s" % text[:600])
        check(re.search(r" info request method=SendMessage principal=alice .* path=/ "
                        r"client=127\.0\.0\.1 request_id=req-text\n", text),
              "the request line: %s" % text)
        check(re.search(r" info request method=POST principal=- outcome=UNAUTHENTICATED "
                        r"status=401 auth=no_credentials path=/ ", text),
              "the 401's line: %s" % text)
        check(re.search(r" info stopped uptime_ms=\d+ .* exit=0$", text),
              "the summary, last: %s" % text[-400:])
    finally:
        srv.stop()


if __name__ == "__main__":
    run([test_json_log, test_refusals_are_json, test_takeover_names_the_lost_owner,
         test_text_log_reads_well])
