"""HTTPS end to end (onced --tls-cert/--tls-key; once --cacert/--insecure).

A throwaway CA and server certificates are made at test time with the
openssl command (scripts/deps.sh installs it). Checked:
  - onced serves the card, JSON-RPC and HTTP+JSON over TLS, and the card's
    interface URLs say https;
  - `once --cacert CA send --wait` completes over https;
  - without --cacert (and with the right CA but a certificate for another
    host name) the client refuses after one attempt with a message naming
    --cacert, and nothing reaches onced: a later `once recover --cacert`
    registers that very intent, once;
  - --insecure skips the check;
  - plain HTTP to the TLS port gets no HTTP answer and onced keeps serving;
  - a missing file, a file that is not PEM, an encrypted key, a key of
    another certificate, and one flag without the other stop onced before
    it serves, with a message naming the file;
  - TLS 1.2+ with forward secrecy only by default: TLS 1.0, 1.1 and the
    static RSA key exchange are refused (openssl s_client); --tls-priority
    serves what an operator asks for, and a string GnuTLS refuses stops onced;
  - `once listen --tls-cert --tls-key` takes a signed webhook over https
    (and prints it), gives plain HTTP no HTTP answer, and refuses a key of
    another certificate at start.

Python 3 standard library and the openssl command.
"""
import base64
import hashlib
import hmac
import http.client
import json
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, ONCED, Onced, check, eq, free_port, new_id, run, scaled,  # noqa: E402
                     scratch_dir, user_message)

BUILD = os.environ.get("ONCE_BUILD", os.path.dirname(ONCED))
ONCE = os.path.join(BUILD, "once")
TMP = scratch_dir("once-tls-")


def path(name):
    return os.path.join(TMP, name)


def openssl(*args):
    p = subprocess.run(["openssl"] + list(args), capture_output=True, text=True,
                       timeout=scaled(60))
    check(p.returncode == 0, "openssl %s: %s" % (" ".join(args[:2]), p.stderr))


def make_pki():
    """ca.pem signs srv.pem (localhost, 127.0.0.1) and other.pem (a host
    name that is not ours); rogue.key pairs with no certificate here."""
    check(shutil.which("openssl") is not None,
          "the openssl command is missing: scripts/deps.sh installs it")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=once test CA", "-keyout", path("ca.key"), "-out", path("ca.pem"))
    for name, san in (("srv", "DNS:localhost,IP:127.0.0.1"), ("other", "DNS:other.example")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name,
                "-keyout", path(name + ".key"), "-out", path(name + ".csr"))
        with open(path(name + ".ext"), "w") as f:
            f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\n"
                    "extendedKeyUsage=serverAuth\n" % san)
        openssl("x509", "-req", "-days", "2", "-in", path(name + ".csr"), "-CA", path("ca.pem"),
                "-CAkey", path("ca.key"), "-CAcreateserial", "-extfile", path(name + ".ext"),
                "-out", path(name + ".pem"))
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
            "-out", path("rogue.key"))
    openssl("pkey", "-in", path("srv.key"), "-aes256", "-passout", "pass:secret",
            "-out", path("encrypted.key"))


