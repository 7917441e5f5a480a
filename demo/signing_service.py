"""The document-signing service of the demo: a real HTTP service with the
idempotency contract payment and signing APIs offer.

  POST /sign      Idempotency-Key: <key> (required), body {"document": ...}
                  the first request with a key signs (one signature, a new
                  signatureId); every later request with the same key gets
                  the same answer back, with Idempotent-Replayed: true, and
                  signs nothing
  GET  /stats     {"requests": {key: n}, "signatures": {key: n},
                   "totalRequests": n, "totalSignatures": n}

Counters are what the demo checks: a retried call reaches the service twice
(requests 2) and signs once (signatures 1). Prints "listening PORT" once
ready. Python 3 standard library only.
"""
import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
REQUESTS = {}      # key -> requests that carried it
SIGNATURES = {}    # key -> signatures made for it (never more than 1)
ANSWERS = {}       # key -> the answer of its first request


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("signing-service: " + (fmt % args) + "\n")

    def reply(self, status, doc, replayed=False):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if replayed:
            self.send_header("Idempotent-Replayed", "true")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path != "/stats":
            return self.reply(404, {"error": "not found"})
        with LOCK:
            doc = {"requests": dict(REQUESTS), "signatures": dict(SIGNATURES),
                   "totalRequests": sum(REQUESTS.values()),
                   "totalSignatures": sum(SIGNATURES.values())}
        self.reply(200, doc)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/sign":
            return self.reply(404, {"error": "not found"})
        key = self.headers.get("Idempotency-Key")
        if not key:
            return self.reply(400, {"error": "Idempotency-Key is required"})
        try:
            doc = json.loads(body or b"{}")
        except ValueError:
            return self.reply(400, {"error": "the body is not JSON"})
        with LOCK:
            REQUESTS[key] = REQUESTS.get(key, 0) + 1
            if key in ANSWERS:
                answer, replayed = ANSWERS[key], True
            else:
                digest = hashlib.sha256(json.dumps(doc.get("document"), sort_keys=True).encode())
                n = sum(SIGNATURES.values()) + 1
                answer = {"signatureId": "sig-%04d" % n, "idempotencyKey": key,
                          "documentSha256": digest.hexdigest()}
                ANSWERS[key] = answer
                SIGNATURES[key] = SIGNATURES.get(key, 0) + 1
                replayed = False
        self.reply(200, answer, replayed)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    print("listening %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
