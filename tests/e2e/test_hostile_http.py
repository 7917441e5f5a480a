"""Hostile HTTP clients against onced and the `once listen` webhook receiver
(issue 12, items 3 and 7), over raw loopback sockets:

- slowloris: connections that trickle a request head, or a body, a few bytes
  at a time are closed once the request timeout has passed since their
  accept (never before), while a well-behaved client is served throughout;
- the per-address limit closes the connections past it at once and leaves
  the others alone; near the connection limit the oldest waiting
  connections make room, so a new client still gets in;
- many connections stalled near the end of a large body do not hold a body
  each: onced's RSS grows by far less than N x the body size;
- two Content-Length headers, a space before a header's colon and a NUL in a
  header value are answered 400 and run nothing: no task is registered, no
  smuggled second request runs, no webhook event is recorded.

Attackers connect from 127.0.0.2 and up, the well-behaved client from
127.0.0.1, so the per-address limit applies to the attackers only. Every
attack stays a few dozen to a few hundred sockets (checked against
RLIMIT_NOFILE).
"""
import base64
import http.server
import json
import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, ROOT, Onced, check, eq, error_info, new_id, read_all, run, scaled,
                     scratch_dir, user_message, wait_until)

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
ONCE = os.path.join(BUILD, "once")
SECRET = "whsec_" + base64.b64encode(b"hostile-e2e-secret-0123456789ab").decode()
TIMEOUT = scaled(2.0)          # the request timeout the servers run with, seconds
MS = "%dms" % (TIMEOUT * 1000)


def fds_available(n, what):
    """Make room for n more sockets under RLIMIT_NOFILE (raising the soft
    limit up to the hard one), or fail saying how many there are."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        soft = want
    check(soft >= n + 128, "%s needs %d sockets; RLIMIT_NOFILE is %d" % (what, n, soft))


def attacker(k):
    """The k-th attacking address (k >= 0): 127.0.0.2, 127.0.0.3, ..."""
    return "127.0.0.%d" % (2 + k)


class Conn:
    def __init__(self, sock, t0):
        self.sock, self.t0 = sock, t0
        self.closed = None      # when the server's close was seen
        self.data = b""


class Attack:
    """Raw connections, each from a source address; notes when the server
    closes each one (EOF or reset)."""

    def __init__(self, port):
        self.port = port
        self.conns = []

    def open(self, src, first=b""):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((src, 0))
        t0 = time.monotonic()  # before connect: the server accepts after this
        s.settimeout(scaled(5))
        s.connect(("127.0.0.1", self.port))
        c = Conn(s, t0)
        self.conns.append(c)
        if first:
            self.send(c, first)
        return c

    def send(self, c, data):
        if c.closed is not None:
            return
        try:
            c.sock.sendall(data)
        except OSError:
            c.closed = c.closed or time.monotonic()

    def trickle(self, data):
        for c in self.open_conns():
            self.send(c, data)

    def poll(self, timeout=0.05):
        """Read what is readable; note the closes."""
        socks = {c.sock: c for c in self.open_conns()}
        if not socks:
            time.sleep(timeout)
            return
        ready, _, _ = select.select(list(socks), [], [], timeout)
        for s in ready:
            c = socks[s]
            try:
                d = s.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError:
                d = b""
            if d:
                c.data += d
            else:
                c.closed = time.monotonic()

    def open_conns(self):
        return [c for c in self.conns if c.closed is None]

    def close(self):
        for c in self.conns:
            c.sock.close()


class Prober(threading.Thread):
    """A well-behaved client: calls fn() every period until stopped; keeps
    (ok, detail) of each round."""

    def __init__(self, fn, period=0.1):
        super().__init__(daemon=True)
        self.fn, self.period = fn, period
        self.rounds = []
        self.stopping = threading.Event()
        self.start()

    def run(self):
        while not self.stopping.is_set():
            try:
                self.rounds.append(self.fn())
            except Exception as ex:  # a timeout or a reset is a failed round
                self.rounds.append((False, repr(ex)))
            self.stopping.wait(self.period)

    def stop(self):
        self.stopping.set()
        self.join(scaled(30))
        return self.rounds


def http_call(port, method, path, body=None, headers=None):
    """One request on a fresh connection from 127.0.0.1: (status, body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=scaled(3),
                                 source_address=("127.0.0.1", 0))
    try:
        h = {"Host": "127.0.0.1", "Connection": "close"}
        h.update(headers or {})
        if body is not None:
            h["Content-Length"] = str(len(body))
        head = "%s %s HTTP/1.1\r\n%s\r\n" % (method, path, "".join(
            "%s: %s\r\n" % kv for kv in h.items()))
        s.sendall(head.encode() + (body or b""))
        return parse_response(read_all(s))
    finally:
        s.close()


