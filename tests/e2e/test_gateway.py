"""The gateway, `onced --upstream URL`, in front of a real A2A 1.0 agent built on
@a2a-js/sdk 1.3.0 (tests/interop/upstream_agent.mjs, which counts what it is
asked to do). Real processes only: the agent, onced, the fault-injecting proxy.

- the card onced serves: the upstream's name and skills, onced's interfaces and
  the once extension; an upstream that cannot be reached at start stops onced
  with a message naming it;
- on both upstream bindings (JSON-RPC, HTTP+JSON): a blocking send completes
  with the upstream's artifact; "ask:Q" parks the task in input-required and
  the continuation lands on the same upstream task (two messages, one task, one
  upstream context per once context); "auth:Q" likewise; "fail" and "reject"
  carry the upstream's message; "reply:T" is a direct Message; "chunks:N" one
  artifact with every chunk; returnImmediately then GetTask; a stream through
  onced ends completed; a streaming upstream is sent to by SendStreamingMessage
  and never polled, one started with --no-streaming is polled (GetTask);
- streams: "chunks:N" reaches onced's own SSE client as N artifact-update
  events, appended; a stream cut mid-way by the proxy re-attaches
  (SubscribeToTask, refused for a finished task, then GetTask): every chunk
  once, one upstream task;
- a retried send (same task id) is replayed by onced: tasksCreated stays 1;
- cancel: CancelTask on onced cancels the upstream task (counts.cancels);
- the upstream's answer to the send dropped by the proxy: the gateway finds
  the task it made (ListTasks by its contextId, rung 2), one upstream task;
  without ListTasks (--no-list-tasks) it re-sends and counts it in
  once_gateway_unverified_resends_total: a second upstream task (rung 4), or a
  replay when the upstream dedups messageId (rung 3), counted alike;
- rung 1, another onced upstream: a re-send after a lost answer replays there
  (registered 1, replayed), kill -9 of the front gateway mid-turn re-attaches,
  and two gateways in a row make one task at the a2a-js leaf;
- kill -9 of the gateway mid-turn ("sleep:N") on a shared SQLite file: a second
  gateway takes the task over and re-attaches: still one upstream task;
- the upstream down when a task arrives, back on the same port a moment later:
  the task completes; down for good: the task fails naming the upstream URL.

Every wait is a bound on a condition (scaled by ONCE_TEST_TIMEOUT_FACTOR).
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ROOT, ONCED, Onced, admin_stats, call, check, eq, free_port,
                     http_request, new_id, result_task, run, scaled, scratch_dir, status_text,
                     task_state, user_message, wait_until)

TMP = scratch_dir("once-gateway-")
AGENT = os.path.join(ROOT, "tests", "interop", "upstream_agent.mjs")
PROXY = os.path.join(os.environ.get("ONCE_TOOLS", os.path.join(ROOT, "build", "tools")), "proxy")
NODE = shutil.which("node") or shutil.which("nodejs")


def require_agent():
    """A program that needs node and the SDK agent fails without them (a
    failure, not a skip: scripts/deps.sh installs them)."""
    if NODE is None or not os.path.exists(AGENT):
        print("node or %s missing: run scripts/deps.sh" % AGENT, file=sys.stderr)
        print("0 passed, 1 failed")
        sys.exit(1)


class Upstream:
    """One upstream_agent.mjs process; port 0 picks one."""

    def __init__(self, *flags, port=0):
        self.log = open(os.path.join(TMP, "agent-%d.log" % time.time_ns()), "ab")
        self.proc = subprocess.Popen([NODE, AGENT, "--port", str(port)] + list(flags),
                                     stdout=subprocess.PIPE, stderr=self.log,
                                     cwd=os.path.dirname(AGENT))
        line = self.proc.stdout.readline().decode()
        check(line.startswith("listening http://127.0.0.1:"), "agent started: %r" % line)
        self.port = int(line.split(":")[2].strip("/\n"))
        self.url = "http://127.0.0.1:%d/" % self.port

    def counts(self):
        st, _, data = http_request(self.port, "GET", "/counts")
        return json.loads(data)

    def requests(self):
        return json.loads(http_request(self.port, "GET", "/requests")[2])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(scaled(10))
        self.log.close()


class Proxy:
    def __init__(self, target_port, *flags):
        self.log = os.path.join(TMP, "proxy-%d.log" % time.time_ns())
        self.proc = subprocess.Popen([PROXY, "--listen", "0", "--to", "127.0.0.1:%d" % target_port]
                                     + list(flags), stdout=subprocess.PIPE,
                                     stderr=open(self.log, "ab"))
        self.port = int(self.proc.stdout.readline())
        self.url = "http://127.0.0.1:%d/" % self.port

    def stop(self):
        self.proc.terminate()
        self.proc.wait(scaled(10))


def gateway(url, *args, store=None, tmpdir=None):
    return Onced(["--upstream", url, "--lease", "2s"] + list(args), store=store, tmpdir=tmpdir)


def send(srv, text, task_id=None, mid=None, blocking=True, context_id=None):
    params = {"message": user_message(text, message_id=mid or new_id(),
                                      task_id=task_id or new_id(), context_id=context_id)}
    if not blocking:
        params["configuration"] = {"returnImmediately": True}
    st, hd, doc = srv.rpc("SendMessage", params, ext=True, timeout=60)
    eq(st, 200, "SendMessage %s: HTTP status" % text)
    check("result" in doc, "SendMessage %s answered: %r" % (text, doc))
    return hd, doc["result"]


def get(srv, task_id):
    st, _, doc = srv.rpc("GetTask", {"id": task_id})
    return doc.get("result") or {}


def wait_state(srv, task_id, state, timeout=20):
    return wait_until(lambda: get(srv, task_id).get("status", {}).get("state") == state and
                      get(srv, task_id), timeout=timeout, step=0.1,
                      what="task %s %s" % (task_id, state))


def art_text(task):
    return ["".join(p.get("text", "") for p in a.get("parts", [])) for a in task.get("artifacts", [])]


def upstream_task_of(up, before):
    """The one upstream task created since `before` (a set of ids)."""
    new = [t for t in up.counts()["tasks"] if t not in before]
    eq(len(new), 1, "upstream tasks made for one once task")
    return new[0]


SENDS = {("jsonrpc", True): "SendStreamingMessage", ("jsonrpc", False): "SendMessage",
         ("rest", True): "REST POST /message:stream", ("rest", False): "REST POST /message:send"}
POLLS = {"jsonrpc": "GetTask", "rest": "REST GET /tasks/"}
# An A2A 0.3 upstream (JSON-RPC): the same calls under 0.3's names.
SENDS03 = {True: "message/stream", False: "message/send"}
V03 = {"message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe"}


def polled(up, binding):
    return [m for m in (q["method"] for q in up.requests())
            if m.startswith(POLLS[binding]) or m == "tasks/get"]


def behaviours(binding, streaming=True, version="1.0"):
    up = Upstream("--bindings", binding, "--a2a-version", version,
                  *([] if streaming else ["--no-streaming"]))
    binding_name = binding + ("" if streaming else " polled") + (" 0.3" if version == "0.3" else "")
    try:
        with gateway(up.url) as gw:
            _, r = send(gw, "hello")
            eq(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", binding_name + ": hello")
            eq(art_text(r["task"]), ["hello"], binding_name + ": echo artifact")
            methods = [q["method"] for q in up.requests()]
            want = SENDS03[streaming] if version == "0.3" else SENDS[(binding, streaming)]
            check(want in methods, binding_name + ": the send on its binding: %r" % methods)
            eq(all(m.startswith("REST") == (binding == "rest") for m in methods), True,
               binding_name + ": every call on that binding: %r" % methods)
            if streaming:
                eq(polled(up, binding), [], binding_name + ": a streaming upstream is not polled")
            binding = binding_name

            tid, ctx = new_id(), new_id()
            before = set(up.counts()["tasks"])
            _, r = send(gw, "ask:Which court?", task_id=tid, context_id=ctx)
            eq(r["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", binding + ": ask")
            eq(status_text(r["task"]), "Which court?", binding + ": the agent's question")
            _, r = send(gw, "English", task_id=tid)
            eq(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", binding + ": continuation")
            eq(art_text(r["task"]), ["answer:English"], binding + ": the continuation's answer")
            ut = upstream_task_of(up, before)
            c = up.counts()
            eq(c["tasks"][ut]["messages"], 2, binding + ": both messages on one upstream task")
            # A second task of the same once context shares the upstream context.
            before = set(c["tasks"])
            send(gw, "hello again", context_id=ctx)
            ut2 = upstream_task_of(up, before)
            eq(up.counts()["tasks"][ut2]["contextId"], c["tasks"][ut]["contextId"],
               binding + ": one upstream context per once context")

            tid = new_id()
            _, r = send(gw, "auth:Your token?", task_id=tid)
            eq(r["task"]["status"]["state"], "TASK_STATE_AUTH_REQUIRED", binding + ": auth")
            _, r = send(gw, "tok", task_id=tid)
            eq(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", binding + ": after auth")

            _, r = send(gw, "fail")
            eq(r["task"]["status"]["state"], "TASK_STATE_FAILED", binding + ": fail")
            eq(status_text(r["task"]), "upstream failed on purpose", binding + ": its message")
            _, r = send(gw, "reject")
            eq(r["task"]["status"]["state"], "TASK_STATE_REJECTED", binding + ": reject")
            eq(status_text(r["task"]), "upstream rejected on purpose", binding + ": its message")
            _, r = send(gw, "reply:straight answer")
            check("message" in r, binding + ": a direct Message: %r" % r)
            eq(r["message"]["parts"][0]["text"], "straight answer", binding + ": its text")
            _, r = send(gw, "chunks:3")
            eq(art_text(r["task"]), ["c1c2c3"], binding + ": every chunk of the artifact")

            tid = new_id()
            _, r = send(gw, "sleep:1", task_id=tid, blocking=False)
            check(r["task"]["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
                  binding + ": returnImmediately answers at once")
            t = wait_state(gw, tid, "TASK_STATE_COMPLETED")
            eq(art_text(t), ["slept 1"], binding + ": the slept artifact")
            if not streaming:
                check(polled(up, binding.split()[0]) != [],
                      binding + ": without streaming the task is polled (GetTask)")
            if version == "0.3":
                names = {q["method"] for q in up.requests()}
                check(names <= V03, binding + ": only 0.3 methods upstream: %r" % sorted(names))
    finally:
        up.stop()


def test_behaviours_jsonrpc():
    behaviours("jsonrpc")


def test_behaviours_rest():
    behaviours("rest")


def test_behaviours_polled():
    behaviours("jsonrpc", streaming=False)
    behaviours("rest", streaming=False)


def test_behaviours_v03():
    """An A2A 0.3 upstream (the SDK's legacyCompat, a 0.3-only card): every
    behaviour through its 0.3 JSON-RPC methods, streamed and polled."""
    behaviours("jsonrpc", version="0.3")
    behaviours("jsonrpc", streaming=False, version="0.3")


def stream_through(gw, text, task_id=None):
    """SendStreamingMessage to onced: every StreamResponse of its SSE answer."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": user_message(text, task_id=task_id or new_id())}}
    st, hd, data = http_request(gw.port, "POST", "/", body=json.dumps(body).encode(),
                                headers={"Content-Type": "application/json", "A2A-Version": "1.0",
                                         "A2A-Extensions": "urn:once:a2a:idempotency:v1",
                                         "Accept": "text/event-stream"}, timeout=scaled(30))
    eq(st, 200, "stream through onced")
    return [json.loads(l[5:])["result"] for l in data.decode().splitlines()
            if l.startswith("data:")]


