"""Push notifications with real processes (docs/design.md section 6, issue 5):
onced replicas deliver signed webhooks to build/tools/webhook_sink, a
receiver built on the once receiver library (verify, durable processed-set,
hand each event to the application once and in order). The sink's log is
what the application saw: one line per handled event, "<task> <gen> <body>".

  - a receiver that fails the first deliveries (500, a timeout, a reset) and
    then recovers: every event handled exactly once, in order, no gap; the
    server's counters show the retries;
  - two replicas on one SQLite file; the one delivering is killed with
    SIGKILL while the receiver holds its request: the other replica takes the
    delivery over after the lease and completes it; each event still handled
    once;
  - a receiver failing every delivery far past --push-attempts (500s,
    resets: overloaded or attacked) keeps its config and its events: once it
    answers again, every event is handled once, in order;
  - a tampered body, a tampered signature, an old timestamp, a wrong
    notification token: rejected (signed here in Python, so the C verifier
    is checked against an independent signer), and not recorded;
  - a webhook URL on loopback without --push-allow: refused with a clear
    error, also inside SendMessage (no task is created);
  - the four config methods on the wire.
"""
import base64
import hashlib
import hmac
import http.client
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness
from harness import (ROOT, Onced, admin_stats, check, eq, error_info, free_port,
                     generation_metadata, http_get, new_id, result_task, run, scaled, scratch_dir,
                     user_message, wait_until)

TOOLS = os.environ.get("ONCE_TOOLS", os.path.join(ROOT, "build", "tools"))
SINK = os.path.join(TOOLS, "webhook_sink")
TMP = scratch_dir("once-push-")
SECRET = "whsec_" + base64.b64encode(b"e2e-push-secret-0123456789abcdef").decode()
ALLOW = ["--push-allow", "127.0.0.1/32"]
FAST = ["--push-secret", SECRET, "--push-timeout", "1s", "--push-backoff", "100ms",
        "--test-admin"]
TOKEN = "tok-e2e"
# A webhook-id of a subscription made up here: principal tag, config, since.
SUB = "00112233445566ff/cfg-x/0/"


class Sink:
    """One webhook_sink process; its log is the application's view."""

    def __init__(self, name, args=()):
        self.dir = os.path.join(TMP, name)
        os.mkdir(self.dir)
        self.log = os.path.join(self.dir, "handled.log")
        self.stats = os.path.join(self.dir, "stats.json")
        self.err = open(os.path.join(self.dir, "sink.err"), "wb")
        self.proc = subprocess.Popen(
            [SINK, "--secret", SECRET, "--token", TOKEN,
             "--state", os.path.join(self.dir, "state.db"),
             "--log", self.log, "--stats", self.stats] + list(args),
            stdout=subprocess.PIPE, stderr=self.err)
        line = self.proc.stdout.readline().decode()
        check(line.startswith("listening "), "webhook_sink started: %r" % line)
        self.port = int(line.split()[1])
        self.url = "http://127.0.0.1:%d/hook" % self.port

    def handled(self):
        """[(task, generation, body)] in the order the application saw them."""
        try:
            with open(self.log) as f:
                rows = [l.rstrip("\n").split(" ", 2) for l in f if l.strip()]
        except FileNotFoundError:
            return []
        return [(r[0], int(r[1]), json.loads(r[2])) for r in rows]

    def stop(self):
        """Stop it; its receiver counters. It exits once every request it
        was serving is done: its log is final then."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(scaled(10))
        self.err.close()
        with open(self.stats) as f:
            return json.load(f)


def mkd(name):
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    return d


def send(srv, text, task_id, push_url, token=TOKEN, **cfg):
    conf = {"url": push_url, "token": token}
    conf.update(cfg)
    return srv.rpc("SendMessage", {"message": user_message(text, task_id=task_id),
                                   "configuration": {"taskPushNotificationConfig": conf}},
                   ext=True)


def generation(srv, task_id):
    st, _, doc = srv.rpc("GetTask", {"id": task_id})
    return harness.generation(result_task(doc, "GetTask"))


def configs(srv, task_id):
    """The task's configs with our "delivery" member (extension active)."""
    st, _, doc = srv.rpc("ListTaskPushNotificationConfigs", {"taskId": task_id}, ext=True)
    check("result" in doc, "ListTaskPushNotificationConfigs: %r" % (doc,))
    return doc["result"]["configs"]