def parse_response(raw):
    """(status, body) of the first response in raw; (None, raw) if none."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"HTTP/1."):
        return None, raw
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    return status, rest[:length]


def rpc_body(method, params):
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


RPC_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0", "A2A-Extensions": EXT}


def onced_prober(port, task_id):
    """The agent card and a GetTask, each answered 200 with a result."""
    def once_round():
        st, _ = http_call(port, "GET", "/.well-known/agent-card.json")
        if st != 200:
            return False, "agent card: %r" % st
        st, body = http_call(port, "POST", "/", rpc_body("GetTask", {"id": task_id}), RPC_HEADERS)
        ok = st == 200 and "result" in json.loads(body or b"{}")
        return ok, "GetTask: %r %r" % (st, body[:100])
    return once_round


def served_throughout(rounds, what):
    check(len(rounds) >= 3, "%s: the well-behaved client made %d rounds" % (what, len(rounds)))
    bad = [d for ok, d in rounds if not ok]
    eq(bad, [], "%s: every round of the well-behaved client was served (of %d)"
       % (what, len(rounds)))


def slowloris(port, served_fn, what):
    """Trickle heads and bodies on a few connections; each must be closed at
    the request timeout, counted from before its connect, while served_fn
    keeps being served."""
    fds_available(16, what)
    att = Attack(port)
    head = b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    heads = [att.open(attacker(0), head) for _ in range(4)]  # one header line at a time
    bodies = [att.open(attacker(1), head + b"Content-Length: 4000\r\n\r\n{\"jsonrpc\":")
              for _ in range(4)]  # the body declared, then one byte at a time
    prober = Prober(served_fn)
    steps = 0
    try:
        step = TIMEOUT / 4
        end = time.monotonic() + TIMEOUT + scaled(5)
        next_step = time.monotonic() + step
        while att.open_conns() and time.monotonic() < end:
            att.poll()
            if time.monotonic() >= next_step:
                steps += 1
                for c in heads:
                    att.send(c, b"X-Slow-%d: 1\r\n" % steps)
                for c in bodies:
                    att.send(c, b" ")
                next_step += step
    finally:
        rounds = prober.stop()
        att.close()
    eq(len(att.open_conns()), 0, "%s: every trickling connection was closed" % what)
    check(steps >= 3, "%s: they trickled until the request timeout (%d steps)" % (what, steps))
    for kind, conns in (("head", heads), ("body", bodies)):
        for c in conns:
            held = c.closed - c.t0
            check(held >= TIMEOUT, "%s: a trickling %s was kept until the request timeout "
                                   "(closed after %.2fs of %.2fs)" % (what, kind, held, TIMEOUT))
    served_throughout(rounds, what)


def crowd(port, per_ip, max_conns, served_fn, what):
    """More silent connections than the server takes, from several
    addresses (each at its per-address limit): the oldest make room and a
    new client is served; with all slots taken a client would wait for the
    request timeout."""
    n_ips = max_conns // per_ip + 2
    fds_available(n_ips * per_ip, what)
    att = Attack(port)
    try:
        for k in range(n_ips):
            for _ in range(per_ip):
                att.open(attacker(k))
        # The server closes the oldest as the newest arrive: the positive
        # signal that it took them all in. Every slot is then held by an
        # attacker, and each new client has to make room again.
        surplus = len(att.conns) - max_conns

        def room_made():
            att.poll()
            return len(att.conns) - len(att.open_conns()) >= surplus
        wait_until(room_made, timeout=10, what="%s: the oldest connections closed" % what)
        newest = att.conns[-(max_conns // 2):]
        eq([c for c in newest if c.closed], [], "%s: the ones closed are the oldest" % what)
        prober = Prober(served_fn)
        try:
            wait_until(lambda: len(prober.rounds) >= 5, timeout=30, what="%s: 5 rounds" % what)
        finally:
            rounds = prober.stop()
    finally:
        att.close()
    served_throughout(rounds, what)


def per_address(port, per_ip, served_fn, what):
    """per_ip + 4 connections from one address: the 4 past the limit are
    closed at once, the others stay; another address is served."""
    fds_available(per_ip + 8, what)
    att = Attack(port)
    try:
        for _ in range(per_ip + 4):
            att.open(attacker(7))
        # The positive signal: the server accepted (and closed) the extra ones.
        def four_closed():
            att.poll()
            return len([c for c in att.conns if c.closed]) >= 4
        wait_until(four_closed, timeout=10, what="%s: the connections past the limit closed" % what)
        att.poll(0.2)
        eq(len(att.open_conns()), per_ip, "%s: the %d within the limit stay open" % (what, per_ip))
        ok, detail = served_fn()
        check(ok, "%s: another address is served: %s" % (what, detail))
    finally:
        att.close()


def sanitizer_clean(log, what):
    check("Sanitizer" not in log and "runtime error" not in log,
          "%s ran without a sanitizer report: %s" % (what, log[-2000:]))


# ---------------------------------------------------------------------------
# onced

class Guarded(Onced):
    """onced whose log is checked for sanitizer reports when it stops."""

    def stop(self):
        super().stop()
        sanitizer_clean(self.logtext(), "onced")


def onced(extra=(), **kw):
    return Guarded(["--request-timeout", MS, "--max-connections", "64",
                    "--max-connections-per-ip", "8"] + list(extra), tmpdir=scratch_dir(), **kw)


def a_task(srv):
    tid = new_id()
    st, _, doc = srv.rpc("SendMessage", {"message": user_message("hello", task_id=tid)}, ext=True)
    eq(st, 200, "a task to read during the attacks")
    return tid


def test_onced_slowloris_head_and_body():
    with onced() as srv:
        slowloris(srv.port, onced_prober(srv.port, a_task(srv)), "onced")


def test_onced_room_for_new_clients():
    with onced(["--request-timeout", "60s"]) as srv:
        crowd(srv.port, 8, 64, onced_prober(srv.port, a_task(srv)), "onced")


def test_onced_per_address_limit():
    with onced(["--request-timeout", "60s"]) as srv:
        per_address(srv.port, 8, onced_prober(srv.port, a_task(srv)), "onced")


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(ln for ln in f if ln.startswith("VmRSS:")).split()[1])


def unread_bytes(port):
    """Bytes the kernel holds for onced on its established connections of
    port (the rx_queue of /proc/net/tcp): 0 once onced read everything."""
    total = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            parts = line.split()
            local, state, queues = parts[1], parts[3], parts[4]
            if int(local.split(":")[1], 16) == port and state == "01":
                total += int(queues.split(":")[1], 16)
    return total


def test_onced_stalled_bodies_hold_bounded_memory():
    n, size = 128, 1 << 20
    fds_available(n, "stalled bodies")
    # Under ASan freed blocks wait in a quarantine (256 MiB by default) that
    # RSS would count; the bound is about what onced itself holds.
    asan = (os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0").lstrip(":")
    with onced(["--max-connections", "256", "--max-connections-per-ip", "32",
                "--max-body-memory", "8MiB", "--request-timeout", "120s"],
               env={"ASAN_OPTIONS": asan}) as srv:
        tid = a_task(srv)
        before = vm_rss_kib(srv.proc.pid)
        att = Attack(srv.port)
        try:
            head = (b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n" % size)
            chunk = b" " * (size - 64)  # all but the last 64 bytes, then silence
            for i in range(n):
                att.send(att.open(attacker(i // 32)), head + chunk)
            # The positive signal: onced has read all it was sent.
            wait_until(lambda: unread_bytes(srv.port) == 0, timeout=30,
                       what="onced to read every stalled body")
            grown = (vm_rss_kib(srv.proc.pid) - before) * 1024
            st, _, doc = srv.rpc("GetTask", {"id": tid}, timeout=scaled(5))
            eq(st, 200, "a request is still served next to the stalled bodies")
        finally:
            att.close()
        check(grown < n * size // 4, "RSS grew by %.1f MiB with %d bodies of %d MiB stalled "
                                     "near their end (bound: %.0f MiB)"
              % (grown / 2 ** 20, n, size >> 20, n * size / 4 / 2 ** 20))


def raw_exchange(port, data):
    """Send data on one connection from 127.0.0.1; read until the server
    closes it. (raw bytes read, closed by the server)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=scaled(5),
                                 source_address=("127.0.0.1", 0))
    try:
        s.sendall(data)
        out = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    return out, True
                out += d
        except socket.timeout:
            return out, False
    finally:
        s.close()


