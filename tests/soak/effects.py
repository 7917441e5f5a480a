"""The soak's counting service: the downstream service whose side effect the
agent performs, with the idempotency contract of a payment API.

    POST /effect   Idempotency-Key: <key> (required); JSON body from the agent
                   ({"task", "envKey", "fence", "replica", "resumed"}).
                   The first request with a key applies the effect; every
                   later one with the same key is answered the same way with
                   Idempotent-Replayed: true and applies nothing.

It runs in the soak's own process (a thread), so nothing is left behind when
the soak ends. What the soak reads: calls and applied effects per key, each
call's details, and calls whose header key differs from the key the agent
derived from its environment (ONCE_EFFECT_KEY_PREFIX + ONCE_STEP).
Python 3 standard library only.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CountingService:
    """Counters are guarded by lock; the HTTP threads are the only writers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = {}        # key -> requests that carried it
        self.applied = {}      # key -> effects applied for it (the claim: never above 1)
        self.log = {}          # key -> [(time, fence, replica, resumed, replayed)]
        self.mismatched = []   # (header key, body envKey)
        svc = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def answer(self, status, doc, replayed=False):
                out = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                if replayed:
                    self.send_header("Idempotent-Replayed", "true")
                self.end_headers()
                self.wfile.write(out)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = self.headers.get("Idempotency-Key")
                if self.path != "/effect" or not key:
                    return self.answer(400, {"error": "POST /effect with an Idempotency-Key"})
                try:
                    doc = json.loads(body or b"{}")
                except ValueError:
                    doc = {}
                self.answer(200, *svc.record(key, doc))

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                # A client that went away (the proxy lost its answer, or a
                # killed agent) is part of the soak, not an error.
                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                    super().handle_error(request, client_address)

        self.srv = Server(("127.0.0.1", 0), Handler)
        self.port = self.srv.server_address[1]
        self.url = "http://127.0.0.1:%d/effect" % self.port
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def record(self, key, doc):
        """Count one call; (answer, replayed)."""
        with self.lock:
            self.calls[key] = self.calls.get(key, 0) + 1
            replayed = key in self.applied
            if not replayed:
                self.applied[key] = 1
            if doc.get("envKey") != key:
                self.mismatched.append((key, doc.get("envKey")))
            self.log.setdefault(key, []).append(
                (time.time(), doc.get("fence"), doc.get("replica"), doc.get("resumed"), replayed))
        return {"key": key, "applied": True}, replayed

    def snapshot(self):
        """(calls, applied, log, mismatched) copies."""
        with self.lock:
            return (dict(self.calls), dict(self.applied),
                    dict((k, list(v)) for k, v in self.log.items()), list(self.mismatched))

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