def wait_slow_done(mark, slow_ms):
    """The receiver's slow delivery began sleeping when it touched mark and
    sleeps slow_ms: wait until that sleep is over. What it does next, the
    receiver finishes before it exits (Sink.stop)."""
    wait_until(lambda: os.path.exists(mark), timeout=15, what="the slow delivery to start")
    wait_until(lambda: time.time() >= os.stat(mark).st_mtime + slow_ms / 1000.0 + 0.05,
               timeout=slow_ms / 1000.0 + 10, what="the slow delivery's sleep to end")


def expect_every_event_once(sink, task_id, gen, what):
    got = [(t, g) for t, g, _ in sink.handled() if t == task_id]
    eq(got, [(task_id, g) for g in range(1, gen + 1)],
       what + ": each event handled once, in order, no gap")


def recorded(srv, tid, gen):
    """The task's push configs once onced recorded delivery up to gen: a
    receiver hands an event over before its 2xx reaches onced, which
    records the delivery only then."""
    def ready():
        c = configs(srv, tid)
        return c if c and c[0]["delivery"]["deliveredGeneration"] >= gen else None
    return wait_until(ready, timeout=20, what="onced to record delivery up to %d" % gen)


def test_receiver_fails_then_recovers():
    mark = os.path.join(TMP, "recovers-slow")
    sink = Sink("recovers", ["--fail", "500,slow,reset", "--slow-ms", "2500", "--mark", mark])
    srv = Onced(ALLOW + FAST, tmpdir=mkd("recovers"))
    try:
        tid = "t-" + new_id()
        st, _, doc = send(srv, "hello", tid, sink.url)
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "the task completed")
        gen = generation(srv, tid)
        check(gen >= 3, "the task has several events (%d)" % gen)
        wait_until(lambda: len(sink.handled()) >= gen, timeout=20, what="every event handled")
        bodies = [b for t, g, b in sink.handled()]
        check("task" in bodies[0], "event 1 is the Task (a StreamResponse): %r" % (bodies[0],))
        eq(bodies[0]["task"]["id"], tid, "the payload names the task")
        for _, g, b in sink.handled():
            inner = next(iter(b.values()))   # A2A 1.0 objects have no generation member
            check("generation" not in inner and harness.generation(inner) == g,
                  "body of event %d: its generation in metadata only: %r" % (g, inner))
        cfg = recorded(srv, tid, gen)
        eq(len(cfg), 1, "one config")
        d = cfg[0]["delivery"]
        eq(d["deliveredGeneration"], gen, "the server recorded every delivery")
        eq(d["deliveries"], gen, "deliveries counter")
        # 500, timeout, reset: each a failed attempt, except that libcurl resends a
        # request on its own (unseen) when a reused keep-alive connection is reset
        check(d["retries"] >= 2 and d["failures"] == d["retries"], "retries counted: %r" % (d,))
        eq(d["disabled"], False, "still enabled")
        stats = admin_stats(srv)
        check(stats.get("pushRetried", 0) >= 2, "engine counters show the retries: %r" % stats)
        check(stats.get("pushDelivered", 0) >= gen, "and the deliveries: %r" % stats)
        # The slow delivery's late copy lands after the others.
        wait_slow_done(mark, 2500)
    finally:
        srv.stop()
        rx = sink.stop()
    expect_every_event_once(sink, tid, gen, "after 500, timeout, reset")
    check(rx["requests"] >= gen + 3, "the three failures reached the receiver: %r" % rx)
    check(rx["duplicates"] >= 1, "the timed-out delivery was recorded, then resent: %r" % rx)
    eq(rx["handled"], gen, "the receiver handled each event once")
    eq(rx["pending"], 0, "nothing left pending")


