"""`once wait`, `send --wait` and `continue --wait` over SSE (issue 5, client
side): the client follows a task with SubscribeToTask when the agent's card
says capabilities.streaming, resumes a dropped stream with Last-Event-ID,
and polls GetTask when streaming is unavailable.

- a stream cut mid-task (the fault proxy killed while the task runs), the
  reconnections then reset and answered-but-lost by the next proxy (--reset,
  --drop-response): the wait ends with the task's terminal state, and the
  generations it saw (--json "generations") are the task's event list in the
  store: no gap, no duplicate;
- on a terminal (a pty), each state change is printed as it happens, not at
  the end;
- an agent whose card does not stream, that refuses SubscribeToTask, or
  that answers it 503 every time: the wait polls and still ends right;
- a link that goes down for good mid-stream: the wait gives up after
  --attempts failed reconnections, exit 4 ATTEMPTS_EXHAUSTED;
- continue --wait follows the new turn from the generation the continuation
  answered with.
"""
import http.server
import json
import os
import pty
import select
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ROOT, GatedAgent, Onced, check, eq, free_port, generation, rpc, run, scaled,
                     scratch_dir, wait_until)

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
ONCE = os.path.join(BUILD, "once")
PROXY = os.path.join(os.environ.get("ONCE_TOOLS", os.path.join(BUILD, "tools")), "proxy")
TMP = scratch_dir("once-stream-")
FAST = ["--backoff-base", "20ms", "--backoff-cap", "100ms", "--timeout", "5s"]
TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED")

# Ten progress events in three stages the test releases one by one: events
# while the stream is up, events while the link is down, the rest.
GATES = os.path.join(TMP, "gates")
STEPS_AGENT = GatedAgent("step 'step 1'; step 'step 2'; step 'step 3'; gate a; "
                         "step 'step 4'; step 'step 5'; step 'step 6'; gate b; "
                         "for i in 7 8 9 10; do step \"step $i\"; done", GATES)
STEPS = STEPS_AGENT.args
# One working event, then nothing until the test releases gate "go".
ONE_STEP = GatedAgent("step 'waiting for the test'; gate go", GATES).args
release = STEPS_AGENT.release   # the gates are shared


def once_cmd(outbox, *args):
    return [ONCE, "--outbox", outbox] + list(args)


def once_json(outbox, *args, timeout=60):
    p = subprocess.run(once_cmd(outbox, "--json", *args), capture_output=True, text=True,
                       timeout=scaled(timeout))
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        check(False, "once %s: not JSON (exit %d): %r / %r" % (args, p.returncode, p.stdout, p.stderr))


class Proxy:
    def __init__(self, to_port, *flags, port=0):
        self.log = open(os.path.join(TMP, "proxy-%d.log" % time.time_ns()), "w+")
        self.proc = subprocess.Popen([PROXY, "--listen", str(port), "--to", "127.0.0.1:%d" % to_port]
                                     + list(flags), stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.port = int(self.proc.stdout.readline())
        self.url = "http://127.0.0.1:%d/" % self.port

    def lines(self):
        self.log.flush()
        with open(self.log.name) as f:
            return [ln.split() for ln in f if ln.startswith("conn ")]

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.log.flush()


def stored_events(db, tid):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=scaled(10))
    try:
        return c.execute("SELECT e.generation, e.payload FROM events e JOIN tasks t ON e.tid=t.rid "
                         "WHERE t.task_id=? ORDER BY e.generation", (tid,)).fetchall()
    finally:
        c.close()


def get_task(srv, tid):
    st, _, doc = srv.rpc("GetTask", {"id": tid})
    check("result" in doc, "GetTask %s: %r" % (tid, doc))
    return doc["result"]


def wait_for(fn, timeout, what):
    return wait_until(fn, timeout=timeout, step=0.02, what=what)


def outbox_task_id(outbox):
    """The task ID of the outbox's one intent, once it is there."""
    def tid():
        p = subprocess.run(once_cmd(outbox, "--json", "outbox"), capture_output=True, text=True)
        try:
            intents = json.loads(p.stdout)["intents"]
        except (ValueError, KeyError):
            return None
        return intents[0].get("taskId") if intents else None
    return wait_for(tid, 10, "the send's intent in the outbox")