def chunk_events(events):
    return [e["artifactUpdate"] for e in events if "artifactUpdate" in e]


def test_stream_chunks():
    for binding in ("jsonrpc", "rest"):
        up = Upstream("--bindings", binding)
        try:
            with gateway(up.url) as gw:
                events = stream_through(gw, "chunks:5")
                chunks = chunk_events(events)
                eq(len(chunks), 5, binding + ": five chunks reach onced's client as five events")
                eq([c["artifact"]["parts"][0]["text"] for c in chunks],
                   ["c1", "c2", "c3", "c4", "c5"], binding + ": each event one chunk, in order")
                eq([bool(c.get("append")) for c in chunks], [False] + [True] * 4,
                   binding + ": chunks after the first appended")
                eq([bool(c.get("lastChunk")) for c in chunks], [False] * 4 + [True],
                   binding + ": the last one says so")
                eq(events[-1].get("statusUpdate", {}).get("status", {}).get("state"),
                   "TASK_STATE_COMPLETED", binding + ": the stream ends completed")
                eq(polled(up, binding), [], binding + ": no GetTask: the upstream streamed")
        finally:
            up.stop()


def test_stream_cut_midway():
    """The upstream's stream (connection 3: after the card and the ListTasks
    probe) is cut by the proxy after its first events: the gateway re-attaches
    (SubscribeToTask, refused for a finished task, then GetTask) and the once
    task ends with every chunk once, on one upstream task."""
    up = Upstream()
    px = Proxy(up.port, "--cut", "3", "--cut-after", "1600")
    try:
        with gateway(px.url) as gw:
            before = up.counts()["tasksCreated"]
            tid = new_id()
            _, r = send(gw, "chunks:8", task_id=tid)
            t = wait_state(gw, tid, "TASK_STATE_COMPLETED")
            eq(art_text(t), ["".join("c%d" % i for i in range(1, 9))], "every chunk once")
            eq(up.counts()["tasksCreated"] - before, 1, "one upstream task after the cut")
            methods = [q["method"] for q in up.requests()]
            eq(methods.count("SendStreamingMessage"), 1, "sent once: %r" % methods)
            check("SubscribeToTask" in methods, "re-attached by SubscribeToTask: %r" % methods)
            with open(px.log) as f:
                check("conn 3 cut" in f.read(), "the proxy cut the stream")
            m = http_request(gw.port, "GET", "/metrics")[2].decode()
            eq(metric(m, "once_gateway_reattached_total"), 0,
               "cut after its first event named the task: followed, no look-up")
    finally:
        px.stop()
        up.stop()


