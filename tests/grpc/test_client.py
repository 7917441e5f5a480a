"""The client half (src/grpc/h2_client.c, through build/tools/grpc_call)
against our own server (tools/grpc_echo: h2c and TLS) and against grpcio's
server (a generic handler on raw bytes): unary, metadata, status and
details, server streaming, deadline, cancellation, certificate checks."""
import os
import subprocess
import threading
from concurrent import futures

import grpc

from echo_server import TOOLS, Echo, check, eq, harness, scaled, wait_until
from test_calls import make_cert

CALL = os.path.join(TOOLS, "grpc_call")


def call(port, path, data="", *flags):
    p = subprocess.run([CALL, "--port", str(port), "--path", path, "--data", data] + list(flags),
                       capture_output=True, timeout=scaled(60))
    lines = p.stdout.decode(errors="replace").splitlines()
    out = {"rc": p.returncode, "err": p.stderr.decode(errors="replace"),
           "msgs": [l[4:] for l in lines if l.startswith("msg ")],
           "headers": dict(l[7:].split(": ", 1) for l in lines if l.startswith("header ")),
           "details": next((l[8:] for l in lines if l.startswith("details ")), None)}
    st = [l.split(" ", 2) for l in lines if l.startswith("status ")]
    out["status"] = [int(s[1]) for s in st]
    out["message"] = st[-1][2] if st and len(st[-1]) > 2 else ""
    return out


def test_against_our_server():
    with Echo() as e:
        r = call(e.port, "/test.Echo/Unary", "hi", "--md", "x-echo=yo", "--repeat", "3")
        eq(r["status"], [0, 0, 0], "three unary calls on one connection")
        eq(r["msgs"], ["hi"] * 3, "echoed")
        eq(r["headers"].get("x-echo"), "yo", "initial metadata")
        r = call(e.port, "/test.Echo/Fail", "d", "--md", "x-code=5")
        eq((r["status"], r["message"], r["details"]), ([5], "failed on purpose", "details:d"),
           "status, message, details")
        r = call(e.port, "/test.Echo/Stream", "2000:50")
        eq((r["status"], len(r["msgs"])), ([0], 2000), "a stream of 2000")
        eq(r["msgs"][1999][:5], "1999:", "in order")
        r = call(e.port, "/test.Echo/Stream", "1000000:10", "--cancel-after", "5")
        eq((r["status"], len(r["msgs"])), ([1], 5), "cancelled after 5 messages")
        wait_until(lambda: e.stats()["gone"] == "1", 10, what="the server told of the cancel")
        r = call(e.port, "/test.Echo/Hold", "", "--timeout-ms", "200")
        eq(r["status"], [4], "deadline exceeded")
        wait_until(lambda: e.stats()["gone"] == "2", 10, what="the server told of the deadline")


def test_tls_verification():
    if "tls" not in harness.BUILT:
        # Built without TLS: a call over TLS is refused, saying so.
        with Echo() as e:
            r = call(e.port, "/test.Echo/Unary", "tls", "--tls-ca", "/nonexistent",
                     "--server-name", "localhost")
        eq(r["rc"], 1, "a call over TLS refused")
        check("TLS support was not built in" in r["err"], "the refusal says why: %r" % r["err"])
        return
    tmp = harness.scratch_dir("once-grpc-tls-")
    cert, key = make_cert(tmp)
    other, _ = make_cert(harness.scratch_dir("once-grpc-tls-"))
    with Echo(tls_cert=cert, tls_key=key) as e:
        r = call(e.port, "/test.Echo/Unary", "tls", "--tls-ca", cert, "--server-name", "localhost")
        eq((r["rc"], r["status"], r["msgs"]), (0, [0], ["tls"]), "a verified TLS call")
        r = call(e.port, "/test.Echo/Unary", "tls", "--tls-ca", other, "--server-name", "localhost")
        eq(r["rc"], 1, "an untrusted certificate refused")
        check("TLS handshake" in r["err"], "the refusal says why: %r" % r["err"])
        r = call(e.port, "/test.Echo/Unary", "tls", "--tls-ca", cert, "--server-name", "other.example")
        eq(r["rc"], 1, "a certificate for another name refused")


class Generic(grpc.GenericRpcHandler):
    """grpcio's server: Unary echoes, Fail fails with details, Stream
    streams N, Hold waits until cancelled (counted)."""

    def __init__(self):
        self.cancelled = threading.Event()

    def service(self, details):
        m = details.method
        if m == "/g.S/Unary":
            def unary(req, ctx):
                ctx.send_initial_metadata([("x-echo", dict(ctx.invocation_metadata()).get("x-echo", ""))])
                return req
            return grpc.unary_unary_rpc_method_handler(unary)
        if m == "/g.S/Fail":
            def fail(req, ctx):
                ctx.set_trailing_metadata([("grpc-status-details-bin", b"why:" + req)])
                ctx.abort(grpc.StatusCode.NOT_FOUND, "not here: 100%")
            return grpc.unary_unary_rpc_method_handler(fail)
        if m == "/g.S/Stream":
            def stream(req, ctx):
                for i in range(int(req)):
                    yield b"%d" % i
            return grpc.unary_stream_rpc_method_handler(stream)
        if m == "/g.S/Hold":
            def hold(req, ctx):
                ctx.add_callback(self.cancelled.set)
                while ctx.is_active():
                    threading.Event().wait(0.02)
                return b""
            return grpc.unary_unary_rpc_method_handler(hold)
        return None


def test_against_grpcio():
    h = Generic()
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[h])
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    try:
        r = call(port, "/g.S/Unary", "abc", "--md", "x-echo=zz")
        eq((r["status"], r["msgs"], r["headers"].get("x-echo")), ([0], ["abc"], "zz"), "unary")
        r = call(port, "/g.S/Fail", "q")
        eq((r["status"], r["message"], r["details"]), ([5], "not here: 100%", "why:q"),
           "status, decoded message, details")
        r = call(port, "/g.S/Stream", "3000")
        eq((r["status"], len(r["msgs"]), r["msgs"][-1]), ([0], 3000, "2999"), "a stream")
        r = call(port, "/g.S/Nope", "")
        eq(r["status"], [12], "an unknown method")
        r = call(port, "/g.S/Hold", "", "--timeout-ms", "300")
        eq(r["status"], [4], "deadline exceeded")
        wait_until(h.cancelled.is_set, 10, what="grpcio's handler cancelled by the deadline")
    finally:
        srv.stop(0)


if __name__ == "__main__":
    harness.run([test_against_our_server, test_tls_verification, test_against_grpcio])
