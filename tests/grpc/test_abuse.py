"""HTTP/2 abuse against the gRPC transport (raw frames from hyper-h2): for
each attack the attacker's connection is closed (or its streams refused)
while a well-behaved grpcio client on the same server keeps getting answers
(GoodClient: no call may fail)."""
import socket
import struct

import h2.errors
import h2.settings
import hpack

from echo_server import Echo, GoodClient, Raw, check, eq, frame, grpc_headers, harness, scaled, wait_until

CALM = h2.errors.ErrorCodes.ENHANCE_YOUR_CALM


def raw_frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def closed_calm(r, what):
    r.until(lambda x: x.eof, what + ": the attacker's connection closed")
    codes = [t.error_code for t in r.terminated()]
    check(codes == [] or codes[-1] == CALM, what + ": GOAWAY ENHANCE_YOUR_CALM (%r)" % codes)
    return codes


def test_rapid_reset():
    with Echo() as e:
        good = GoodClient(e)
        r = Raw(e.port)
        for i in range(3000):
            sid = r.c.get_next_available_stream_id()
            r.c.send_headers(sid, grpc_headers("/test.Echo/Hold"))
            r.c.reset_stream(sid)
            if i % 100 == 99 and not r.send_raw(r.c.data_to_send()):
                break
        r.flush()
        eq(closed_calm(r, "rapid reset")[-1:], [CALM], "rapid reset answered with GOAWAY")
        good.more()


def flood(payload_frame, what):
    with Echo() as e:
        good = GoodClient(e)
        r = Raw(e.port)
        for _ in range(50):
            if not r.send_raw(payload_frame * 100):
                break
        closed_calm(r, what)
        good.more()


def test_settings_flood():
    flood(raw_frame(0x4, 0, 0), "SETTINGS flood")


def test_ping_flood():
    flood(raw_frame(0x6, 0, 0, b"12345678"), "PING flood")


def test_empty_data_flood():
    with Echo() as e:
        good = GoodClient(e)
        r = Raw(e.port)
        r.c.send_headers(1, grpc_headers("/test.Echo/Hold"))
        r.flush()
        for _ in range(50):
            if not r.send_raw(raw_frame(0x0, 0, 1) * 100):
                break
        closed_calm(r, "empty DATA flood")
        good.more()


def test_empty_continuation_flood():
    # Debian's nghttp2 stops a block after a few CONTINUATION frames
    # (CVE-2024-28182); without that, the request timeout would.
    with Echo() as e:
        good = GoodClient(e)
        r = Raw(e.port)
        block = hpack.Encoder().encode(grpc_headers("/test.Echo/Unary"))
        r.send_raw(raw_frame(0x1, 0, 1, block))
        for _ in range(50):
            if not r.send_raw(raw_frame(0x9, 0, 1) * 100):
                break
        r.until(lambda x: x.eof, "empty CONTINUATION frames without end: the connection closed")
        good.more()