def test_card_and_start():
    up = Upstream("--card-name", "Contract reviewer")
    try:
        with gateway(up.url) as gw:
            st, _, card = call(gw.port, "GET", "/.well-known/agent-card.json")
            eq(card["name"], "Contract reviewer", "card: the upstream's name")
            check(any(s["id"] == "scripted" for s in card["skills"]), "card: the upstream's skills")
            eq(card["supportedInterfaces"][0]["url"], "http://127.0.0.1:%d/" % gw.port,
               "card: onced's own URL")
            check(any(e["uri"] == "urn:once:a2a:idempotency:v1"
                      for e in card["capabilities"]["extensions"]), "card: the once extension")
    finally:
        up.stop()
    dead = "http://127.0.0.1:%d/" % free_port()
    p = subprocess.run([ONCED, "--listen", "127.0.0.1:%d" % free_port(), "--store", "memory:",
                        "--upstream", dead], capture_output=True, timeout=scaled(30))
    check(p.returncode != 0, "an unreachable upstream stops onced")
    check(dead.encode() in p.stderr, "the message names the upstream: %r" % p.stderr)
    p = subprocess.run([ONCED, "--listen", "127.0.0.1:1", "--store", "memory:", "--upstream", dead,
                        "--exec", "true"], capture_output=True, timeout=scaled(30))
    eq(p.returncode, 2, "--upstream and --exec are exclusive")


