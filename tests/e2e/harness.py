"""Process-level test harness: start real onced processes, talk A2A 1.0
JSON-RPC to them over loopback, stop them. Python 3 standard library only.

Every test program is a plain script that exits non-zero on the first failed
assertion (use check()/eq()) and prints "N passed, N failed" at the end.
The onced binary comes from $ONCED (set by ctest) or build/onced.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ONCED = os.environ.get("ONCED", os.path.join(ROOT, "build", "onced"))
EXT = "urn:once:a2a:idempotency:v1"

_passed = 0
_failed = 0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Onced:
    """One onced process. Extra flags go in args; the store defaults to a
    fresh SQLite file in a temporary folder."""

    def __init__(self, args=(), store=None, port=None, env=None, tmpdir=None):
        self.tmp = tmpdir or tempfile.mkdtemp(prefix="once-e2e-")
        self.port = port or free_port()
        self.store = store or "sqlite:" + os.path.join(self.tmp, "registry.db")
        self.args = [ONCED, "--listen", "127.0.0.1:%d" % self.port, "--store", self.store] + list(args)
        self.log = open(os.path.join(self.tmp, "onced-%d.log" % self.port), "ab")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log, env=e)
        self.wait_ready()

    def wait_ready(self, timeout=15.0):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("onced exited with %s; log: %s" % (self.proc.returncode, self.logtext()))
            try:
                st, _, _ = http_get(self.port, "/.well-known/agent-card.json", timeout=1)
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("onced did not become ready; log: %s" % self.logtext())

    def logtext(self):
        try:
            with open(self.log.name, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def rpc(self, method, params, headers=None, ext=False, version="1.0", rid=1, token=None, timeout=30):
        return rpc(self.port, method, params, headers=headers, ext=ext, version=version, rid=rid,
                   token=token, timeout=timeout)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def kill9(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


def http_request(port, method, path, body=None, headers=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
    finally:
        c.close()


def http_get(port, path, timeout=30):
    return http_request(port, "GET", path, timeout=timeout)


def rpc(port, method, params, headers=None, ext=False, version="1.0", rid=1, token=None, timeout=30,
        raw=None):
    """POST one JSON-RPC request. Returns (http_status, headers, parsed body)."""
    h = {"Content-Type": "application/json"}
    if version is not None:
        h["A2A-Version"] = version
    if ext:
        h["A2A-Extensions"] = EXT
    if token:
        h["Authorization"] = "Bearer " + token
    h.update(headers or {})
    body = raw if raw is not None else json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                                    "params": params})
    if isinstance(body, str):
        body = body.encode()
    st, hd, data = http_request(port, "POST", "/", body=body, headers=h, timeout=timeout)
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = {"_unparsed": data.decode(errors="replace")}
    return st, hd, doc


def new_id():
    return str(uuid.uuid4())


def user_message(text, message_id=None, task_id=None, context_id=None, **extra):
    m = {"messageId": message_id or new_id(), "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id is not None:
        m["taskId"] = task_id
    if context_id is not None:
        m["contextId"] = context_id
    m.update(extra)
    return m


def error_info(doc):
    """(code, reason, metadata) of a JSON-RPC error response."""
    err = doc.get("error") or {}
    reason, meta = None, {}
    for d in err.get("data") or []:
        if isinstance(d, dict) and d.get("@type", "").endswith("google.rpc.ErrorInfo"):
            reason, meta = d.get("reason"), d.get("metadata") or {}
    return err.get("code"), reason, meta


def check(cond, what):
    global _passed, _failed
    if cond:
        _passed += 1
    else:
        _failed += 1
        print("FAIL:", what, file=sys.stderr)
        raise AssertionError(what)


def eq(got, want, what):
    check(got == want, "%s: got %r, want %r" % (what, got, want))


def wait_until(fn, timeout=10.0, step=0.05, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(step)
    check(False, "timed out waiting for " + what)


def run(tests):
    """Run test functions in order; print the summary line; exit status."""
    global _failed
    failed_tests = 0
    for t in tests:
        try:
            t()
            print("ok  ", t.__name__)
        except Exception as ex:  # a failed check or an unexpected error
            failed_tests += 1
            if not isinstance(ex, AssertionError):
                _failed += 1
            print("FAIL", t.__name__, repr(ex), file=sys.stderr)
    print("%d passed, %d failed" % (_passed, _failed))
    sys.exit(1 if failed_tests else 0)


def wait_until_value(fn, timeout=10.0, step=0.1):
    """Like wait_until, but returns None on timeout instead of failing."""
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v is not None:
            return v
        time.sleep(step)
    return None


# --- helpers for the fencing / retention / exec / blocking tests -------------

def scratch_dir(prefix="once-e2e-"):
    """A temporary folder removed when the test program exits."""
    import atexit
    import shutil
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def result_task(doc, what="response"):
    """The Task of a SendMessage result ({"task": ...}) or a GetTask/CancelTask
    result (the Task itself); fails the check on an error response."""
    check(isinstance(doc, dict) and "result" in doc, "%s: expected a result, got %r" % (what, doc))
    r = doc["result"]
    return r["task"] if isinstance(r, dict) and "task" in r else r


def task_state(doc):
    """status.state of a result, or None for an error response."""
    if not isinstance(doc, dict) or "result" not in doc:
        return None
    r = doc["result"]
    t = r.get("task", r) if isinstance(r, dict) else {}
    return (t.get("status") or {}).get("state")


def status_text(task):
    """The first text part of task.status.message, or None."""
    for p in ((task.get("status") or {}).get("message") or {}).get("parts") or []:
        if "text" in p:
            return p["text"]
    return None


def admin_stats(srv):
    """The engine counters of an onced started with --test-admin."""
    st, _, doc = srv.rpc("once/admin/stats", {})
    check(st == 200 and "result" in (doc or {}), "once/admin/stats answered: %r" % (doc,))
    return doc["result"].get("engine") or {}
