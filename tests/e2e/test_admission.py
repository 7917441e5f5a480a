#!/usr/bin/env python3
"""Which requests onced takes at all (src/http/admit.c; docs/wire.md, "Who
may call"), seen from raw HTTP:

- DNS rebinding: a request naming a Host onced is not reachable as is
  answered 421 on every route family (JSON-RPC, HTTP+JSON, the card, the
  inspector's login and pages, SSE streams, /healthz, /readyz, /metrics)
  and changes nothing (the login sets no cookie); the loopback names pass;
  --allowed-hosts replaces them; --public-url's host always passes; the
  operations endpoints take IP literals and localhost; a wildcard bind takes
  any name and warns when --auth-tokens is off.
- Cross-site request forgery, the headers a browser adds (tests/browser/csrf.mjs
  drives a real one): a foreign Origin, or Sec-Fetch-Site cross-site or
  same-site without one, is 403 on a call that changes state; a body
  without a JSON Content-Type is 415; clients that send neither header
  pass; --cors-origin answers its origin's preflight and calls with the
  CORS headers, streams (SSE) included.
"""
import json
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (Onced, call, check, eq, http_request, new_id, rpc,  # noqa: E402
                     user_message)
from test_sse import Stream  # noqa: E402

TOKEN = "tok-" + new_id()
EVIL = "evil.example"


def tokens_file(tmp):
    path = os.path.join(tmp, "tokens")
    with open(path, "w") as f:
        f.write("%s alice\n" % TOKEN)
    return path


def reason(doc):
    """once's reason of a JSON-RPC or an AIP-193 error body."""
    err = (doc or {}).get("error") or {}
    infos = err.get("data") or err.get("details") or []
    return infos[-1].get("reason") if infos else None


def refused(got, status, why, what):
    st, _, doc = got
    eq((st, reason(doc)), (status, why), what)


def send(port, host=None, headers=None, **kw):
    h = dict(headers or {})
    if host is not None:
        h["Host"] = host
    return rpc(port, "SendMessage", {"message": user_message("hello")}, headers=h, **kw)


def tasks(port, token=None):
    st, _, doc = rpc(port, "ListTasks", {}, token=token)
    eq(st, 200, "ListTasks: %r" % (doc,))
    return [t["id"] for t in doc["result"]["tasks"]]


