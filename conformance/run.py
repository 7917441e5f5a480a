#!/usr/bin/env python3
"""The conformance kit of the A2A extension urn:once:a2a:idempotency:v1
(docs/extension.md): checks an A2A 1.0 server against the specification from
outside, over JSON-RPC and HTTP+JSON, and prints one line per check:

    PASS|FAIL|SKIP IDEM-... (binding) what

then "N skipped" and "N passed, N failed"; the exit status is 0 only when
nothing failed (2 when the kit could not run at all: no card, bad options).

    python3 conformance/run.py http://127.0.0.1:8080/ [--token T --token2 T2]
        [--retention-seconds N] [--binding jsonrpc,http_json] [--only IDEM-...]
        [--ask-text TEXT] [--slow-text TEXT] [--text TEXT] [--race N]

Python 3 standard library only; see conformance/README.md. Every wait is a
bound on a condition, multiplied by $ONCE_TEST_TIMEOUT_FACTOR when set.
"""
import argparse
import hashlib
import http.client
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse
import uuid
from datetime import datetime, timezone

URI = "urn:once:a2a:idempotency:v1"
HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "vectors", "digest.json")
FACTOR = float(os.environ.get("ONCE_TEST_TIMEOUT_FACTOR", "1") or "1")

TERMINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED")
INTERRUPTED = ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED")
SETTLED = TERMINAL + INTERRUPTED
A2A_DOMAIN = "a2a-protocol.org"
ONCE_DOMAIN = "once"


def scaled(seconds):
    return seconds * FACTOR


def new_id():
    return str(uuid.uuid4())


def short(v, n=300):
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False)
    return s if len(s) <= n else s[:n] + "..."


class Fail(Exception):
    pass


class Skip(Exception):
    pass


# --------------------------------------------------------------------------
# RFC 8785 (JCS) and the request digest (docs/extension.md section 5), the
# kit's own implementation: checked against conformance/vectors/digest.json.

def jcs_string(s):
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif c < 0x20:
            out.append("\\u%04x" % c)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jcs_number(x):
    """ECMAScript Number.prototype.toString of the IEEE 754 double nearest x
    (RFC 8785 section 3.2.2.3)."""
    f = float(x)
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError("not a JSON number: %r" % x)
    if f == 0:
        return "0"
    if f < 0:
        return "-" + jcs_number(-f)
    mant, _, exp = repr(f).partition("e")   # the shortest round-trip digits
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    stripped = digits.rstrip("0")
    exp10 = (int(exp) if exp else 0) - len(fp) + (len(digits) - len(stripped))
    s, k = stripped, len(stripped)
    n = k + exp10                              # value = 0.s * 10^n
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + s
    e = n - 1
    sign = "+" if e >= 0 else "-"
    head = s if k == 1 else s[0] + "." + s[1:]
    return "%se%s%d" % (head, sign, abs(e))


def jcs(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return jcs_number(v)
    if isinstance(v, str):
        return jcs_string(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(jcs_string(k) + ":" + jcs(v[k]) for k in keys) + "}"
    raise ValueError("not JSON: %r" % (v,))


# RFC 8785 Appendix B: IEEE 754 bit patterns and their JCS serialization.
JCS_NUMBERS = (
    ("0000000000000000", "0"), ("8000000000000000", "0"), ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"), ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"), ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"), ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"), ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"), ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"), ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"), ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"), ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"), ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"), ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
)

COUNTED = ("extensions", "messageId", "metadata", "parts", "referenceTaskIds", "role")


def digest_object(message, push_config=None):
    o = dict((k, message[k]) for k in COUNTED if k in message)
    if push_config is not None:
        o["taskPushNotificationConfig"] = push_config
    return o


def digest(message, push_config=None):
    canonical = jcs(digest_object(message, push_config))
    return canonical, hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------
# HTTP

def connection(url, timeout):
    u = urllib.parse.urlsplit(url)
    port = u.port or (443 if u.scheme == "https" else 80)
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    return cls(u.hostname, port, timeout=timeout)


