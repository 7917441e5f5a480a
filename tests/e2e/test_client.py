"""The `once` client CLI against a real onced, through the fault-injecting
proxy (tests/tools/proxy.c), checked on the server itself (ListTasks on
onced directly, not through the proxy) and by the executions of an --exec
agent that appends its task ID to a file:

- response loss: every `once send` converges on exactly one task, executed
  exactly once, with the ID the client minted;
- kill -9 after the outbox write (nothing sent) and after the send (before
  the answer is recorded): `once recover` finishes both, one task each;
- a dead server: the attempts and the time spent are those of the policy;
  under a sustained outage the retry budget holds retries near its ratio;
- a refusal (a message to a completed task, a reused messageId) is sent
  once, never retried, reported with its reason, the task's state, exit 3;
- an agent without the idempotency extension (plain A2A 1.0): retries reuse
  the messageId, and onced's derived ID makes them converge;
- the CLI's wait/continue/cancel/get/outbox round trip;
- examples/effect_call presents the same Idempotency-Key on every retry.
"""
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Onced, check, eq, free_port, rpc, run, scaled, wait_until  # noqa: E402

BUILD = os.environ.get("ONCE_BUILD", os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "build"))
ONCE = os.path.join(BUILD, "once")
PROXY = os.path.join(os.environ.get("ONCE_TOOLS", os.path.join(BUILD, "tools")), "proxy")
EFFECT_CALL = os.path.join(os.environ.get("ONCE_TOOLS", os.path.join(BUILD, "tools")), "effect_call")
TMP = tempfile.mkdtemp(prefix="once-client-")
FAST = ["--backoff-base", "20ms", "--backoff-cap", "100ms", "--timeout", "5s"]
NO_BUDGET = ["--budget-burst", "100000"]   # tests of other rules must not hit the budget


def once(outbox, *args, env=None, timeout=60):
    """Run the CLI; returns (exit status, stdout, stderr)."""
    e = dict(os.environ)
    e["XDG_STATE_HOME"] = TMP
    e.pop("ONCE_TEST_CRASH", None)
    e.update(env or {})
    p = subprocess.run([ONCE, "--outbox", outbox] + list(args), capture_output=True, text=True,
                       env=e, timeout=scaled(timeout))
    return p.returncode, p.stdout, p.stderr


def once_json(outbox, *args, **kw):
    rc, out, err = once(outbox, "--json", *args, **kw)
    try:
        doc = json.loads(out)
    except ValueError:
        check(False, "once %s: not JSON (exit %d): %r / %r" % (args, rc, out, err))
    return rc, doc


