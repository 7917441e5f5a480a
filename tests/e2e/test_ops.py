"""Operating onced: versions, health and readiness probes, Prometheus
metrics, structured logs with trace context, and a graceful shutdown.
Issue 14 ("operable in production")."""
import http.client
import json
import math
import os
import re
import signal
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import (ONCED, ROOT, GatedAgent, Onced, admin_stats, check, eq, free_port,
                     http_get, http_request, new_id, result_task, run, scaled, scratch_dir,
                     task_state, user_message, wait_until)

ONCE = os.path.join(os.path.dirname(ONCED), "once")


def project_version():
    """The version CMakeLists.txt's project() declares: the one definition."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*once\s+VERSION\s+([0-9][0-9.]*)", f.read())
    check(m is not None, "CMakeLists.txt declares project(once VERSION x.y.z)")
    return m.group(1)


def test_version():
    want = project_version()
    for prog, name in ((ONCED, "onced"), (ONCE, "once")):
        out = subprocess.run([prog, "--version"], capture_output=True, text=True,
                             timeout=scaled(10))
        eq(out.returncode, 0, "%s --version exit status" % name)
        eq(out.stdout, "%s %s\n" % (name, want), "%s --version" % name)
    # The agent card carries the same version (libonce's once_version()).
    with Onced() as srv:
        st, _, body = http_get(srv.port, "/.well-known/agent-card.json")
        eq(st, 200, "agent card")
        eq(json.loads(body)["version"], want, "agent card version")



# --- a strict parser of the Prometheus text exposition format (0.0.4) -------

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_SAMPLE = re.compile(r"^(%s)(\{(.*)\})? (\S+)( -?[0-9]+)?$" % _NAME)
_TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


def _labels(text, where):
    """{name: value} of a label list, refusing anything the format does not
    allow: unquoted or badly escaped values, repeated names, stray commas."""
    out, i = {}, 0
    while i < len(text):
        m = re.compile(r"(%s)=\"" % _LABEL).match(text, i)
        check(m is not None, "%s: bad label at %r" % (where, text[i:]))
        name, i, val = m.group(1), m.end(), []
        while True:
            check(i < len(text), "%s: unterminated label value" % where)
            c = text[i]
            if c == "\\":
                check(i + 1 < len(text) and text[i + 1] in "\\\"n", "%s: bad escape" % where)
                val.append({"n": "\n"}.get(text[i + 1], text[i + 1]))
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                check(c != "\n", "%s: raw newline in a label value" % where)
                val.append(c)
                i += 1
        check(name not in out, "%s: label %s twice" % (where, name))
        out[name] = "".join(val)
        if i < len(text):
            check(text[i] == ",", "%s: expected ',' after a label" % where)
            i += 1
            check(i < len(text), "%s: trailing comma" % where)
    return out


def _value(text, where):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    check(re.match(r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$", text) is not None,
          "%s: bad value %r" % (where, text))
    return float(text)


def parse_metrics(text):
    """Parse and check an exposition. Returns {family: {"type", "help",
    "samples": [(name, labels, value)]}}. Fails the test on any deviation:
    a sample before its TYPE, a family split in two, a duplicate series, a
    counter not named *_total, a histogram whose buckets are not cumulative
    or lack +Inf or disagree with _count."""
    check(text.endswith("\n"), "the exposition ends in a newline")
    fams, current, seen_series, closed = {}, None, set(), set()
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d %r" % (n, line)
        check(line != "", "%s: empty line" % where)
        if line.startswith("#"):
            m = re.match(r"^# (HELP|TYPE) (%s) (.*)$" % _NAME, line)
            if m is None:
                continue   # a plain comment
            kind, name, rest = m.groups()
            f = fams.setdefault(name, {"type": None, "help": None, "samples": []})
            check(name not in closed, "%s: family %s continues after another one" % (where, name))
            if current is not None and current != name:
                closed.add(current)
            current = name
            if kind == "TYPE":
                check(f["type"] is None and not f["samples"],
                      "%s: TYPE once, before the samples" % where)
                check(rest in _TYPES, "%s: unknown type" % where)
                f["type"] = rest
            else:
                check(f["help"] is None, "%s: HELP twice" % where)
                f["help"] = rest
            continue
        m = _SAMPLE.match(line)
        check(m is not None, "%s: not a sample line" % where)
        name, _, ltext, vtext, _ = m.groups()
        labels = _labels(ltext or "", where)
        value = _value(vtext, where)
        fam = name
        if fam not in fams:
            for suffix in ("_bucket", "_sum", "_count"):
                if name.endswith(suffix) and fams.get(name[:-len(suffix)], {}).get("type") == "histogram":
                    fam = name[:-len(suffix)]
        check(fam in fams and fams[fam]["type"] is not None, "%s: sample without a TYPE" % where)
        check(fam == current and fam not in closed, "%s: family %s is not contiguous" % (where, fam))
        key = (name, tuple(sorted(labels.items())))
        check(key not in seen_series, "%s: duplicate series" % where)
        seen_series.add(key)
        fams[fam]["samples"].append((name, labels, value))
    for fam, f in fams.items():
        check(f["type"] is not None and f["help"], "family %s has TYPE and HELP" % fam)
        if f["type"] == "counter":
            check(fam.endswith("_total"), "counter %s is named *_total" % fam)
            check("Process-local" in f["help"], "counter %s says it is process-local" % fam)
            check(all(v >= 0 for _, _, v in f["samples"]), "counter %s is non-negative" % fam)
        if f["type"] == "histogram":
            _check_histogram(fam, f["samples"])
    return fams


def _check_histogram(fam, samples):
    series = {}
    for name, labels, value in samples:
        base = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        s = series.setdefault(base, {"buckets": [], "sum": None, "count": None})
        if name == fam + "_bucket":
            check("le" in labels, "%s bucket has le" % fam)
            s["buckets"].append((_value(labels["le"], fam), value))
        elif name == fam + "_sum":
            s["sum"] = value
        elif name == fam + "_count":
            s["count"] = value
        else:
            check(False, "%s: stray sample %s" % (fam, name))
    for base, s in series.items():
        les = [le for le, _ in s["buckets"]]
        check(les == sorted(les) and len(set(les)) == len(les), "%s%r: le ascending" % (fam, base))
        check(les and math.isinf(les[-1]), "%s%r: a +Inf bucket" % (fam, base))
        counts = [c for _, c in s["buckets"]]
        check(counts == sorted(counts), "%s%r: buckets are cumulative" % (fam, base))
        check(s["sum"] is not None and s["count"] is not None, "%s%r: _sum and _count" % (fam, base))
        eq(s["count"], counts[-1], "%s%r: _count equals the +Inf bucket" % (fam, base))


def value_of(fams, fam, name=None, **labels):
    """The value of the one sample of fam with exactly these labels (and
    this sample name, for histograms)."""
    for n, l, v in fams.get(fam, {}).get("samples", []):
        if n == (name or fam) and l == labels:
            return v
    check(False, "no sample %s%r" % (name or fam, labels))


def scrape(port):
    st, hd, body = http_get(port, "/metrics")
    eq(st, 200, "GET /metrics")
    check(hd.get("content-type", "").startswith("text/plain; version=0.0.4"),
          "the Prometheus text content type: %r" % hd.get("content-type"))
    return parse_metrics(body.decode())


# --- health and readiness ------------------------------------------------------


def test_health_outside_auth():
    tmp = scratch_dir()
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write("secret-token alice\n")
    with Onced(["--auth-tokens", tokens]) as srv:
        for path, body in (("/healthz", b"ok\n"), ("/readyz", b"ready\n")):
            st, _, got = http_get(srv.port, path)
            eq((st, got), (200, body), "GET %s without a token" % path)
        eq(http_get(srv.port, "/metrics")[0], 200, "GET /metrics without a token")
        st, _, _ = srv.rpc("GetTask", {"id": "t-1"})
        eq(st, 401, "JSON-RPC still needs the token")


# --- metrics ---------------------------------------------------------------------


def test_metrics_counts():
    with Onced(["--test-admin"]) as srv:
        before = scrape(srv.port)
        eq([l for _, l, _ in before["once_http_requests_total"]["samples"]
            if l["method"] == "POST"], [], "no POST counted before the first call")
        tid = new_id()
        msg = user_message("hello", task_id=tid)
        for _ in range(2):   # registered, then replayed
            st, _, doc = srv.rpc("SendMessage", {"message": msg}, ext=True)
            eq(task_state(doc), "TASK_STATE_COMPLETED", "the echo task completes")
        # a new message for the finished task: refused, TASK_TERMINAL
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("more", task_id=tid)}, ext=True)
        check("error" in doc, "a message for a finished task is refused: %r" % doc)
        # input-required, then continued
        tid2 = new_id()
        srv.rpc("SendMessage", {"message": user_message("ask:Which?", task_id=tid2)}, ext=True)
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("This", task_id=tid2)}, ext=True)
        eq(task_state(doc), "TASK_STATE_COMPLETED", "the continued task completes")
        # a continuation of an unknown task without the extension: TASK_NOT_FOUND
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("x", task_id=new_id())})
        check("error" in doc, "an unknown taskId without the extension is refused: %r" % doc)

        m = scrape(srv.port)
        sends = lambda **l: value_of(m, "once_sends_total", **l)
        eq(sends(outcome="registered"), 2, "registered sends")
        eq(sends(outcome="replayed"), 1, "replayed sends")
        eq(sends(outcome="continued"), 1, "continued sends")
        eq(sends(outcome="refused", reason="task_terminal"), 1, "refused: terminal")
        eq(sends(outcome="refused", reason="task_not_found"), 1, "refused: not found")
        eq(value_of(m, "once_turns_started_total"), 3, "turns started")
        eq(value_of(m, "once_turns_finished_total", result="completed"), 2, "turns completed")
        eq(value_of(m, "once_turns_finished_total", result="input_required"), 1,
           "turns that asked for input")
        eq(value_of(m, "once_sse_streams_open"), 0, "no stream open")
        eq(value_of(m, "once_http_requests_total", method="POST", status="200"), 6,
           "POST 200 responses counted")
        eq(value_of(m, "once_http_requests_total", method="GET", status="200") >= 1, True,
           "the first scrape is counted")
        # the SQLite store's latency histogram has the creates the sends made
        eq(value_of(m, "once_store_operation_duration_seconds",
                    name="once_store_operation_duration_seconds_count",
                    backend="sqlite", operation="create"), 2, "two creates timed")
        # One source of truth: once/admin/stats reads the same counters.
        s = admin_stats(srv)
        eq((s["registered"], s["replayed"], s["continued"], s["refused"]),
           (2, 1, 1, 2), "admin stats agree with /metrics")


def test_metrics_off_and_apart():
    with Onced(["--metrics", "off"]) as srv:
        eq(http_get(srv.port, "/metrics")[0], 404, "--metrics off: no /metrics")
        eq(http_get(srv.port, "/healthz")[0], 200, "--metrics off keeps /healthz")
    mport = free_port()
    with Onced(["--metrics", "127.0.0.1:%d" % mport]) as srv:
        eq(http_get(srv.port, "/metrics")[0], 404, "moved: not on --listen")
        m = scrape(mport)
        check("once_sends_total" in m, "the separate listener serves the engine's families")
        eq(http_get(mport, "/healthz")[0], 404, "the metrics listener serves /metrics only")



# --- graceful shutdown -------------------------------------------------------------


def _call_in_background(port, method, params, out, headers=None):
    """One JSON-RPC call on a thread of its own: out gets "status", the raw
    "text" of the answer as it arrives (an event stream grows line by
    line) and, at the end, "doc" for a JSON answer or "error"."""
    def go():
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(120))
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            h = {"Content-Type": "application/json", "A2A-Version": "1.0",
                 "A2A-Extensions": "urn:once:a2a:idempotency:v1"}
            h.update(headers or {})
            c.request("POST", "/", body=body.encode(), headers=h)
            r = c.getresponse()
            out["status"], chunks = r.status, []
            while True:
                line = r.readline()
                if not line:
                    break
                chunks.append(line.decode())
                out["text"] = "".join(chunks)
            if not r.getheader("content-type", "").startswith("text/event-stream"):
                out["doc"] = json.loads(out.get("text", ""))
            c.close()
        except Exception as ex:   # reported by the assertions on out
            out["error"] = repr(ex)
    t = threading.Thread(target=go)
    t.start()
    return t


def test_sigterm_drains_and_hands_over():
    """A replica with a running task gets SIGTERM: it turns not-ready and
    refuses new calls, lets a blocked call in flight get its answer, then
    stops its turn and releases the lease, so another replica on the same
    SQLite file takes the task over long before the lease (1h) would have
    run out; streams end with the shutdown event; exit status 0."""
    tmp = scratch_dir()
    store = "sqlite:" + os.path.join(tmp, "shared.db")
    agent = GatedAgent("step started; gate finish")
    # a's lease is an hour: without the release, b could take nothing over
    # within this test's bounds. b's is short, so its own takeover hold
    # (one lease after its start) ends soon.
    a = Onced(agent.args + ["--lease", "1h", "--drain", "%ds" % scaled(120)], store=store,
              tmpdir=tmp)
    b = Onced(agent.args + ["--lease", "1s", "--test-admin"], store=store, tmpdir=tmp)
    try:
        long_id, short_id = new_id(), new_id()
        st, _, doc = a.rpc("SendMessage", {"message": user_message("long", task_id=long_id),
                                           "configuration": {"returnImmediately": True}}, ext=True)
        eq(st, 200, "the long task is registered on a")
        blocked = {}
        t = _call_in_background(a.port, "SendMessage",
                                {"message": user_message("short", task_id=short_id)}, blocked)
        for tid in (long_id, short_id):
            wait_until(lambda: task_state(b.rpc("GetTask", {"id": tid}, ext=True)[2])
                       == "TASK_STATE_WORKING", timeout=30, what="%s working on a" % tid)
        stream = {}
        s = _call_in_background(a.port, "SubscribeToTask", {"id": long_id}, stream,
                                headers={"Accept": "text/event-stream"})
        wait_until(lambda: "data:" in stream.get("text", ""), timeout=30,
                   what="the stream's first event")
        wait_until(lambda: value_of(scrape(a.port), "once_sse_streams_open") == 1, timeout=30,
                   what="the stream counted as open")

        a.signal(signal.SIGTERM)
        wait_until(lambda: http_get(a.port, "/readyz")[0] == 503, timeout=30,
                   what="a's /readyz answering 503 while it drains")
        eq(http_get(a.port, "/healthz")[0], 200, "a is still alive while it drains")
        st, _, doc = a.rpc("GetTask", {"id": long_id}, ext=True)
        eq(st, 503, "a refuses new calls while it drains")
        check(t.is_alive(), "the blocked call is still in flight")

        # The blocked call's task finishes during the drain: its answer.
        agent.release(short_id, "finish")
        t.join(scaled(60))
        eq(blocked.get("status"), 200, "the blocked call was answered: %r" % blocked)
        eq(task_state(blocked.get("doc")), "TASK_STATE_COMPLETED", "with the finished task")

        # Then a stops its turn and releases the lease; b takes over.
        eq(a.proc.wait(scaled(60)), 0, "a exits 0 after the drain")
        wait_until(lambda: admin_stats(b)["takeovers"] >= 1, timeout=60,
                   what="b taking the long task over (a released the lease)")
        task = result_task(b.rpc("GetTask", {"id": long_id}, ext=True)[2])
        eq(task["status"]["state"], "TASK_STATE_WORKING", "the task runs again on b")
        agent.release(long_id, "finish")
        wait_until(lambda: task_state(b.rpc("GetTask", {"id": long_id}, ext=True)[2])
                   == "TASK_STATE_COMPLETED", timeout=60, what="the long task completing on b")

        s.join(scaled(60))
        check(stream.get("text", "").endswith("event: shutdown\nretry: 1000\n\n"),
              "the stream ends with the shutdown event: %r" % stream.get("text", "")[-200:])
        events = [l["event"] for l in log_lines(a)]
        check("draining" in events and "stopping" in events, "a logged its drain: %r" % events)
        took = [l for l in log_lines(b) if l["event"] == "takeover"]
        check(any(l["task"] == long_id and l["fence"] == 2 for l in took),
              "b logged the takeover, naming the task: %r" % took)
    finally:
        a.stop()
        b.stop()



def test_second_signal_exits_at_once():
    """While a drain waits for a blocked call, a second SIGTERM ends onced
    at once with status 128 + SIGTERM."""
    agent = GatedAgent("gate finish")
    srv = Onced(agent.args + ["--drain", "1h"])
    try:
        tid, blocked = new_id(), {}
        t = _call_in_background(srv.port, "SendMessage",
                                {"message": user_message("wait", task_id=tid)}, blocked)
        wait_until(lambda: task_state(srv.rpc("GetTask", {"id": tid}, ext=True)[2])
                   == "TASK_STATE_WORKING", timeout=30, what="the task working")
        srv.signal(signal.SIGTERM)
        wait_until(lambda: http_get(srv.port, "/readyz")[0] == 503, timeout=30,
                   what="the drain begun")
        check(t.is_alive(), "the drain waits for the blocked call")
        srv.signal(signal.SIGTERM)
        eq(srv.proc.wait(scaled(30)), 128 + signal.SIGTERM, "the second signal's exit status")
        t.join(scaled(30))
    finally:
        srv.stop()


def test_drain_delay():
    """--drain-delay: on SIGTERM /readyz turns 503 first while calls are
    still served (a load balancer polling it stops sending here), and only
    then does the drain refuse; at the delay's end onced drains and exits 0."""
    srv = Onced(["--drain-delay", "%ds" % scaled(60)])
    try:
        eq(http_get(srv.port, "/readyz")[0], 200, "ready before the signal")
        srv.signal(signal.SIGTERM)
        wait_until(lambda: http_get(srv.port, "/readyz")[0] == 503, timeout=30,
                   what="not ready after SIGTERM")
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("still served")}, ext=True)
        eq((st, task_state(doc)), (200, "TASK_STATE_COMPLETED"),
           "a call during the delay is served: %r" % (doc,))
        check("not ready" in http_get(srv.port, "/readyz")[2].decode(), "readyz says why")
        check('"not_ready"' in srv.logtext() or "not_ready" in srv.logtext(),
              "the log names the delay: %s" % srv.logtext()[-400:])
        srv.signal(signal.SIGTERM)
        eq(srv.proc.wait(scaled(30)), 128 + signal.SIGTERM, "a second signal still ends it")
    finally:
        srv.stop()
    quick = Onced(["--drain-delay", "1s"])
    try:
        quick.signal(signal.SIGTERM)
        eq(quick.proc.wait(scaled(60)), 0, "after the delay, the drain and exit 0")
        log = quick.logtext()
        check(log.find("not_ready") >= 0 and log.find("draining") > log.find("not_ready"),
              "not ready, then draining: %s" % log[-600:])
    finally:
        quick.stop()


