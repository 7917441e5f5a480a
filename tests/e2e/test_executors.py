"""The example agents over the wire (issue 8): examples/c_agent.c (an executor
written in C, served by once__serve_start) and examples/review_agent.py (the
same agent behind `onced --exec "python3 examples/review_agent.py"`). Both
get the same messages and must answer with the same A2A 1.0 JSON, which is
compared whole, member by member (only minted IDs and timestamps are
matched by shape):

- status updates with an agent message (text and data parts), every part kind
  (text, raw, url, data) with filename / mediaType / metadata, artifact name /
  description / metadata, an artifact streamed in two chunks and read back
  as one;
- a direct Message answer is {"message": ...} (no task), and a retried send
  gets the identical bytes back with Idempotent-Replayed: true; the record
  obeys retention (TASK_EXPIRED after the window);
- completed, failed and rejected with a reason, input-required with the
  question, auth-required and its continuation;
- the turn reads the raw message, the fence, the step, the checkpoint, the
  task's state, history and artifacts so far; routing by text, by
  metadata.route and by messageId;
- cancelling a running turn: the C executor sees the cancellation (it says so
  in its log), the subprocess gets SIGTERM; a turn that ignores the cancel
  and writes later is fenced off: nothing of it shows, nothing changes;
- a command that prints garbage, exits mid-line, or runs past
  --exec-deadline: the task fails with a reason and onced keeps serving.

Both servers must shut down cleanly at the end (exit 0: under ASan that also
means no leak).
"""
import json
import os
import re
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, ROOT, Onced, check, eq, error_info, free_port, generation_metadata,
                     http_request, live_descendants, new_id, run, scaled, scratch_dir, user_message,
                     wait_until)

TMP = scratch_dir("once-executors-")
TOOLS = os.environ.get("ONCE_TOOLS", os.path.join(ROOT, "build", "tools"))
C_AGENT = os.path.join(TOOLS, "c_agent")
REVIEW_AGENT = os.path.join(ROOT, "examples", "review_agent.py")
HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