def test_attacked_receiver_keeps_events():
    # Eight failures in a row against --push-attempts 2: before, the config
    # was disabled after the second and the rest of the events were lost.
    sink = Sink("attacked", ["--fail", "500,reset,503,500,reset,502,500,500"])
    srv = Onced(ALLOW + FAST + ["--push-attempts", "2"], tmpdir=mkd("attacked"))
    try:
        tid = "t-" + new_id()
        st, _, doc = send(srv, "hello", tid, sink.url)
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "the task completed")
        gen = generation(srv, tid)
        wait_until(lambda: len([1 for t, _, _ in sink.handled() if t == tid]) >= gen,
                   timeout=60, what="every event handled after the failures")
        d = recorded(srv, tid, gen)[0]["delivery"]
        eq(d["disabled"], False, "the config stays enabled")
        eq(d["deliveredGeneration"], gen, "every event delivered")
        check(d["failures"] >= 2, "the failures are counted: %r" % (d,))
    finally:
        srv.stop()
        rx = sink.stop()
    expect_every_event_once(sink, tid, gen, "after eight failures")
    check(rx["requests"] >= gen + 8, "the failures reached the receiver: %r" % rx)


def test_kill9_mid_delivery():
    mark = os.path.join(TMP, "holding")
    sink = Sink("kill9", ["--fail", "ok,slow", "--slow-ms", "4000", "--mark", mark])
    d = mkd("kill9-store")
    store = "sqlite:" + os.path.join(d, "registry.db")
    flags = ALLOW + ["--push-secret", SECRET, "--push-timeout", "2s", "--push-backoff",
                     "100ms", "--test-admin"]
    a = Onced(flags + ["--replica-id", "r-a"], store=store, tmpdir=d)
    b = Onced(flags + ["--replica-id", "r-b"], store=store, tmpdir=d)
    reps = {"r-a": a, "r-b": b}
    try:
        tid = "t-" + new_id()
        st, _, doc = send(a, "hello", tid, sink.url)
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "the task completed")
        gen = generation(a, tid)
        wait_until(lambda: os.path.exists(mark), timeout=15,
                   what="the receiver to hold the second delivery")
        owner = (configs(b, tid)[0]["delivery"]).get("leaseOwner")
        check(owner in reps, "one replica holds the delivery lease: %r" % owner)
        victim, survivor = reps[owner], reps["r-b" if owner == "r-a" else "r-a"]
        print("  lease owner %s; killing it" % owner)
        victim.kill9()   # mid-delivery: its POST is still in the receiver's hands
        t0 = time.time()
        wait_until(lambda: len(sink.handled()) >= gen, timeout=30,
                   what="the other replica to finish the delivery")
        took = time.time() - t0
        print("  delivery completed %.1fs after the kill" % took)
        wait_until(lambda: configs(survivor, tid)[0]["delivery"]["deliveredGeneration"] == gen,
                   timeout=10, what="the survivor to record the rest")
        check(admin_stats(survivor).get("pushDelivered", 0) >= 1,
              "the survivor delivered after the takeover")
        check(took < scaled(25), "taken over after the lease, not later (%.1fs)" % took)
        # The killed replica's held delivery ends in the receiver, late.
        wait_slow_done(mark, 4000)
    finally:
        a.stop()
        b.stop()
        rx = sink.stop()
    expect_every_event_once(sink, tid, gen, "after kill -9 of the sender")
    eq(rx["handled"], gen, "the receiver handled each event once")


