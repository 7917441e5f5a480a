"""The fault-injecting proxy (tests/tools/proxy.c) itself, for the options
the demo relies on:

  - several --to: connection N goes to target (N-1) mod count, and the log
    names the target; a single --to keeps the log line as it always was;
  - --log-header NAME: one log line per request head, also for several
    requests on one keep-alive connection, with bodies skipped by
    Content-Length (a body that looks like a request head is not one);
  - --drop-hold MS: a dropped answer leaves the client waiting on an open,
    silent connection (its own timeout fires), while the server did the work;
    without it the client sees the connection close at once;
  - --cut N --cut-after BYTES: connection N's answer is cut after BYTES bytes
    (a stream cut mid-way), the others are forwarded whole.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, check, eq, run, scaled, scratch_dir, wait_until  # noqa: E402

PROXY = os.path.join(os.environ.get("ONCE_TOOLS", os.path.join(ROOT, "build", "tools")), "proxy")
TMP = scratch_dir("once-proxy-")


class Backend:
    """An HTTP/1.1 server on loopback answering {"name", "n"}; counts bodies."""

    def __init__(self, name):
        self.name = name
        self.bodies = []
        backend = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                backend.bodies.append(body)
                out = json.dumps({"name": backend.name, "n": len(backend.bodies)}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class Proxy:
    def __init__(self, *args):
        self.log = os.path.join(TMP, "proxy-%d.log" % time.time_ns())
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen([PROXY, "--listen", "0"] + list(args),
                                         stdout=subprocess.PIPE, stderr=err)
        self.port = int(self.proc.stdout.readline())

    def lines(self, want, what="request"):
        """The log's "conn" lines, once at least `want` of them contain `what`
        (the serving threads log as they go)."""
        def read():
            with open(self.log) as f:
                return [l.rstrip("\n") for l in f if l.startswith("conn ")]
        wait_until(lambda: sum(1 for l in read() if what in l) >= want, timeout=10,
                   what="%d proxy log lines with %r" % (want, what))
        return read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(scaled(5))
        self.proc.stdout.close()


def post(port, body=b"{}", headers=None, conn=None, timeout=5):
    """timeout is used as it is: a test may want the client's timeout to fire."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", "/p", body=body, headers=headers or {})
    r = c.getresponse()
    data = json.loads(r.read())
    if conn is None:
        c.close()
    return data


def test_round_robin():
    a, b = Backend("a"), Backend("b")
    p = Proxy("--to", "127.0.0.1:%d" % a.port, "--to", "127.0.0.1:%d" % b.port)
    try:
        names = [post(p.port, timeout=scaled(5))["name"] for _ in range(5)]
        eq(names, ["a", "b", "a", "b", "a"], "connection N goes to target (N-1) mod 2")
        eq(p.lines(5, "conn")[:2], ["conn 1 forward to 127.0.0.1:%d" % a.port,
                           "conn 2 forward to 127.0.0.1:%d" % b.port], "the log names the target")
    finally:
        p.stop()
    single = Proxy("--to", "127.0.0.1:%d" % a.port, "--drop-response", "2")
    try:
        post(single.port, timeout=scaled(5))
        try:
            post(single.port, timeout=scaled(5))
        except (http.client.HTTPException, OSError):
            pass
        eq(single.lines(2, "conn"), ["conn 1 forward", "conn 2 drop"],
           "one target: the log line as before")
    finally:
        single.stop()
        a.close()
        b.close()


def test_log_header_keepalive():
    a = Backend("a")
    p = Proxy("--to", "127.0.0.1:%d" % a.port, "--log-header", "X-Id")
    try:
        c = http.client.HTTPConnection("127.0.0.1", p.port, timeout=scaled(5))
        tricky = b'{"x":"POST /fake HTTP/1.1\\r\\nX-Id: forged\\r\\n\\r\\n"}' + b"\r\n\r\nPOST /x HTTP/1.1\r\n\r\n"
        for i, body in enumerate([b"{}", tricky, b"x" * 70000], 1):
            eq(post(p.port, body, {"X-Id": "k%d" % i}, conn=c)["n"], i, "request %d answered" % i)
        c.close()
        eq([l for l in p.lines(3, "request") if "request" in l],
           ["conn 1 request POST /p X-Id: k1", "conn 1 request POST /p X-Id: k2",
            "conn 1 request POST /p X-Id: k3"],
           "one line per request on the keep-alive connection, bodies skipped")
        eq(a.bodies[1], tricky, "the bytes went through unchanged")
        eq(len(a.bodies[2]), 70000, "a large body went through")
    finally:
        p.stop()
        a.close()


def test_drop_hold():
    a = Backend("a")
    # The hold outlasts the client's 0.5 s timeout by far, however slow the machine.
    held = Proxy("--to", "127.0.0.1:%d" % a.port, "--drop-response", "1", "--drop-hold",
                 "%d" % scaled(5000))
    quick = Proxy("--to", "127.0.0.1:%d" % a.port, "--drop-response", "1")
    try:
        t0 = time.monotonic()
        try:
            post(held.port, timeout=0.5)
            check(False, "a held drop gives no answer")
        except socket.timeout:
            pass
        waited = time.monotonic() - t0
        check(0.4 <= waited < scaled(3), "the client's own timeout fired (%.2f s)" % waited)
        wait_until(lambda: len(a.bodies) == 1, timeout=10, what="the server to do the work")
        # A held connection would end in socket.timeout, not caught here.
        t0 = time.monotonic()
        try:
            post(quick.port, timeout=scaled(10))
            check(False, "a drop gives no answer")
        except (http.client.HTTPException, ConnectionError):
            pass
        check(time.monotonic() - t0 < scaled(2),
              "without --drop-hold the connection closes at once")
        eq(len(a.bodies), 2, "and the server did that work too")
    finally:
        held.stop()
        quick.stop()
        a.close()


def test_cut():
    """--cut N --cut-after B: connection N's answer reaches the client up to
    its first B bytes, then the connection closes; the server did the work.
    Other connections are forwarded whole."""
    a = Backend("a")
    px = Proxy("--to", "127.0.0.1:%d" % a.port, "--cut", "1", "--cut-after", "20")
    try:
        req = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        got = []
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", px.port), timeout=scaled(10)) as s:
                s.sendall(req)
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                got.append(data)
        eq(len(got[0]), 20, "connection 1: the first 20 bytes of the answer, then closed")
        check(got[0] == got[1][:20], "the bytes are the answer's own")
        check(b'"n": 2' in got[1], "connection 2 is forwarded whole: %r" % got[1][-40:])
        eq(len(a.bodies), 2, "the server did the work of both")
        check("conn 1 cut" in "\n".join(px.lines(1, "cut")), "the log names the cut")
    finally:
        px.stop()
        a.close()


if __name__ == "__main__":
    run([test_round_robin, test_log_header_keepalive, test_drop_hold, test_cut])