def http_call(url, verb, body=None, headers=None, timeout=30):
    """One request on a fresh connection. Returns (status, headers, bytes)."""
    u = urllib.parse.urlsplit(url)
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    c = connection(url, scaled(timeout))
    try:
        c.request(verb, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
    finally:
        c.close()


def parse_json(data):
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


class Err:
    """An error answer, either binding: code is the JSON-RPC code (None on
    HTTP+JSON), http the HTTP status, infos the google.rpc.ErrorInfo
    entries in order."""

    def __init__(self, code, http_status, message, details, raw):
        self.code, self.http, self.message, self.raw = code, http_status, message, raw
        self.details = details if isinstance(details, list) else []
        self.infos = [d for d in self.details if isinstance(d, dict) and
                      str(d.get("@type", "")).endswith("google.rpc.ErrorInfo")]

    def reasons(self):
        return [i.get("reason") for i in self.infos]

    def metadata(self):
        """Every ErrorInfo's metadata, merged (later entries win)."""
        m = {}
        for i in self.infos:
            if isinstance(i.get("metadata"), dict):
                m.update(i["metadata"])
        return m

    def brief(self):
        return "error %s (HTTP %s) %r reasons %s metadata %s" % (
            self.code, self.http, short(self.message or "", 120),
            [(i.get("reason"), i.get("domain")) for i in self.infos], short(self.metadata(), 200))


class Resp:
    def __init__(self, status, headers, data, err, result):
        self.status, self.headers, self.data = status, headers, data
        self.error, self.result = err, result

    @property
    def replayed(self):
        return self.headers.get("idempotent-replayed", "").strip().lower() == "true"

    def echoed(self):
        return URI in [v.strip() for v in self.headers.get("a2a-extensions", "").split(",")]

    def task(self):
        """The Task of a SendMessage result ({"task": T}), or None."""
        r = self.result
        if isinstance(r, dict) and isinstance(r.get("task"), dict):
            return r["task"]
        return None

    def brief(self):
        if self.error is not None:
            return self.error.brief()
        t = self.task()
        if t is not None:
            return "Task %s %s%s" % (t.get("id"), (t.get("status") or {}).get("state"),
                                     " (replayed)" if self.replayed else "")
        return "HTTP %s %s" % (self.status, short(self.data.decode("utf-8", "replace")
                                                 if isinstance(self.data, bytes) else self.data))


def generation(obj):
    g = (((obj or {}).get("metadata") or {}).get(URI) or {}) if isinstance(obj, dict) else {}
    g = g.get("generation") if isinstance(g, dict) else None
    if isinstance(g, bool):
        return None
    if isinstance(g, float) and g.is_integer():
        return int(g)
    return g if isinstance(g, int) else None


def state_of(task):
    return ((task or {}).get("status") or {}).get("state")


class Event:
    """One SSE event: id (the id: line, an int when it is one), body (the
    StreamResponse), kind (task, message, statusUpdate, artifactUpdate, or
    error), obj (the inner object), err (an Err for an error event)."""

    def __init__(self, ev_id, body, err=None):
        self.id, self.body, self.err = ev_id, body, err
        self.kind, self.obj = "error", None
        if err is None and isinstance(body, dict) and len(body) >= 1:
            for k in ("task", "message", "statusUpdate", "artifactUpdate"):
                if k in body:
                    self.kind, self.obj = k, body[k]
                    break
            else:
                self.kind = "unknown"

    @property
    def gen(self):
        return generation(self.obj)

    def state(self):
        if self.kind == "task":
            return state_of(self.obj)
        if self.kind == "statusUpdate":
            return state_of(self.obj)
        return None


class Stream:
    """A streaming call: if the answer is an event stream, read() gives its
    Events; otherwise error holds the Err."""

    def __init__(self, binding, url, verb, body, headers, timeout):
        self.b = binding
        u = urllib.parse.urlsplit(url)
        self.conn = connection(url, scaled(timeout))
        self.conn.request(verb, u.path or "/", body=body, headers=headers)
        # Kept: http.client hands the socket to the response (conn.sock None)
        # when the server will close the connection after it.
        self.sock = self.conn.sock
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = dict((k.lower(), v) for k, v in self.resp.getheaders())
        self.sse = self.headers.get("content-type", "").startswith("text/event-stream")
        self.error = None
        self.events = []
        self.ended = False
        if not self.sse:
            data = self.resp.read()
            self.close()
            self.ended = True
            self.error = binding.error_of(self.status, parse_json(data), data) or \
                Err(None, self.status, "not an event stream: %s" % short(
                    data.decode("utf-8", "replace")), [], None)

    @property
    def replayed(self):
        return self.headers.get("idempotent-replayed", "").strip().lower() == "true"

    def _next(self, deadline):
        ev_id, data = None, []
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise socket.timeout()
            self.sock.settimeout(max(0.05, left))
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
            if line == "":
                if data:
                    return ev_id, "\n".join(data)
                ev_id = None
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "id":
                ev_id = int(value) if re.fullmatch(r"-?\d+", value) else value
            elif field == "data":
                data.append(value)

    def read(self, until=None, timeout=30):
        """Read events until the server ends the stream, until(events) is
        true, or the (scaled) timeout; returns the events read so far.
        self.ended says whether the server ended the stream."""
        if self.ended or self.error is not None:
            return self.events
        deadline = time.time() + scaled(timeout)
        try:
            while not (until and until(self.events)):
                got = self._next(deadline)
                if got is None:
                    self.ended = True
                    break
                ev_id, text = got
                ev = self.b.event_of(ev_id, parse_json(text), text)
                self.b.observe_event(ev)
                self.events.append(ev)
        except (socket.timeout, TimeoutError):
            pass
        except (OSError, http.client.HTTPException):
            self.ended = True
        return self.events

    def close(self):
        try:
            self.resp.close()
        except Exception:
            pass
        self.conn.close()


# --------------------------------------------------------------------------
# The two bindings

class Binding:
    name = None

    def __init__(self, kit, iface):
        self.kit = kit
        self.url = iface["url"]
        self.version = ".".join(str(iface.get("protocolVersion", "1.0")).split(".")[:2])
        self.tenant = iface.get("tenant") or ""
        self.rid = 0
        self.lock = threading.Lock()
        # What the run saw, for the checks that look at every answer:
        self.gen_seen = 0          # Tasks and events that carry a generation
        self.gen_missing = []      # (where, what) of those that do not
        self.id_seen = 0           # SSE events whose id: line was compared
        self.id_mismatch = []
        self.refusals = []         # (kind, Err, taskId, messageId, what)

    # -- headers --
    def headers(self, body, ext=True, token=None, extra=None):
        h = {"A2A-Version": self.version}
        if body is not None:
            h["Content-Type"] = "application/json"
        if ext is True:
            h["A2A-Extensions"] = URI
        elif isinstance(ext, str):
            h["A2A-Extensions"] = ext
        tok = self.kit.token if token is None else token
        if tok:
            h["Authorization"] = "Bearer " + tok
        h.update(extra or {})
        return h

    def next_rid(self):
        with self.lock:
            self.rid += 1
            return self.rid

    # -- observations --
    def observe_task(self, task, where):
        if not isinstance(task, dict):
            return
        with self.lock:
            if generation(task) is None:
                self.gen_missing.append((where, "Task %s: metadata %s" % (
                    task.get("id"), short(task.get("metadata"), 120))))
            else:
                self.gen_seen += 1

    def observe_event(self, ev):
        if ev.kind not in ("task", "statusUpdate", "artifactUpdate"):
            return
        with self.lock:
            if ev.gen is None:
                self.gen_missing.append(("stream", "%s event (id %r) without generation: %s" % (
                    ev.kind, ev.id, short(ev.obj, 160))))
            else:
                self.gen_seen += 1
            self.id_seen += 1
            if ev.id != ev.gen or ev.gen is None:
                self.id_mismatch.append("id: %r but metadata generation %r (%s)" % (
                    ev.id, ev.gen, ev.kind))

    def note_refusal(self, kind, resp_or_err, task_id=None, message_id=None, what=""):
        err = resp_or_err.error if isinstance(resp_or_err, (Resp, Stream)) else resp_or_err
        if err is not None:
            with self.lock:
                self.refusals.append((kind, err, task_id, message_id, what))

    # -- the calls (both bindings) --
    def send(self, message, ext=True, config=None, request_metadata=None, token=None,
             headers=None, stream=False, last_event_id=None):
        params = {"message": message}
        if config is not None:
            params["configuration"] = config
        if request_metadata is not None:
            params["metadata"] = request_metadata
        body = json.dumps(params, ensure_ascii=False).encode("utf-8")
        return self.send_raw(body, ext=ext, token=token, headers=headers, stream=stream,
                             last_event_id=last_event_id)

    def finish(self, status, headers, data, where):
        doc = parse_json(data)
        err = self.error_of(status, doc, data)
        result = None if err is not None else self.result_of(doc)
        r = Resp(status, headers, data, err, result)
        if err is None and where == "send":
            self.observe_task(r.task(), "SendMessage answer")
        elif err is None and where in ("GetTask", "CancelTask"):
            self.observe_task(result, where + " answer")
        elif err is None and where == "ListTasks" and isinstance(result, dict):
            for t in result.get("tasks") or []:
                self.observe_task(t, "ListTasks answer")
        return r


class JsonRpc(Binding):
    name = "jsonrpc"

    def envelope(self, method, params_bytes):
        return (b'{"jsonrpc":"2.0","id":%d,"method":' % self.next_rid() +
                json.dumps(method).encode() + b',"params":' + params_bytes + b"}")

    def error_of(self, status, doc, data):
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            e = doc["error"]
            return Err(e.get("code"), status, e.get("message"), e.get("data"), e)
        if isinstance(doc, dict) and "result" in doc:
            return None
        return Err(None, status, "not a JSON-RPC response: %s" % short(
            data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)), [], doc)

    def result_of(self, doc):
        return doc.get("result")

    def event_of(self, ev_id, doc, text):
        if isinstance(doc, dict) and "result" in doc:
            return Event(ev_id, doc["result"])
        err = self.error_of(200, doc, text.encode("utf-8", "replace"))
        return Event(ev_id, doc, err)

    def rpc(self, method, params, ext=True, token=None, headers=None):
        body = self.envelope(method, json.dumps(params, ensure_ascii=False).encode("utf-8"))
        st, hd, data = http_call(self.url, "POST", body, self.headers(body, ext, token, headers),
                                 timeout=self.kit.timeout)
        return st, hd, data

    def send_raw(self, params_bytes, ext=True, token=None, headers=None, stream=False,
                 last_event_id=None, raw_body=None):
        method = "SendStreamingMessage" if stream else "SendMessage"
        body = raw_body if raw_body is not None else self.envelope(method, params_bytes)
        extra = dict(headers or {})
        if last_event_id is not None:
            extra["Last-Event-ID"] = str(last_event_id)
        if stream:
            extra["Accept"] = "text/event-stream"
            return Stream(self, self.url, "POST", body, self.headers(body, ext, token, extra),
                          self.kit.timeout)
        st, hd, data = http_call(self.url, "POST", body, self.headers(body, ext, token, extra),
                                 timeout=self.kit.timeout)
        return self.finish(st, hd, data, "send")

    def get(self, task_id, token=None, ext=True):
        return self.finish(*self.rpc("GetTask", {"id": task_id}, ext, token), where="GetTask")

    def cancel(self, task_id, token=None, ext=True):
        return self.finish(*self.rpc("CancelTask", {"id": task_id}, ext, token),
                           where="CancelTask")

    def list(self, token=None, ext=True):
        return self.finish(*self.rpc("ListTasks", {"pageSize": 100}, ext, token),
                           where="ListTasks")

    def list_push(self, task_id, token=None, ext=True):
        return self.finish(*self.rpc("ListTaskPushNotificationConfigs", {"taskId": task_id}, ext,
                                     token), where="ListTaskPushNotificationConfigs")

    def subscribe(self, task_id, token=None, ext=True, last_event_id=None):
        body = self.envelope("SubscribeToTask", json.dumps({"id": task_id}).encode("utf-8"))
        extra = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            extra["Last-Event-ID"] = str(last_event_id)
        return Stream(self, self.url, "POST", body, self.headers(body, ext, token, extra),
                      self.kit.timeout)


class HttpJson(Binding):
    name = "http_json"

    def route(self, path):
        base = self.url.rstrip("/")
        if self.tenant:
            base += "/" + urllib.parse.quote(self.tenant, safe="")
        return base + path

    def task_route(self, task_id, suffix=""):
        return self.route("/tasks/" + urllib.parse.quote(task_id, safe="") + suffix)

    def error_of(self, status, doc, data):
        if status < 300:
            return None
        e = doc.get("error") if isinstance(doc, dict) else None
        if isinstance(e, dict):
            return Err(None, status, e.get("message"), e.get("details"), e)
        return Err(None, status, short(data.decode("utf-8", "replace")
                                       if isinstance(data, bytes) else str(data)), [], doc)

    def result_of(self, doc):
        return doc

    def event_of(self, ev_id, doc, text):
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            e = doc["error"]
            return Event(ev_id, doc, Err(None, e.get("code"), e.get("message"), e.get("details"), e))
        if not isinstance(doc, dict):
            return Event(ev_id, doc, Err(None, None, "not JSON: %s" % short(text), [], None))
        return Event(ev_id, doc)

    def send_raw(self, params_bytes, ext=True, token=None, headers=None, stream=False,
                 last_event_id=None, raw_body=None):
        body = raw_body if raw_body is not None else params_bytes
        extra = dict(headers or {})
        if last_event_id is not None:
            extra["Last-Event-ID"] = str(last_event_id)
        if stream:
            extra["Accept"] = "text/event-stream"
            return Stream(self, self.route("/message:stream"), "POST", body,
                          self.headers(body, ext, token, extra), self.kit.timeout)
        st, hd, data = http_call(self.route("/message:send"), "POST", body,
                                 self.headers(body, ext, token, extra), timeout=self.kit.timeout)
        return self.finish(st, hd, data, "send")

    def get(self, task_id, token=None, ext=True):
        st, hd, data = http_call(self.task_route(task_id), "GET", None,
                                 self.headers(None, ext, token), timeout=self.kit.timeout)
        return self.finish(st, hd, data, "GetTask")

    def cancel(self, task_id, token=None, ext=True):
        body = b"{}"
        st, hd, data = http_call(self.task_route(task_id, ":cancel"), "POST", body,
                                 self.headers(body, ext, token), timeout=self.kit.timeout)
        return self.finish(st, hd, data, "CancelTask")

    def list(self, token=None, ext=True):
        st, hd, data = http_call(self.route("/tasks?pageSize=100"), "GET", None,
                                 self.headers(None, ext, token), timeout=self.kit.timeout)
        return self.finish(st, hd, data, "ListTasks")

    def list_push(self, task_id, token=None, ext=True):
        st, hd, data = http_call(self.task_route(task_id, "/pushNotificationConfigs"), "GET",
                                 None, self.headers(None, ext, token), timeout=self.kit.timeout)
        return self.finish(st, hd, data, "ListTaskPushNotificationConfigs")

    def subscribe(self, task_id, token=None, ext=True, last_event_id=None):
        body = b"{}"
        extra = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            extra["Last-Event-ID"] = str(last_event_id)
        return Stream(self, self.task_route(task_id, ":subscribe"), "POST", body,
                      self.headers(body, ext, token, extra), self.kit.timeout)


BINDINGS = {"jsonrpc": ("JSONRPC", JsonRpc), "http_json": ("HTTP+JSON", HttpJson)}


# --------------------------------------------------------------------------
# What the checks share