def test_retry_replayed_and_headers():
    up = Upstream()
    try:
        hf = os.path.join(TMP, "headers")
        with open(hf, "w") as f:
            f.write("# credentials\nX-From-File: filed\n")
        with gateway(up.url, "--upstream-header", "Authorization: Bearer up-secret",
                     "--upstream-header-file", hf, "--upstream-principal-header",
                     "X-Once-Principal") as gw:
            tid, mid = new_id(), new_id()
            before = up.counts()["tasksCreated"]
            send(gw, "effect:pay", task_id=tid, mid=mid)
            hd, r = send(gw, "effect:pay", task_id=tid, mid=mid)
            eq(hd.get("idempotent-replayed"), "true", "the retry is replayed by onced")
            c = up.counts()
            eq(c["tasksCreated"] - before, 1, "one upstream task for a send and its retry")
            eq(c["effects"].get("pay"), 1, "the effect applied once")
            sends = [q for q in up.requests() if q["method"] in ("SendMessage",
                                                                 "SendStreamingMessage")]
            h = sends[-1]["headers"]
            eq(h.get("authorization"), "Bearer up-secret", "--upstream-header sent")
            eq(h.get("x-from-file"), "filed", "--upstream-header-file sent")
            eq(h.get("x-once-principal"), "anonymous", "the principal sent when asked")
    finally:
        up.stop()