def test_zero_window():
    # The attacker's window never opens: its stream's output makes no
    # progress, the connection is closed and the call told on_gone.
    with Echo(write_stall_ms=int(scaled(1000)), stream_buffer=4096) as e:
        good = GoodClient(e)
        r = Raw(e.port, settings={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        sid = r.c.get_next_available_stream_id()
        r.c.send_headers(sid, grpc_headers("/test.Echo/Stream"))
        r.c.send_data(sid, frame(b"1000:1000"), end_stream=True)
        r.flush()
        r.until(lambda x: x.eof, "the stalled connection closed")
        wait_until(lambda: e.stats()["gone"] == "1", 10, what="the stalled call told on_gone")
        good.more()
        check("write stall" in e.stop(), "the close logged with its reason")


def test_oversized_headers():
    with Echo() as e:
        good = GoodClient(e)
        r = Raw(e.port)
        sid = r.c.get_next_available_stream_id()
        r.c.send_headers(sid, grpc_headers("/test.Echo/Unary", extra=[("x-big", "v" * 20000)]))
        r.c.send_data(sid, frame(b"a"), end_stream=True)
        r.flush()
        r.until(lambda x: x.response(sid), "an answer to the oversized stream")
        eq(r.response(sid).get(":status"), "431", "oversized headers refused")
        # The connection itself goes on.
        s2 = r.c.get_next_available_stream_id()
        r.c.send_headers(s2, grpc_headers("/test.Echo/Unary"))
        r.c.send_data(s2, frame(b"after"), end_stream=True)
        r.flush()
        r.until(lambda x: x.trailers(s2), "an answer on the same connection")
        eq(r.trailers(s2).get("grpc-status"), "0", "status after the reset")
        r.close()
        good.more()


def test_endless_continuation():
    with Echo() as e:
        good = GoodClient(e)
        r = Raw(e.port)
        enc = hpack.Encoder()
        block = enc.encode(grpc_headers("/test.Echo/Unary") +
                           [("x-h%d" % i, "v" * 500) for i in range(400)])
        sid, step = 1, 16000   # under the default SETTINGS_MAX_FRAME_SIZE
        r.send_raw(raw_frame(0x1, 0, sid, block[:step]))   # HEADERS without END_HEADERS
        off = step
        while off < len(block) and r.send_raw(raw_frame(0x9, 0, sid, block[off:off + step])):
            off += step
        r.until(lambda x: x.eof, "a header block without end: the connection closed")
        good.more()
        check("header block too large" in e.stop(), "closed by the header block bound")


def test_slow_continuation():
    # Headers that never end, trickled: the request timeout closes it.
    with Echo(request_timeout_ms=int(scaled(1000))) as e:
        good = GoodClient(e)
        r = Raw(e.port)
        block = hpack.Encoder().encode(grpc_headers("/test.Echo/Unary"))
        r.send_raw(raw_frame(0x1, 0, 1, block))
        r.until(lambda x: x.eof, "a header block left open: the connection closed")
        good.more()


def test_too_many_streams():
    with Echo(max_streams=10) as e:
        good = GoodClient(e)
        r = Raw(e.port)
        sids = []
        for _ in range(30):   # before reading the server's SETTINGS
            sid = r.c.get_next_available_stream_id()
            r.c.send_headers(sid, grpc_headers("/test.Echo/Hold"))
            r.c.send_data(sid, frame(b""), end_stream=True)
            sids.append(sid)
        r.flush()
        refused = lambda x: [s for s in x.resets() if s.error_code == h2.errors.ErrorCodes.REFUSED_STREAM]
        r.until(lambda x: x.eof or len(refused(x)) >= 20, "streams past the limit refused")
        check(x_held(e) <= 10, "at most max_streams calls held")
        r.close()
        wait_until(lambda: e.stats()["holding"] == "0", 10, what="held calls told on_gone")
        good.more()


def x_held(e):
    return int(e.stats()["holding"])


def test_per_address_and_eviction():
    with Echo(max_per_ip=3) as e:
        conns = [Raw(e.port) for _ in range(3)]
        for c in conns:
            c.until(lambda x: any(True for _ in x.events), "SETTINGS on an admitted connection")
        extra = Raw(e.port)
        extra.until(lambda x: x.eof, "a fourth connection from one address refused")
        for c in conns:
            c.close()
    with Echo(max_connections=3) as e:
        conns = [Raw(e.port) for _ in range(3)]
        for c in conns:
            c.until(lambda x: any(True for _ in x.events), "SETTINGS on an admitted connection")
        new = Raw(e.port)
        new.until(lambda x: any(True for _ in x.events), "the new connection served")
        conns[0].until(lambda x: x.eof, "the connection idle longest closed for it")
        for c in conns + [new]:
            c.close()


def test_idle_timeout():
    with Echo(idle_ms=int(scaled(500))) as e:
        r = Raw(e.port)
        r.until(lambda x: x.eof, "an idle connection closed")
        codes = [t.error_code for t in r.terminated()]
        eq(codes[-1:], [h2.errors.ErrorCodes.NO_ERROR], "with GOAWAY NO_ERROR")


if __name__ == "__main__":
    harness.run([test_rapid_reset, test_settings_flood, test_ping_flood, test_empty_data_flood,
                 test_empty_continuation_flood, test_zero_window,
                 test_oversized_headers, test_endless_continuation, test_slow_continuation,
                 test_too_many_streams, test_per_address_and_eviction, test_idle_timeout])