REFUSALS = {
    # kind: (JSON-RPC code, HTTP+JSON status, the reason in the decision table,
    #        the A2A reason that comes first, metadata members)
    "not_found": (-32001, 404, "TASK_NOT_FOUND", "TASK_NOT_FOUND", ("taskId",)),
    "expired": (-32001, 404, "TASK_EXPIRED", "TASK_NOT_FOUND", ("taskId", "expiredAt")),
    "busy": (-32004, 400, "TASK_NOT_ACCEPTING_INPUT", "UNSUPPORTED_OPERATION",
             ("taskId", "state")),
    "terminal": (-32004, 400, "TASK_TERMINAL", "UNSUPPORTED_OPERATION", ("taskId", "state")),
    "conflict": (-32602, 400, "MESSAGE_ID_REUSED", None, ("taskId", "messageId")),
    "invalid": (-32602, 400, None, None, ()),
    "parse": (-32700, 400, None, None, ()),
}


def user_message(text, message_id=None, task_id=None, **extra):
    m = {"messageId": message_id or new_id(), "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id is not None:
        m["taskId"] = task_id
    m.update(extra)
    return m


def refusal_problem(b, resp, kind, task_id=None, message_id=None, what=""):
    """None when resp (a Resp, Stream or Err) is the refusal `kind` on this
    binding (the JSON-RPC code or the HTTP+JSON status, and the reason of
    the decision table), else what came instead. Refusals are kept for
    IDEM-ERR-1/2."""
    err = resp if isinstance(resp, Err) else resp.error
    if err is None:
        return "an answer instead of a refusal: %s" % (resp.brief() if isinstance(resp, Resp)
                                                       else "an event stream")
    b.note_refusal(kind, err, task_id, message_id, what)
    code, status, reason, _, _ = REFUSALS[kind]
    if b.name == "jsonrpc" and err.code != code:
        return "code %s instead of %s: %s" % (err.code, code, err.brief())
    if b.name == "http_json" and err.http != status:
        return "HTTP %s instead of %s: %s" % (err.http, status, err.brief())
    if reason and reason not in err.reasons():
        return "no ErrorInfo with reason %s: %s" % (reason, err.brief())
    if kind == "not_found" and "TASK_EXPIRED" in err.reasons():
        return "TASK_EXPIRED where the task never existed: %s" % err.brief()
    return None


def expect_refusal(b, resp, kind, task_id=None, message_id=None, what=""):
    p = refusal_problem(b, resp, kind, task_id, message_id, what)
    if p:
        code, status, reason, _, _ = REFUSALS[kind]
        want = ("%s" % code if b.name == "jsonrpc" else "HTTP %s" % status) + \
            (" reason %s" % reason if reason else "")
        raise Fail("%s: expected %s, got %s" % (what, want, p))
    return resp if isinstance(resp, Err) else resp.error


def expect_task(resp, what, task_id=None, replayed=None):
    """The Task of a SendMessage answer, with optional expectations."""
    if isinstance(resp, Resp) and resp.error is None and resp.task() is None and \
            isinstance(resp.result, dict) and "message" in resp.result:
        raise Fail("%s: expected a Task, got a direct Message answer (the kit needs an agent "
                   "that answers a plain text message with a Task)" % what)
    t = resp.task()
    if t is None:
        raise Fail("%s: expected a Task, got %s" % (what, resp.brief()))
    if task_id is not None and t.get("id") != task_id:
        raise Fail("%s: expected the Task %r, got the Task %r" % (what, task_id, t.get("id")))
    if replayed is True and not resp.replayed:
        raise Fail("%s: expected the mark Idempotent-Replayed: true, got headers %s" % (
            what, short(resp.headers)))
    if replayed is False and resp.replayed:
        raise Fail("%s: a first answer carries Idempotent-Replayed: true" % what)
    return t


def expect_get(b, task_id, what, token=None):
    r = b.get(task_id, token=token)
    if r.error is not None or not isinstance(r.result, dict):
        raise Fail("%s: GetTask %s: expected the Task, got %s" % (what, task_id, r.brief()))
    return r.result


def wait_settled(b, task_id, what, states=SETTLED, timeout=30, token=None):
    """GetTask until the task is in one of states (bounded)."""
    end = time.time() + scaled(timeout)
    last = None
    while True:
        t = expect_get(b, task_id, what, token)
        last = state_of(t)
        if last in states:
            return t
        if time.time() > end:
            raise Fail("%s: task %s still %s after %.0f s (expected one of %s)" % (
                what, task_id, last, scaled(timeout), ", ".join(states)))
        time.sleep(0.05)


def completed_task(b, what, task_id=None, ext=True, text=None, token=None, **extra):
    """Send a fresh plain text message (blocking) and wait until its task is
    terminal. Returns (message, first answer, Task as read then)."""
    msg = user_message(text or b.kit.text, task_id=task_id, **extra)
    r = b.send(msg, ext=ext, token=token)
    t = expect_task(r, what + ": the first send", task_id=task_id)
    if state_of(t) not in TERMINAL:
        t = wait_settled(b, t["id"], what, TERMINAL, token=token)
    if state_of(t) != "TASK_STATE_COMPLETED":
        raise Fail("%s: the agent did not complete the plain text message %r: task %s ended %s" % (
            what, msg["parts"][0]["text"], t.get("id"), state_of(t)))
    return msg, r, expect_get(b, t["id"], what, token)


def history_ids(task):
    return [m.get("messageId") for m in (task or {}).get("history") or [] if isinstance(m, dict)]


def same_state(a, b_):
    """The members of two readings of a task a client can compare."""
    keys = ("id", "contextId", "status", "artifacts")
    return all(a.get(k) == b_.get(k) for k in keys) and generation(a) == generation(b_)


def diff(a, b_):
    out = []
    for k in sorted(set(a) | set(b_)):
        if a.get(k) != b_.get(k):
            out.append("%s: %s -> %s" % (k, short(a.get(k), 120), short(b_.get(k), 120)))
    return "; ".join(out) or "(equal)"


def race(n, fn):
    """Run fn(i) in n threads released at once; returns the results (an
    exception in place of a result that raised)."""
    barrier = threading.Barrier(n)
    out = [None] * n

    def one(i):
        try:
            barrier.wait(scaled(30))
            out[i] = fn(i)
        except Exception as ex:  # reported by the caller
            out[i] = ex

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(scaled(120))
    return out


def check_race(answers, task_id, what):
    bad = [a for a in answers if not isinstance(a, Resp) or a.task() is None or
           (task_id is not None and a.task().get("id") != task_id)]
    if bad:
        b0 = bad[0]
        raise Fail("%s: expected every answer to be the task, got %d other answers, e.g. %s" % (
            what, len(bad), b0.brief() if isinstance(b0, Resp) else repr(b0)))
    ids = set(a.task()["id"] for a in answers)
    if len(ids) != 1:
        raise Fail("%s: expected one task, got %d: %s" % (what, len(ids), sorted(ids)))
    firsts = [a for a in answers if not a.replayed]
    if len(firsts) != 1:
        raise Fail("%s: expected exactly one answer not marked Idempotent-Replayed, got %d of %d" %
                   (what, len(firsts), len(answers)))
    return ids.pop()


def names_field(err, field):
    text = json.dumps(err.raw if err.raw is not None else {}, ensure_ascii=False) + \
        (err.message or "")
    return field.lower() in text.lower()


def parse_rfc3339(s):
    if not isinstance(s, str):
        return None
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", s.strip(),
                     re.IGNORECASE)
    if not m:
        return None
    frac = m.group(2) or ""
    tz = m.group(3).upper()
    tz = "+00:00" if tz == "Z" else tz
    try:
        base = datetime.fromisoformat(m.group(1) + tz)
    except ValueError:
        return None
    return base.timestamp() + (float(frac) if frac else 0.0)


def finished(events):
    """A stream's reading may stop: a terminal state or an error came."""
    return any(e.kind == "error" or e.state() in TERMINAL for e in events)


def stream_ids(events):
    return [e.id for e in events if e.kind != "message"]


# --------------------------------------------------------------------------
# The checks. Each is (identifier, scope, title, function[, needs]); the
# function returns a detail text (PASS), or raises Fail or Skip.

CHECKS = []


def check(ident, title, scope="binding", needs=()):
    def deco(fn):
        CHECKS.append((ident, scope, title, fn, needs))
        return fn
    return deco


def need(kit, b, needs):
    """The reason a check must be skipped, or None."""
    for n in needs:
        if n == "streaming" and not kit.streaming:
            return "the card does not declare capabilities.streaming"
        if n == "ask" and not kit.ask_text:
            return "needs --ask-text (a message the agent answers with input-required)"
        if n == "slow" and not kit.slow_text:
            return "needs --slow-text (a message the agent works on for several seconds)"
        if n == "token2" and not kit.token2:
            return "needs two principals: --token2 (and --token unless anonymous calls are a " \
                   "principal)"
        if n == "retention" and kit.retention is None:
            return "needs --retention-seconds N (a server started with a short retention)"
    return None


# ---- the card --------------------------------------------------------------

@check("IDEM-URI-1", "the card names the extension by exactly this URI", scope="card")
def c_uri(kit, _b):
    exts = kit.extensions()
    near = [e.get("uri") for e in exts if isinstance(e, dict) and isinstance(e.get("uri"), str)
            and "idempotency" in e["uri"].lower() and e["uri"] != URI]
    exact = [e for e in exts if isinstance(e, dict) and e.get("uri") == URI]
    if not exact:
        raise Fail("expected an entry with uri %r in capabilities.extensions, got uris %s" % (
            URI, [e.get("uri") for e in exts if isinstance(e, dict)]))
    if near:
        raise Fail("other spellings of the URI next to it: %s" % near)
    return URI


@check("IDEM-CARD-1", "capabilities.extensions declares the extension, required false, params",
       scope="card")