def test_rebinding_refused_on_every_route():
    tmp = harness.tempfile.mkdtemp(prefix="once-e2e-")
    srv = Onced(["--inspect", "--auth-tokens", tokens_file(tmp)], tmpdir=tmp)
    try:
        p = srv.port
        evil = "%s:%d" % (EVIL, p)
        auth = {"Authorization": "Bearer " + TOKEN}
        refused(send(p, evil, token=TOKEN), 421, "HOST_NOT_ALLOWED", "JSON-RPC SendMessage")
        refused(call(p, "POST", "/message:send", {"message": user_message("hi")}, token=TOKEN,
                     headers={"Host": evil}), 421, "HOST_NOT_ALLOWED", "HTTP+JSON message:send")
        refused(call(p, "GET", "/tasks/t-1", token=TOKEN, headers={"Host": evil}), 421,
                "HOST_NOT_ALLOWED", "HTTP+JSON GET /tasks/{id}")
        eq(tasks(p, TOKEN), [], "nothing registered through the rebound name")
        st, hd, data = http_request(p, "GET", "/.well-known/agent-card.json", headers={"Host": evil})
        eq(st, 421, "the card")
        # The login of issue 31: the form from the rebound page, Origin and
        # Host both the attacker's name, would have set the token's cookie.
        form = urllib.parse.urlencode({"token": TOKEN})
        st, hd, data = http_request(p, "POST", "/inspect/login", body=form, headers={
            "Host": evil, "Origin": "http://" + evil,
            "Content-Type": "application/x-www-form-urlencoded"})
        eq((st, "set-cookie" in hd), (421, False), "the inspector's login: no cookie")
        st, hd, data = http_request(p, "GET", "/inspect/", headers=dict(auth, Host=evil))
        eq(st, 421, "an inspector page")
        st, hd, data = http_request(p, "GET", "/inspect/api/task/t-1", headers=dict(auth, Host=evil))
        eq(st, 421, "the inspector's API")
        s = Stream(p, "SendStreamingMessage", {"message": user_message("hi")},
                   headers=dict(auth, Host=evil))
        eq((s.status, s.sse, reason(s.doc)), (421, False, "HOST_NOT_ALLOWED"), "an SSE stream")
        for path in ("/healthz", "/readyz", "/metrics"):
            st, _, _ = http_request(p, "GET", path, headers={"Host": evil})
            eq(st, 421, path + " from a rebound page")
            for name in ("10.20.30.40:9", "localhost", "[::1]:%d" % p):
                st, _, _ = http_request(p, "GET", path, headers={"Host": name})
                eq(st, 200, "%s with Host %s (a probe names an address)" % (path, name))
        # The --metrics listener of its own keeps the same rule.
        mport = harness.free_port()
        with Onced(["--metrics", "127.0.0.1:%d" % mport], tmpdir=tmp) as m:
            harness.wait_until(lambda: http_request(mport, "GET", "/metrics")[0] == 200,
                               what="the metrics listener")
            st, _, _ = http_request(mport, "GET", "/metrics", headers={"Host": EVIL})
            eq(st, 421, "--metrics ADDR:PORT from a rebound page")
            for name in ("127.0.0.1:%d" % mport, "localhost", "10.20.30.40:9"):
                st, _, _ = http_request(mport, "GET", "/metrics", headers={"Host": name})
                eq(st, 200, "--metrics with Host %s" % name)
        # The names a loopback onced is reached by.
        for name in ("127.0.0.1:%d" % p, "localhost:%d" % p, "LOCALHOST", "[::1]:%d" % p,
                     "127.0.0.1:1"):
            st, _, doc = send(p, name, token=TOKEN)
            eq(st, 200, "Host %s: %r" % (name, doc))
        st, hd, data = http_request(p, "POST", "/inspect/login", body=form, headers={
            "Origin": "http://127.0.0.1:%d" % p,
            "Content-Type": "application/x-www-form-urlencoded"})
        eq((st, "set-cookie" in hd), (303, True), "the login from onced's own page")
    finally:
        srv.stop()


def test_allowed_hosts_and_public_url():
    # 127.0.0.1: the harness reads the card there to see onced is up.
    srv = Onced(["--allowed-hosts", "agent.example,10.9.8.7,127.0.0.1", "--allowed-hosts", "[fd00::5]",
                 "--public-url", "http://front.example:8443/a2a"])
    try:
        p = srv.port
        for name in ("agent.example", "Agent.Example:1234", "10.9.8.7:80", "[fd00::5]:1",
                     "front.example:8443"):
            st, _, doc = send(p, name, headers={"Origin": "http://" + name})
            eq(st, 200, "Host %s listed (any port): %r" % (name, doc))
        for name in ("localhost", "[::1]:%d" % p, EVIL, "agent.example.evil.example",
                     "10.9.8.7.evil.example"):
            refused(send(p, name), 421, "HOST_NOT_ALLOWED", "Host %s: not listed" % name)
        st, _, _ = http_request(p, "GET", "/healthz", headers={"Host": "10.1.1.1:%d" % p})
        eq(st, 200, "/healthz on the address it is probed at")
        # The public URL's origin is onced's own, whatever Host a proxy sends.
        st, _, doc = send(p, "localhost", headers={"Origin": "http://front.example:8443"})
        eq(st, 421, "the Host rule first")
        st, _, doc = send(p, "agent.example", headers={"Origin": "http://front.example:8443"})
        eq(st, 200, "an Origin of the public URL: %r" % (doc,))
    finally:
        srv.stop()
    srv = Onced(["--allowed-hosts", "*"])
    try:
        eq(send(srv.port, EVIL)[0], 200, "--allowed-hosts '*': any name")
    finally:
        srv.stop()