def post(port, wid, ts, body, sig, token=TOKEN):
    h = {"Content-Type": "application/a2a+json", "webhook-id": wid, "webhook-timestamp": ts,
         "webhook-signature": sig}
    if token:
        h["X-A2A-Notification-Token"] = token
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(10))
    try:
        c.request("POST", "/hook", body=body, headers=h)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def sign(wid, ts, body, secret=SECRET):
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, ("%s.%s." % (wid, ts)).encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def test_tampered_and_stale_rejected():
    sink = Sink("tamper")
    try:
        now = str(int(time.time()))
        body = json.dumps({"statusUpdate": {"taskId": "t-x", "contextId": "c",
                                            "status": {"state": "TASK_STATE_WORKING"},
                                            "metadata": generation_metadata(1)}}).encode()
        good = sign(SUB + "t-x.1", now, body)
        eq(post(sink.port, SUB + "t-x.1", now, body.replace(b"WORKING", b"FAILED"), good), 401,
           "tampered body")
        bad = good[:-6] + ("A" if good[-6] != "A" else "B") + good[-5:]
        eq(post(sink.port, SUB + "t-x.1", now, body, bad), 401, "tampered signature")
        old = str(int(time.time()) - 600)
        eq(post(sink.port, SUB + "t-x.1", old, body, sign(SUB + "t-x.1", old, body)), 401,
           "old timestamp")
        other = "whsec_" + base64.b64encode(b"someone-else-entirely-000000").decode()
        eq(post(sink.port, SUB + "t-x.1", now, body, sign(SUB + "t-x.1", now, body, other)), 401,
           "another secret")
        eq(post(sink.port, SUB + "t-x.1", now, body, good, token="not-" + TOKEN), 401,
           "a wrong notification token")
        eq(post(sink.port, SUB + "t-x.1", now, body, good, token=None), 401, "no token")
        # the same bytes, correctly signed (by Python): accepted and handled;
        # had a rejected one been recorded, this would be a dropped duplicate
        eq(post(sink.port, SUB + "t-x.1", now, body, "v1,bm9wZQ== " + good), 204,
           "valid (second entry matches)")
        wait_until(lambda: len(sink.handled()) == 1, timeout=5, what="the valid one handled")
        eq(post(sink.port, SUB + "t-x.1", now, body, good), 204, "a duplicate is acknowledged")
        # A fresh event after it: handed over in the order recorded, so once
        # it is, anything recorded before it has been handed over too.
        body2 = body.replace(b'"t-x"', b'"t-y"')
        eq(post(sink.port, SUB + "t-y.1", now, body2, sign(SUB + "t-y.1", now, body2)), 204, "another event")
        wait_until(lambda: any(t == "t-y" for t, _, _ in sink.handled()), timeout=5,
                   what="the later event handled")
        eq([(t, g, b) for t, g, b in sink.handled() if t == "t-x"],
           [("t-x", 1, json.loads(body))], "handled once, the genuine body")
    finally:
        rx = sink.stop()
    eq(rx["rejected"], 6, "six rejections counted")
    eq(rx["duplicates"], 1, "one duplicate")


def test_loopback_refused_without_allow():
    srv = Onced(["--push-secret", SECRET], tmpdir=mkd("ssrf"))
    try:
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("ask:q")}, ext=True)
        tid = result_task(doc)["id"]
        for url in ("http://127.0.0.1:%d/hook" % free_port(), "http://localhost/x",
                    "http://[::1]:80/x", "http://10.1.2.3/x", "http://169.254.169.254/latest"):
            st, _, doc = srv.rpc("CreateTaskPushNotificationConfig", {"taskId": tid, "url": url})
            code, reason, meta = error_info(doc)
            eq((code, reason, meta.get("field")), (-32602, "INVALID_PARAMS", "url"),
               "config to %s refused" % url)
            msg = doc["error"]["message"]
            check("SSRF" in msg and "--push-allow" in msg,
                  "the error says why and what to do: %r" % msg)
        check("loopback" in doc["error"]["message"] or "link-local" in doc["error"]["message"],
              "names the kind of address")
        eq(configs(srv, tid), [], "nothing stored")
        # inside SendMessage: the whole send is refused, no task is created
        new = "t-" + new_id()
        st, _, doc = send(srv, "hello", new, "http://127.0.0.1:9/hook")
        code, reason, meta = error_info(doc)
        eq((code, meta.get("field")), (-32602, "configuration.taskPushNotificationConfig.url"),
           "SendMessage with a loopback webhook")
        st, _, doc = srv.rpc("GetTask", {"id": new})
        eq(error_info(doc)[0], -32001, "no task was created")
    finally:
        srv.stop()