def test_stream_and_cancel():
    up = Upstream()
    try:
        with gateway(up.url) as gw:
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                    "params": {"message": user_message("chunks:2", task_id=new_id())}}
            st, hd, data = http_request(gw.port, "POST", "/", body=json.dumps(body).encode(),
                                        headers={"Content-Type": "application/json",
                                                 "A2A-Version": "1.0", "A2A-Extensions":
                                                 "urn:once:a2a:idempotency:v1",
                                                 "Accept": "text/event-stream"}, timeout=30)
            eq(st, 200, "stream through onced")
            events = [json.loads(l[5:]) for l in data.decode().splitlines() if l.startswith("data:")]
            last = events[-1]["result"]
            eq(last.get("statusUpdate", {}).get("status", {}).get("state"),
               "TASK_STATE_COMPLETED", "the stream ends completed")
            check(any("artifactUpdate" in e["result"] for e in events), "the stream had the artifact")

            tid = new_id()
            before = up.counts()["cancels"]
            send(gw, "sleep:30", task_id=tid, blocking=False)
            wait_until(lambda: get(gw, tid)["status"]["state"] == "TASK_STATE_WORKING",
                       timeout=15, what="working")
            st, _, doc = gw.rpc("CancelTask", {"id": tid})
            eq(task_state(doc), "TASK_STATE_CANCELED", "once task canceled")
            wait_until(lambda: up.counts()["cancels"] > before, timeout=15,
                       what="CancelTask reached the upstream")
            ut = [k for k, v in up.counts()["tasks"].items() if v["state"] == "TASK_STATE_CANCELED"]
            eq(len(ut), 1, "the upstream task is canceled")
    finally:
        up.stop()


def lost_first_answer(text, *flags):
    """The answer to the first send (connection 3: after the card and the
    ListTasks probe) dropped by the proxy, the upstream started with flags.
    Returns (upstream tasks created, its counts, the once task, onced's
    /metrics text)."""
    up = Upstream(*flags)
    px = Proxy(up.port, "--drop-response", "3")
    try:
        with gateway(px.url) as gw:
            before = up.counts()["tasksCreated"]
            _, r = send(gw, text, task_id=new_id())
            c = up.counts()
            m = http_request(gw.port, "GET", "/metrics")[2].decode()
            return c["tasksCreated"] - before, c, r["task"], m
    finally:
        px.stop()
        up.stop()