def test_wildcard_bind_takes_any_host_and_warns():
    port = harness.free_port()
    srv = Onced(["--listen", "0.0.0.0:%d" % port], port=port)
    try:
        eq(send(port, "%s:%d" % (EVIL, port))[0], 200, "a wildcard bind takes any name")
        check("unauthenticated" in srv.logtext() and "--allowed-hosts" in srv.logtext(),
              "and warns without --auth-tokens: %s" % srv.logtext())
    finally:
        srv.stop()
    tmp = harness.tempfile.mkdtemp(prefix="once-e2e-")
    srv = Onced(["--listen", "127.0.0.1:%d" % port, "--auth-tokens", tokens_file(tmp)],
                port=port, tmpdir=tmp)
    try:
        check("unauthenticated" not in srv.logtext(), "no warning on loopback")
    finally:
        srv.stop()


def test_cross_site_headers():
    srv = Onced([])
    try:
        p = srv.port
        own = "http://127.0.0.1:%d" % p
        for h in ({"Origin": "http://127.0.0.1:1"}, {"Origin": "null"},
                  {"Origin": "http://localhost:%d" % p},
                  {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
            refused(send(p, headers=h), 403, "ORIGIN_NOT_ALLOWED", "JSON-RPC with %r" % h)
            refused(call(p, "POST", "/message:send", {"message": user_message("x")}, headers=h),
                    403, "ORIGIN_NOT_ALLOWED", "HTTP+JSON with %r" % h)
            refused(call(p, "POST", "/tasks/t-1:cancel", headers=h), 403, "ORIGIN_NOT_ALLOWED",
                    "a cancel without a body, with %r" % h)
        eq(tasks(p), [], "nothing registered")
        for h in ({"Origin": own}, {"Origin": own.upper()}, {"Sec-Fetch-Site": "same-origin"},
                  {"Sec-Fetch-Site": "none"}, {}):
            eq(send(p, headers=h)[0], 200, "JSON-RPC with %r" % h)
        st, _, doc = call(p, "GET", "/tasks", headers={"Origin": "http://127.0.0.1:1"})
        eq(st, 200, "a read without a state change from any origin: %r" % (doc,))
        st, _, _ = http_request(p, "GET", "/.well-known/agent-card.json",
                                headers={"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "cross-site"})
        eq(st, 200, "the card from anywhere")
        body = '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}'
        st, _, doc = call(p, "POST", "/", body, ctype=None)
        eq((st, reason(doc)), (415, "CONTENT_TYPE_NOT_SUPPORTED"), "a body without Content-Type")
        st, _, doc = call(p, "POST", "/message:send", '{"message":{}}', ctype=None)
        eq((st, reason(doc)), (415, "CONTENT_TYPE_NOT_SUPPORTED"), "HTTP+JSON: the same")
        tid = send(p)[2]["result"]["task"]["id"]
        st, _, doc = call(p, "POST", "/tasks/%s:subscribe" % tid, ctype=None)
        check(st in (200, 400) and reason(doc) != "CONTENT_TYPE_NOT_SUPPORTED",
              "a POST without a body needs no Content-Type: %r %r" % (st, doc))
        # Refused on the same keep-alive connection, its body read: the next
        # request on it is answered.
        c = harness.http.client.HTTPConnection("127.0.0.1", p, timeout=harness.scaled(30))
        try:
            for h in ({"Origin": "http://127.0.0.1:1", "Content-Type": "application/json"},
                      {"Content-Type": "application/json"}):
                c.request("POST", "/?A2A-Version=1.0", body=body, headers=h)
                r = c.getresponse()
                r.read()
            eq(r.status, 200, "the connection serves the next request after a refusal")
        finally:
            c.close()
    finally:
        srv.stop()


def test_cors_origin():
    app = "http://app.example:3000"
    srv = Onced(["--cors-origin", app, "--cors-origin", "https://other.example/"])
    try:
        p = srv.port
        st, hd, data = http_request(p, "OPTIONS", "/", headers={
            "Origin": app, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,a2a-version,a2a-extensions"})
        eq(st, 204, "the preflight of an allowed origin")
        eq(hd.get("access-control-allow-origin"), app, "Allow-Origin")
        allowed = [x.strip().lower() for x in hd.get("access-control-allow-headers", "").split(",")]
        for name in ("a2a-version", "a2a-extensions", "authorization", "content-type",
                     "last-event-id"):
            check(name in allowed, "Allow-Headers has %s: %r" % (name, allowed))
        check("POST" in hd.get("access-control-allow-methods", ""), "Allow-Methods")
        check("Origin" in hd.get("vary", ""), "Vary: Origin")
        st, hd, data = http_request(p, "OPTIONS", "/message:send", headers={
            "Origin": "https://other.example", "Access-Control-Request-Method": "POST"})
        eq((st, hd.get("access-control-allow-origin")), (204, "https://other.example"),
           "the second origin, on an HTTP+JSON route")
        st, hd, data = http_request(p, "OPTIONS", "/", headers={
            "Origin": "http://app.example:3001", "Access-Control-Request-Method": "POST"})
        check(st != 204 and "access-control-allow-origin" not in hd,
              "no preflight for an origin not listed: %d %r" % (st, hd))
        mid = new_id()
        st, hd, doc = rpc(p, "SendMessage", {"message": user_message("hi", task_id=mid)}, ext=True,
                          headers={"Origin": app, "Sec-Fetch-Site": "cross-site"})
        eq(st, 200, "a call from the allowed origin: %r" % (doc,))
        eq(hd.get("access-control-allow-origin"), app, "its answer carries Allow-Origin")
        exposed = hd.get("access-control-expose-headers", "")
        check("Idempotent-Replayed" in exposed and "A2A-Extensions" in exposed,
              "Expose-Headers: %r" % exposed)
        check("Origin" in hd.get("vary", ""), "Vary: Origin")
        # A stream's answer too: a page there reads its events.
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                           "params": {"message": user_message("streamed", task_id=new_id())}})
        st, hd, data = http_request(p, "POST", "/", body=body.encode(), headers={
            "Origin": app, "Sec-Fetch-Site": "cross-site", "Content-Type": "application/json",
            "A2A-Version": "1.0", "A2A-Extensions": "urn:once:a2a:idempotency:v1",
            "Accept": "text/event-stream"})
        eq((st, hd.get("content-type", "").split(";")[0]), (200, "text/event-stream"),
           "a stream from the allowed origin")
        eq(hd.get("access-control-allow-origin"), app, "the stream carries Allow-Origin")
        check("Origin" in hd.get("vary", ""), "and Vary: Origin")
        check("A2A-Extensions" in hd.get("access-control-expose-headers", ""),
              "and Expose-Headers")
        st, hd, doc = rpc(p, "SendMessage", {"message": user_message("hi")},
                          headers={"Origin": "http://app.example:3001"})
        eq((st, "access-control-allow-origin" in hd), (403, False), "another origin")
        st, hd, data = http_request(p, "GET", "/.well-known/agent-card.json", headers={"Origin": app})
        eq((st, hd.get("access-control-allow-origin")), (200, app), "the card, readable there")
        st, hd, data = http_request(p, "GET", "/.well-known/agent-card.json")
        check("access-control-allow-origin" not in hd and "Origin" in hd.get("vary", ""),
              "without Origin: no Allow-Origin, Vary: Origin %r" % hd)
    finally:
        srv.stop()


def test_bad_flags():
    for args, says in ((["--cors-origin", "app.example"], "--cors-origin"),
                       (["--cors-origin", "http://app.example/path"], "--cors-origin"),
                       (["--allowed-hosts", "evil.example:80"], "--allowed-hosts"),
                       (["--allowed-hosts", "a,,b"], "--allowed-hosts")):
        p = harness.subprocess.run([harness.ONCED, "--listen", "127.0.0.1:%d" % harness.free_port(),
                                    "--store", "memory:"] + args, capture_output=True,
                                   timeout=harness.scaled(15))
        err = p.stderr.decode()
        eq(p.returncode != 0 and says in err, True, "%r refused: %r" % (args, err))


if __name__ == "__main__":
    sys.exit(harness.run([test_rebinding_refused_on_every_route, test_allowed_hosts_and_public_url,
                          test_wildcard_bind_takes_any_host_and_warns, test_cross_site_headers,
                          test_cors_origin, test_bad_flags]))
