#!/usr/bin/env python3
"""amplify_counter.py -- the side-effect service of the amplification
experiment (demo/amplify.sh): a real HTTP service that performs and counts
side effects, the way a payment or e-mail API would.

    python3 amplify_counter.py [--port 0]

prints its port on stdout (one line) once listening, then serves:

  POST /effect   one side effect. Headers:
                   X-Amplify-Slot   which leaf of which root tree asks (for the
                                    experiment's accounting only; never used
                                    to deduplicate)
                   Idempotency-Key  optional. Present: performed once per key,
                                    a repeated key is answered 200 with
                                    {"replayed": true} and performs nothing.
                                    Absent: every request is performed.
                 -> 200 {"performed": true|false, "replayed": bool}
  GET /stats     {"requests": N, "performed": N, "replayed": N,
                  "slots": {slot: effects performed}, "keysPerSlot": {slot: distinct keys}}
  POST /reset    forget everything (between runs).

Invariant: performed == sum(slots.values()); a key is performed at most
once. Thread-safe (one lock around the counters).
"""
import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.requests = 0
        self.performed = 0
        self.replayed = 0
        self.slots = {}
        self.keys = {}          # Idempotency-Key -> slot
        self.slot_keys = {}     # slot -> set of keys

    def effect(self, slot, key):
        with self.lock:
            self.requests += 1
            if key:
                if key in self.keys:
                    self.replayed += 1
                    return False
                self.keys[key] = slot
                self.slot_keys.setdefault(slot, set()).add(key)
            self.performed += 1
            self.slots[slot] = self.slots.get(slot, 0) + 1
            return True

    def stats(self):
        with self.lock:
            return {"requests": self.requests, "performed": self.performed,
                    "replayed": self.replayed, "slots": dict(self.slots),
                    "keysPerSlot": {s: len(k) for s, k in self.slot_keys.items()}}


STATE = State()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        if self.path == "/reset":
            with STATE.lock:
                STATE.reset()
            return self.answer(200, {"reset": True})
        if self.path != "/effect":
            return self.answer(404, {"error": "no such path"})
        slot = self.headers.get("X-Amplify-Slot")
        if not slot:
            return self.answer(400, {"error": "X-Amplify-Slot is required"})
        done = STATE.effect(slot, self.headers.get("Idempotency-Key"))
        self.answer(200, {"performed": done, "replayed": not done})

    def do_GET(self):
        if self.path == "/stats":
            return self.answer(200, STATE.stats())
        self.answer(404, {"error": "no such path"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