class Proxy:
    def __init__(self, to_port, *flags):
        self.log = open(os.path.join(TMP, "proxy-%d.log" % time.time_ns()), "w+")
        self.proc = subprocess.Popen([PROXY, "--listen", "0", "--to", "127.0.0.1:%d" % to_port] +
                                     list(flags), stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.port = int(self.proc.stdout.readline())
        self.url = "http://127.0.0.1:%d/" % self.port

    def lines(self):
        self.log.flush()
        with open(self.log.name) as f:
            return [ln.split() for ln in f if ln.startswith("conn ")]

    def count(self, mode=None):
        return sum(1 for ln in self.lines() if mode is None or ln[2] == mode)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def exec_agent(log):
    """An --exec agent that records each execution, then completes."""
    return ["--exec", "echo \"$ONCE_TASK_ID\" >> %s; printf '{\"status\":\"completed\"}\\n'" % log]


def server_tasks(srv):
    """Every task on onced, asked directly (never through the proxy)."""
    ids, token = [], None
    while True:
        params = {"pageSize": 50}
        if token:
            params["pageToken"] = token
        st, _, doc = srv.rpc("ListTasks", params)
        eq(st, 200, "ListTasks status")
        res = doc["result"]
        ids += [t["id"] for t in res["tasks"]]
        token = res.get("nextPageToken")
        if not token:
            return ids


def executions(log):
    try:
        with open(log) as f:
            return [ln.strip() for ln in f if ln.strip()]
    except FileNotFoundError:
        return []


def outbox_intents(outbox):
    rc, doc = once_json(outbox, "outbox")
    eq(rc, 0, "once outbox exit status")
    return doc["intents"]


def dead_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED")


def wait_finished(srv, ids):
    """Wait until every task in ids is terminal on onced: no execution of
    them can start after that, so the execution log is final."""
    def finished():
        for tid in ids:
            st, _, doc = srv.rpc("GetTask", {"id": tid})
            state = (((doc or {}).get("result") or {}).get("status") or {}).get("state")
            if state not in TERMINAL:
                return False
        return True
    wait_until(finished, timeout=20, what="every task to finish")


def run_client_tests(tests, tools=()):
    """The main of a client test program: the binaries it needs must be
    built; the client's scratch folder goes when it ends."""
    for exe in (ONCE,) + tuple(tools):
        if not os.path.exists(exe):
            print("FAIL: %s is missing (build first)" % exe, file=sys.stderr)
            sys.exit(1)
    try:
        run(tests)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


# ---------------------------------------------------------------------------

def test_response_loss_converges():
    log = os.path.join(TMP, "exec-loss.log")
    outbox = os.path.join(TMP, "loss.db")
    with Onced(args=exec_agent(log)) as srv:
        # Connection 1 is the card; 2, 3 and 5 are SendMessages whose answers
        # are lost after onced has done the work; then a seeded 40% loss.
        px = Proxy(srv.port, "--drop-response", "2,3,5", "--drop-response-prob", "0.4", "--seed", "7")
        try:
            sent = []
            for i in range(8):
                rc, doc = once_json(outbox, "send", "--agent", px.url, "--text", "job %d" % i,
                                    "--attempts", "12", *FAST, *NO_BUDGET)
                eq(rc, 0, "send %d exit status (%r)" % (i, doc))
                eq(doc["outcome"], "ok", "send %d outcome" % i)
                check(len(doc["taskId"]) == 26, "send %d: a minted ULID" % i)
                sent.append(doc)
            dropped = px.count("drop")
            check(dropped >= 3, "the proxy lost responses (%d)" % dropped)
            retried = [d for d in sent if d["attempts"] > 1]
            check(len(retried) >= 2, "some sends needed retries")
            check(any(d["replayed"] for d in retried), "a retry was answered as a replay")
            ids = [d["taskId"] for d in sent]
            tasks = server_tasks(srv)
            eq(sorted(tasks), sorted(ids), "exactly one task per send on the server")
            wait_finished(srv, ids)   # a duplicate execution would have happened by then
            runs = executions(log)
            eq(sorted(runs), sorted(ids), "exactly one execution per task")
            for it in outbox_intents(outbox):
                check(it["state"] in ("acknowledged", "final"), "intent %s answered" % it["taskId"])
        finally:
            px.stop()


def test_timeouts_and_resets_retried():
    """A slow link: every attempt times out after --timeout, each reached
    onced, and still one task. A reset before the server saw the request:
    the retry is the first the server hears of it (no replay)."""
    outbox = os.path.join(TMP, "slow.db")
    with Onced() as srv:
        slow = Proxy(srv.port, "--delay", "1500", "--delay-only", "2,3,4,5")
        try:
            rc, doc = once_json(outbox, "send", "--agent", slow.url, "--text", "slow", "--attempts", "3",
                                "--timeout", "300ms", "--backoff-base", "10ms", "--backoff-cap", "20ms",
                                *NO_BUDGET)
            eq(rc, 4, "every attempt timed out: exit 4")
            eq(doc["attempts"], 3, "three attempts")
            check("imeout" in doc["error"]["message"], "a timeout: %r" % doc["error"]["message"])
            # 3 x 300 ms, far below the 3 x 1.5 s of attempts that did not time out.
            check(900 <= doc["elapsedMs"] <= 940 + scaled(400),
                  "3 x 300 ms: %d ms" % doc["elapsedMs"])
            tid = doc["taskId"]
            # The card (connection 1) was quick; the three SendMessages
            # reached onced, which registered the task once (perhaps after
            # the client gave up on them).
            wait_until(lambda: server_tasks(srv), timeout=10, what="the task on onced")
            eq(server_tasks(srv), [tid], "one task despite three timed-out sends")
            rc, rec = once_json(outbox, "recover", "--timeout", "5s")
            eq(rc, 0, "recover through the slow link")
            eq(rec["intents"][0]["replayed"], True, "recovery replays the registered task")
        finally:
            slow.stop()
        rst = Proxy(srv.port, "--reset", "1,2")
        try:
            rc, doc = once_json(outbox + "2", "send", "--agent", rst.url, "--text", "reset", *FAST,
                                *NO_BUDGET)
            eq(rc, 0, "a reset is retried")
            eq(doc["attempts"], 3, "two resets, then through")
            eq(doc["replayed"], False, "onced never saw the reset requests")
            eq(rst.count("reset"), 2, "the proxy reset two connections")
            eq(sorted(server_tasks(srv)), sorted([tid, doc["taskId"]]), "one more task")
        finally:
            rst.stop()


def test_kill9_then_recover():
    log = os.path.join(TMP, "exec-kill.log")
    outbox = os.path.join(TMP, "kill.db")
    with Onced(args=exec_agent(log)) as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "before send",
                            env={"ONCE_TEST_CRASH": "after-outbox"})
        eq(rc, -signal.SIGKILL, "killed after the outbox write")
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "after send",
                            env={"ONCE_TEST_CRASH": "after-send"})
        eq(rc, -signal.SIGKILL, "killed after the send")
        its = outbox_intents(outbox)
        eq(len(its), 2, "two intents on disk")
        eq([i["state"] for i in its], ["pending", "pending"], "both pending")
        eq([i["attempts"] for i in its], [0, 1], "the first never sent, the second sent once")
        first, second = its[0]["taskId"], its[1]["taskId"]
        eq(server_tasks(srv), [second], "only the sent one reached the server")

        rc, doc = once_json(outbox, "recover")
        eq(rc, 0, "recover exit status (%r)" % doc)
        eq(doc["resent"], 2, "both re-sent")
        by_id = dict((d["taskId"], d) for d in doc["intents"])
        eq(by_id[first]["outcome"], "ok", "first delivered")
        eq(by_id[first]["replayed"], False, "first registered now")
        eq(by_id[second]["outcome"], "ok", "second delivered")
        eq(by_id[second]["replayed"], True, "second replayed: the server had it")
        eq(sorted(server_tasks(srv)), sorted([first, second]), "exactly one task each")
        wait_finished(srv, [first, second])
        eq(sorted(executions(log)), sorted([first, second]), "exactly one execution each")

        # Recovering again changes nothing on the server: acknowledged
        # intents are only polled, and become final.
        rc, doc = once_json(outbox, "recover")
        eq(rc, 0, "second recover")
        eq(doc["resent"], 0, "nothing left to re-send")
        eq(sorted(server_tasks(srv)), sorted([first, second]), "still one task each")
        for it in outbox_intents(outbox):
            eq(it["state"], "final", "intent %s final after polling" % it["taskId"])