# --- structured logs and trace context -------------------------------------------

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class Receiver:
    """A webhook receiver on loopback: answers 500 to the first delivery and
    204 to the rest, and keeps every request's headers."""

    def __init__(self):
        self.headers = []
        rx = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                rx.headers.append(dict((k.lower(), v) for k, v in self.headers.items()))
                self.send_response(500 if len(rx.headers) == 1 else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/hook" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def log_lines(srv):
    """The JSON log lines of srv (other output, e.g. the agent's, skipped)."""
    out = []
    for line in srv.logtext_all().splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def test_logs_carry_the_trace():
    """JSON log lines: one per request with method, principal, task, outcome,
    status and duration; the request's traceparent reaches the log line, the
    --exec agent's environment (TRACEPARENT) and the webhook (a header);
    a failed webhook POST is a line naming the task."""
    tmp = scratch_dir()
    seen = os.path.join(tmp, "agent-trace")
    agent = ["--exec", "printf '%%s' \"$TRACEPARENT\" > %s; "
             "echo '{\"status\":\"completed\",\"text\":\"ok\"}'" % seen]
    rx = Receiver()
    srv = Onced(agent + ["--log-format", "json", "--push-allow", "127.0.0.1/32",
                         "--push-backoff", "100ms"], tmpdir=tmp)
    try:
        tid = new_id()
        params = {"message": user_message("hi", task_id=tid),
                  "configuration": {"taskPushNotificationConfig": {"url": rx.url, "token": "t"}}}
        for _ in range(2):
            st, _, doc = srv.rpc("SendMessage", params, ext=True, headers={"traceparent": TRACE})
            eq(task_state(doc), "TASK_STATE_COMPLETED", "the task completes")
        reqs = [l for l in log_lines(srv) if l["event"] == "request"]
        eq([(l["method"], l["principal"], l["task"], l["outcome"], l["status"], l["traceparent"])
            for l in reqs],
           [("SendMessage", "anonymous", tid, "registered", 200, TRACE),
            ("SendMessage", "anonymous", tid, "replayed", 200, TRACE)],
           "one line per request")
        check(all(isinstance(l["duration_ms"], int) and l["duration_ms"] >= 0 for l in reqs),
              "each line has the duration")
        with open(seen) as f:
            eq(f.read(), TRACE, "the agent's TRACEPARENT")
        wait_until(lambda: len(rx.headers) >= 2, timeout=30, what="the webhook's retry")
        eq([h.get("traceparent") for h in rx.headers[:2]], [TRACE, TRACE],
           "every delivery carries the traceparent")
        fails = [l for l in log_lines(srv) if l["event"] == "push_failed"]
        check(fails and fails[0]["task"] == tid and fails[0]["status"] == 500,
              "the failed POST is logged with its task: %r" % fails)
        # A malformed traceparent is not carried anywhere.
        st, _, doc = srv.rpc("GetTask", {"id": tid}, headers={"traceparent": "00-zz-bad"})
        last = [l for l in log_lines(srv) if l["event"] == "request"][-1]
        eq((last["method"], last["task"], "traceparent" in last), ("GetTask", tid, False),
           "GetTask's line names the task and drops a bad traceparent")
    finally:
        srv.stop()
        rx.close()


def test_log_format_and_level():
    with Onced(["--log-format", "text"]) as srv:
        tid = new_id()
        srv.rpc("SendMessage", {"message": user_message("hi", task_id=tid)}, ext=True)
        lines = [l for l in srv.logtext_all().splitlines() if " request " in l]
        eq(len(lines), 1, "one text line for the request: %r" % lines)
        check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info request "
                       r"method=SendMessage principal=anonymous task=%s outcome=registered "
                       r"status=200 duration_ms=\d+ path=/ client=127\.0\.0\.1 "
                       r"request_id=[0-9a-f-]{36}$" % re.escape(tid), lines[0]) is not None,
              "the text line: %r" % lines[0])
    with Onced(["--log-format", "json", "--log-level", "warn"]) as srv:
        # The request line is written before the answer leaves, so once the
        # answer is here a line at info would be in the log already.
        st, _, _ = srv.rpc("SendMessage", {"message": user_message("hi")})
        eq(st, 200, "answered")
        eq([l for l in log_lines(srv) if l["event"] == "request"], [],
           "--log-level warn leaves out request lines")
    out = subprocess.run([ONCED, "--listen", "127.0.0.1:1", "--store", "memory:",
                          "--log-format", "xml"], capture_output=True, text=True,
                         timeout=scaled(10))
    eq(out.returncode, 2, "an unknown --log-format is a usage error")


if __name__ == "__main__":
    run([test_version, test_health_outside_auth, test_metrics_counts, test_metrics_off_and_apart,
         test_drain_delay,
         test_sigterm_drains_and_hands_over, test_second_signal_exits_at_once,
         test_logs_carry_the_trace, test_log_format_and_level])