def c_card1(kit, _b):
    e = kit.ext_entry()
    if e is None:
        raise Fail("expected {uri: %r, required: false, params: {...}} in "
                   "capabilities.extensions of %s, got %s" % (URI, kit.card_url, short(
                       kit.extensions())))
    if e.get("required", False) is not False:
        raise Fail("expected required false, got %r" % e.get("required"))
    if not isinstance(e.get("params"), dict):
        raise Fail("expected params, an object, got %r" % e.get("params"))
    return "at %s" % kit.card_url


@check("IDEM-CARD-2", "params.retentionSeconds and params.tombstoneSeconds are integers",
       scope="card")
def c_card2(kit, _b):
    e = kit.ext_entry()
    if e is None or not isinstance(e.get("params"), dict):
        raise Fail("expected the extension's params in the card, got %s" % short(e))
    out = []
    for k in ("retentionSeconds", "tombstoneSeconds"):
        v = e["params"].get(k)
        ok = (isinstance(v, int) and not isinstance(v, bool)) or \
            (isinstance(v, float) and v.is_integer())
        if not ok or v < 0:
            raise Fail("expected params.%s, a non-negative integer, got %r" % (k, v))
        out.append("%s=%d" % (k, v))
    return ", ".join(out)


# ---- the kit's own digest ----------------------------------------------------