def test_config_methods_on_the_wire():
    srv = Onced(ALLOW + ["--push-secret", SECRET], tmpdir=mkd("wire"))
    try:
        st, _, card = http_get(srv.port, "/.well-known/agent-card.json")
        eq(json.loads(card)["capabilities"]["pushNotifications"], True, "card: push on")
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("ask:q")}, ext=True)
        tid = result_task(doc)["id"]
        url = "http://127.0.0.1:%d/h" % free_port()
        st, _, doc = srv.rpc("CreateTaskPushNotificationConfig",
                             {"taskId": tid, "url": url, "token": "t1",
                              "authentication": {"scheme": "Bearer", "credentials": "c1"}})
        cfg = doc["result"]
        check(cfg.get("id"), "an id was minted: %r" % cfg)
        eq((cfg["taskId"], cfg["url"], cfg["token"], cfg["authentication"]),
           (tid, url, "t1", {"scheme": "Bearer", "credentials": "c1"}), "the stored config")
        check("delivery" not in cfg, "no extension, no delivery member")
        st, _, doc = srv.rpc("GetTaskPushNotificationConfig", {"taskId": tid, "id": cfg["id"]},
                             ext=True)
        d = doc["result"]["delivery"]
        eq((d["deliveredGeneration"], d["disabled"]), (generation(srv, tid), False),
           "a new config starts at the current generation")
        st, _, doc = srv.rpc("CreateTaskPushNotificationConfig",
                             {"taskId": tid, "id": "mine", "url": url})
        eq(doc["result"]["id"], "mine", "a client-chosen id")
        st, _, doc = srv.rpc("ListTaskPushNotificationConfigs", {"taskId": tid})
        eq(sorted(c["id"] for c in doc["result"]["configs"]), sorted([cfg["id"], "mine"]),
           "list")
        eq(doc["result"]["nextPageToken"], "", "one page")
        for i in range(2):
            st, _, doc = srv.rpc("DeleteTaskPushNotificationConfig", {"taskId": tid, "id": "mine"})
            eq(doc.get("result"), {}, "delete is idempotent (%d)" % i)
        st, _, doc = srv.rpc("GetTaskPushNotificationConfig", {"taskId": tid, "id": "mine"})
        code, reason, meta = error_info(doc)
        eq((code, reason, meta.get("id")), (-32001, "PUSH_NOTIFICATION_CONFIG_NOT_FOUND", "mine"),
           "a deleted config is not found")
        st, _, doc = srv.rpc("CreateTaskPushNotificationConfig",
                             {"taskId": tid, "pushNotificationConfig": {"url": url}})
        code, reason, meta = error_info(doc)
        eq((code, meta.get("field")), (-32602, "pushNotificationConfig"), "0.3 shape refused")
        st, _, doc = srv.rpc("CreateTaskPushNotificationConfig", {"taskId": tid, "url": "x"})
        eq(error_info(doc)[2].get("field"), "url", "not a URL")
        st, _, doc = srv.rpc("ListTaskPushNotificationConfigs", {"taskId": "t-" + new_id()})
        eq(error_info(doc)[:2], (-32001, "TASK_NOT_FOUND"), "unknown task")
    finally:
        srv.stop()


if __name__ == "__main__":
    check(os.path.exists(SINK), "webhook_sink is built (%s)" % SINK)
    run([test_receiver_fails_then_recovers, test_attacked_receiver_keeps_events,
         test_kill9_mid_delivery,
         test_tampered_and_stale_rejected, test_loopback_refused_without_allow,
         test_config_methods_on_the_wire])
