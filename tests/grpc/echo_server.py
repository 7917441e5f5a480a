"""The gRPC transport's test server (build/tools/grpc_echo) and raw HTTP/2
helpers (hyper-h2) for tests/grpc. The waiting rules are tests/e2e/harness.py's:
every bound is scaled(), every wait is for a condition."""
import os
import select
import socket
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import harness  # noqa: E402
from harness import check, eq, scaled, wait_until  # noqa: E402,F401

import grpc  # noqa: E402
import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
import h2.exceptions  # noqa: E402

TOOLS = os.environ.get("ONCE_TOOLS", os.path.join(harness.ROOT, "build", "tools"))
ECHO = os.path.join(TOOLS, "grpc_echo")


class Echo:
    """One grpc_echo process; flags as keyword arguments (max_message=1000
    is --max-message 1000)."""

    def __init__(self, **flags):
        self.tmp = harness.scratch_dir("once-grpc-")
        args = [ECHO]
        for k, v in flags.items():
            args += ["--" + k.replace("_", "-"), str(v)]
        self.errpath = os.path.join(self.tmp, "stderr.log")
        self.err = open(self.errpath, "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.err)
        r, _, _ = select.select([self.proc.stdout], [], [], scaled(15))
        check(r, "grpc_echo printed its port")
        self.port = int(self.proc.stdout.readline())
        self.target = "127.0.0.1:%d" % self.port

    def channel(self):
        return grpc.insecure_channel(self.target)

    def stats(self, ch=None):
        own = ch is None
        ch = ch or self.channel()
        try:
            raw = ch.unary_unary("/test.Echo/Stats")(b"", timeout=scaled(10))
        finally:
            if own:
                ch.close()
        return dict(kv.split("=") for kv in raw.decode().split())

    def stop(self):
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=scaled(30))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.err.close()
        text = open(self.errpath, errors="replace").read()
        eq(harness.sanitizer_report(text), None, "sanitizer report of grpc_echo")
        eq(rc, 0, "grpc_echo exit status")
        self.stop = lambda: text   # once
        return text

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class GoodClient:
    """A well-behaved grpcio client calling Unary in a loop on its own
    channel while an attack runs: every call must succeed."""

    def __init__(self, echo):
        self.ch = echo.channel()
        self.call = self.ch.unary_unary("/test.Echo/Unary")
        self.ok = 0
        self.failed = []
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()
        wait_until(lambda: self.ok > 0, 15, what="the good client's first answer")

    def _run(self):
        i = 0
        while not self.stop_ev.is_set():
            i += 1
            want = b"good-%d" % i
            try:
                got = self.call(want, timeout=scaled(10))
                if got != want:
                    self.failed.append("wrong answer %r" % got)
                self.ok += 1
            except grpc.RpcError as e:
                self.failed.append("%s %s" % (e.code(), e.details()))

    def more(self, n=3):
        """Wait for n more answers, then stop; no call may have failed."""
        base = self.ok
        wait_until(lambda: self.ok >= base + n, 15, what="the good client's answers")
        self.stop_ev.set()
        self.t.join(scaled(15))
        self.ch.close()
        eq(self.failed, [], "the good client's failed calls")


def grpc_headers(path, ctype="application/grpc", extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "test"),
            ("content-type", ctype), ("te", "trailers")] + list(extra)


def frame(msg, compressed=0):
    return bytes([compressed]) + len(msg).to_bytes(4, "big") + msg


class Raw:
    """A raw HTTP/2 client connection (hyper-h2), for what grpcio never
    sends."""

    def __init__(self, port, settings=None, preface=True):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.settimeout(scaled(15))
        cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                        validate_outbound_headers=False,
                                        validate_inbound_headers=False)
        self.c = h2.connection.H2Connection(config=cfg)
        self.events = []
        self.eof = False
        if preface:
            self.c.initiate_connection()
            if settings:
                self.c.update_settings(settings)
            self.flush()

    def flush(self):
        try:
            self.s.sendall(self.c.data_to_send())
        except OSError:
            pass

    def send_raw(self, data):
        try:
            self.s.sendall(data)
            return True
        except OSError:
            return False

    def pump(self):
        """Read once (blocking up to the socket timeout); False at EOF."""
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            return True
        except OSError:
            d = b""
        if not d:
            self.eof = True
            return False
        try:
            self.events += self.c.receive_data(d)
        except h2.exceptions.ProtocolError:
            pass
        self.flush()
        return True

    def until(self, cond, what):
        """Read until cond(self) holds (or EOF); fail after scaled(15)."""
        import time
        end = time.time() + scaled(15)
        while not cond(self) and time.time() < end:
            if not self.pump() and not cond(self):
                break
        check(cond(self), what)

    def terminated(self):
        return [e for e in self.events if isinstance(e, h2.events.ConnectionTerminated)]

    def resets(self):
        return [e for e in self.events if isinstance(e, h2.events.StreamReset)]

    def response(self, sid):
        for e in self.events:
            if isinstance(e, h2.events.ResponseReceived) and e.stream_id == sid:
                return dict(e.headers)
        return None

    def trailers(self, sid):
        for e in self.events:
            if isinstance(e, h2.events.TrailersReceived) and e.stream_id == sid:
                return dict(e.headers)
        r = self.response(sid)
        return r if r and "grpc-status" in r else None

    def close(self):
        self.s.close()
