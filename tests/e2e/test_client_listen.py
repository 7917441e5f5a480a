"""`once listen`, the CLI's webhook receiver, against a real onced that
delivers push notifications (docs/protocol.md section 13):

- onced (--push-allow 127.0.0.1/32, --push-secret) POSTs every event of a task
  whose SendMessage carried configuration.taskPushNotificationConfig; a small
  recorder in front of `once listen --exec CMD` keeps a copy of each request;
  CMD appends "<task> <generation> <body>" to a file: each generation is
  handed over exactly once, in order, and the body is the one onced sent;
- a captured delivery replayed as it is (a duplicate) is answered 2xx and not
  handed over again, also after `once listen` restarted on the same state;
- a tampered signature, a tampered body, a wrong notification token are
  answered 401 and never recorded: the genuine event sent afterwards under
  the same webhook-id is handed over (it would be a dropped duplicate had the
  forgery been recorded);
- without --exec, events are printed on stdout (--json: one object a line);
- a captured delivery replayed ahead of its predecessor with a forged
  once-push-since is refused: the skipped generation is still handed over
  when it arrives (before, the receiver jumped past it and dropped it);
- `once listen` without --token is a usage error: the token is what keeps
  other tenants' subscriptions out.
"""
import base64
import hashlib
import hmac
import http.client
import http.server
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness
from harness import (ROOT, Onced, check, eq, generation_metadata, new_id, result_task, run, scaled,
                     scratch_dir, user_message, wait_until)

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
ONCE = os.path.join(BUILD, "once")
TMP = scratch_dir("once-listen-")
SECRET = "whsec_" + base64.b64encode(b"listen-e2e-secret-0123456789abcd").decode()
TOKEN = "tok-listen"
# A subscription made up for events posted by the test itself.
SUB = "0123456789abcdef/cfg-test/0/"
ONCED_FLAGS = ["--push-allow", "127.0.0.1/32", "--push-secret", SECRET, "--push-timeout", "2s",
               "--push-backoff", "100ms"]


class Listener:
    """One `once listen` process; its port comes from the URL it prints."""

    def __init__(self, name, state, args=()):
        self.proc = subprocess.Popen(
            [ONCE, "listen", "--port", "0", "--secret", "whsec_" + base64.b64encode(b"old").decode(),
             "--secret", SECRET, "--state", state, "--token", TOKEN] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        check("listening on http://127.0.0.1:" in line, "once listen prints its URL: %r" % line)
        self.port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        self.url = "http://127.0.0.1:%d/" % self.port
        self.out = b""

    def printed(self):
        """Everything printed on stdout so far (read without blocking)."""
        fd = self.proc.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self.out += chunk
        return self.out.decode()

    def stop(self):
        """SIGTERM; returns (exit status, stdout)."""
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=scaled(10))
        return self.proc.returncode, self.out.decode() + out


class Recorder:
    """An HTTP front that forwards each POST to `once listen` as it is and
    keeps (headers, body, status answered) of every request."""

    def __init__(self, to_port):
        rec = self
        self.seen = []
        self.lock = threading.Lock()

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                hd = dict((k, v) for k, v in self.headers.items()
                          if k.lower() not in ("host", "content-length", "connection"))
                st = post(to_port, hd, body)
                with rec.lock:
                    rec.seen.append((hd, body, st))
                self.send_response(st)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/hooks/a2a" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def delivery(self, wid):
        with self.lock:
            for hd, body, st in self.seen:
                w = header(hd, "webhook-id") or ""
                if (w == wid or w.endswith("/" + wid)) and 200 <= st < 300:
                    return hd, body
        return None

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def header(hd, name):
    for k, v in hd.items():
        if k.lower() == name:
            return v
    return None