def content_lengths(body, lengths):
    return b"".join(b"Content-Length: %d\r\n" % n for n in (lengths or [len(body)]))


def send_request(tid, lengths=None):
    """(head, body) of a SendMessage of a new task tid; lengths: the values
    of its Content-Length headers (default: one, the body's)."""
    body = rpc_body("SendMessage", {"message": user_message("hello", task_id=tid)})
    head = (b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"A2A-Version: 1.0\r\nA2A-Extensions: " + EXT.encode() + b"\r\n" +
            content_lengths(body, lengths) + b"\r\n")
    return head, body


# Each defect, as a change to a well-framed head (which ends "\r\n\r\n").
DEFECTS = (
    ("a space before a header's colon", lambda h: h[:-2] + b"X-Note : 1\r\n\r\n"),
    ("a space before Content-Length's colon",
     lambda h: h.replace(b"Content-Length:", b"Content-Length :")),
    ("a NUL in a header value", lambda h: h.replace(b"Host: localhost", b"X-Note: a\x00b\r\nHost: localhost")),
    ("a NUL in the last header's value", lambda h: h[:-2] + b"X-Last: a\x00b\r\n\r\n"),
)


def not_found(srv, tid):
    st, _, doc = srv.rpc("GetTask", {"id": tid}, ext=True)
    return error_info(doc or {})[1] == "TASK_NOT_FOUND"