def test_dead_server_policy():
    outbox = os.path.join(TMP, "dead.db")
    url = "http://127.0.0.1:%d/" % dead_port()
    t0 = time.monotonic()
    rc, doc = once_json(outbox, "send", "--agent", url, "--text", "x", "--attempts", "4",
                        "--backoff-base", "50ms", "--backoff-cap", "200ms")
    wall = time.monotonic() - t0
    eq(rc, 4, "retries exhausted: exit 4")
    eq(doc["outcome"], "exhausted", "outcome")
    eq(doc["error"]["reason"], "ATTEMPTS_EXHAUSTED", "reason")
    eq(doc["attempts"], 4, "exactly --attempts attempts")
    # Full jitter: sleeps within 50 + 100 + 200 ms; refused connects are instant.
    check(0 <= doc["elapsedMs"] <= 350 + scaled(150),
          "time within the policy: %d ms" % doc["elapsedMs"])
    check(wall < scaled(5), "bounded wall time: %.2f s" % wall)
    its = outbox_intents(outbox)
    eq(its[-1]["attempts"], 4, "the outbox counted the attempts")
    eq(its[-1]["state"], "pending", "left pending for recovery")
    check(its[-1]["lastError"], "the last error is kept")

    # The deadline bounds the call whatever --attempts says. (A fresh outbox:
    # the first one's retry budget for this agent is partly spent.)
    t0 = time.monotonic()
    rc, doc = once_json(outbox + "2", "send", "--agent", url, "--text", "y", "--attempts", "1000",
                        "--backoff-base", "100ms", "--backoff-cap", "100ms", "--deadline", "1s",
                        *NO_BUDGET)
    wall = time.monotonic() - t0
    eq(rc, 4, "deadline: exit 4")
    eq(doc["error"]["reason"], "DEADLINE_EXCEEDED", "deadline reason")
    check(900 <= doc["elapsedMs"] <= 1000 + scaled(100),
          "stopped at the deadline: %d ms" % doc["elapsedMs"])
    check(5 <= doc["attempts"] <= 300, "attempts spaced by the backoff: %d" % doc["attempts"])
    check(wall < scaled(5), "bounded wall time: %.2f s" % wall)