class CAgent(Onced):
    """examples/c_agent.c, started like onced (same readiness check)."""

    def __init__(self, store):
        self.tmp = TMP
        self.port = free_port()
        self.args = [C_AGENT, "--listen", "127.0.0.1:%d" % self.port, "--store", store]
        self.log = open(os.path.join(TMP, "c_agent-%d.log" % self.port), "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log)
        self.wait_ready()


# --- matching whole JSON documents ---------------------------------------------

class Shape:
    def __init__(self, name, pattern):
        self.name, self.re = name, re.compile(pattern)

    def __repr__(self):
        return "<%s>" % self.name


UUID = Shape("uuid", r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TS = Shape("timestamp", r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")


def mismatch(got, want, path="$"):
    """The first difference between got and want (None if they match). want
    may hold Shapes where a value is minted by the server."""
    if isinstance(want, Shape):
        if isinstance(got, str) and want.re.match(got):
            return None
        return "%s: %r is not a %s" % (path, got, want.name)
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return "%s: expected an object, got %r" % (path, got)
        if set(got) != set(want):
            return "%s: members %s, want %s" % (path, sorted(got), sorted(want))
        for k in want:
            d = mismatch(got[k], want[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return "%s: %r, want %d items like %r" % (path, got, len(want), want)
        for i, (g, w) in enumerate(zip(got, want)):
            d = mismatch(g, w, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if type(got) is not type(want) or got != want:
        return "%s: got %r, want %r" % (path, got, want)
    return None


def same(got, want, what):
    d = mismatch(got, want)
    check(d is None, "%s: %s\n  got: %s" % (what, d, json.dumps(got)))


# --- talking to a server -------------------------------------------------------

def post(srv, method, params, ext=False, rid=1):
    """One JSON-RPC call: (headers, raw body bytes, parsed body)."""
    h = dict(HEADERS)
    if ext:
        h["A2A-Extensions"] = EXT
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    st, hd, data = http_request(srv.port, "POST", "/", body=body.encode(), headers=h)
    eq(st, 200, "%s: HTTP status" % method)
    return hd, data, json.loads(data)


def send(srv, message, ext=False, immediately=False):
    params = {"message": message}
    if immediately:
        params["configuration"] = {"returnImmediately": True}
    return post(srv, "SendMessage", params, ext=ext)[2]


def result(doc, what):
    check(isinstance(doc, dict) and "result" in doc, "%s: a result, not %r" % (what, doc))
    return doc["result"]


def get_task(srv, tid):
    return result(post(srv, "GetTask", {"id": tid})[2], "GetTask")


def sent(message, task_id, context_id):
    """A user message as stored: what the client sent plus taskId, contextId."""
    m = dict(message)
    m.update({"taskId": task_id, "contextId": context_id})
    return m


def agent_msg(task_id, context_id, parts, metadata=None):
    """An agent message as onced completes it (messageId, role, ids filled in)."""
    m = {"parts": parts, "taskId": task_id, "contextId": context_id, "messageId": UUID,
         "role": "ROLE_AGENT"}
    if metadata is not None:
        m["metadata"] = metadata
    return m


def agent_text(task_id, context_id, text):
    return agent_msg(task_id, context_id, [{"text": text}])


def task_json(t, state, history, generation, status_message=None, artifacts=None):
    status = {"state": state, "timestamp": TS}
    if status_message is not None:
        status["message"] = status_message
    task = {"id": t["id"], "contextId": t["contextId"], "status": status, "history": history,
            "metadata": generation_metadata(generation)}
    if artifacts is not None:
        task["artifacts"] = artifacts
    return task


def ids_of(doc, what):
    """(task id, context id) of a {"task": ...} result, checked by shape only."""
    r = result(doc, what)
    check(isinstance(r, dict) and list(r) == ["task"], "%s: result is {\"task\"}: %r" % (what, r))
    return {"id": r["task"].get("id"), "contextId": r["task"].get("contextId")}


def read_log(srv):
    with open(srv.log.name, "rb") as f:
        return f.read().decode(errors="replace")


def agent_stderr_line(tid, text):
    """How onced's JSON log (its format when stderr is a file) holds a
    line the agent wrote on stderr: the event, the task, the text."""
    return '"event":"agent_stderr","task":"%s","text":"%s"' % (tid, text)


# --- the servers ----------------------------------------------------------------

AGENTS = []   # (name, server): both example agents


def each_agent(fn):
    """Run a test body for the C agent and for the Python agent."""
    def t():
        for name, srv in AGENTS:
            fn(name, srv)
    t.__name__ = fn.__name__
    return t


@each_agent
def test_contract_review(name, srv):
    tid = "t-review-" + new_id()
    m1 = user_message("ACME supply agreement", task_id=tid)
    doc = send(srv, m1, ext=True)
    t = ids_of(doc, name + " turn 1")
    eq(t["id"], tid, name + ": the client-minted task id")
    cid = t["contextId"]
    check(UUID.re.match(cid or ""), name + ": a minted contextId")
    question = agent_msg(tid, cid, [{"text": "Which jurisdiction governs this contract?"}],
                         metadata={"question": "jurisdiction"})
    history1 = [sent(m1, tid, cid),
                agent_text(tid, cid, "reading the contract (21 characters)"),
                question]
    same(result(doc, name), {"task": task_json(t, "TASK_STATE_INPUT_REQUIRED", history1, 4,
                                               status_message=question)},
         name + ": turn 1 asks, the question is status.message and in the history")

    m2 = user_message("Swiss", task_id=tid)
    hd, raw2, doc = post(srv, "SendMessage", {"message": m2}, ext=True)
    done = agent_text(tid, cid, "review filed as %s:step-0" % tid)
    review = {"artifactId": "review", "name": "review.md", "description": "contract review",
              "parts": [{"text": "# Review\n\nContract: ACME supply agreement\n",
                         "mediaType": "text/markdown"},
                        {"text": "Governing law: Swiss. No blocking issues.\n",
                         "mediaType": "text/markdown"}]}
    history2 = history1 + [sent(m2, tid, cid), agent_text(tid, cid, "reviewing under Swiss law"),
                           done]
    same(result(doc, name), {"task": task_json(t, "TASK_STATE_COMPLETED", history2, 9,
                                               status_message=done, artifacts=[review])},
         name + ": turn 2 read the checkpoint, streamed two chunks into one artifact, used "
         "the step's effect key and completed")
    eq(hd.get("idempotent-replayed"), None, name + ": the continuation itself is no replay")
    hd, again, _ = post(srv, "SendMessage", {"message": m2}, ext=True)
    eq(hd.get("idempotent-replayed"), "true", name + ": a retried continuation replays")
    eq(again, raw2, name + ": with the same bytes")
    same(get_task(srv, tid), task_json(t, "TASK_STATE_COMPLETED", history2, 9,
                                       status_message=done, artifacts=[review]),
         name + ": GetTask returns the same task")


def streaming_on(srv):
    st, _, data = http_request(srv.port, "GET", "/.well-known/agent-card.json")
    return st == 200 and json.loads(data).get("capabilities", {}).get("streaming") is True


def stream(srv, message, ext=False):
    """SendStreamingMessage: the StreamResponse of every SSE event, in order
    (the server ends the stream when the task is terminal or interrupted)."""
    h = dict(HEADERS)
    if ext:
        h["A2A-Extensions"] = EXT
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                       "params": {"message": message}})
    st, hd, data = http_request(srv.port, "POST", "/", body=body.encode(), headers=h)
    eq((st, hd.get("content-type", "").split(";")[0]), (200, "text/event-stream"),
       "SendStreamingMessage answers an event stream")
    events = []
    for block in data.decode().split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data:"):
                events.append(result(json.loads(line[5:]), "SSE event"))
    return events


@each_agent
def test_chunks_on_the_stream(name, srv):
    """A client streaming turn 2 sees the two chunks as they were written."""
    if not streaming_on(srv):
        print("     (streaming is off: %s skipped)" % name)
        return
    tid = "t-stream-" + new_id()
    doc = send(srv, user_message("Stream contract", task_id=tid), ext=True)
    cid = ids_of(doc, name + " stream turn 1")["contextId"]
    events = stream(srv, user_message("Dutch", task_id=tid), ext=True)
    chunks = [e for e in events if "artifactUpdate" in e]
    same(chunks, [
        {"artifactUpdate": {"taskId": tid, "contextId": cid, "append": False, "lastChunk": False,
                            "metadata": generation_metadata(7),
                            "artifact": {"artifactId": "review", "name": "review.md",
                                         "description": "contract review",
                                         "parts": [{"text": "# Review\n\nContract: Stream "
                                                            "contract\n",
                                                    "mediaType": "text/markdown"}]}}},
        {"artifactUpdate": {"taskId": tid, "contextId": cid, "append": True, "lastChunk": True,
                            "metadata": generation_metadata(8),
                            "artifact": {"artifactId": "review",
                                         "parts": [{"text": "Governing law: Dutch. No blocking "
                                                            "issues.\n",
                                                    "mediaType": "text/markdown"}]}}}],
         name + ": the artifact arrives in two chunks (append, lastChunk)")
    last = events[-1].get("statusUpdate") or {}
    eq((last.get("status") or {}).get("state"), "TASK_STATE_COMPLETED",
       name + ": the stream ends with the completion")


@each_agent
def test_every_part_kind(name, srv):
    # Routed by metadata.route: the text says something else.
    m = user_message("this text is not the route", metadata={"route": "parts"})
    doc = send(srv, m)
    t = ids_of(doc, name + " parts")
    kinds = {"artifactId": "kinds", "name": "kinds", "description": "one part of each kind",
             "metadata": {"example": True},
             "parts": [{"text": "plain text"},
                       {"raw": "AAFiaW5hcnk=", "filename": "blob.bin",
                        "mediaType": "application/octet-stream"},
                       {"url": "https://example.com/contract.pdf", "filename": "contract.pdf",
                        "mediaType": "application/pdf"},
                       {"data": {"score": 0.93, "flags": ["ok"]},
                        "mediaType": "application/json", "metadata": {"schema": "review/v1"}}]}
    same(result(doc, name), {"task": task_json(t, "TASK_STATE_COMPLETED",
                                               [sent(m, t["id"], t["contextId"])], 4,
                                               artifacts=[kinds])},
         name + ": one artifact with a part of every kind, exactly as the agent wrote it")
    check(b"0.93," in http_request(srv.port, "POST", "/", headers=HEADERS, body=json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": t["id"]}}).encode())[2],
        name + ": the real 0.93 goes on the wire as 0.93")


@each_agent
def test_direct_message(name, srv):
    m = user_message("reply: 42")
    hd, raw, doc = post(srv, "SendMessage", {"message": m})
    r = result(doc, name + " reply")
    same(r, {"message": {"parts": [{"text": "42"}], "metadata": {"answeredBy": name},
                         "contextId": UUID, "messageId": UUID, "role": "ROLE_AGENT"}},
         name + ": a direct Message, not a task (no taskId in it)")
    eq(hd.get("idempotent-replayed"), None, name + ": the first answer is no replay")
    for i in range(2):
        hd, again, _ = post(srv, "SendMessage", {"message": m})
        eq(hd.get("idempotent-replayed"), "true", name + ": a retried send is a replay")
        eq(again, raw, name + ": it returns the identical Message, byte for byte")

    # With a client-minted task ID the record sits under that key; it is a
    # Message, so GetTask does not find a task there.
    tid = "t-reply-" + new_id()
    doc = send(srv, user_message("reply: under a key", task_id=tid), ext=True)
    eq(list(result(doc, name)), ["message"], name + ": a Message under a client-minted id")
    c, reason, meta = error_info(post(srv, "GetTask", {"id": tid})[2])
    eq((c, reason, meta.get("taskId")), (-32001, "TASK_NOT_FOUND", tid),
       name + ": GetTask on a Message answer")
    c, reason, meta = error_info(send(srv, user_message("again", task_id=tid), ext=True))
    eq((c, reason), (-32004, "TASK_TERMINAL"), name + ": a new message to it is refused")


@each_agent
def test_route_by_message_id(name, srv):
    mid = "ping-" + new_id()
    doc = send(srv, user_message("the text does not matter", message_id=mid))
    same(result(doc, name), {"message": {"parts": [{"text": "pong"}],
                                         "metadata": {"answeredBy": name, "inReplyTo": mid},
                                         "contextId": UUID, "messageId": UUID,
                                         "role": "ROLE_AGENT"}},
         name + ": routed by messageId, and the agent saw it")


@each_agent
def test_endings(name, srv):
    for text, state, reason in [
            ("reject", "TASK_STATE_REJECTED", name + " only reviews contracts"),
            ("fail", "TASK_STATE_FAILED", name + ": asked to fail")]:
        m = user_message(text)
        doc = send(srv, m)
        t = ids_of(doc, name + " " + text)
        why = agent_text(t["id"], t["contextId"], reason)
        same(result(doc, name), {"task": task_json(t, state,
                                                   [sent(m, t["id"], t["contextId"]), why], 3,
                                                   status_message=why)},
             name + ": %s with the reason as status.message" % state)

    m1 = user_message("auth")
    doc = send(srv, m1)
    t = ids_of(doc, name + " auth")
    tid, cid = t["id"], t["contextId"]
    why = agent_text(tid, cid, "sign in to the contract archive first")
    history = [sent(m1, tid, cid), why]
    same(result(doc, name), {"task": task_json(t, "TASK_STATE_AUTH_REQUIRED", history, 3,
                                               status_message=why)},
         name + ": auth-required with an explanation")
    m2 = user_message("token-123", task_id=tid)
    doc = send(srv, m2)
    done = agent_text(tid, cid, "signed in; the archive is open")
    same(result(doc, name), {"task": task_json(t, "TASK_STATE_COMPLETED",
                                               history + [sent(m2, tid, cid), done], 5,
                                               status_message=done)},
         name + ": the message after auth-required continues the task (plain A2A 1.0 taskId)")


@each_agent
def test_turn_reads_the_whole_task(name, srv):
    m1 = user_message("inspect")
    doc = send(srv, m1)
    t = ids_of(doc, name + " inspect")
    tid, cid = t["id"], t["contextId"]
    progress = agent_msg(tid, cid, [{"text": "looking at your message"},
                                    {"data": {"messageId": m1["messageId"], "fence": 1,
                                              "step": 0},
                                     "mediaType": "application/json"}])
    ask = agent_text(tid, cid, "anything else?")
    notes = {"artifactId": "notes", "name": "notes", "parts": [{"text": "first turn notes"}]}
    history = [sent(m1, tid, cid), progress, ask]
    same(result(doc, name), {"task": task_json(t, "TASK_STATE_INPUT_REQUIRED", history, 5,
                                               status_message=ask, artifacts=[notes])},
         name + ": a progress message with text and data parts, an artifact, a question")

    m2 = user_message("what did you see?", task_id=tid, metadata={"tone": "curious"},
                      referenceTaskIds=[tid])
    doc = send(srv, m2)
    seen = {"messageId": m2["messageId"], "message": sent(m2, tid, cid), "fence": 2, "step": 1,
            "resumed": False, "checkpoint": '{"phase":"inspect"}', "state": "TASK_STATE_WORKING",
            "historyRoles": ["ROLE_USER", "ROLE_AGENT", "ROLE_AGENT", "ROLE_USER"],
            "artifactIds": ["notes"]}
    inspect = {"artifactId": "inspect", "name": "inspect",
               "description": "what the agent read on this turn",
               "parts": [{"data": seen, "mediaType": "application/json"}]}
    same(result(doc, name), {"task": task_json(t, "TASK_STATE_COMPLETED",
                                               history + [sent(m2, tid, cid)], 8,
                                               artifacts=[notes, inspect])},
         name + ": turn 2 saw the raw message, fence 2, the step and checkpoint turn 1 wrote, "
         "the history and the artifacts so far")


def wait_working(srv, tid, text, what):
    def ready():
        t = get_task(srv, tid)
        msg = (t["status"].get("message") or {}).get("parts") or [{}]
        return t if (t["status"]["state"] == "TASK_STATE_WORKING" and
                     msg[0].get("text") == text) else None
    return wait_until(ready, timeout=10, what=what)


def cancel(srv, tid, what):
    r = result(post(srv, "CancelTask", {"id": tid})[2], what + ": CancelTask")
    eq(r["status"]["state"], "TASK_STATE_CANCELED", what + ": CancelTask answers canceled")
    return r


@each_agent
def test_cancel_observed(name, srv):
    m = user_message("sleep: 30")
    t = ids_of(send(srv, m, immediately=True), name + " sleep")
    tid, cid = t["id"], t["contextId"]
    wait_working(srv, tid, "sleeping 30 s", name + ": the turn to start sleeping")
    t0 = time.time()
    c = cancel(srv, tid, name)
    working = agent_text(tid, cid, "sleeping 30 s")
    want = task_json(t, "TASK_STATE_CANCELED", [sent(m, tid, cid), working], 4)
    same(c, want, name + ": the canceled task")
    note = ("c_agent: task %s canceled while sleeping; stopping" % tid if name == "c_agent"
            else agent_stderr_line(tid, "review_agent: SIGTERM, stopping"))
    wait_until(lambda: note in read_log(srv), timeout=10,
               what=name + ": the agent to notice the cancel (%s)" % note)
    check(time.time() - t0 < scaled(5), name + ": it stopped at once, not after its 30 s")
    same(get_task(srv, tid), want, name + ": the task stays as the cancel left it")


@each_agent
def test_cancel_fences_late_writes(name, srv):
    m = user_message("slow: 1")
    t = ids_of(send(srv, m, immediately=True), name + " slow")
    tid, cid = t["id"], t["contextId"]
    wait_working(srv, tid, "calling a slow service (1 s)", name + ": the slow call to start")
    cancel(srv, tid, name)
    want = task_json(t, "TASK_STATE_CANCELED",
                     [sent(m, tid, cid), agent_text(tid, cid, "calling a slow service (1 s)")], 4)
    # The agent ignores the cancel and writes after its call.
    note = ("c_agent: task %s: the late artifact was fenced off" % tid if name == "c_agent"
            else agent_stderr_line(tid, "review_agent: slow call done, publishing"))
    wait_until(lambda: note in read_log(srv), timeout=10,
               what=name + ": the agent to write after the cancel (%s)" % note)
    # c_agent logs after its write was refused; review_agent (a process of
    # onced's) before it writes: its exit is the sign its lines were read.
    wait_until(lambda: not live_descendants(srv.proc.pid), timeout=15,
               what=name + ": the agent's process to exit")
    same(get_task(srv, tid), want,
         name + ": the late artifact and completion are nowhere; the generation did not move")


# --- misbehaving commands ---------------------------------------------------------

MISBEHAVE = r'''#!/bin/sh
# Garbage and a cut line for two messages; everything else goes to the
# example agent with the turn it was given.
IFS= read -r turn
case $turn in
*'"text":"garbage"'*) echo 'Traceback (most recent call last):' ;;
*'"text":"midline"'*) printf '{"status":"compl' ;;
*) printf '%s\n' "$turn" | exec python3 "$1" ;;
esac
'''

bad = None   # onced --exec MISBEHAVE --exec-deadline DEADLINE_MS --test-admin
# Time for the agent (Python) to start and say it sleeps, however busy the
# machine: the deadline test waits for it.
DEADLINE_MS = int(scaled(5000))


def expect_failed(srv, text, reason, working=None):
    m = user_message(text)
    t0 = time.time()
    doc = send(srv, m)
    t = ids_of(doc, text)
    tid, cid = t["id"], t["contextId"]
    why = agent_text(tid, cid, reason)
    history = [sent(m, tid, cid)] + ([agent_text(tid, cid, working)] if working else []) + [why]
    same(result(doc, text), {"task": task_json(t, "TASK_STATE_FAILED", history, len(history) + 1,
                                               status_message=why)},
         "%s: failed, with the reason as status.message" % text)
    return time.time() - t0


def still_serving(srv, what):
    m = user_message("parts")
    doc = send(srv, m)
    eq(result(doc, what)["task"]["status"]["state"], "TASK_STATE_COMPLETED",
       "onced keeps serving after " + what)


def test_garbage_output():
    expect_failed(bad, "garbage", "exec: malformed output line 1: output line is not JSON "
                  "('[' or '{' expected near 'Traceback') (line: Traceback (most recent call "
                  "last):)")
    still_serving(bad, "garbage output")


def test_exit_mid_line():
    expect_failed(bad, "midline", "exec: output ended in the middle of line 1 (no final "
                  "newline; the command exited mid-line?) (line: {\"status\":\"compl)")
    still_serving(bad, "an exit mid-line")


def test_deadline():
    took = expect_failed(bad, "sleep: 30", "exec: deadline exceeded: the command ran longer "
                         "than %d ms" % DEADLINE_MS, working="sleeping 30 s")
    check(0.75 * DEADLINE_MS / 1000 < took < DEADLINE_MS / 1000 + scaled(8),
          "the deadline ended the turn at about %d ms (%.1f s)" % (DEADLINE_MS, took))
    still_serving(bad, "a deadline")


def test_message_retention():
    """A direct Message is recorded like a task: after the retention window a
    retried send gets TASK_EXPIRED, never a second run."""
    m = user_message("reply: kept for a while")
    hd, raw, _ = post(bad, "SendMessage", {"message": m})
    hd, again, _ = post(bad, "SendMessage", {"message": m})
    eq((hd.get("idempotent-replayed"), again), ("true", raw), "replayed inside the window")
    post(bad, "once/admin/setClockOffset", {"offsetMs": 73 * 3600 * 1000})

    def expired():
        c, reason, _ = error_info(post(bad, "SendMessage", {"message": m})[2])
        return (c, reason) == (-32001, "TASK_EXPIRED")
    wait_until(expired, timeout=10, step=0.2, what="the Message record to expire")


def main():
    global bad
    check(os.access(C_AGENT, os.X_OK), "examples/c_agent.c is built at " + C_AGENT)
    script = os.path.join(TMP, "misbehave.sh")
    with open(script, "w") as f:
        f.write(MISBEHAVE)
    py = "python3 " + shlex.quote(REVIEW_AGENT)
    c = CAgent("sqlite:" + os.path.join(TMP, "c.db"))
    p = Onced(args=["--exec", py], tmpdir=TMP, store="sqlite:" + os.path.join(TMP, "py.db"))
    bad = Onced(args=["--exec", "sh %s %s" % (shlex.quote(script), shlex.quote(REVIEW_AGENT)),
                      "--exec-deadline", "%dms" % DEADLINE_MS, "--exec-grace", "1s",
                      "--test-admin"],
                tmpdir=TMP, store="sqlite:" + os.path.join(TMP, "bad.db"))
    AGENTS.extend([("c_agent", c), ("review_agent", p)])
    tests = [test_contract_review, test_chunks_on_the_stream, test_every_part_kind, test_direct_message,
             test_route_by_message_id, test_endings, test_turn_reads_the_whole_task,
             test_cancel_observed, test_cancel_fences_late_writes, test_garbage_output,
             test_exit_mid_line, test_deadline, test_message_retention]

    def test_clean_shutdown():
        for name, srv in [("c_agent", c), ("onced (review_agent)", p), ("onced (misbehave)", bad)]:
            srv.stop()
            eq(srv.proc.returncode, 0, "%s exits 0 on SIGTERM (log: %s)" % (
                name, srv.logtext()[-1500:]))
    try:
        run(tests + [test_clean_shutdown])
    finally:
        for s in (c, p, bad):
            if s.proc.poll() is None:
                s.stop()


if __name__ == "__main__":
    main()