def post(port, headers, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(10))
    try:
        c.request("POST", "/hooks/a2a", body=body, headers=headers)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def sign(wid, ts, body, secret=SECRET):
    key = base64.b64decode(secret[6:]) if secret.startswith("whsec_") else secret.encode()
    mac = hmac.new(key, ("%s.%s." % (wid, ts)).encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def handled(path):
    """[(task, generation, body)] as the --exec command recorded them."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return []
    # A line the handler is still writing has no newline yet: not counted.
    rows = [ln.split(" ", 2) for ln in text.split("\n")[:-1] if ln.strip()]
    return [(r[0], int(r[1]), json.loads(r[2])) for r in rows]


def exec_cmd(path):
    return ['--exec', 'printf "%%s %%s " "$ONCE_TASK_ID" "$ONCE_GENERATION" >> %s; '
                      'tr -d "\\n" >> %s; echo >> %s' % (path, path, path)]


def send_pushed(srv, text, tid, url):
    """SendMessage to task tid with a push config to url; the answer."""
    conf = {"url": url, "token": TOKEN}
    st, _, doc = srv.rpc("SendMessage", {"message": user_message(text, task_id=tid),
                                         "configuration": {"taskPushNotificationConfig": conf}},
                         ext=True)
    return doc


def generation(srv, tid):
    st, _, doc = srv.rpc("GetTask", {"id": tid})
    return harness.generation(result_task(doc, "GetTask"))


def of_task(rows, tid):
    return [r for r in rows if r[0] == tid]


def wait_delivered(srv, tid, gen):
    """Wait until onced has delivered every event of tid: no delivery of it
    (first or repeated) comes after that."""
    wait_until(lambda: (srv.rpc("ListTaskPushNotificationConfigs", {"taskId": tid}, ext=True)[2]
                        ["result"]["configs"][0]["delivery"]["deliveredGeneration"] == gen),
               timeout=20, what="onced to deliver every event")


def sentinel(port, seen, what):
    """Post a fresh, genuine event of a task of its own and wait until
    seen() (the task IDs handed over so far) shows it. The receiver hands
    events over in the order it recorded them, so everything it received
    before the sentinel has been handed over by then: the positive signal
    after which "nothing more was handed over" can be asserted."""
    tid = "t-sentinel-" + new_id()
    wid, ts = SUB + tid + ".1", str(int(time.time()))
    body = json.dumps({"task": {"id": tid, "contextId": "c", "metadata": generation_metadata(1),
                                "status": {"state": "TASK_STATE_SUBMITTED"}}}).encode()
    h = {"Content-Type": "application/a2a+json", "webhook-id": wid, "webhook-timestamp": ts,
         "X-A2A-Notification-Token": TOKEN, "webhook-signature": sign(wid, ts, body)}
    eq(post(port, h, body), 204, "the sentinel event is accepted")
    wait_until(lambda: tid in seen(), timeout=10, what=what)
    return tid


# ---------------------------------------------------------------------------

def test_listen_exec_once_in_order():
    state = os.path.join(TMP, "exec-state.db")
    log = os.path.join(TMP, "exec-handled.log")
    lst = Listener("exec", state, exec_cmd(log))
    rec = Recorder(lst.port)
    srv = Onced(ONCED_FLAGS, tmpdir=scratch_dir())
    try:
        tid = "t-" + new_id()
        doc = send_pushed(srv, "ask:Which court?", tid, rec.url)
        eq(result_task(doc)["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the task asks")
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("Zurich", task_id=tid)}, ext=True)
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "then completes")
        gen = generation(srv, tid)
        check(gen >= 5, "the task has several events (%d)" % gen)
        wait_until(lambda: len(handled(log)) >= gen, timeout=20, what="every event handed over")
        wait_delivered(srv, tid, gen)
        handed = lambda: [t for t, _, _ in handled(log)]  # noqa: E731
        sentinel(lst.port, handed, "the handler to pass every delivery")
        got = of_task(handled(log), tid)
        eq([(t, g) for t, g, _ in got], [(tid, g) for g in range(1, gen + 1)],
           "the handler saw each generation exactly once, in order")
        for t, g, body in got:
            d = rec.delivery("%s.%d" % (tid, g))
            check(d is not None, "onced delivered %s.%d" % (tid, g))
            eq(body, json.loads(d[1]), "generation %d: the body onced sent" % g)
        check("task" in got[0][2], "event 1 is the Task: %r" % (got[0][2],))
        eq(got[-1][2]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "the last completes")

        # A duplicate: the captured delivery of generation 2, replayed as it is.
        hd, body = rec.delivery("%s.2" % tid)
        eq(post(lst.port, hd, body), 204, "a replayed delivery is acknowledged")
        sentinel(lst.port, handed, "the handler to pass the replayed delivery")
        eq(len(of_task(handled(log), tid)), gen, "and dropped: not handed over again")

        # Tampering: the signature, the body, the token. Each 401, nothing recorded.
        hd, body = rec.delivery("%s.%d" % (tid, gen))
        sig = header(hd, "webhook-signature")
        entries = sig.split()
        # Change a character in the middle of each MAC: the last ones carry
        # padding bits a decoder may ignore.
        flipped = [e[:8] + ("A" if e[8] != "A" else "B") + e[9:] for e in entries]
        bad_sig = dict(hd)
        bad_sig["webhook-signature"] = " ".join(flipped)
        eq(post(lst.port, bad_sig, body), 401, "a tampered signature is rejected")
        eq(post(lst.port, hd, body.replace(b"COMPLETED", b"FAILED")), 401,
           "a tampered body is rejected")
        bad_tok = dict(hd)
        bad_tok["X-A2A-Notification-Token"] = "not-" + TOKEN
        eq(post(lst.port, bad_tok, body), 401, "a wrong notification token is rejected")

        # A forged first event of another task: rejected, so not recorded --
        # the genuine one under the same webhook-id is then handed over.
        other = "t-" + new_id()
        wid, ts = SUB + other + ".1", str(int(time.time()))
        genuine = json.dumps({"task": {"id": other, "contextId": "c", "metadata": generation_metadata(1),
                                       "status": {"state": "TASK_STATE_SUBMITTED"}}}).encode()
        forged = genuine.replace(b"SUBMITTED", b"COMPLETED")
        h = {"Content-Type": "application/a2a+json", "webhook-id": wid, "webhook-timestamp": ts,
             "X-A2A-Notification-Token": TOKEN}
        eq(post(lst.port, dict(h, **{"webhook-signature": sign(wid, ts, genuine)}), forged), 401,
           "a forged body under a genuine signature is rejected")
        eq(post(lst.port, dict(h, **{"webhook-signature": sign(wid, ts, genuine)[:-4] + "AAA="}),
                genuine), 401, "a forged signature is rejected")
        old_ts = str(int(time.time()) - 3600)
        eq(post(lst.port, dict(h, **{"webhook-timestamp": old_ts,
                                     "webhook-signature": sign(wid, old_ts, genuine)}), genuine),
           401, "an old timestamp is rejected")
        sentinel(lst.port, handed, "the handler to pass the forgeries")
        check(all(t != other for t, _, _ in handled(log)), "nothing forged was handed over")
        eq(post(lst.port, dict(h, **{"webhook-signature": sign(wid, ts, genuine)}), genuine), 204,
           "the genuine event is accepted")
        wait_until(lambda: any(t == other for t, _, _ in handled(log)), timeout=5,
                   what="the genuine event handed over")
        mine = [(g, b) for t, g, b in handled(log) if t == other]
        eq(mine, [(1, json.loads(genuine))], "handed over once, the genuine body: the forgeries "
                                             "were not recorded")
    finally:
        srv.stop()
        rec.stop()
        rc, out = lst.stop()
    eq(rc, 0, "once listen exits 0 on SIGTERM")

    # The processed-set is durable: a new `once listen` on the same state
    # still knows every event, so a late copy is dropped.
    lst = Listener("exec2", state, exec_cmd(log))
    try:
        hd, body = rec.delivery("%s.2" % tid)
        eq(post(lst.port, hd, body), 204, "a copy after the restart is acknowledged")
        sentinel(lst.port, handed, "the restarted handler to pass the copy")
        eq(len(of_task(handled(log), tid)), gen, "and not handed over again")
    finally:
        rc, _ = lst.stop()
    eq(rc, 0, "exit 0")


def test_listen_prints_events():
    state = os.path.join(TMP, "print-state.db")
    lst = Listener("print", state, ["--json"])
    srv = Onced(ONCED_FLAGS, tmpdir=scratch_dir())
    try:
        tid = "t-" + new_id()
        conf = {"url": lst.url + "hook", "token": TOKEN}
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("hello", task_id=tid),
                                             "configuration": {"taskPushNotificationConfig": conf}},
                             ext=True)
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "completed")
        gen = generation(srv, tid)
        wait_delivered(srv, tid, gen)
        def printed():
            return [json.loads(ln)["taskId"] for ln in lst.printed().splitlines()
                    if ln.endswith("}")]
        sentinel(lst.port, printed, "every event to be printed")
    finally:
        srv.stop()
        rc, out = lst.stop()
    eq(rc, 0, "exit 0")
    lines = [d for d in (json.loads(ln) for ln in out.splitlines() if ln.strip())
             if d["taskId"] == tid]
    eq([(d["taskId"], d["generation"]) for d in lines], [(tid, g) for g in range(1, gen + 1)],
       "one JSON line per event, in order")
    eq([d["webhookId"].rsplit("/", 1)[1] for d in lines],
       ["%s.%d" % (tid, g) for g in range(1, gen + 1)], "with its webhook-id")
    eq(len({d["subscription"] for d in lines}), 1, "all of one subscription")
    check("task" in lines[0]["event"], "the event is the StreamResponse: %r" % lines[0])


def test_forged_since_replay():
    # Capture a task's deliveries with a first receiver, then replay them to
    # a fresh one: generation 1, then generation 3 ahead of 2 with a forged
    # once-push-since: 2 ("generations up to 2 will never come").
    lst = Listener("since-capture", os.path.join(TMP, "since-capture.db"))
    rec = Recorder(lst.port)
    srv = Onced(ONCED_FLAGS, tmpdir=scratch_dir())
    try:
        tid = "t-" + new_id()
        send_pushed(srv, "hello", tid, rec.url)
        gen = generation(srv, tid)
        check(gen >= 3, "the task has three events or more (%d)" % gen)
        wait_delivered(srv, tid, gen)
    finally:
        srv.stop()
        rec.stop()
        lst.stop()
    log = os.path.join(TMP, "since-handled.log")
    lst = Listener("since-replay", os.path.join(TMP, "since-replay.db"), exec_cmd(log))
    try:
        (h1, b1), (h2, b2), (h3, b3) = (rec.delivery("%s.%d" % (tid, g)) for g in (1, 2, 3))
        eq(post(lst.port, h1, b1), 204, "generation 1 accepted")
        forged = dict(h3)
        for k in list(forged):
            if k.lower() == "once-push-since":
                del forged[k]
        forged["once-push-since"] = "2"
        st = post(lst.port, forged, b3)
        check(st >= 400, "generation 3 with a forged once-push-since is refused (%d)" % st)
        eq(post(lst.port, h2, b2), 204, "the genuine generation 2 is accepted")
        eq(post(lst.port, h3, b3), 204, "and the genuine generation 3")
        wait_until(lambda: len(handled(log)) >= 3, timeout=10, what="three events handed over")
        eq([(t, g) for t, g, _ in handled(log)], [(tid, 1), (tid, 2), (tid, 3)],
           "generation 2 was not skipped: each handed over once, in order")
    finally:
        lst.stop()


def test_listen_usage():
    p = subprocess.run([ONCE, "listen", "--port", "0"], capture_output=True, text=True,
                       timeout=scaled(10))
    eq(p.returncode, 2, "listen without --secret: usage error")
    check("--secret" in p.stderr, "says what is missing: %r" % p.stderr)
    p = subprocess.run([ONCE, "listen", "--secret", "s"], capture_output=True, text=True,
                       timeout=scaled(10))
    eq(p.returncode, 2, "listen without --port: usage error")
    env = dict(os.environ)
    env.pop("ONCE_TOKEN", None)
    p = subprocess.run([ONCE, "listen", "--port", "0", "--secret", "s",
                        "--state", os.path.join(TMP, "usage.db")], capture_output=True,
                       text=True, timeout=scaled(10), env=env)
    eq(p.returncode, 2, "listen without --token: usage error")
    check("--token" in p.stderr, "says what is missing: %r" % p.stderr)
    p = subprocess.run([ONCE, "--help"], capture_output=True, text=True, timeout=scaled(10))
    check("listen --port P --secret S" in p.stdout, "--help documents listen")


if __name__ == "__main__":
    if not os.path.exists(ONCE):
        print("FAIL: %s is missing (build first)" % ONCE, file=sys.stderr)
        sys.exit(1)
    run([test_listen_exec_once_in_order, test_listen_prints_events, test_forged_since_replay,
         test_listen_usage])