def test_onced_framing():
    with onced() as srv:
        # Two Content-Length: the first covers one send, the second also a
        # smuggled second request behind it.
        a, b = new_id(), new_id()
        smuggled = b"".join(send_request(b))
        body_a = send_request(a)[1]
        head_a, _ = send_request(a, [len(body_a), len(body_a) + len(smuggled)])
        out, closed = raw_exchange(srv.port, head_a + body_a + smuggled)
        eq(parse_response(out)[0], 400, "two Content-Length: HTTP 400")
        check(closed and out.count(b"HTTP/1.1 ") == 1,
              "and the connection is closed after it, nothing else answered: %r" % out[:600])
        check(not_found(srv, a), "the send was not run")
        check(not_found(srv, b), "the smuggled send was not run")

        for what, defect in DEFECTS:
            tid = new_id()
            head, body = send_request(tid)
            out, closed = raw_exchange(srv.port, defect(head) + body)
            eq(parse_response(out)[0], 400, "%s: HTTP 400" % what)
            check(closed, "%s: the connection is closed" % what)
            check(not_found(srv, tid), "%s: the send was not run" % what)

        # The same requests without the defects run: the checks refuse
        # nothing a client sends in good faith (also bare LF line ends).
        good = b"Host: localhost\r\nConnection: close\r\nX-Note: a b\tc \r\nCookie: k=v\r\nX-Empty:\r\n"
        for what, fix in (("a well-framed send", lambda h: h),
                          ("a send with bare LF line ends", lambda h: h.replace(b"\r\n", b"\n"))):
            tid = new_id()
            head, body = send_request(tid)
            out, _ = raw_exchange(srv.port, fix(head.replace(b"Host: localhost\r\n", good)) + body)
            eq(parse_response(out)[0], 200, "%s is served" % what)
            check(not not_found(srv, tid), "%s runs" % what)


# ---------------------------------------------------------------------------
# once listen

LISTEN_TOKEN = "hostile-test-token"


class Listener:
    def __init__(self, extra=(), handled=None):
        self.tmp = scratch_dir("once-hostile-")
        cmd = [ONCE, "listen", "--port", "0", "--secret", SECRET, "--token", LISTEN_TOKEN,
               "--state", os.path.join(self.tmp, "state.db"),
               "--request-timeout", MS, "--max-connections", "16",
               "--max-connections-per-ip", "4"] + list(extra)
        if handled:
            cmd += ["--exec", 'printf "%%s %%s\\n" "$ONCE_TASK_ID" "$ONCE_GENERATION" >> %s'
                    % handled]
        self.log = os.path.join(self.tmp, "listen.log")
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        wait_until(lambda: "listening on http://127.0.0.1:" in self.logtext() or
                   self.proc.poll() is not None, timeout=10, what="once listen to start")
        line = self.logtext()
        check("listening on http://127.0.0.1:" in line, "once listen prints its URL: %r" % line)
        self.port = int(line.split("http://127.0.0.1:")[1].split("/")[0])

    def logtext(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=scaled(10))
        eq(self.proc.returncode, 0, "once listen exits 0 on SIGTERM")
        sanitizer_clean(self.logtext(), "once listen")

    def __enter__(self):
        return self

    def __exit__(self, *a):
        if self.proc.poll() is None:
            self.stop()


def listen_prober(port):
    """A GET is answered (405: deliveries are POSTs)."""
    def once_round():
        st, _ = http_call(port, "GET", "/")
        return st == 405, "GET /: %r" % st
    return once_round


def test_listen_slowloris_head_and_body():
    with Listener() as lst:
        slowloris(lst.port, listen_prober(lst.port), "once listen")


def test_listen_room_for_new_clients():
    with Listener(["--request-timeout", "60s"]) as lst:
        crowd(lst.port, 4, 16, listen_prober(lst.port), "once listen")