def test_retry_budget_under_outage():
    outbox = os.path.join(TMP, "budget.db")
    url = "http://127.0.0.1:%d/" % dead_port()
    sends, burst, ratio = 30, 3, 0.1
    denied = 0
    for i in range(sends):
        rc, doc = once_json(outbox, "send", "--agent", url, "--text", "n%d" % i, "--attempts", "5",
                            "--backoff-base", "1ms", "--backoff-cap", "5ms",
                            "--budget-burst", str(burst), "--budget-ratio", str(ratio),
                            "--budget-refill", "0")
        eq(rc, 4, "send %d exhausted" % i)
        denied += doc["error"]["reason"] == "RETRY_BUDGET_EXHAUSTED"
    attempts = sum(it["attempts"] for it in outbox_intents(outbox))
    retries = attempts - sends
    # Without a budget: 4 retries per send = 120. With it: burst + ratio * sends.
    check(retries <= burst + ratio * sends, "retries capped by the budget: %d" % retries)
    check(retries >= burst, "the burst was used: %d" % retries)
    check(denied >= sends - (burst + ratio * sends), "the budget refused retries (%d)" % denied)
    print("  budget: %d sends, %d retries (%.2f per send), %d refused" %
          (sends, retries, retries / sends, denied))


def test_refusal_not_retried():
    outbox = os.path.join(TMP, "refuse.db")
    with Onced() as srv:
        px = Proxy(srv.port)
        try:
            rc, doc = once_json(outbox, "send", "--agent", px.url, "--id", "job-done",
                                "--text", "hello", "--wait")
            eq(rc, 0, "the task completes")
            eq(doc["state"], "TASK_STATE_COMPLETED", "completed")
            # Same --id and text again: the same first message, a replay.
            rc, doc = once_json(outbox, "send", "--agent", px.url, "--id", "job-done", "--text", "hello")
            eq(rc, 0, "a repeated send replays")
            eq(doc["replayed"], True, "replayed")

            before = px.count()
            rc, out, err = once(outbox, "continue", "job-done", "--text", "more", *FAST)
            eq(rc, 3, "refusal: exit 3")
            eq(px.count() - before, 1, "exactly one request: never retried")
            check("TASK_STATE_COMPLETED" in out and "refused" in out, "state reported: %r" % out)
            check("TASK_TERMINAL" in err, "reason reported: %r" % err)

            before = px.count()
            rc, doc = once_json(outbox, "continue", "job-done", "--text", "more", *FAST)
            eq(rc, 3, "refusal (JSON): exit 3")
            eq(px.count() - before, 1, "one request")
            eq(doc["outcome"], "refused", "outcome")
            eq(doc["state"], "TASK_STATE_COMPLETED", "the refused task's state")
            eq(doc["error"]["code"], -32004, "code")
            eq(doc["error"]["reason"], "TASK_TERMINAL", "reason")
            eq(doc["attempts"], 1, "one attempt")

            # Same ID, different content: the messageId is reused -> conflict.
            before = px.count()
            rc, doc = once_json(outbox, "send", "--agent", px.url, "--id", "job-done",
                                "--text", "something else", *FAST)
            eq(rc, 3, "conflict: exit 3")
            eq(px.count() - before, 1, "one request")
            eq(doc["error"]["reason"], "MESSAGE_ID_REUSED", "conflict reason")
            refused = [i for i in outbox_intents(outbox) if i["state"] == "refused"]
            eq(sorted(i["refusal"] for i in refused),
               ["MESSAGE_ID_REUSED", "TASK_TERMINAL", "TASK_TERMINAL"], "refusals recorded")
            eq(server_tasks(srv), ["job-done"], "one task")
        finally:
            px.stop()