def https(port, method, target, body=None, headers=None, check_name=True):
    """One request over TLS, trusting only the test CA: (status, body).
    check_name=False accepts a certificate for another host name."""
    ctx = ssl.create_default_context(cafile=path("ca.pem"))
    ctx.check_hostname = check_name
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=scaled(10), context=ctx)
    try:
        h = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        h.update(headers or {})
        c.request(method, target, body=json.dumps(body) if body is not None else None, headers=h)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class TlsOnced(Onced):
    """onced serving HTTPS with one of the certificates above; ready when its
    card answers over TLS."""

    def __init__(self, cert="srv", args=()):
        self.cert = cert
        super().__init__(["--tls-cert", path(cert + ".pem"), "--tls-key", path(cert + ".key")] +
                         list(args), tmpdir=scratch_dir("once-tls-srv-"))

    def wait_ready(self, timeout=15.0):
        end = time.time() + scaled(timeout)
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("onced exited with %s; log: %s" % (self.proc.returncode,
                                                                     self.logtext()))
            try:
                if https(self.port, "GET", "/.well-known/agent-card.json",
                         check_name=self.cert == "srv")[0] == 200:
                    return
            except (OSError, ssl.SSLError):
                pass
            time.sleep(0.05)
        raise RuntimeError("onced did not serve HTTPS; log: %s" % self.logtext())

    def url(self, host="127.0.0.1"):
        return "https://%s:%d/" % (host, self.port)

    def task_ids(self):
        st, data = https(self.port, "POST", "/", {"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                                                  "params": {"pageSize": 100}})
        eq(st, 200, "ListTasks over https")
        return [t["id"] for t in json.loads(data)["result"]["tasks"]]


def once(outbox, *args):
    """The CLI with a fresh outbox per test: (exit status, stdout, stderr)."""
    p = subprocess.run([ONCE, "--outbox", outbox, "--backoff-base", "10ms", "--backoff-cap",
                        "20ms"] + list(args), capture_output=True, text=True,
                       timeout=scaled(60))
    return p.returncode, p.stdout, p.stderr


def pending_ids(outbox):
    rc, out, err = once(outbox, "--json", "outbox", "--state", "pending")
    eq(rc, 0, "once outbox: " + err)
    return [i.get("taskId") or i.get("messageId") for i in json.loads(out)["intents"]]


def test_card_and_bindings_over_https():
    with TlsOnced() as srv:
        st, data = https(srv.port, "GET", "/.well-known/agent-card.json")
        eq(st, 200, "the card over https")
        urls = [i["url"] for i in json.loads(data)["supportedInterfaces"]]
        eq(urls, [srv.url()] * 4, "every interface advertises the https URL")
        msg = {"message": user_message("over tls", task_id="tls-rest-1")}
        st, data = https(srv.port, "POST", "/message:send", msg, {"A2A-Extensions": EXT})
        eq(st, 200, "HTTP+JSON SendMessage over https: %r" % data[:200])
        st, data = https(srv.port, "POST", "/", {"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                                 "params": {"id": "tls-rest-1"}})
        eq((st, "result" in json.loads(data)), (200, True), "JSON-RPC GetTask over https")


def test_inspector_cookie_secure():
    """Over TLS the inspector's session cookie is Secure (never sent over
    plain HTTP), HttpOnly, and holds no token."""
    token = "tok-tls-" + new_id()
    tokens = os.path.join(scratch_dir("once-tls-tokens-"), "tokens")
    with open(tokens, "w") as f:
        f.write("%s tls-user\n" % token)
    with TlsOnced(args=["--inspect", "--auth-tokens", tokens]) as srv:
        ctx = ssl.create_default_context(cafile=path("ca.pem"))
        c = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=scaled(10), context=ctx)
        try:
            c.request("POST", "/inspect/login", body="token=" + token,
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
            r = c.getresponse()
            cookie = r.getheader("Set-Cookie", "")
            r.read()
        finally:
            c.close()
        eq(r.status, 303, "login over https")
        check(cookie.startswith("once_session=") and "; Secure" in cookie and "HttpOnly" in cookie
              and token not in cookie, "a Secure session cookie: %r" % cookie)


def test_send_with_cacert():
    with TlsOnced() as srv:
        ob = path("cacert.db")
        rc, out, err = once(ob, "--cacert", path("ca.pem"), "send", "--agent", srv.url(),
                            "--text", "hello", "--wait")
        eq(rc, 0, "send --wait with --cacert: %s" % err)
        check("TASK_STATE_COMPLETED" in out, "the task completed: %r" % out)
        task = out.split()[0]
        eq(srv.task_ids(), [task], "onced holds the one task the CLI printed")


def refused_then_recovered(srv, agent, label):
    """A send the client must refuse on the certificate: one attempt, a
    message naming --cacert, nothing at onced; then recover --cacert sends
    that same intent, which makes exactly one task."""
    ob = path(label + ".db")
    rc, out, err = once(ob, "--attempts", "5", "send", "--agent", agent, "--text", label)
    eq(rc, 1, "%s: the send fails (exit 1, not retried until exhausted): %s" % (label, err))
    check("not trusted" in err and "--cacert" in err, "%s: the message says why and what to "
          "pass: %r" % (label, err))
    pending = pending_ids(ob)
    eq(len(pending), 1, "%s: the intent stays pending in the outbox" % label)
    rc, out, _ = once(ob, "--json", "outbox", "--state", "pending")
    eq(json.loads(out)["intents"][0].get("attempts"), 1, "%s: one attempt, no retry" % label)
    # The positive signal that the refused send is over: another client's
    # send over the same port is answered. Only then is the absence checked.
    rc, out, err = once(path(label + "-ok.db"), "--insecure", "send", "--agent", agent,
                        "--text", "marker")
    eq(rc, 0, "%s: a send with --insecure is answered: %s" % (label, err))
    marker = out.split()[0]
    eq(srv.task_ids(), [marker], "%s: nothing of the refused send reached onced" % label)
    rc, out, err = once(ob, "--insecure", "recover")
    eq(rc, 0, "%s: recover sends the pending intent: %s" % (label, err))
    eq(pending_ids(ob), [], "%s: nothing pending after recover" % label)
    ids = srv.task_ids()
    eq(len(ids), 2, "%s: the refused intent made exactly one task: %r" % (label, ids))
    check(pending[0] in ids, "%s: under its own ID" % label)


def test_untrusted_certificate_refused():
    with TlsOnced() as srv:
        refused_then_recovered(srv, srv.url(), "no-cacert")


def test_wrong_host_name_refused():
    with TlsOnced("other") as srv:
        ob = path("wrong-host.db")
        rc, _, err = once(ob, "--cacert", path("ca.pem"), "send", "--agent", srv.url(), "--text",
                          "x")
        eq(rc, 1, "a certificate for another host fails even with the right CA: %s" % err)
        check("not trusted" in err, "the message says the certificate is not trusted: %r" % err)


def test_insecure():
    with TlsOnced("other") as srv:
        rc, out, err = once(path("insecure.db"), "--insecure", "send", "--agent", srv.url(),
                            "--text", "anyway", "--wait")
        eq(rc, 0, "--insecure accepts any certificate: %s" % err)
        check("TASK_STATE_COMPLETED" in out, "and the task completes: %r" % out)


def test_plain_http_to_tls_port():
    with TlsOnced() as srv:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=scaled(10))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except ConnectionResetError:
            pass
        s.close()
        check(not got.startswith(b"HTTP/"), "plain HTTP gets no HTTP answer: %r" % got[:80])
        rc, _, err = once(path("plain.db"), "--attempts", "1", "send", "--agent",
                          "http://127.0.0.1:%d/" % srv.port, "--text", "plain")
        check(rc != 0, "the client's plain-HTTP send fails")
        eq(https(srv.port, "GET", "/healthz")[0], 200, "onced still serves https")
        eq(srv.task_ids(), [], "and nothing was registered")
        check(srv.proc.poll() is None, "onced is still running")


SECRET = "whsec_" + base64.b64encode(b"tls-e2e-webhook-secret-0123456").decode()


def listen(cert, key):
    """`once listen` over TLS; (process, port) once it printed its URL."""
    p = subprocess.Popen([ONCE, "listen", "--port", "0", "--secret", SECRET, "--token", "tok",
                          "--json", "--state", path("listen-%s.db" % cert), "--tls-cert",
                          path(cert + ".pem"), "--tls-key", path(key + ".key")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    if "listening on https://127.0.0.1:" not in line:
        p.wait(scaled(10))
        return p, line + p.stderr.read()
    return p, int(line.split("https://127.0.0.1:")[1].split("/")[0])


def test_listen_over_https():
    p, port = listen("srv", "srv")
    check(isinstance(port, int), "once listen serves https: %r" % (port,))
    try:
        tid, wid, ts = "t-tls-hook", "0123456789abcdef/cfg/0/t-tls-hook.1", str(int(time.time()))
        body = json.dumps({"task": {"id": tid, "contextId": "c", "generation": 1,
                                    "status": {"state": "TASK_STATE_SUBMITTED"}}})
        mac = hmac.new(base64.b64decode(SECRET[6:]), ("%s.%s." % (wid, ts)).encode() +
                       body.encode(), hashlib.sha256).digest()
        st, _ = https(port, "POST", "/hook", json.loads(body),
                      {"Content-Type": "application/a2a+json", "webhook-id": wid,
                       "webhook-timestamp": ts, "X-A2A-Notification-Token": "tok",
                       "webhook-signature": "v1," + base64.b64encode(mac).decode()})
        eq(st, 204, "a signed delivery over https is accepted")
        check(select.select([p.stdout], [], [], scaled(10))[0], "the delivery is printed")
        line = p.stdout.readline()
        eq(json.loads(line)["taskId"], tid, "and handed over (printed)")
        s = socket.create_connection(("127.0.0.1", port), timeout=scaled(10))
        s.sendall(b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        try:
            got = s.recv(4096)
        except ConnectionResetError:
            got = b""
        s.close()
        check(not got.startswith(b"HTTP/"), "plain HTTP gets no HTTP answer: %r" % got[:80])
    finally:
        p.send_signal(signal.SIGTERM)
        eq(p.wait(scaled(10)), 0, "once listen exits 0")
    p, said = listen("srv", "rogue")
    eq(p.returncode, 1, "once listen with a key of another certificate exits 1")
    check("does not belong to the certificate" in said, "naming the problem: %r" % said)


def negotiated(port, *flags):
    """What `openssl s_client` agrees with onced: "TLSv1.2 ECDHE-RSA-..."
    or None when the handshake fails."""
    p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port] + list(flags),
                       input="", capture_output=True, text=True, timeout=scaled(30))
    for line in p.stdout.splitlines():
        if line.startswith("New, "):   # "New, TLSv1.2, Cipher is X" or "New, (NONE), ..."
            parts = line.split(", ")
            if parts[1] == "(NONE)":
                return None
            return "%s %s" % (parts[1], parts[2].replace("Cipher is ", ""))
    return None


def test_old_protocols_and_static_rsa_refused():
    """TLS 1.2+ with forward secrecy only, by default: the handshakes that
    should work do (the positive signal), then TLS 1.0, TLS 1.1 and the
    static RSA key exchange (no forward secrecy) are refused, even by a
    client that offers nothing else; --tls-priority serves what an operator
    asks for instead, and one GnuTLS refuses stops onced naming the flag."""
    old = ["-cipher", "DEFAULT:@SECLEVEL=0"]   # let the client offer what it would not
    with TlsOnced() as s:
        got = negotiated(s.port, "-tls1_3")
        check(got is not None and got.startswith("TLSv1.3"), "TLS 1.3 served: %r" % got)
        got = negotiated(s.port, "-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256")
        eq(got, "TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256", "TLS 1.2 with ECDHE served")
        eq(negotiated(s.port, "-tls1", *old), None, "TLS 1.0 refused")
        eq(negotiated(s.port, "-tls1_1", *old), None, "TLS 1.1 refused")
        eq(negotiated(s.port, "-tls1_2", "-cipher", "AES128-GCM-SHA256"), None,
           "the static RSA key exchange refused")
        eq(negotiated(s.port, "-tls1_2", "-cipher", "AES256-SHA256:@SECLEVEL=0"), None,
           "static RSA with CBC refused")
        st, _ = https(s.port, "GET", "/.well-known/agent-card.json")
        eq(st, 200, "onced still serves after the refusals")
    with TlsOnced(args=["--tls-priority", "NORMAL:%SERVER_PRECEDENCE"]) as s:
        eq(negotiated(s.port, "-tls1_2", "-cipher", "AES128-GCM-SHA256"),
           "TLSv1.2 AES128-GCM-SHA256", "--tls-priority NORMAL serves static RSA again")
    port = free_port()
    p = subprocess.run([ONCED, "--listen", "127.0.0.1:%d" % port, "--store", "memory:",
                        "--tls-cert", path("srv.pem"), "--tls-key", path("srv.key"),
                        "--tls-priority", "NOT-A-PRIORITY"], capture_output=True, text=True,
                       timeout=scaled(30))
    eq(p.returncode, 1, "a priority string GnuTLS refuses stops onced: %s" % p.stderr)
    check("--tls-priority" in p.stderr, "naming the flag: %r" % p.stderr)


def test_bad_files_stop_onced():
    cases = [
        (["--tls-cert", path("missing.pem"), "--tls-key", path("srv.key")], 1, "missing.pem"),
        (["--tls-cert", path("srv.key"), "--tls-key", path("srv.key")], 1,
         "no PEM certificate"),
        (["--tls-cert", path("srv.pem"), "--tls-key", path("srv.pem")], 1,
         "no PEM private key"),
        (["--tls-cert", path("srv.pem"), "--tls-key", path("encrypted.key")], 1, "encrypted"),
        (["--tls-cert", path("srv.pem"), "--tls-key", path("rogue.key")], 1,
         "does not belong to the certificate"),
        (["--tls-cert", path("srv.pem")], 2, "go together"),
        (["--tls-key", path("srv.key")], 2, "go together"),
        (["--tls-priority", "NORMAL"], 2, "--tls-priority needs --tls-cert"),
    ]
    for flags, status, words in cases:
        port = free_port()
        p = subprocess.run([ONCED, "--listen", "127.0.0.1:%d" % port, "--store", "memory:"] +
                           flags, capture_output=True, text=True, timeout=scaled(30))
        eq(p.returncode, status, "onced %s exits %d: %s" % (flags, status, p.stderr))
        check(words in p.stderr, "onced %s says %r: %r" % (flags, words, p.stderr))
        check("listening" not in p.stdout, "onced %s never served" % flags)


if __name__ == "__main__":
    make_pki()
    run([test_card_and_bindings_over_https, test_inspector_cookie_secure, test_send_with_cacert,
         test_untrusted_certificate_refused, test_wrong_host_name_refused, test_insecure,
         test_plain_http_to_tls_port, test_bad_files_stop_onced, test_listen_over_https,
         test_old_protocols_and_static_rsa_refused])