# ---------------------------------------------------------------------------

def status_text(task):
    parts = ((task.get("status") or {}).get("message") or {}).get("parts") or []
    return parts[0].get("text") if parts else None


def test_cut_mid_task_resumes():
    tmp = scratch_dir()
    db = os.path.join(tmp, "registry.db")
    outbox = os.path.join(tmp, "outbox.db")
    with Onced(STEPS, store="sqlite:" + db, tmpdir=tmp) as srv:
        port = free_port()
        a = Proxy(srv.port, port=port)
        # Attempts and budget enough for the reconnections that fail while
        # the link is down: the test, not the clock, decides how long that is.
        p = subprocess.Popen(once_cmd(outbox, "--json", "send", "--agent", a.url, "--text", "go",
                                      "--wait", "--attempts", "200", "--backoff-base", "50ms",
                                      "--backoff-cap", "200ms", "--budget-burst", "400"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        b = None
        try:
            # Connections: the card (mode), SendMessage, the card (streaming?),
            # then SubscribeToTask. The agent's first events are stored and it
            # waits at its first gate: the cut lands mid-task.
            wait_for(lambda: len(a.lines()) >= 4, 10, "the subscription to open")
            tid = outbox_task_id(outbox)
            wait_for(lambda: status_text(get_task(srv, tid)) == "step 3", 10,
                     "the agent's first events")
            before = get_task(srv, tid)
            a.kill()   # every connection through it is cut mid-stream
            check(before["status"]["state"] not in TERMINAL,
                  "the cut lands mid-task (%s)" % before["status"]["state"])
            check(generation(before) >= 3, "after some events (%d)" % generation(before))
            # Events happen while the link is down (a reconnection without
            # Last-Event-ID would show a gap), then it comes back flaky: the
            # first reconnection is reset before onced sees it, the second
            # reaches onced and its answer is lost.
            release(tid, "a")
            wait_for(lambda: status_text(get_task(srv, tid)) == "step 6", 10,
                     "the events the client cannot see")
            b = Proxy(srv.port, "--reset", "1", "--drop-response", "2", port=port)
            # The dropped stream ends (and the client reconnects again) only
            # when the task does: let the agent finish once the client is back.
            wait_for(lambda: len(b.lines()) >= 1, 30, "the client to reconnect")
            release(tid, "b")
            out, err = p.communicate(timeout=scaled(40))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            if b:
                b.kill()
        eq(p.returncode, 0, "the wait ends well (stderr %r)" % err)
        doc = json.loads(out)
        final = get_task(srv, tid)
        eq(final["status"]["state"], "TASK_STATE_COMPLETED", "the task completed")
        eq(doc["state"], "TASK_STATE_COMPLETED", "the wait reports the terminal state")
        eq(doc["taskId"], tid, "of the task")
        eq(doc["streamed"], True, "followed over SSE")
        modes = [ln[2] for ln in b.lines()]
        eq(modes[:2], ["reset", "drop"], "the reconnections met a reset, then a lost answer")
        check(len(modes) >= 3 and modes[2] == "forward", "then went through: %r" % modes)
        gens = doc["generations"]
        stored = [g for g, _ in stored_events(db, tid)]
        eq(stored, list(range(1, generation(final) + 1)), "the store holds every event")
        eq(gens, stored[stored.index(gens[0]):],
           "every generation from the send's on: no gap, no duplicate, across the cut")
        eq(gens[-1], generation(final), "up to the terminal one")
        check(doc["attempts"] >= 4, "reconnections counted: %d" % doc["attempts"])
        check(any(t["text"] == "done" for t in doc["task"]["status"]["message"]["parts"]),
              "the result is the final Task: %r" % doc["task"]["status"])


class Terminal:
    """The stderr of a child process on a pty, read line by line."""

    def __init__(self):
        self.master, self.slave = pty.openpty()
        self.lines, self.buf = [], b""

    def read_until(self, pred, what, timeout=20):
        end = time.time() + scaled(timeout)
        while not pred(self.lines):
            left = end - time.time()
            check(left > 0, "timed out waiting for %s on the terminal: %r" % (what, self.lines))
            r, _, _ = select.select([self.master], [], [], left)
            if not r:
                continue
            try:
                chunk = os.read(self.master, 4096)
            except OSError:   # EIO: the child closed its end
                chunk = b""
            check(chunk, "the terminal closed before %s: %r" % (what, self.lines))
            self.buf += chunk
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                self.lines.append(line.decode().strip())

    def close(self):
        os.close(self.master)


def test_wait_prints_changes_as_they_happen():
    """The agent stays working until the test has seen "working" on the
    terminal: had the client printed the changes only at the end, the test
    would never see it, and the task could not complete."""
    tmp = scratch_dir()
    outbox = os.path.join(tmp, "outbox.db")
    with Onced(ONE_STEP, tmpdir=tmp) as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        rc, doc = once_json(outbox, "send", "--agent", url, "--text", "go")
        eq(rc, 0, "sent")
        tid = doc["taskId"]
        term = Terminal()
        p = subprocess.Popen(once_cmd(outbox, "wait", tid), stdout=subprocess.PIPE,
                             stderr=term.slave, text=True)
        os.close(term.slave)

        def states(lines):
            return [ln.split(": ")[1] for ln in lines if ln.startswith(tid + ": ")]
        try:
            term.read_until(lambda ls: "TASK_STATE_WORKING" in states(ls), "the working state")
            eq(get_task(srv, tid)["status"]["state"], "TASK_STATE_WORKING",
               "working was shown while the task was working")
            release(tid, "go")
            term.read_until(lambda ls: "TASK_STATE_COMPLETED" in states(ls), "the completed state")
            out, _ = p.communicate(timeout=scaled(10))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            term.close()
        eq(p.returncode, 0, "wait exit status")
        names = states(term.lines)
        check(names.index("TASK_STATE_WORKING") < names.index("TASK_STATE_COMPLETED") and
              names[-1] == "TASK_STATE_COMPLETED",
              "the state changes on the terminal, in the task's order: %r" % term.lines)
        check(out.startswith(tid + "\tTASK_STATE_COMPLETED"), "the result on stdout: %r" % out)


class Front:
    """An agent in front of onced: its card says `streaming` as told, POSTs
    go to onced as they are, except SubscribeToTask when `refuse` (answered
    -32601, as an agent without streaming would) or `busy` (503 every time)."""

    def __init__(self, onced_port, streaming, refuse=False, busy=False):
        front = self
        self.methods = []

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, st, doc):
                out = json.dumps(doc).encode()
                self.send_response(st)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self):
                self.reply(200, {"name": "front", "capabilities": {"streaming": streaming,
                                                                  "extensions": []}})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                req = json.loads(body)
                front.methods.append(req["method"])
                if req["method"] == "SubscribeToTask" and refuse:
                    return self.reply(200, {"jsonrpc": "2.0", "id": req["id"], "error": {
                        "code": -32601, "message": "Method not found"}})
                if req["method"] == "SubscribeToTask" and busy:
                    return self.reply(503, {"jsonrpc": "2.0", "id": req["id"], "error": {
                        "code": -32603, "message": "too many streams"}})
                st, _, doc = rpc(onced_port, "x", None, raw=body)
                self.reply(st, doc)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_polls_when_streaming_is_unavailable():
    tmp = scratch_dir()
    with Onced(ONE_STEP, tmpdir=tmp) as srv:
        for n, (streaming, refuse, busy, what) in enumerate((
                (False, False, False, "a card without streaming"),
                (True, True, False, "SubscribeToTask refused"),
                (True, False, True, "SubscribeToTask always 503"))):
            outbox = os.path.join(tmp, "outbox-%d.db" % n)
            fr = Front(srv.port, streaming, refuse, busy)
            p = subprocess.Popen(once_cmd(outbox, "--json", "send", "--agent", fr.url, "--text",
                                          "go", "--wait", "--attempts", "3", *FAST),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                # The task stays working until the client has polled it once.
                wait_for(lambda: "GetTask" in fr.methods, 20, what + ": a first GetTask")
                release(outbox_task_id(outbox), "go")
                out, err = p.communicate(timeout=scaled(60))
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                fr.stop()
            eq(p.returncode, 0, what + ": the wait ends well (stderr %r)" % err)
            doc = json.loads(out)
            eq(doc["state"], "TASK_STATE_COMPLETED", what + ": completed")
            eq(doc["streamed"], False, what + ": by polling")
            check(fr.methods.count("GetTask") >= 2, what + ": GetTask polled: %r" % fr.methods)
            eq(fr.methods.count("SubscribeToTask"), 3 if busy else 1 if refuse else 0,
               what + ": streaming tried only when the card offers it (busy: --attempts times)")
            gens = doc["generations"]
            eq(gens, sorted(set(gens)), what + ": generations increase")
            eq(gens[-1], generation(doc["task"]), what + ": up to the last")


def test_link_down_gives_up_by_the_policy():
    tmp = scratch_dir()
    outbox = os.path.join(tmp, "outbox.db")
    with Onced(ONE_STEP, tmpdir=tmp) as srv:
        a = Proxy(srv.port)
        rc, doc = once_json(outbox, "send", "--agent", a.url, "--text", "go")
        eq(rc, 0, "sent")
        tid = doc["taskId"]
        # Working, and it stays so (its gate is never released): the state
        # the wait sees first and last.
        wait_for(lambda: get_task(srv, tid)["status"]["state"] == "TASK_STATE_WORKING", 10,
                 "the task to be working")
        p = subprocess.Popen(once_cmd(outbox, "--json", "wait", tid, "--attempts", "4",
                                      "--backoff-base", "50ms", "--backoff-cap", "100ms"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # Connections: the proxy saw the send's card and SendMessage; the
            # wait's GetTask, card and SubscribeToTask follow.
            wait_for(lambda: len(a.lines()) >= 5, 10, "the subscription to open")
            t0 = time.time()
            a.kill()   # and it never comes back
            out, err = p.communicate(timeout=scaled(30))
            took = time.time() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            release(tid, "go")
        eq(p.returncode, 4, "retries exhausted: exit 4 (%r)" % err)
        doc = json.loads(out)
        eq(doc["error"]["reason"], "ATTEMPTS_EXHAUSTED", "reason")
        check(doc["state"] == "TASK_STATE_WORKING", "the last state seen: %r" % doc.get("state"))
        # 4 refused connects and 3 sleeps of at most 100 ms: well under one
        # attempt's 10 s --timeout, which a wait that hung would reach.
        check(took < scaled(5), "gave up within the policy's backoff (%.2fs)" % took)


def test_continue_wait_follows_the_new_turn():
    tmp = scratch_dir()
    db = os.path.join(tmp, "registry.db")
    outbox = os.path.join(tmp, "outbox.db")
    with Onced(store="sqlite:" + db, tmpdir=tmp) as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        rc, doc = once_json(outbox, "send", "--agent", url, "--text", "ask:Which court?", "--wait")
        eq((rc, doc["state"]), (0, "TASK_STATE_INPUT_REQUIRED"), "send --wait stops at input-required")
        tid = doc["taskId"]
        asked = generation(doc["task"])
        rc, doc = once_json(outbox, "wait", tid)
        eq((rc, doc["state"], doc["generations"]), (0, "TASK_STATE_INPUT_REQUIRED", [asked]),
           "wait on an interrupted task returns at once")
        rc, doc = once_json(outbox, "continue", tid, "--text", "Zurich", "--wait")
        eq((rc, doc["state"]), (0, "TASK_STATE_COMPLETED"), "continue --wait completes")
        stored = [g for g, _ in stored_events(db, tid)]
        gens = doc["generations"]
        check(gens[0] > asked, "the new turn starts after the question (%r)" % gens)
        eq(gens, stored[stored.index(gens[0]):], "every event of the new turn, once")
        eq(doc["streamed"], True, "over SSE")


if __name__ == "__main__":
    for exe in (ONCE, PROXY):
        if not os.path.exists(exe):
            print("FAIL: %s is missing (build first)" % exe, file=sys.stderr)
            sys.exit(1)
    run([test_cut_mid_task_resumes, test_wait_prints_changes_as_they_happen,
         test_polls_when_streaming_is_unavailable, test_link_down_gives_up_by_the_policy,
         test_continue_wait_follows_the_new_turn])