class PlainShim:
    """A plain A2A 1.0 front for onced: its card does not declare the
    idempotency extension, it forwards POST bodies to onced as they are and
    loses the answers of the POSTs numbered in drop (1-based)."""

    def __init__(self, onced_port, drop=()):
        shim = self
        self.posts = 0
        self.ext_headers = 0
        self.drop = set(drop)

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                body = json.dumps({"name": "plain", "capabilities": {"extensions": []}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                shim.posts += 1
                shim.ext_headers += self.headers.get("A2A-Extensions") is not None
                st, hd, doc = rpc(onced_port, "x", None, raw=body)
                if shim.posts in shim.drop:
                    # onced did the work; the client never hears of it.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                out = json.dumps(doc).encode()
                self.send_response(st)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_plain_agent_converges_by_message_id():
    log = os.path.join(TMP, "exec-plain.log")
    outbox = os.path.join(TMP, "plain.db")
    with Onced(args=exec_agent(log)) as srv:
        shim = PlainShim(srv.port, drop=(1, 2))
        try:
            rc, doc = once_json(outbox, "send", "--agent", shim.url, "--text", "plain", *FAST)
            eq(rc, 0, "plain send converges (%r)" % doc)
            eq(doc["attempts"], 3, "two answers lost, the third heard")
            eq(shim.posts, 3, "three POSTs")
            eq(shim.ext_headers, 0, "plain mode: no A2A-Extensions header")
            tasks = server_tasks(srv)
            eq(tasks, [doc["taskId"]], "one task, under the server's (derived) ID")
            it = outbox_intents(outbox)[0]
            eq(it["mode"], "plain", "plain mode recorded")
            eq(it["taskId"], doc["taskId"], "the outbox learned the server's ID")
            check(it["messageId"] != it["taskId"], "the minted ID is the messageId")
            # --id needs the extension: refused locally, nothing sent.
            rc, out, err = once(outbox, "send", "--agent", shim.url, "--id", "mine", "--text", "x")
            eq(rc, 1, "--id against a plain agent fails")
            eq(shim.posts, 3, "and sends nothing")
            wait_finished(srv, tasks)
            eq(len(executions(log)), 1, "one execution")
        finally:
            shim.stop()


def test_cli_round_trip():
    outbox = os.path.join(TMP, "cli.db")
    with Onced() as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "ask:Which jurisdiction?", "--wait")
        eq(rc, 0, "send --wait stops at input-required")
        tid, state = out.split("\n")[0].split("\t")[:2]
        eq(state, "TASK_STATE_INPUT_REQUIRED", "waiting for input")
        check("Which jurisdiction?" in out, "the question is printed")
        rc, doc = once_json(outbox, "wait", tid)
        eq((rc, doc["state"]), (0, "TASK_STATE_INPUT_REQUIRED"), "wait returns at once")
        rc, out, err = once(outbox, "continue", tid, "--text", "Swiss law", "--wait")
        eq(rc, 0, "continue --wait completes")
        check(out.startswith(tid + "\tTASK_STATE_COMPLETED"), "completed: %r" % out)
        check("Swiss law" in out, "the artifact is printed")
        rc, doc = once_json(outbox, "get", tid)
        eq((rc, doc["state"]), (0, "TASK_STATE_COMPLETED"), "get")
        rc, doc = once_json(outbox, "cancel", tid)
        eq((rc, doc["error"]["reason"], doc["state"]), (3, "TASK_NOT_CANCELABLE", "TASK_STATE_COMPLETED"),
           "cancel of a completed task is refused")

        rc, doc = once_json(outbox, "send", "--agent", url, "--text", "sleep:30", "--uuid")
        eq(rc, 0, "a long task")
        uid = doc["taskId"]
        check(len(uid) == 36 and uid[14] == "4", "--uuid mints a UUIDv4: %s" % uid)
        rc, doc = once_json(outbox, "wait", uid, "--wait-timeout", "300ms")
        eq((rc, doc["error"]["reason"]), (4, "WAIT_TIMEOUT"), "wait gives up at --wait-timeout")
        rc, doc = once_json(outbox, "cancel", uid)
        eq((rc, doc["state"]), (0, "TASK_STATE_CANCELED"), "canceled")
        rc, doc = once_json(outbox, "wait", uid)
        eq((rc, doc["state"]), (5, "TASK_STATE_CANCELED"), "waiting on a canceled task: exit 5")

        its = outbox_intents(outbox)
        eq([i["kind"] for i in its], ["send", "continue", "send"], "intents")
        eq([i["state"] for i in its], ["final", "final", "final"], "all final")
        rc, doc = once_json(outbox, "outbox", "--prune", "0s")
        eq((rc, doc["pruned"]), (0, 3), "prune removes finished intents")

        rc, out, err = once(outbox, "get", "no-such-task")
        eq(rc, 2, "no --agent for an unknown task: usage")
        rc, doc = once_json(outbox, "get", "no-such-task", "--agent", url)
        eq((rc, doc["error"]["reason"]), (3, "TASK_NOT_FOUND"), "unknown task: refused")
        rc, out, err = once(outbox, "send", "--agent", url)
        eq(rc, 2, "send without --text: usage")
        rc, out, err = once(outbox, "--help")
        eq(rc, 0, "--help")
        for code in ("0 ", "1 ", "2 ", "3 ", "4 "):
            check("\n  " + code in out, "--help documents exit status %s" % code)


def test_effect_call_key():
    """examples/effect_call: the key is <task>:step-<n>, the same on a retry."""
    seen = []

    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append(self.headers.get("Idempotency-Key"))
            st = 503 if len(seen) == 1 else 200
            self.send_response(st)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d/sign" % httpd.server_address[1]
        p = subprocess.run([EFFECT_CALL, "01J9ZQ3V8M6J7D2C4X5Y8K0N1P", "4", url, '{"doc":"c"}'],
                           capture_output=True, text=True, timeout=scaled(30))
        eq(p.returncode, 0, "effect_call succeeds after a retry (%s)" % p.stderr)
        eq(seen, ["01J9ZQ3V8M6J7D2C4X5Y8K0N1P:step-4"] * 2, "the same key on both attempts")
    finally:
        httpd.shutdown()
        httpd.server_close()


if __name__ == "__main__":
    for exe in (ONCE, PROXY):
        if not os.path.exists(exe):
            print("FAIL: %s is missing (build first)" % exe, file=sys.stderr)
            sys.exit(1)
    try:
        run([test_response_loss_converges, test_timeouts_and_resets_retried, test_kill9_then_recover, test_dead_server_policy,
             test_retry_budget_under_outage, test_refusal_not_retried,
             test_plain_agent_converges_by_message_id, test_cli_round_trip, test_effect_call_key])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