def metric(text, name):
    """The value of an unlabelled counter in a /metrics text."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    check(False, "/metrics has %s" % name)


def test_lost_answer_reattached():
    created, c, task, m = lost_first_answer("effect:lost")
    eq(task["status"]["state"], "TASK_STATE_COMPLETED", "completed despite the loss")
    eq(created, 1, "the lost answer's task re-attached, not re-created")
    eq(c["effects"].get("lost"), 1, "the effect applied once")
    eq(metric(m, "once_gateway_reattached_total"), 1, "re-attach counted")
    eq(metric(m, "once_gateway_unverified_resends_total"), 0, "no unverified re-send")


def test_rung4_duplicate_counted():
    """No ListTasks (the probe at start fails): the gateway cannot look the
    task up, re-sends, and counts it."""
    created, _, task, m = lost_first_answer("effect:rung", "--no-list-tasks")
    eq(task["status"]["state"], "TASK_STATE_COMPLETED", "rung 4: completed despite the loss")
    eq(created, 2, "rung 4: the re-send made a second upstream task")
    eq(metric(m, "once_gateway_unverified_resends_total"), 1, "rung 4: the duplicate is counted")


def test_rung3_dedup_replays():
    created, c, task, m = lost_first_answer("effect:rung", "--no-list-tasks", "--dedup-message-id")
    eq(task["status"]["state"], "TASK_STATE_COMPLETED", "rung 3: completed despite the loss")
    eq(created, 1, "rung 3: the upstream replayed the re-send")
    eq(c["replays"], 1, "rung 3: one replay at the upstream")
    eq(metric(m, "once_gateway_unverified_resends_total"), 1,
       "rung 3: counted too (the gateway cannot tell rung 3 from 4)")


def onced_upstream(*args):
    """A plain onced (the echo executor) as the upstream, counting in
    once/admin/stats."""
    return Onced(["--test-admin", "--lease", "2s"] + list(args))


def test_rung1_onced_upstream():
    """Rung 1: the upstream is another onced. A lost answer re-sent replays
    there (the gateway minted the upstream task ID); a delegation of two
    gateways holds too."""
    leaf = onced_upstream()
    try:
        px = Proxy(leaf.port, "--drop-response", "3")
        try:
            with gateway(px.url) as gw:
                tid = new_id()
                _, r = send(gw, "hello rung 1", task_id=tid)
                eq(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "rung 1: completed")
                eq(art_text(r["task"]), ["hello rung 1"], "rung 1: the leaf's artifact")
                st = admin_stats(leaf)
                eq(st.get("registered"), 1, "rung 1: one task registered at the upstream onced")
                check(st.get("replayed", 0) >= 1, "rung 1: the re-send was replayed: %r" % st)
                m = http_request(gw.port, "GET", "/metrics")[2].decode()
                eq(metric(m, "once_gateway_replayed_resends_total"), 1, "rung 1: an exact re-send")
                eq(metric(m, "once_gateway_unverified_resends_total"), 0, "rung 1: none unverified")
        finally:
            px.stop()
        # Two gateways in a row: front -> middle -> a2a-js agent.
        up = Upstream()
        try:
            with gateway(up.url) as middle, \
                    gateway("http://127.0.0.1:%d/" % middle.port) as front:
                before = up.counts()["tasksCreated"]
                _, r = send(front, "effect:tree")
                eq(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "delegation: completed")
                eq(art_text(r["task"]), ["effect tree"], "delegation: the leaf's artifact")
                eq(up.counts()["tasksCreated"] - before, 1, "delegation: one task at the leaf")
                eq(up.counts()["effects"].get("tree"), 1, "delegation: the effect once")
        finally:
            up.stop()
    finally:
        leaf.stop()


def test_rung1_kill9_front():
    """kill -9 of the front gateway mid-turn, on a shared store: the next one
    re-attaches to the task the first minted at the upstream onced."""
    leaf = onced_upstream()
    d = scratch_dir("once-gw-rung1-")
    store = "sqlite:" + os.path.join(d, "shared.db")
    try:
        a = gateway("http://127.0.0.1:%d/" % leaf.port, store=store, tmpdir=d)
        tid = new_id()
        send(a, "sleep:2", task_id=tid, blocking=False)
        wait_until(lambda: admin_stats(leaf).get("registered") == 1, timeout=15,
                   what="the upstream onced has the task")
        a.kill9()
        with gateway("http://127.0.0.1:%d/" % leaf.port, store=store, tmpdir=d) as b:
            t = wait_state(b, tid, "TASK_STATE_COMPLETED", timeout=40)
            eq(art_text(t), ["sleep:2"], "rung 1 takeover: the leaf's artifact")
            eq(admin_stats(leaf).get("registered"), 1, "rung 1 takeover: one upstream task")
        a.stop()
    finally:
        leaf.stop()


def test_takeover_one_upstream_task():
    up = Upstream()
    d = scratch_dir("once-gw-shared-")
    store = "sqlite:" + os.path.join(d, "shared.db")
    try:
        a = gateway(up.url, store=store, tmpdir=d)
        tid = new_id()
        before = up.counts()["tasksCreated"]
        send(a, "sleep:3", task_id=tid, blocking=False)
        wait_until(lambda: up.counts()["tasksCreated"] > before, timeout=15,
                   what="the upstream task exists")
        a.kill9()
        with gateway(up.url, store=store, tmpdir=d) as b:
            t = wait_state(b, tid, "TASK_STATE_COMPLETED", timeout=40)
            eq(art_text(t), ["slept 3"], "the taken-over task has the upstream's artifact")
            eq(up.counts()["tasksCreated"] - before, 1, "one upstream task after the takeover")
        a.stop()
    finally:
        up.stop()


def _dead_gateway(port):
    """A gateway started in front of an agent on port that then goes away for
    good; its calls give up after 2 s."""
    up = Upstream(port=port)
    gw = gateway(up.url, "--upstream-deadline", "2s")
    up.stop()
    return gw


def test_upstream_outage():
    up = Upstream()
    port = up.port
    try:
        with gateway(up.url, "--upstream-deadline", "%ds" % int(scaled(60))) as gw:
            up.stop()
            tid = new_id()
            send(gw, "hello", task_id=tid, blocking=False)
            wait_until(lambda: b"once_gateway_upstream_retries_total 0" not in
                       http_request(gw.port, "GET", "/metrics")[2], timeout=15,
                       what="the gateway met the outage")
            up = Upstream(port=port)
            t = wait_state(gw, tid, "TASK_STATE_COMPLETED", timeout=60)
            eq(art_text(t), ["hello"], "completed once the upstream came back")
            up.stop()
        with _dead_gateway(port) as gw:
            tid = new_id()
            send(gw, "hello", task_id=tid, blocking=False)
            t = wait_state(gw, tid, "TASK_STATE_FAILED", timeout=30)
            check("127.0.0.1:%d" % port in (status_text(t) or ""),
                  "the failure names the upstream: %r" % status_text(t))
    finally:
        up.stop()


def test_start_answers_lost():
    """Answers lost while the gateway starts decide nothing: the card's (1)
    and the ListTasks probe's (3) are asked again, so the gateway still
    knows the agent serves ListTasks, and the send whose answer is lost (5)
    is re-attached by it, not sent again (one answer lost at start once put
    a replica on rung 4 for good: the soak's gateway variant found it)."""
    up = Upstream()
    px = Proxy(up.port, "--drop-response", "1,3,5")
    try:
        with gateway(px.url) as gw:
            before = up.counts()["tasksCreated"]
            _, r = send(gw, "effect:start-lost")
            eq(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "completed despite the losses")
            c = up.counts()
            eq(c["tasksCreated"] - before, 1, "one upstream task")
            eq(c["effects"].get("start-lost"), 1, "the effect applied once")
            st, _, m = http_request(gw.port, "GET", "/metrics")
            check(b"once_gateway_reattached_total 1" in m, "the lost send re-attached")
            check(b"once_gateway_unverified_resends_total 0" in m, "no unverified re-send")
    finally:
        px.stop()
        up.stop()


def served_card(gw):
    """The name in the card onced serves, and its ETag."""
    st, hd, body = http_request(gw.port, "GET", "/.well-known/agent-card.json")
    eq(st, 200, "the card: HTTP status")
    return json.loads(body)["name"], hd.get("etag")


def readyz(gw):
    st, _, body = http_request(gw.port, "GET", "/readyz")
    return st, body.decode()


def test_card_refresh():
    """--upstream-card-refresh: the agent goes away and another, with another
    card, comes up on its port. While the port is closed /readyz is 503
    naming the upstream and the last card is still served; then onced serves
    the new card under a new ETag and is ready again, without a restart."""
    up = Upstream("--card-name", "A")
    port = up.port
    try:
        with gateway(up.url, "--upstream-card-refresh", "200ms") as gw:
            name, etag = served_card(gw)
            eq(name, "A", "refresh: the first agent's card")
            eq(readyz(gw), (200, "ready\n"), "refresh: ready in front of it")
            up.stop()
            st, why = wait_until(lambda: (lambda r: r[0] == 503 and r)(readyz(gw)), timeout=20,
                                 what="/readyz 503 while the upstream is gone")
            check(up.url in why and "agent card" in why, "/readyz names the upstream: %r" % why)
            eq(served_card(gw), ("A", etag), "refresh: the last card is served meanwhile")
            up = Upstream("--card-name", "B", port=port)
            wait_until(lambda: served_card(gw)[0] == "B", timeout=20,
                       what="onced serves the new agent's card")
            name, etag_b = served_card(gw)
            check(etag_b not in (None, etag), "a new ETag: %r after %r" % (etag_b, etag))
            st, _, body = http_request(gw.port, "GET", "/.well-known/agent-card.json",
                                       headers={"If-None-Match": etag})
            eq((st, json.loads(body)["name"]), (200, "B"), "the old ETag gets the new card")
            wait_until(lambda: readyz(gw) == (200, "ready\n"), timeout=20,
                       what="/readyz 200 once the upstream answers again")
            m = http_request(gw.port, "GET", "/metrics")[2].decode()
            eq(metric(m, 'once_gateway_card_refreshes_total{result="changed"}'), 1,
               "refresh: one change counted")
            check(metric(m, 'once_gateway_card_refreshes_total{result="failed"}') >= 1,
                  "refresh: the failures counted")
    finally:
        up.stop()


def test_card_refresh_not_modified():
    """An unchanged card costs a 304: each refresh asks with the ETag the
    agent gave in If-None-Match (the proxy logs the header), which the agent
    answers with 304; nothing changes at onced."""
    up = Upstream()
    px = Proxy(up.port, "--log-header", "If-None-Match")
    try:
        with gateway(px.url, "--upstream-card-refresh", "200ms") as gw:
            served = served_card(gw)
            before = up.counts()["cardFetches"]
            wait_until(lambda: up.counts()["cardFetches"] >= before + 3, timeout=15,
                       what="three card refreshes at the agent")
            st, hd, _ = http_request(up.port, "GET", "/.well-known/agent-card.json")
            up_etag = hd.get("etag")
            check(st == 200 and up_etag, "the agent's card has an ETag: %r" % hd)
            st = http_request(up.port, "GET", "/.well-known/agent-card.json",
                              headers={"If-None-Match": up_etag})[0]
            eq(st, 304, "the agent answers its own ETag with 304")
            with open(px.log) as f:
                asked = [l for l in f.read().splitlines() if "agent-card.json" in l]
            check(len(asked) >= 4, "the start's read and the refreshes: %r" % asked)
            check("If-None-Match" not in asked[0], "the first read is unconditional")
            eq([l for l in asked[1:] if "If-None-Match: " + up_etag not in l], [],
               "every refresh sends the agent's ETag")
            m = http_request(gw.port, "GET", "/metrics")[2].decode()
            check(metric(m, 'once_gateway_card_refreshes_total{result="unchanged"}') >= 3,
                  "refreshes counted unchanged")
            eq(metric(m, 'once_gateway_card_refreshes_total{result="changed"}'), 0, "no change")
            eq(metric(m, 'once_gateway_card_refreshes_total{result="failed"}'), 0, "no failure")
            eq(served_card(gw), served, "the card served and its ETag stay")
    finally:
        px.stop()
        up.stop()


if __name__ == "__main__":
    require_agent()
    run([test_card_and_start, test_behaviours_jsonrpc, test_behaviours_rest,
         test_behaviours_polled, test_behaviours_v03, test_stream_chunks, test_stream_cut_midway,
         test_retry_replayed_and_headers, test_rung4_duplicate_counted, test_rung3_dedup_replays,
         test_rung1_onced_upstream, test_rung1_kill9_front, test_stream_and_cancel, test_lost_answer_reattached,
         test_takeover_one_upstream_task, test_upstream_outage, test_start_answers_lost,
         test_card_refresh, test_card_refresh_not_modified])
