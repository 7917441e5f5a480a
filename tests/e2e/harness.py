"""Process-level test harness: start real onced processes, talk A2A 1.0
JSON-RPC to them over loopback, stop them. Python 3 standard library only.

Every test program is a plain script that exits non-zero on the first failed
assertion (use check()/eq()) and prints "N passed, N failed" at the end.
The onced binary comes from $ONCED (set by ctest) or build/onced.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ONCED = os.environ.get("ONCED", os.path.join(ROOT, "build", "onced"))

# Whatever ends a program that uses this harness (a test, the demo, the
# soak), every process it started ends with it (scripts/reaper.py): the
# onced processes, their agents, agents' own children.
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import reaper  # noqa: E402
REAP_VAR = reaper.guard()
EXT = "urn:once:a2a:idempotency:v1"

# The one factor every timeout of the suite is multiplied by. A timeout is
# a bound on how long a condition may take to come true, never a duration
# an assertion relies on; a slow or loaded machine (or a sanitizer build,
# whose ctest sets a larger factor) only needs a larger bound.
TIMEOUT_FACTOR = float(os.environ.get("ONCE_TEST_TIMEOUT_FACTOR", "1") or "1")


def scaled(seconds):
    """seconds, multiplied by ONCE_TEST_TIMEOUT_FACTOR."""
    return seconds * TIMEOUT_FACTOR

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
        # A stop is a drain at once unless a test asks for the not-ready
        # delay onced keeps by default (--drain-delay, for load balancers).
        delay = [] if "--drain-delay" in args else ["--drain-delay", "0"]
        self.args = ([ONCED, "--listen", "127.0.0.1:%d" % self.port, "--store", self.store] + delay +
                     list(args))
        self.log = open(os.path.join(self.tmp, "onced-%d.log" % self.port), "ab")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log, env=e)
        self.wait_ready()

    def wait_ready(self, timeout=15.0):
        end = time.time() + scaled(timeout)
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
        """SIGTERM, then SIGKILL if it does not exit in time. A sanitizer
        report in its log (the ASan and TSan builds) fails the test."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(scaled(10))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()
            report = sanitizer_report(self.logtext_all())
            check(report is None, "%s reported: %s" % (os.path.basename(self.args[0]), report))

    def logtext_all(self):
        try:
            with open(self.log.name, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill9(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


_SANITIZER = re.compile(r"WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|"
                        r"\.c:\d+:\d+: runtime error:")


def sanitizer_report(text):
    """The first sanitizer report in a process's output (from its first line
    on, about 3000 characters), or None."""
    m = _SANITIZER.search(text)
    if m is None:
        return None
    start = text.rfind("\n", 0, max(0, m.start() - 200)) + 1
    return text[start:start + 3000]


def http_request(port, method, path, body=None, headers=None, timeout=30):
    """One request on a fresh connection; timeout (scaled) bounds each socket
    operation."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(timeout))
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
    finally:
        c.close()


def read_all(s):
    """Everything a socket receives until the peer closes it."""
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            return out
        out += d


def http_get(port, path, timeout=30):
    return http_request(port, "GET", path, timeout=timeout)


def call(port, verb, path, body=None, headers=None, ext=False, version="1.0", token=None,
         timeout=30, ctype="application/json"):
    """One A2A request (either binding): the A2A-Version, A2A-Extensions,
    Authorization and, with a body, Content-Type headers; a body that is not
    bytes or text is sent as JSON. Returns (http_status, headers, parsed body
    or None)."""
    h = {}
    if body is not None and ctype:
        h["Content-Type"] = ctype
    if version is not None:
        h["A2A-Version"] = version
    if ext:
        h["A2A-Extensions"] = EXT
    if token:
        h["Authorization"] = "Bearer " + token
    h.update(headers or {})
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    st, hd, data = http_request(port, verb, path, body=body, headers=h, timeout=timeout)
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = {"_unparsed": data.decode(errors="replace")}
    return st, hd, doc


def rpc(port, method, params, headers=None, ext=False, version="1.0", rid=1, token=None, timeout=30,
        raw=None):
    """POST one JSON-RPC request. Returns (http_status, headers, parsed body)."""
    body = raw if raw is not None else {"jsonrpc": "2.0", "id": rid, "method": method,
                                        "params": params}
    return call(port, "POST", "/", body, headers=headers, ext=ext, version=version, token=token,
                timeout=timeout)


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
    """Poll fn until it returns something true; fail after scaled(timeout)."""
    end = time.time() + scaled(timeout)
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


class GatedAgent:
    """An --exec shell agent the test drives: no assertion then depends on how
    fast the machine runs it. In the script, `step TEXT` reports progress (one
    working event) and `gate NAME` waits until the test calls
    release(task_id, NAME) (or the gates folder is removed with the test's
    scratch folder, so no agent outlives its test); when the script ends the
    task completes with the text "done"."""

    def __init__(self, script, gates=None):
        self.gates = gates or os.path.join(scratch_dir("once-gates-"), "gates")
        os.makedirs(self.gates, exist_ok=True)
        prelude = ("step() { printf '{\"status\":\"working\",\"text\":\"%%s\"}\\n' \"$1\"; }; "
                   "gate() { while [ -d %s ] && [ ! -e %s/\"$ONCE_TASK_ID.$1\" ]; do "
                   "sleep 0.02; done; }; " % (self.gates, self.gates))
        self.args = ["--exec", prelude + script +
                     "; printf '{\"status\":\"completed\",\"text\":\"done\"}\\n'"]

    def release(self, task_id, name):
        open(os.path.join(self.gates, "%s.%s" % (task_id, name)), "w").close()


def live_descendants(pid):
    """The processes below pid (children, grandchildren, ...) that have not
    exited yet (zombies count as exited)."""
    parent, state = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state[int(d)], parent[int(d)] = fields[0], int(fields[1])
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c, pp in parent.items():
            if pp == p:
                todo.append(c)
                if state[c] != "Z":
                    found.append(c)
    return found


def wait_until_value(fn, timeout=10.0, step=0.1):
    """Like wait_until, but returns None on timeout instead of failing."""
    end = time.time() + scaled(timeout)
    while time.time() < end:
        v = fn()
        if v is not None:
            return v
        time.sleep(step)
    return None


# The optional parts this build has (CMakeLists.txt: ONCE_BUILT in every
# test's environment; run by hand, everything).
BUILT = set(filter(None, os.environ.get("ONCE_BUILT",
                                        "postgres,redis,dynamodb,tls,systemd,jemalloc")
                   .split(",")))


def needs(part, what):
    """Whether this build has part (tls, systemd, postgres, ...); if not,
    say that what is passed over, for a case to return at once."""
    if part in BUILT:
        return True
    print("skip %s: needs %s, left out of this build" % (what, part))
    return False


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


def generation(obj):
    """The generation a served Task or event body carries: A2A 1.0 objects have
    no member for it, so onced puts it in metadata under the extension's URI."""
    return (((obj or {}).get("metadata") or {}).get(EXT) or {}).get("generation")


def generation_metadata(n):
    """The metadata member that carries generation n (see generation())."""
    return {EXT: {"generation": n}}


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


def wait_sweeps(srv, passes=2, timeout=15, what="sweeps"):
    """Wait until the engine of srv (--test-admin) has finished `passes` more
    takeover + retention passes (the "sweeps" counter). The first may have
    begun before the call; every later one began after it. The positive
    signal before asserting that a sweep did *not* do something."""
    first = admin_stats(srv).get("sweeps")
    check(first is not None, "once/admin/stats counts the engine's sweeps")
    wait_until(lambda: admin_stats(srv)["sweeps"] >= first + passes, timeout=timeout,
               what="%d more %s" % (passes, what))
