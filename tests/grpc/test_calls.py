"""gRPC calls through the transport (src/grpc/h2.c) from a real gRPC client
(Debian's python3-grpcio, generic calls on raw bytes): unary, metadata,
status and details, server streaming under flow control, deadlines,
cancellation, TLS with ALPN, and the requests the transport refuses."""
import os
import socket
import ssl
import subprocess
import time

import grpc

from echo_server import Echo, Raw, check, eq, frame, grpc_headers, harness, scaled, wait_until


def unary(ch, path="/test.Echo/Unary"):
    return ch.unary_unary(path, request_serializer=None, response_deserializer=None)


def test_unary_and_metadata():
    with Echo() as e, e.channel() as ch:
        got, call = unary(ch).with_call(b"hello\x00bytes", metadata=[("x-echo", "abc")],
                                        timeout=scaled(10))
        eq(got, b"hello\x00bytes", "the message echoed")
        eq(dict(call.initial_metadata()).get("x-echo"), "abc", "x-echo in initial metadata")
        eq(call.code(), grpc.StatusCode.OK, "status")
        eq(unary(ch)(b"", timeout=scaled(10)), b"", "an empty message echoed")


def test_status_and_details():
    with Echo() as e, e.channel() as ch:
        try:
            unary(ch, "/test.Echo/Fail")(b"why", metadata=[("x-code", "9")], timeout=scaled(10))
            check(False, "Fail answered OK")
        except grpc.RpcError as err:
            eq(err.code(), grpc.StatusCode.FAILED_PRECONDITION, "status from x-code")
            eq(err.details(), "failed on purpose", "grpc-message")
            eq(dict(err.trailing_metadata()).get("grpc-status-details-bin"), b"details:why",
               "grpc-status-details-bin")
        try:
            unary(ch, "/test.Nope/Nothing")(b"", timeout=scaled(10))
            check(False, "an unknown method answered OK")
        except grpc.RpcError as err:
            eq(err.code(), grpc.StatusCode.UNIMPLEMENTED, "unknown method")


def test_stream_slow_reader():
    # A small stream buffer: the producer is told to wait many times, and
    # resumed by on_room, while the reader is slow at first.
    with Echo(stream_buffer=4096) as e, e.channel() as ch:
        it = ch.unary_stream("/test.Echo/Stream")(b"10000:100", timeout=scaled(120))
        n = 0
        for m in it:
            eq(m[:len(b"%d:" % n)], b"%d:" % n, "message %d in order" % n)
            eq(len(m), 100, "message size")
            n += 1
            if n < 200:
                time.sleep(0.002)
        eq(n, 10000, "messages received")
        st = e.stats(ch)
        check(int(st["rooms"]) > 0, "the producer was resumed by on_room (%s)" % st)


def test_deadline_exceeded():
    with Echo() as e, e.channel() as ch:
        try:
            unary(ch, "/test.Echo/Hold")(b"", timeout=0.3)
            check(False, "Hold answered")
        except grpc.RpcError as err:
            eq(err.code(), grpc.StatusCode.DEADLINE_EXCEEDED, "status")
        wait_until(lambda: e.stats(ch)["gone"] == "1" and e.stats(ch)["holding"] == "0", 10,
                   what="the handler told of the deadline")


def test_cancel_seen_by_server():
    with Echo() as e, e.channel() as ch:
        fut = unary(ch, "/test.Echo/Hold").future(b"", timeout=scaled(60))
        wait_until(lambda: e.stats(ch)["holding"] == "1", 10, what="the call held")
        fut.cancel()
        wait_until(lambda: e.stats(ch)["gone"] == "1" and e.stats(ch)["holding"] == "0", 10,
                   what="on_gone after the client's cancel")


def test_loops_and_clients():
    # Three loop threads, eight clients at once, unary and streaming mixed.
    import threading
    with Echo(threads=3, stream_buffer=2048) as e:
        errors = []

        def client(k):
            try:
                with e.channel() as ch:
                    for i in range(30):
                        want = b"c%d-%d" % (k, i)
                        eq(unary(ch)(want, timeout=scaled(20)), want, "echo")
                        n = sum(1 for _ in ch.unary_stream("/test.Echo/Stream")(b"50:300",
                                                                               timeout=scaled(20)))
                        eq(n, 50, "stream")
            except Exception as ex:  # noqa: BLE001 (reported below)
                errors.append(repr(ex))

        ts = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(scaled(120))
        eq(errors, [], "errors of concurrent clients")