@check("IDEM-DIG-1", "the kit's JCS digest reproduces every test vector", scope="kit")
def k_vectors(kit, _b):
    with open(VECTORS, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    vs = doc.get("vectors") or []
    if not vs:
        raise Fail("no vectors in %s" % VECTORS)
    for v in vs:
        canonical, sha = digest(v["message"], v.get("taskPushNotificationConfig"))
        if canonical != v["canonical"]:
            raise Fail("vector %r: canonical form %r, the file says %r" % (
                v.get("name"), canonical, v["canonical"]))
        if hashlib.sha256(v["canonical"].encode("utf-8")).hexdigest() != v["sha256"]:
            raise Fail("vector %r: the file's sha256 is not SHA-256 of its canonical form" %
                       v.get("name"))
        if sha != v["sha256"]:
            raise Fail("vector %r: sha256 %s, the file says %s" % (v.get("name"), sha, v["sha256"]))
    for bits, want in JCS_NUMBERS:
        got = jcs_number(struct.unpack(">d", bytes.fromhex(bits))[0])
        if got != want:
            raise Fail("the kit's JCS number form of 0x%s is %s, RFC 8785 says %s" % (
                bits, got, want))
    return "%d vectors of %s (and the %d numbers of RFC 8785 appendix B)" % (
        len(vs), os.path.relpath(VECTORS, os.path.dirname(HERE)), len(JCS_NUMBERS))


# ---- activation and IDs ------------------------------------------------------

@check("IDEM-ACT-1", "the URI in an A2A-Extensions list activates it; the response echoes it")
def b_act1(kit, b):
    tid = new_id()
    header = "urn:example:another-extension, %s" % URI
    r = b.send(user_message(kit.text, task_id=tid), ext=header)
    expect_task(r, "SendMessage with A2A-Extensions: %s (client-minted taskId)" % header,
                task_id=tid)
    if not r.echoed():
        raise Fail("SendMessage with the extension active: expected the response header "
                   "A2A-Extensions naming %s, got %r" % (URI, r.headers.get("a2a-extensions")))
    g = b.get(tid)
    if g.error is not None:
        raise Fail("GetTask %s: %s" % (tid, g.brief()))
    if not g.echoed():
        raise Fail("GetTask with A2A-Extensions: %s: expected the echo, got %r" % (
            URI, g.headers.get("a2a-extensions")))
    return "read from a list of two; echoed on SendMessage and GetTask"


BAD_IDS = ["", "-leading-dash", ".leading-dot", "has space", "slash/inside", "x" * 129,
           "caf\u00e9", "semi;colon"]


@check("IDEM-ID-1", "a taskId outside [A-Za-z0-9._:-]{1,128} (first alnum) is refused -32602, "
       "naming it, nothing stored")
def b_id1(kit, b):
    refused = []
    for bad in BAD_IDS:
        m = user_message(kit.text, task_id=bad)
        r = b.send(m)
        err = expect_refusal(b, r, "invalid", what="taskId %r" % bad)
        if not names_field(err, "taskId"):
            raise Fail("taskId %r: expected the error to name the field taskId, got %s" % (
                bad, err.brief()))
        refused.append(m)
    m = user_message(kit.text, task_id="has space")
    err = expect_refusal(b, b.send(m, ext=False), "invalid",
                         what="taskId 'has space', extension not active")
    if not names_field(err, "taskId"):
        raise Fail("taskId 'has space', extension not active: expected the error to name the "
                   "field taskId, got %s" % err.brief())
    refused.append(m)
    # Nothing was stored: the same messages without the bad taskId are first
    # messages (registered now, not replays of anything).
    for m in refused:
        m2 = dict(m)
        del m2["taskId"]
        r = b.send(m2)
        expect_task(r, "the refused message %s sent again without taskId" % m["messageId"],
                    replayed=False)
    return "%d bad IDs refused (and one without the extension); resent without them, each " \
        "was a first message" % len(BAD_IDS)


@check("IDEM-ID-2", "a client-minted taskId registers under exactly that ID; without the "
       "extension an unknown taskId is TASK_NOT_FOUND")
def b_id2(kit, b):
    tid = new_id()
    r = b.send(user_message(kit.text, task_id=tid))
    expect_task(r, "first message, taskId %s (UUIDv4), extension active" % tid, task_id=tid,
                replayed=False)
    expect_get(b, tid, "the registered task")
    long_id = ("A0._:-" + uuid.uuid4().hex * 4)[:128]
    r = b.send(user_message(kit.text, task_id=long_id))
    expect_task(r, "first message, a 128-character taskId of every allowed character",
                task_id=long_id)
    tid2 = new_id()
    r = b.send(user_message(kit.text, task_id=tid2), ext=False)
    expect_refusal(b, r, "not_found", tid2, what="without the extension, unknown taskId %s" % tid2)
    g = b.get(tid2)
    expect_refusal(b, g, "not_found", tid2,
                   what="GetTask %s after the refused send (nothing registered)" % tid2)
    return "registered %s and a 128-character ID; without the extension TASK_NOT_FOUND, " \
           "nothing registered" % tid


@check("IDEM-ID-4", "a plain first message sent twice with one messageId: one task, the second "
       "answer marked replayed")
def b_id4(kit, b):
    m = user_message(kit.text)
    r1 = b.send(m)
    t1 = expect_task(r1, "the plain first message (no taskId)", replayed=False)
    r2 = b.send(m)
    t2 = expect_task(r2, "the same message again", replayed=True)
    if t2.get("id") != t1.get("id"):
        raise Fail("expected one task for messageId %s, got %s then %s" % (
            m["messageId"], t1.get("id"), t2.get("id")))
    expect_get(b, t1["id"], "the derived task")
    return "task %s" % t1["id"]


# ---- scope -----------------------------------------------------------------

def normalized(err, *ids):
    """An error, with the task IDs it names replaced, for comparing two
    errors about two IDs."""
    s = json.dumps({"code": err.code, "http": err.http, "error": err.raw,
                    "message": err.message}, sort_keys=True, ensure_ascii=False)
    for i in ids:
        s = s.replace(i, "<ID>")
    return s


@check("IDEM-SCOPE-1", "another principal's task answers exactly like a missing one",
       needs=("token2",))
def b_scope_missing(kit, b):
    a, other = kit.token, kit.token2
    _, _, task = completed_task(b, "principal 1's task", task_id=new_id(), token=a)
    x, y = task["id"], new_id()
    calls = [
        ("GetTask", lambda tid: b.get(tid, token=other)),
        ("CancelTask", lambda tid: b.cancel(tid, token=other)),
        ("SendMessage without the extension",
         lambda tid: b.send(user_message(kit.text, task_id=tid), ext=False, token=other)),
        ("ListTaskPushNotificationConfigs", lambda tid: b.list_push(tid, token=other)),
    ]
    if kit.streaming:
        def sub(tid):
            s = b.subscribe(tid, token=other)
            if s.error is None:
                s.close()
            return s
        calls.append(("SubscribeToTask", sub))
    for name, fn in calls:
        rx, ry = fn(x), fn(y)
        if name.startswith("ListTaskPush"):
            # A server without push notifications may refuse both otherwise,
            # or list nothing for both: they must still answer alike.
            if rx.error is None and ry.error is None and rx.result == ry.result:
                continue
        else:
            expect_refusal(b, ry, "not_found", y,
                           what="principal 2, %s of a missing task" % name)
        if rx.error is None:
            raise Fail("principal 2, %s of principal 1's task %s: expected TASK_NOT_FOUND, got "
                       "an answer (%s)" % (name, x, rx.brief() if isinstance(rx, Resp) else
                                           "an event stream"))
        nx, ny = normalized(rx.error, x), normalized(ry.error, y)
        if nx != ny:
            raise Fail("principal 2, %s: principal 1's task answers %s, a missing one %s" % (
                name, short(nx, 400), short(ny, 400)))
    lr = b.list(token=other)
    if lr.error is None and isinstance(lr.result, dict):
        listed = [t.get("id") for t in lr.result.get("tasks") or [] if isinstance(t, dict)]
        if x in listed:
            raise Fail("principal 2's ListTasks lists principal 1's task %s" % x)
    after = expect_get(b, x, "principal 1 reads its task again", token=a)
    if after != task:
        raise Fail("principal 1's task changed: %s" % diff(task, after))
    return "%s on both: the same code, reasons, message and metadata" % \
        ", ".join(n for n, _ in calls)


@check("IDEM-SCOPE-1", "the same taskId, or the same messageId, from two principals: two tasks",
       needs=("token2",))
def b_scope_two(kit, b):
    a, other = kit.token, kit.token2
    m1, _, t1 = completed_task(b, "principal 1's task", task_id=new_id(), token=a)
    x = t1["id"]
    m2 = user_message(kit.text + " (principal 2)", task_id=x)
    r = b.send(m2, token=other)
    t2 = expect_task(r, "principal 2 sends a first message with principal 1's taskId %s" % x,
                     task_id=x, replayed=False)
    t2 = wait_settled(b, x, "principal 2's task", token=other)
    if m1["messageId"] in history_ids(t2) or m2["messageId"] not in history_ids(t2):
        raise Fail("principal 2's task %s holds history %s (principal 1 sent %s, principal 2 %s)"
                   % (x, history_ids(t2), m1["messageId"], m2["messageId"]))
    again = expect_get(b, x, "principal 1's task after principal 2's", token=a)
    if again != t1:
        raise Fail("principal 1's task changed: %s" % diff(t1, again))
    # The same messageId, another text: no conflict across principals.
    mid = new_id()
    ra = b.send(user_message(kit.text, message_id=mid), token=a)
    ta = expect_task(ra, "principal 1's plain first message %s" % mid, replayed=False)
    rb = b.send(user_message(kit.text + " (other content)", message_id=mid), token=other)
    tb = expect_task(rb, "principal 2's plain first message with the same messageId %s" % mid,
                     replayed=False)
    ga = wait_settled(b, ta["id"], "principal 1's task", token=a)
    gb = wait_settled(b, tb["id"], "principal 2's task", token=other)
    texts = lambda t: [p.get("text") for h in t.get("history") or [] if h.get("messageId") == mid
                       for p in h.get("parts") or []]
    if texts(ga) != [kit.text] or texts(gb) != [kit.text + " (other content)"]:
        raise Fail("the two tasks of messageId %s hold %r and %r" % (mid, texts(ga), texts(gb)))
    return "taskId %s: two tasks; messageId %s: two tasks" % (x, mid)


# ---- the digest, on the server ----------------------------------------------

@check("IDEM-DIG-1", "taskId, contextId and what is outside the digest do not count: a replay")
def b_dig1(kit, b):
    m = user_message(kit.text)
    t = expect_task(b.send(m), "a plain first message", replayed=False)
    filled = dict(m, taskId=t["id"])
    if t.get("contextId"):
        filled["contextId"] = t["contextId"]
    r = b.send(filled)
    expect_task(r, "the retry carrying the taskId and contextId the server gave", task_id=t["id"],
                replayed=True)
    r = b.send(m, config={"acceptedOutputModes": ["text/plain"]},
               request_metadata={"kit": "request metadata is not counted"})
    expect_task(r, "the retry with configuration.acceptedOutputModes and request metadata",
                task_id=t["id"], replayed=True)
    return "task %s" % t["id"]


def dup_keys_body(b, tid, mid):
    return ('{"message":{"messageId":%s,"role":"ROLE_USER","taskId":%s,'
            '"parts":[{"text":"one"}],"parts":[{"text":"two"}]}}' % (
                json.dumps(mid), json.dumps(tid))).encode()


@check("IDEM-DIG-2", "duplicate keys are refused -32700, nothing stored")
def b_dig2_dup(kit, b):
    tid, mid = new_id(), new_id()
    r = b.send_raw(dup_keys_body(b, tid, mid))
    expect_refusal(b, r, "parse", tid, mid, what="a message with the key parts twice")
    expect_refusal(b, b.get(tid), "not_found", tid, what="GetTask %s after the refusal" % tid)
    r = b.send(user_message("two", message_id=mid, task_id=tid))
    expect_task(r, "the same message without the duplicate", task_id=tid, replayed=False)
    return "task %s registered only by the clean message" % tid


@check("IDEM-DIG-2", "invalid UTF-8 is refused -32700, nothing stored")
def b_dig2_utf8(kit, b):
    tid, mid = new_id(), new_id()
    body = ('{"message":{"messageId":%s,"role":"ROLE_USER","taskId":%s,"parts":[{"text":"caf' % (
        json.dumps(mid), json.dumps(tid))).encode() + b'\xe9 \xff"}]}}'
    r = b.send_raw(body)
    expect_refusal(b, r, "parse", tid, mid, what="a message with invalid UTF-8")
    expect_refusal(b, b.get(tid), "not_found", tid, what="GetTask %s after the refusal" % tid)
    return "nothing registered"


@check("IDEM-DIG-2", "numbers and strings are canonicalised (JCS): another spelling replays")
def b_dig2_numbers(kit, b):
    tid, mid = new_id(), new_id()
    first = ('{"message":{"messageId":"%s","role":"ROLE_USER","taskId":"%s","parts":['
             '{"text":"caf\u00e9 A"},{"data":{"n":1.50,"m":100,"z":0,"big":1e21,'
             '"small":0.000001}}]}}' % (mid, tid))
    again = ('{"message":{"messageId":"%s","role":"ROLE_USER","taskId":"%s","parts":['
             '{"text":"caf\\u00e9 \\u0041"},{"data":{"n":15e-1,"m":1E2,"z":-0,'
             '"big":1E+21,"small":1e-6}}]}}' % (mid, tid))
    r = b.send_raw(first.encode("utf-8"))
    expect_task(r, "a message with a data part", task_id=tid, replayed=False)
    r = b.send_raw(again.encode("utf-8"))
    expect_task(r, "the same values spelt otherwise (1.50 / 15e-1, 100 / 1E2, 0 / -0, "
                "1e21 / 1E+21, 0.000001 / 1e-6, \\u-escapes)", task_id=tid, replayed=True)
    return "task %s" % tid


def reformatted(params):
    """params as JSON with every object's keys in reverse order and
    whitespace everywhere it is allowed."""
    def w(v, depth):
        pad = "\n" + "\t" * depth
        if isinstance(v, dict):
            items = list(v.items())[::-1]
            return "{" + ",".join(pad + "  " + json.dumps(k) + " :\t" + w(x, depth + 1)
                                  for k, x in items) + pad + "}"
        if isinstance(v, list):
            return "[ " + " , ".join(w(x, depth + 1) for x in v) + " ]"
        return json.dumps(v, ensure_ascii=True)
    return ("\r\n  " + w(params, 0) + "\n\n").encode("utf-8")


@check("IDEM-DIG-3", "key order and whitespace do not count; one changed value is a conflict "
       "MESSAGE_ID_REUSED")
def b_dig3(kit, b):
    tid = new_id()
    m = user_message(kit.text, task_id=tid, metadata={"b": 1, "a": [1, 2], "c": {"y": True}})
    t = expect_task(b.send(m), "the first message", task_id=tid, replayed=False)
    r = b.send_raw(reformatted({"message": m}))
    expect_task(r, "the same request, keys reversed and whitespace added", task_id=tid,
                replayed=True)
    changes = [
        ("another text", dict(m, parts=[{"text": kit.text + "!"}])),
        ("another metadata value", dict(m, metadata={"b": 2, "a": [1, 2], "c": {"y": True}})),
        ("a metadata member more", dict(m, metadata=dict(m["metadata"], d=None))),
        ("extensions added", dict(m, extensions=["urn:example:another-extension"])),
    ]
    for what, changed in changes:
        r = b.send(changed)
        err = expect_refusal(b, r, "conflict", tid, m["messageId"],
                             what="the same messageId with %s" % what)
        md = err.metadata()
        if md.get("messageId") != m["messageId"] or md.get("taskId") != tid:
            raise Fail("the conflict (%s): expected metadata messageId %s, taskId %s, got %s" % (
                what, m["messageId"], tid, md))
    return "task %s: a replay, then %d conflicts" % (t["id"], len(changes))


# ---- the decision ----------------------------------------------------------

@check("IDEM-DEC-1", "identical requests racing on a client-minted taskId: one task, one "
       "registration, the others replays")
def b_dec1_client(kit, b):
    tid = new_id()
    m = user_message(kit.text, task_id=tid)
    answers = race(kit.race, lambda i: b.send(m))
    check_race(answers, tid, "%d racing sends of taskId %s" % (kit.race, tid))
    return "%d sends, task %s" % (kit.race, tid)


@check("IDEM-DEC-1", "identical plain first messages racing (derived ID): one task, one "
       "registration, the others replays")
def b_dec1_plain(kit, b):
    m = user_message(kit.text)
    answers = race(kit.race, lambda i: b.send(m))
    tid = check_race(answers, None, "%d racing sends of messageId %s" % (kit.race, m["messageId"]))
    return "%d sends, task %s" % (kit.race, tid)


@check("IDEM-DEC-2", "a replay changes nothing: the task read before and after is equal, "
       "generation unchanged")
def b_dec2(kit, b):
    m, _, before = completed_task(b, "a finished task", task_id=new_id())
    tid = before["id"]
    expect_task(b.send(m), "the replay", task_id=tid, replayed=True)
    after = expect_get(b, tid, "after the replay")
    if after != before:
        raise Fail("the task changed with a replay: %s" % diff(before, after))
    extra = ""
    if kit.streaming:
        s = b.send(m, stream=True)
        if s.error is not None:
            raise Fail("the streaming replay: %s" % s.error.brief())
        s.read(until=finished)
        s.close()
        after = expect_get(b, tid, "after the streaming replay")
        if after != before:
            raise Fail("the task changed with a streaming replay: %s" % diff(before, after))
        extra = " (and after a streaming replay)"
    return "task %s, generation %s%s" % (tid, generation(before), extra)


@check("IDEM-DEC-3", "a conflict and a terminal refusal change nothing, and are not remembered")
def b_dec3(kit, b):
    m, _, before = completed_task(b, "a finished task (plain first message)")
    tid = before["id"]
    conflict = dict(m, parts=[{"text": kit.text + " (changed)"}])
    expect_refusal(b, b.send(conflict), "conflict", tid, m["messageId"], what="the conflict")
    after = expect_get(b, tid, "after the conflict")
    if after != before:
        raise Fail("the task changed with a conflict: %s" % diff(before, after))
    new = user_message(kit.text, task_id=tid)
    for n in (1, 2):
        r = b.send(new)
        err = expect_refusal(b, r, "terminal", tid, new["messageId"],
                             what="a new message to the completed task (send %d)" % n)
        if err.metadata().get("state") != "TASK_STATE_COMPLETED":
            raise Fail("the terminal refusal: expected metadata state TASK_STATE_COMPLETED, got "
                       "%s" % err.metadata())
    after = expect_get(b, tid, "after the terminal refusals")
    if after != before:
        raise Fail("the task changed with a terminal refusal: %s" % diff(before, after))
    expect_task(b.send(m), "the original message after the refusals", task_id=tid, replayed=True)
    return "task %s" % tid


@check("IDEM-DEC-3", "a new message to a working task is refused TASK_NOT_ACCEPTING_INPUT "
       "(busy), changing nothing", needs=("slow",))
def b_dec3_busy(kit, b):
    tid = new_id()
    slow = user_message(kit.slow_text, task_id=tid)
    t = expect_task(b.send(slow, config={"returnImmediately": True}),
                    "the --slow-text message, returnImmediately", task_id=tid)
    try:
        t = expect_get(b, tid, "the working task")
        if state_of(t) not in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"):
            raise Skip("the --slow-text task was %s already, not working" % state_of(t))
        new = user_message(kit.text, task_id=tid)
        for n in (1, 2):
            r = b.send(new)
            if r.error is not None and "TASK_TERMINAL" in r.error.reasons():
                raise Skip("the --slow-text task finished before the check was done")
            err = expect_refusal(b, r, "busy", tid, new["messageId"],
                                 what="a new message to the working task (send %d)" % n)
            st = err.metadata().get("state")
            if st not in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"):
                raise Fail("the busy refusal: expected metadata state TASK_STATE_SUBMITTED or "
                           "TASK_STATE_WORKING, got %s" % err.metadata())
        after = expect_get(b, tid, "after the busy refusals")
        if new["messageId"] in history_ids(after):
            raise Fail("the refused message %s is in the task's history" % new["messageId"])
        return "task %s" % tid
    finally:
        b.cancel(tid)


@check("IDEM-DEC-4", "a continuation of an input-required task is accepted once; its retries "
       "(racing, then later) are replays", needs=("ask",))
def b_dec4(kit, b):
    tid = new_id()
    t = expect_task(b.send(user_message(kit.ask_text, task_id=tid)), "the --ask-text message",
                    task_id=tid)
    t = wait_settled(b, tid, "the --ask-text task")
    if state_of(t) not in INTERRUPTED:
        raise Fail("the --ask-text message: expected input-required, got %s" % state_of(t))
    g0 = generation(t)
    cont = user_message(kit.text, task_id=tid)
    answers = race(kit.race, lambda i: b.send(cont))
    check_race(answers, tid, "%d racing continuations %s" % (kit.race, cont["messageId"]))
    after = wait_settled(b, tid, "the continued task")
    if history_ids(after).count(cont["messageId"]) != 1:
        raise Fail("expected the continuation %s once in the history, got %s" % (
            cont["messageId"], history_ids(after)))
    if g0 is not None and (generation(after) or 0) <= g0:
        raise Fail("the continuation was accepted but the generation did not move (%s -> %s)" %
                   (g0, generation(after)))
    r = b.send(cont)
    expect_task(r, "the continuation once more", task_id=tid, replayed=True)
    again = expect_get(b, tid, "after the late retry")
    if again != after:
        raise Fail("the task changed with the retried continuation: %s" % diff(after, again))
    return "task %s: %d racing continuations, one accepted" % (tid, kit.race)


# ---- replays -----------------------------------------------------------------

@check("IDEM-REP-1", "a replay answers the task as it stands, marked Idempotent-Replayed: true; "
       "a first answer unmarked")
def b_rep1(kit, b):
    m, first, now = completed_task(b, "a finished task (plain first message)")
    if first.replayed:
        raise Fail("the first answer carries Idempotent-Replayed: %r" %
                   first.headers.get("idempotent-replayed"))
    r = b.send(m)
    t = expect_task(r, "the replay", task_id=now["id"], replayed=True)
    if r.headers.get("idempotent-replayed", "").strip().lower() != "true":
        raise Fail("the replay: expected Idempotent-Replayed: true, got %r" %
                   r.headers.get("idempotent-replayed"))
    if not same_state(t, now):
        raise Fail("the replay does not answer the stored task: %s" % diff(now, t))
    return "task %s" % now["id"]


@check("IDEM-REP-1", "a replay of the first message after a continuation answers the current "
       "state", needs=("ask",))
def b_rep1_moved(kit, b):
    tid = new_id()
    ask = user_message(kit.ask_text, task_id=tid)
    expect_task(b.send(ask), "the --ask-text message", task_id=tid, replayed=False)
    t = wait_settled(b, tid, "the --ask-text task")
    if state_of(t) not in INTERRUPTED:
        raise Fail("the --ask-text message: expected input-required, got %s" % state_of(t))
    expect_task(b.send(user_message(kit.text, task_id=tid)), "the continuation", task_id=tid,
                replayed=False)
    now = wait_settled(b, tid, "the continued task")
    if generation(t) is not None and (generation(now) or 0) <= generation(t):
        raise Fail("the continuation was accepted but the generation did not move (%s -> %s)" %
                   (generation(t), generation(now)))
    r = b.send(ask)
    t = expect_task(r, "a replay of the first message", task_id=tid, replayed=True)
    if not same_state(t, now):
        raise Fail("the replay answers %s (generation %s), the task is %s (generation %s): %s" % (
            state_of(t), generation(t), state_of(now), generation(now), diff(now, t)))
    return "task %s: %s, generation %s" % (tid, state_of(now), generation(now))


@check("IDEM-REP-3", "a replay of SendStreamingMessage streams the stored events from "
       "generation 1, marked, and runs nothing", needs=("streaming",))
def b_rep3(kit, b):
    m, _, now = completed_task(b, "a finished task", task_id=new_id())
    tid, g = now["id"], generation(now)
    s = b.send(m, stream=True)
    if s.error is not None:
        raise Fail("the streaming replay: expected an event stream, got %s" % s.error.brief())
    if not s.replayed:
        s.close()
        raise Fail("the streaming replay: expected Idempotent-Replayed: true, got headers %s" %
                   short(s.headers))
    evs = s.read(until=lambda evs: False)   # to its end: the check is that it ends
    s.close()
    ids = stream_ids(evs)
    if g is None or ids != list(range(1, g + 1)):
        raise Fail("expected events 1..%s (the task's generation), got ids %s" % (g, ids))
    if not s.ended:
        raise Fail("the replay stream of a finished task did not end within %.0f s" % scaled(30))
    after = expect_get(b, tid, "after the streaming replay")
    if after != now:
        raise Fail("the streaming replay changed the task: %s" % diff(now, after))
    return "task %s: events 1..%d" % (tid, g)


# ---- generations ---------------------------------------------------------------

@check("IDEM-GEN-1", "generations are 1, 2, 3, ... without gaps or repeats", needs=("streaming",))
def b_gen1(kit, b):
    m = user_message(kit.text)
    s = b.send(m, stream=True)
    if s.error is not None:
        raise Fail("SendStreamingMessage: expected an event stream, got %s" % s.error.brief())
    evs = s.read(until=lambda evs: any(e.state() in TERMINAL for e in evs))
    s.close()
    ids = stream_ids(evs)
    if not ids or not all(isinstance(i, int) for i in ids) or \
            ids != list(range(ids[0], ids[0] + len(ids))):
        raise Fail("the first stream: expected consecutive ids, got %s" % ids)
    tids = set((e.obj or {}).get("id") if e.kind == "task" else (e.obj or {}).get("taskId")
               for e in evs if e.kind in ("task", "statusUpdate", "artifactUpdate"))
    if len(tids) != 1 or None in tids:
        raise Fail("the first stream: expected the events of one task, got task IDs %s" % tids)
    tid = tids.pop()
    now = wait_settled(b, tid, "the streamed task", TERMINAL)
    g = generation(now)
    if g != ids[-1]:
        raise Fail("the stream ended at id %s, the task's generation is %s" % (ids[-1], g))
    s = b.send(m, stream=True)
    if s.error is not None:
        raise Fail("the streaming replay: %s" % s.error.brief())
    evs = s.read(until=finished)
    s.close()
    ids2 = stream_ids(evs)
    if ids2 != list(range(1, g + 1)):
        raise Fail("every event from generation 1: expected ids 1..%d, got %s" % (g, ids2))
    return "task %s: stream %s, stored 1..%d" % (tid, ids, g)


@check("IDEM-GEN-2", "every Task and every streamed event carries metadata[URI].generation")
def b_gen2(kit, b):
    m, first, now = completed_task(b, "a finished task", task_id=new_id())
    tid = now["id"]
    for where, t in (("the SendMessage answer", first.task()), ("GetTask", now)):
        if generation(t) is None:
            raise Fail("%s: expected metadata[%r].generation, an integer, got metadata %s" % (
                where, URI, short(t.get("metadata"))))
    lr = b.list()
    if lr.error is None and isinstance(lr.result, dict):
        for t in lr.result.get("tasks") or []:
            if generation(t) is None:
                raise Fail("ListTasks: task %s without a generation: %s" % (
                    t.get("id"), short(t.get("metadata"))))
    detail = "task %s generation %s" % (tid, generation(now))
    if kit.streaming:
        s = b.send(m, stream=True)
        evs = s.read(until=finished) if s.error is None else []
        s.close()
        if s.error is not None:
            raise Fail("the streaming replay: %s" % s.error.brief())
        gens = [e.gen for e in evs if e.kind != "message"]
        if None in gens:
            raise Fail("streamed events without a generation: %s" % [
                (e.kind, e.id) for e in evs if e.gen is None])
        if gens and gens[-1] != generation(now):
            raise Fail("the Task's generation %s is not its last event's %s" % (
                generation(now), gens[-1]))
        detail += ", its last event's"
    if b.gen_missing:
        where, what = b.gen_missing[0]
        raise Fail("%d of the Tasks and events the run saw carry no generation, e.g. %s: %s" % (
            len(b.gen_missing), where, what))
    return "%s; %d Tasks and events seen in the run, every one with a generation" % (
        detail, b.gen_seen)


@check("IDEM-GEN-3", "SSE id = generation; Last-Event-ID N resumes at N+1; N past the end "
       "is refused -32602", needs=("streaming",))
def b_gen3(kit, b):
    m, _, now = completed_task(b, "a finished task (plain first message)")
    tid, g = now["id"], generation(now)
    if not isinstance(g, int) or g < 2:
        raise Fail("expected a finished task with a generation of 2 or more, got %r" % g)
    for n in sorted(set([0, 1, g - 1, g])):
        s = b.send(m, stream=True, last_event_id=n)
        if s.error is not None:
            raise Fail("the replay with Last-Event-ID: %d: expected a stream, got %s" % (
                n, s.error.brief()))
        evs = s.read(until=finished)
        s.close()
        ids = stream_ids(evs)
        if ids != list(range(n + 1, g + 1)):
            raise Fail("the replay with Last-Event-ID: %d: expected ids %d..%d, got %s" % (
                n, n + 1, g, ids))
    for n in (g + 1, g + 1000):
        s = b.send(m, stream=True, last_event_id=n)
        if s.error is None:
            s.close()
        err = expect_refusal(b, s, "invalid", tid,
                             what="the replay with Last-Event-ID: %d (generation %d)" % (n, g))
        if not names_field(err, "Last-Event-ID"):
            raise Fail("Last-Event-ID: %d: expected the error to name Last-Event-ID, got %s" % (
                n, err.brief()))
    if b.id_mismatch:
        raise Fail("%d events of %d: %s" % (len(b.id_mismatch), b.id_seen, b.id_mismatch[0]))
    return "task %s (generation %d); %d events of the run: id = generation" % (tid, g, b.id_seen)


@check("IDEM-GEN-3", "SubscribeToTask with Last-Event-ID N on an input-required task: N+1.., "
       "N past the end refused", needs=("streaming", "ask"))
def b_gen3_subscribe(kit, b):
    tid = new_id()
    expect_task(b.send(user_message(kit.ask_text, task_id=tid)), "the --ask-text message",
                task_id=tid)
    t = wait_settled(b, tid, "the --ask-text task")
    g = generation(t)
    if state_of(t) not in INTERRUPTED or not isinstance(g, int):
        raise Fail("expected an input-required task with a generation, got %s, %r" % (
            state_of(t), g))
    for n in sorted(set([0, g - 1])):
        s = b.subscribe(tid, last_event_id=n)
        if s.error is not None:
            raise Fail("SubscribeToTask, Last-Event-ID: %d: %s" % (n, s.error.brief()))
        evs = s.read(until=lambda evs: len(stream_ids(evs)) >= g - n, timeout=15)
        s.close()
        ids = stream_ids(evs)
        if ids != list(range(n + 1, g + 1)):
            raise Fail("SubscribeToTask, Last-Event-ID: %d: expected ids %d..%d, got %s" % (
                n, n + 1, g, ids))
    s = b.subscribe(tid, last_event_id=g + 5)
    if s.error is None:
        s.close()
    err = expect_refusal(b, s, "invalid", tid, what="SubscribeToTask, Last-Event-ID: %d" % (g + 5))
    if not names_field(err, "Last-Event-ID"):
        raise Fail("expected the error to name Last-Event-ID, got %s" % err.brief())
    b.cancel(tid)
    return "task %s (generation %d)" % (tid, g)


# ---- retention -----------------------------------------------------------------

def expired_task(kit, b):
    """The task made at the start of the binding's run, once it answers
    TASK_EXPIRED (waiting, bounded, for retention + sweep)."""
    st = b.ret
    if st.get("error"):
        raise Fail(st["error"])
    if "expired" in st:
        return st
    tid = st["task"]["id"]
    bound = kit.retention_bound()
    end = st["settled_at"] + scaled(bound)
    while True:
        r = b.get(tid)
        if r.error is not None and "TASK_EXPIRED" in r.error.reasons():
            st["expired"] = r
            return st
        if r.error is not None:
            st["error"] = "GetTask %s before it expired: %s" % (tid, r.error.brief())
            raise Fail(st["error"])
        if time.time() > end:
            st["error"] = ("task %s finished at %s still answers %s %.0f s later (retention %d s "
                           "+ sweep)" % (tid, (r.result.get("status") or {}).get("timestamp"),
                                         state_of(r.result), time.time() - st["settled_at"],
                                         kit.retention))
            raise Fail(st["error"])
        time.sleep(0.2)


@check("IDEM-RET-1", "a finished task is kept in full for retentionSeconds", needs=("retention",))
def b_ret1(kit, b):
    st = expired_task(kit, b)
    r = st["expired"]
    settled = parse_rfc3339((st["task"].get("status") or {}).get("timestamp"))
    at = parse_rfc3339(r.error.metadata().get("expiredAt"))
    keep = kit.card_retention()
    if settled is None or at is None:
        raise Fail("cannot compare: status.timestamp %r, expiredAt %r" % (
            (st["task"].get("status") or {}).get("timestamp"), r.error.metadata().get("expiredAt")))
    if keep is None:
        raise Fail("the card declares no params.retentionSeconds")
    if at - settled < keep - 0.001:
        raise Fail("expired %.3f s after it finished, retentionSeconds is %d" % (at - settled, keep))
    return "task %s expired %.1f s after it finished (retentionSeconds %d)" % (
        st["task"]["id"], at - settled, keep)


@check("IDEM-RET-2", "after retention the ID answers -32001 TASK_EXPIRED with expiredAt on "
       "GetTask, CancelTask, SubscribeToTask, SendMessage", needs=("retention",))
def b_ret2(kit, b):
    st = expired_task(kit, b)
    tid, m = st["task"]["id"], st["message"]
    calls = [("GetTask", lambda: b.get(tid)), ("CancelTask", lambda: b.cancel(tid)),
             ("SendMessage (the original message again)", lambda: b.send(m))]
    if kit.streaming:
        def sub():
            s = b.subscribe(tid)
            if s.error is None:
                s.close()
            return s
        calls.append(("SubscribeToTask", sub))
    for name, fn in calls:
        r = fn()
        err = expect_refusal(b, r, "expired", tid, what=name + " of the expired task")
        md = err.metadata()
        if parse_rfc3339(md.get("expiredAt")) is None or md.get("taskId") != tid:
            raise Fail("%s: expected metadata taskId %s and expiredAt (RFC 3339), got %s" % (
                name, tid, md))
        if "TASK_NOT_FOUND" not in err.reasons():
            raise Fail("%s: expected the A2A reason TASK_NOT_FOUND with TASK_EXPIRED, got %s" % (
                name, err.reasons()))
    return "task %s, expiredAt %s" % (tid, st["expired"].error.metadata().get("expiredAt"))


@check("IDEM-DEC-5", "a message to an expired task's ID is refused TASK_EXPIRED and registers "
       "nothing", needs=("retention",))
def b_dec5(kit, b):
    st = expired_task(kit, b)
    tid = st["task"]["id"]
    for what, ext in (("a new message, extension active", True),
                      ("a new message, extension not active", False)):
        new = user_message(kit.text, task_id=tid)
        expect_refusal(b, b.send(new, ext=ext), "expired", tid, new["messageId"],
                       what=what + ", to the expired task")
        expect_refusal(b, b.get(tid), "expired", tid, what="GetTask after " + what)
    return "task %s" % tid


# ---- errors (every refusal of the run) -----------------------------------------

def own_refusals(kit, b):
    """A refusal of each kind the kit can make without options (the other
    checks add theirs)."""
    m, _, t = completed_task(b, "a finished task (plain first message)")
    tid = t["id"]
    missing = new_id()
    refusal_problem(b, b.get(missing), "not_found", missing, what="GetTask of a missing task")
    refusal_problem(b, b.send(user_message(kit.text, task_id=missing), ext=False), "not_found",
                    missing, what="SendMessage without the extension to a missing task")
    new = user_message(kit.text, task_id=tid)
    refusal_problem(b, b.send(new), "terminal", tid, new["messageId"],
                    what="a new message to a completed task")
    refusal_problem(b, b.send(dict(m, parts=[{"text": kit.text + "?"}])), "conflict", tid,
                    m["messageId"], what="a conflict")


@check("IDEM-ERR-1", "every refusal carries the A2A ErrorInfo first, then once's reason, with "
       "its metadata as strings")
def b_err1(kit, b):
    own_refusals(kit, b)
    checked, kinds = 0, set()
    for kind, err, tid, mid, what in list(b.refusals):
        _, _, reason, a2a, members = REFUSALS[kind]
        if reason is None:
            continue
        where = "%s (%s)" % (what, kind)
        infos = [(i.get("reason"), i.get("domain")) for i in err.infos]
        if a2a is not None:
            if not infos or infos[0] != (a2a, A2A_DOMAIN):
                raise Fail("%s: expected the first ErrorInfo (%s, %s), got %s" % (
                    where, a2a, A2A_DOMAIN, infos))
            if reason != a2a and (len(infos) < 2 or infos[1] != (reason, ONCE_DOMAIN)):
                raise Fail("%s: expected the second ErrorInfo (%s, %s), got %s" % (
                    where, reason, ONCE_DOMAIN, infos))
        elif (reason, ONCE_DOMAIN) not in infos:
            raise Fail("%s: expected an ErrorInfo (%s, %s), got %s" % (
                where, reason, ONCE_DOMAIN, infos))
        if not err.infos:
            raise Fail("%s: no google.rpc.ErrorInfo in %s" % (
                where, "error.data" if b.name == "jsonrpc" else "error.details"))
        for i in err.infos:
            md = i.get("metadata", {})
            if not isinstance(md, dict) or any(not isinstance(v, str) for v in md.values()):
                raise Fail("%s: metadata values must be strings, got %s" % (where, short(md)))
        md = err.metadata()
        for k in members:
            if not isinstance(md.get(k), str):
                raise Fail("%s: expected metadata %s, got %s" % (where, k, md))
        if tid is not None and md.get("taskId") != tid:
            raise Fail("%s: expected metadata taskId %s, got %s" % (where, tid, md.get("taskId")))
        if mid is not None and kind == "conflict" and md.get("messageId") != mid:
            raise Fail("%s: expected metadata messageId %s, got %s" % (
                where, mid, md.get("messageId")))
        if "state" in members and not re.fullmatch(r"TASK_STATE_[A-Z_]+", md.get("state", "")):
            raise Fail("%s: expected metadata state, a TASK_STATE_* name, got %s" % (where, md))
        if "expiredAt" in members and parse_rfc3339(md.get("expiredAt")) is None:
            raise Fail("%s: expected metadata expiredAt (RFC 3339), got %s" % (where, md))
        checked += 1
        kinds.add(kind)
    return "%d refusals of the run (%s)" % (checked, ", ".join(sorted(kinds)))


@check("IDEM-ERR-2", "HTTP+JSON statuses: -32001 is 404, -32602 and -32004 are 400")
def b_err2(kit, b):
    if b.name != "http_json":
        raise Skip("the statuses are HTTP+JSON's (gRPC's: not checked by this kit)")
    own_refusals(kit, b)
    checked = 0
    for kind, err, tid, mid, what in list(b.refusals):
        want = REFUSALS[kind][1]
        if err.http != want:
            raise Fail("%s (%s): expected HTTP %d, got %s" % (what, kind, want, err.brief()))
        checked += 1
    return "%d refusals of the run" % checked


# --------------------------------------------------------------------------
# The run

class Kit:
    def __init__(self, args):
        self.args = args
        self.url = args.url
        self.token = args.token
        self.token2 = args.token2
        self.retention = args.retention_seconds
        self.sweep = args.sweep_seconds
        self.ask_text = args.ask_text
        self.slow_text = args.slow_text
        self.text = args.text
        self.race = args.race
        self.timeout = args.timeout
        self.only = set()
        for o in args.only or []:
            self.only.update(x.strip() for x in o.split(",") if x.strip())
        self.passed = self.failed = self.skipped = 0
        self.card = None
        self.card_url = None
        self.streaming = False

    # -- the card --
    def fetch_card(self):
        u = self.url
        if u.endswith(".json"):
            candidates = [u]
        else:
            base = u if u.endswith("/") else u + "/"
            candidates = [urllib.parse.urljoin(base, ".well-known/agent-card.json"),
                          urllib.parse.urljoin(base, "/.well-known/agent-card.json")]
        last = None
        for c in dict.fromkeys(candidates):
            try:
                st, _, data = http_call(c, "GET", None, {"A2A-Version": "1.0",
                                                         "Accept": "application/json"},
                                        timeout=self.timeout)
            except (OSError, http.client.HTTPException) as ex:
                last = "%s: %s" % (c, ex)
                continue
            doc = parse_json(data)
            if st == 200 and isinstance(doc, dict):
                self.card, self.card_url = doc, c
                caps = doc.get("capabilities") or {}
                self.streaming = caps.get("streaming") is True
                return
            last = "%s: HTTP %s" % (c, st)
        raise SystemExit("error: cannot read the agent card (%s)" % last)

    def extensions(self):
        exts = ((self.card or {}).get("capabilities") or {}).get("extensions") or []
        return exts if isinstance(exts, list) else []

    def ext_entry(self):
        for e in self.extensions():
            if isinstance(e, dict) and e.get("uri") == URI:
                return e
        return None

    def card_retention(self):
        e = self.ext_entry() or {}
        v = (e.get("params") or {}).get("retentionSeconds")
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def retention_bound(self):
        r = max(self.retention or 0, self.card_retention() or 0)
        return r + self.sweep

    def interfaces(self):
        """{binding name: interface} of the card's 1.x interfaces."""
        out = {}
        for iface in (self.card or {}).get("supportedInterfaces") or []:
            if not isinstance(iface, dict):
                continue
            v = str(iface.get("protocolVersion", ""))
            if not v.startswith("1."):
                continue
            for name, (wire, _) in BINDINGS.items():
                if iface.get("protocolBinding") == wire and name not in out and iface.get("url"):
                    out[name] = iface
        return out

    # -- reporting --
    def report(self, status, ident, where, text):
        if status == "PASS":
            self.passed += 1
        elif status == "FAIL":
            self.failed += 1
        else:
            self.skipped += 1
        print("%s %s (%s) %s" % (status, ident, where, text), flush=True)

    def selected(self, ident):
        return not self.only or ident in self.only

    def run_check(self, entry, b, where):
        ident, scope, title, fn, needs = entry
        if not self.selected(ident):
            return
        why = need(self, b, needs)
        if why:
            self.report("SKIP", ident, where, "%s: %s" % (title, why))
            return
        try:
            detail = fn(self, b)
            self.report("PASS", ident, where, title + (": " + detail if detail else ""))
        except Skip as s:
            self.report("SKIP", ident, where, "%s: %s" % (title, s))
        except Fail as f:
            self.report("FAIL", ident, where, "%s: %s" % (title, f))
        except (OSError, http.client.HTTPException) as ex:
            self.report("FAIL", ident, where, "%s: the connection failed: %r" % (title, ex))
        except Exception as ex:  # a server answer the kit could not read
            self.report("FAIL", ident, where, "%s: unexpected answer (%s: %s)" % (
                title, type(ex).__name__, ex))

    def prepare_retention(self, b):
        """The task that must expire, made first so that its retention runs
        while the other checks do."""
        b.ret = {}
        if self.retention is None or not any(self.selected(i) for i in
                                             ("IDEM-RET-1", "IDEM-RET-2", "IDEM-DEC-5")):
            return
        try:
            m, _, t = completed_task(b, "the task for the retention checks (plain first "
                                     "message)")
            b.ret.update(message=m, task=t, settled_at=time.time())
        except Fail as f:
            b.ret["error"] = "the task for the retention checks: %s" % f
        except Exception as ex:
            b.ret["error"] = "the task for the retention checks: %r" % ex

    def run(self):
        self.fetch_card()
        offered = self.interfaces()
        wanted = [x.strip() for x in (self.args.binding or ",".join(BINDINGS)).split(",")
                  if x.strip()]
        for w in wanted:
            if w not in BINDINGS:
                raise SystemExit("error: unknown binding %r (jsonrpc, http_json)" % w)
        if self.args.binding:
            missing = [w for w in wanted if w not in offered]
            if missing:
                raise SystemExit("error: the card offers no %s interface at protocolVersion 1.x"
                                 % " or ".join(missing))
        bindings = [BINDINGS[w][1](self, offered[w]) for w in wanted if w in offered]
        if not bindings:
            raise SystemExit("error: the card at %s offers no JSONRPC or HTTP+JSON interface at "
                             "protocolVersion 1.x" % self.card_url)
        known = set(c[0] for c in CHECKS)
        for o in sorted(self.only - known):
            print("warning: --only %s: no such check (known: %s)" % (o, ", ".join(sorted(known))),
                  file=sys.stderr)
        start = time.time()
        for entry in CHECKS:
            if entry[1] == "card":
                self.run_check(entry, None, "card")
        for entry in CHECKS:
            if entry[1] == "kit":
                self.run_check(entry, None, "kit")
        for b in bindings:
            self.prepare_retention(b)
            for entry in CHECKS:
                if entry[1] == "binding":
                    self.run_check(entry, b, b.name)
        print("%d skipped (%s; %.1f s)" % (self.skipped, ", ".join(b.name for b in bindings),
                                           time.time() - start), flush=True)
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        return 0 if self.failed == 0 else 1


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="run.py",
        description="Check an A2A 1.0 server against the idempotency extension %s "
                    "(docs/extension.md)." % URI)
    p.add_argument("url", help="the server's base URL (its agent card is read from "
                               ".well-known/agent-card.json below it), or the card's URL")
    p.add_argument("--token", help="bearer token of the first principal")
    p.add_argument("--token2", help="bearer token of a second principal (IDEM-SCOPE-1)")
    p.add_argument("--retention-seconds", type=int, metavar="N",
                   help="the server runs with a short retention (N s): wait for a finished task "
                        "to expire (IDEM-RET-1, IDEM-RET-2, IDEM-DEC-5)")
    p.add_argument("--sweep-seconds", type=float, default=30, metavar="S",
                   help="how long past the retention the server may take to expire a task "
                        "(default 30)")
    p.add_argument("--binding", metavar="LIST",
                   help="jsonrpc, http_json or both, comma-separated (default: whichever the card "
                        "offers at protocolVersion 1.x)")
    p.add_argument("--only", action="append", metavar="IDEM-...",
                   help="run only these identifiers (comma-separated; repeatable)")
    p.add_argument("--ask-text", metavar="TEXT",
                   help="a message text the agent answers with input-required (IDEM-DEC-4, "
                        "IDEM-REP-1 after a continuation, IDEM-GEN-3 on SubscribeToTask)")
    p.add_argument("--slow-text", metavar="TEXT",
                   help="a message text the agent works on for several seconds (the busy row: "
                        "IDEM-DEC-3 TASK_NOT_ACCEPTING_INPUT)")
    p.add_argument("--text", default="hello from the idempotency conformance kit",
                   help="the plain text message the agent completes (default: %(default)r)")
    p.add_argument("--race", type=int, default=8, metavar="N",
                   help="identical requests sent at once in IDEM-DEC-1/4 (default 8)")
    p.add_argument("--timeout", type=float, default=30, metavar="S",
                   help="bound on one request (default 30; scaled by ONCE_TEST_TIMEOUT_FACTOR)")
    args = p.parse_args(argv)
    if args.race < 2:
        p.error("--race must be 2 or more")
    try:
        return Kit(args).run()
    except SystemExit as ex:
        if isinstance(ex.code, str):
            print(ex.code, file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