def test_listen_per_address_limit():
    with Listener(["--request-timeout", "60s"]) as lst:
        per_address(lst.port, 4, listen_prober(lst.port), "once listen")


class Capture:
    """Where onced pushes: answers 204 and keeps (headers, body) of each
    delivery by webhook-id, to be replayed to `once listen`."""

    def __init__(self):
        cap = self
        self.seen = {}

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                hd = [(k, v) for k, v in self.headers.items()
                      if k.lower() not in ("host", "content-length", "connection")]
                cap.seen[self.headers.get("webhook-id")] = (hd, body)
                self.send_response(204)
                self.end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/hook" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def delivery(hd, body, lengths=None):
    """(head, body) of a webhook delivery with headers hd (a list of pairs);
    lengths as in send_request."""
    head = b"POST /hook HTTP/1.1\r\nHost: localhost\r\n" + b"".join(
        ("%s: %s\r\n" % kv).encode() for kv in hd)
    return head + content_lengths(body, lengths) + b"\r\n", body


def handed_over(path):
    try:
        with open(path) as f:
            return [tuple(ln.split()) for ln in f.read().split("\n") if ln.strip()]
    except FileNotFoundError:
        return []


def test_listen_framing():
    cap = Capture()
    srv = Guarded(["--push-allow", "127.0.0.1/32", "--push-secret", SECRET], tmpdir=scratch_dir())
    try:
        tasks = [new_id(), new_id()]
        for tid in tasks:
            st, _, _ = srv.rpc("SendMessage", {"message": user_message("hello", task_id=tid),
                                               "configuration": {"taskPushNotificationConfig":
                                                                 {"url": cap.url,
                                                                  "token": LISTEN_TOKEN}}},
                                   ext=True)
            eq(st, 200, "a task with a push config")
        # webhook-id is <tag>/<config>/<since>/<task>.<generation>
        ends = ["/%s.1" % tasks[0], "/%s.2" % tasks[0], "/%s.1" % tasks[1]]

        def ids():
            got = [next((k for k in list(cap.seen) if k and k.endswith(e)), None) for e in ends]
            return got if all(got) else None
        wanted = wait_until(ids, timeout=20, what="onced to push the events to replay")
    finally:
        srv.stop()
        cap.stop()
    log = os.path.join(scratch_dir(), "handled")
    with Listener(handled=log) as lst:
        (hd1, body1), (hd2, body2), (hd3, body3) = (cap.seen[w] for w in wanted)
        smuggled = b"".join(delivery(hd2, body2))
        attacks = [("two Content-Length",
                    delivery(hd1, body1, [len(body1), len(body1) + len(smuggled)])[0] + body1 +
                    smuggled)]
        attacks += [(what, defect(delivery(hd1, body1)[0]) + body1) for what, defect in DEFECTS]
        for what, data in attacks:
            out, closed = raw_exchange(lst.port, data)
            eq(parse_response(out)[0], 400, "once listen, %s: HTTP 400" % what)
            check(closed and out.count(b"HTTP/1.1 ") == 1, "once listen, %s: closed, nothing "
                                                           "else answered: %r" % (what, out[:300]))

        def accepted(hd, body):
            out, _ = raw_exchange(lst.port, b"".join(delivery(hd + [("Connection", "close")],
                                                              body)))
            return parse_response(out)[0]
        # The positive signal: a genuine event of another task, handed over
        # after everything recorded before it.
        eq(accepted(hd3, body3), 204, "a genuine delivery is accepted")
        wait_until(lambda: (tasks[1], "1") in handed_over(log), timeout=10,
                   what="the genuine delivery handed over")
        eq([t for t in handed_over(log) if t[0] == tasks[0]], [],
           "nothing of the refused deliveries was recorded or handed over")
        for hd, body in ((hd1, body1), (hd2, body2)):
            eq(accepted(hd, body), 204, "the same deliveries, well framed, are accepted")
        wait_until(lambda: [t for t in handed_over(log) if t[0] == tasks[0]] ==
                   [(tasks[0], "1"), (tasks[0], "2")], timeout=10,
                   what="and handed over once each, in order")

if __name__ == "__main__":
    if not os.path.exists(ONCE):
        print("once binary not found at %s" % ONCE, file=sys.stderr)
        sys.exit(1)
    run([test_onced_framing, test_onced_slowloris_head_and_body, test_onced_room_for_new_clients,
         test_onced_per_address_limit, test_onced_stalled_bodies_hold_bounded_memory,
         test_listen_framing, test_listen_slowloris_head_and_body, test_listen_room_for_new_clients,
         test_listen_per_address_limit])