def make_cert(tmp):
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def test_tls_alpn():
    if not harness.needs("tls", "gRPC over TLS"):
        return
    tmp = harness.scratch_dir("once-grpc-tls-")
    cert, key = make_cert(tmp)
    with Echo(tls_cert=cert, tls_key=key) as e:
        creds = grpc.ssl_channel_credentials(root_certificates=open(cert, "rb").read())
        with grpc.secure_channel("localhost:%d" % e.port, creds) as ch:
            eq(unary(ch)(b"over tls", timeout=scaled(10)), b"over tls", "unary over TLS")
            n = sum(1 for _ in ch.unary_stream("/test.Echo/Stream")(b"500:1000", timeout=scaled(60)))
            eq(n, 500, "a stream over TLS")
        # A TLS client that does not negotiate h2 is refused.
        for alpn in (["http/1.1"], None):
            ctx = ssl.create_default_context(cafile=cert)
            if alpn:
                ctx.set_alpn_protocols(alpn)
            s = socket.create_connection(("127.0.0.1", e.port), timeout=scaled(10))
            refused = False
            try:
                t = ctx.wrap_socket(s, server_hostname="localhost")
                t.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                refused = t.recv(100) == b""
            except (ssl.SSLError, ConnectionError):
                refused = True
            finally:
                s.close()
            check(refused, "a TLS client offering %r refused" % alpn)


def test_message_too_large():
    with Echo(max_message=1000) as e, e.channel() as ch:
        eq(unary(ch)(b"x" * 1000, timeout=scaled(10)), b"x" * 1000, "max_message bytes pass")
        try:
            unary(ch)(b"x" * 1001, timeout=scaled(10))
            check(False, "a message over max_message answered")
        except grpc.RpcError as err:
            eq(err.code(), grpc.StatusCode.RESOURCE_EXHAUSTED, "status")
        eq(e.stats(ch)["calls"], "2", "the handler saw only the call that fit (and Stats)")


def test_compressed_refused():
    with Echo() as e, e.channel() as ch:
        try:
            unary(ch)(b"y" * 4000, timeout=scaled(10), compression=grpc.Compression.Gzip)
            check(False, "a compressed message answered")
        except grpc.RpcError as err:
            eq(err.code(), grpc.StatusCode.UNIMPLEMENTED, "status")
        # Raw: the compressed flag without grpc-encoding.
        r = Raw(e.port)
        sid = r.c.get_next_available_stream_id()
        r.c.send_headers(sid, grpc_headers("/test.Echo/Unary"))
        r.c.send_data(sid, frame(b"abc", compressed=1), end_stream=True)
        r.flush()
        r.until(lambda x: x.trailers(sid), "trailers for a compressed message")
        eq(r.trailers(sid).get("grpc-status"), "12", "UNIMPLEMENTED")
        r.close()


def test_refusals():
    with Echo() as e:
        r = Raw(e.port)
        # A content type that is not gRPC's: HTTP 415.
        s1 = r.c.get_next_available_stream_id()
        r.c.send_headers(s1, grpc_headers("/test.Echo/Unary", ctype="application/json"))
        r.c.send_data(s1, frame(b"a"), end_stream=True)
        # No message, then two messages: INTERNAL.
        s2 = s1 + 2
        r.c.send_headers(s2, grpc_headers("/test.Echo/Unary"), end_stream=True)
        s3 = s2 + 2
        r.c.send_headers(s3, grpc_headers("/test.Echo/Unary"))
        r.c.send_data(s3, frame(b"a") + frame(b"b"), end_stream=True)
        # A malformed path: UNIMPLEMENTED; a malformed grpc-timeout: INTERNAL.
        s4 = s3 + 2
        r.c.send_headers(s4, grpc_headers("/nomethod"))
        r.c.send_data(s4, frame(b"a"), end_stream=True)
        s5 = s4 + 2
        r.c.send_headers(s5, grpc_headers("/test.Echo/Unary", extra=[("grpc-timeout", "10x")]))
        r.c.send_data(s5, frame(b"a"), end_stream=True)
        r.flush()
        r.until(lambda x: x.response(s1) and all(x.trailers(s) for s in (s2, s3, s4, s5)),
                "answers to the refused requests")
        eq(r.response(s1).get(":status"), "415", "wrong content-type")
        eq(r.trailers(s2).get("grpc-status"), "13", "no message")
        eq(r.trailers(s3).get("grpc-status"), "13", "two messages")
        eq(r.trailers(s4).get("grpc-status"), "12", "malformed path")
        eq(r.trailers(s5).get("grpc-status"), "13", "malformed grpc-timeout")
        # Trailers-Only: the error came in the response's one HEADERS frame.
        check("grpc-status" in r.response(s2), "Trailers-Only response")
        r.close()
        # HTTP/1.1 on the port: a clear answer, then the close.
        s = socket.create_connection(("127.0.0.1", e.port), timeout=scaled(10))
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        got = harness.read_all(s)
        s.close()
        check(got.startswith(b"HTTP/1.1 505 "), "HTTP/1.1 refused: %r" % got[:60])


if __name__ == "__main__":
    harness.run([test_unary_and_metadata, test_status_and_details, test_stream_slow_reader,
                 test_deadline_exceeded, test_cancel_seen_by_server, test_loops_and_clients,
                 test_tls_alpn,
                 test_message_too_large, test_compressed_refused, test_refusals])
