"""A NUL or another control character in a request path is refused with
400 on every route family (issue 31, item 7): a C string ends at a NUL, so
"/tasks/x-1%00junk" used to answer task x-1, and a path rule in a proxy in
front of onced ("/tasks/x-1..." is someone else's) could be bypassed.

For each of %00, %0a, %1b, %7f and a raw control byte in the request line:
the HTTP+JSON routes (GET /tasks/ID, POST /tasks/ID:cancel), the
inspector's page and its API (GET /inspect/task/ID, /inspect/api/task/ID)
answer 400, while the same paths without it answer as before.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Onced, call, eq, run, scaled, user_message  # noqa: E402


def raw_status(port, request_line):
    """The status of a request sent byte for byte (http.client refuses a
    control character in a URL before it sends anything)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=scaled(10))
    try:
        s.sendall(request_line + b"\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return int(data.split(b" ")[1]) if data.startswith(b"HTTP/") else None
    finally:
        s.close()


def test_control_in_path_is_400():
    srv = Onced(["--inspect"])
    try:
        st, _, doc = call(srv.port, "POST", "/message:send",
                          {"message": user_message("hello", task_id="x-1")}, ext=True)
        eq(st, 200, "task x-1 registered: %r" % doc)
        routes = (("GET", "/tasks/x-1%s"), ("POST", "/tasks/x-1%s:cancel"),
                  ("GET", "/inspect/task/x-1%s"), ("GET", "/inspect/api/task/x-1%s"))
        for verb, path in routes:
            st, _, _ = call(srv.port, verb, path % "", body={} if verb == "POST" else None)
            check_ok = st in (200, 409, 400) if verb == "POST" else st == 200
            eq(check_ok, True, "%s %s without a control character answers (%d)"
               % (verb, path % "", st))
            for esc in ("%00junk", "%00", "%0ajunk", "%1b[2J", "%7f", "%0d%0aX-Injected:%201"):
                st, _, doc = call(srv.port, verb, path % esc, body={} if verb == "POST" else None)
                eq(st, 400, "%s %s: refused (%r)" % (verb, path % esc, doc))
            for raw in (b"\x01", b"\x1b[2J", b"\x7f"):
                line = verb.encode() + b" " + (path % "").replace("x-1", "x-1" + "%s").encode()
                line = line.replace(b"%s", raw) + b" HTTP/1.1"
                eq(raw_status(srv.port, line), 400, "%s with a raw %r: 400" % (verb, raw))
    finally:
        srv.stop()


if __name__ == "__main__":
    run([test_control_in_path_is_400])
