"""Reload without restart (SIGHUP) and onced --check-config, end to end.

Every check after a SIGHUP first waits for once_config_reloads_total in
/metrics to count that reload (the signal is handled on onced's main
thread, at its own pace), then asserts. Checked:
  - tokens: a token added to the --auth-tokens file works and a removed one
    gets 401 after SIGHUP; a malformed file keeps the old tokens, logs one
    line naming the file and the line, and turns
    once_config_last_reload_successful to 0;
  - TLS: after the certificate and key files are replaced, a new connection
    is served the new certificate (its SHA-256, as python's ssl sees it, is
    the one the reload line logs) while a connection handshaken before
    keeps its certificate and is served; a key of another certificate keeps
    the pair served;
  - the card: a changed --card file shows in /.well-known/agent-card.json
    with a new ETag; a card that sets a member onced owns keeps the old;
  - the log level: --log-level-file's level is read again (a request line
    vanishes under "warn", comes back under "info");
  - SIGHUP is not a stop: after reloads, one SIGTERM still drains and exits 0;
  - --check-config: exit 0 and "configuration OK" for good files, exit 2
    with one line per problem (store scheme, tokens, TLS pair, card,
    log-level file) and their count, nothing served.

Python 3 standard library and the openssl command.
"""
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BUILT, ONCED, Onced, check, eq, free_port, http_get, needs,  # noqa: E402
                     read_all, rpc, run, scaled, scratch_dir, wait_until)

TMP = scratch_dir("once-reload-")
BUILT_TLS = "tls" in BUILT


def path(name):
    return os.path.join(TMP, name)


def write(name, text):
    """Replace the file whole (a rename), as an operator's deploy should."""
    tmp = path(name + ".new")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path(name))


def copy(src, dst):
    shutil.copyfile(path(src), path(dst + ".new"))
    os.replace(path(dst + ".new"), path(dst))


def openssl(*args):
    p = subprocess.run(["openssl"] + list(args), capture_output=True, text=True,
                       timeout=scaled(60))
    check(p.returncode == 0, "openssl %s: %s" % (" ".join(args[:2]), p.stderr))


def self_signed(name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=" + name, "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", path(name + ".key"), "-out", path(name + ".pem"))


def der_sha256(pem_name):
    with open(path(pem_name)) as f:
        der = ssl.PEM_cert_to_DER_cert(f.read())
    return hashlib.sha256(der).hexdigest()


def unverified():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def metrics_text(port, tls=False):
    if tls:
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=scaled(10),
                                        context=unverified())
    else:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(10))
    try:
        c.request("GET", "/metrics")
        return c.getresponse().read().decode()
    finally:
        c.close()


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def reloads(port, tls=False):
    text = metrics_text(port, tls)
    return (metric(text, 'once_config_reloads_total{result="ok"}') or 0,
            metric(text, 'once_config_reloads_total{result="failed"}') or 0)


def hup(srv, tls=False):
    """SIGHUP, then wait until /metrics counts the reload; its (ok, failed)
    counts."""
    before = sum(reloads(srv.port, tls))
    srv.signal(signal.SIGHUP)
    return wait_until(lambda: (lambda r: r if sum(r) > before else None)(reloads(srv.port, tls)),
                      timeout=15, what="the reload to be counted")


def reload_lines(srv, what):
    out = []
    for line in srv.logtext_all().splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if doc.get("event") == "reload" and doc.get("what") == what:
            out.append(doc)
    return out


def status_with(port, token):
    st, _, _ = rpc(port, "ListTasks", {}, token=token)
    return st


def test_tokens():
    write("tokens", "tok-a alice\n")
    with Onced(["--auth-tokens", path("tokens"), "--log-format", "json"]) as srv:
        eq(status_with(srv.port, "tok-a"), 200, "tok-a before the reload")
        eq(status_with(srv.port, "tok-b"), 401, "tok-b before the reload")
        write("tokens", "# rotated\ntok-b bob\n")
        eq(hup(srv), (1, 0), "reloads (ok, failed)")
        eq(status_with(srv.port, "tok-b"), 200, "a token added to the file")
        eq(status_with(srv.port, "tok-a"), 401, "a token removed from the file")
        line = reload_lines(srv, "tokens")[-1]
        eq((line["result"], line["file"], line["tokens"]), ("ok", path("tokens"), "1"),
           "the reload line")

        write("tokens", "tok-c carol\nlonely\n")
        eq(hup(srv), (1, 1), "reloads after a malformed file")
        eq(status_with(srv.port, "tok-b"), 200, "the old tokens are kept")
        eq(status_with(srv.port, "tok-c"), 401, "nothing of the malformed file is taken")
        line = reload_lines(srv, "tokens")[-1]
        eq((line["result"], line["level"]), ("failed", "error"), "the failure line")
        check(path("tokens") in line["message"] and "line 2" in line["message"],
              "the line names the file and the line: %r" % line)
        text = metrics_text(srv.port)
        eq(metric(text, "once_config_last_reload_successful"), 0, "last reload successful")
        check(metric(text, "once_config_last_reload_success_timestamp_seconds") > 0,
              "the time of the last good reload is kept")
        srv.stop()
        eq(srv.proc.returncode, 0, "SIGHUP is no stop: one SIGTERM drains and exits 0")


def served_cert(port):
    """The SHA-256 of the certificate a new connection is served (its
    handshake done, the card then read over it)."""
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=scaled(10), context=unverified())
    try:
        c.connect()
        der = c.sock.getpeercert(binary_form=True)
        c.request("GET", "/.well-known/agent-card.json")
        r = c.getresponse()
        r.read()
        eq(r.status, 200, "the card over TLS")
        return hashlib.sha256(der).hexdigest()
    finally:
        c.close()


def handshaken(port):
    """A TLS connection whose handshake is done and no request sent yet."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=scaled(10))
    return unverified().wrap_socket(raw)


def healthz_on(sock):
    """GET /healthz on that connection: the status line."""
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    return read_all(sock).split(b"\r\n", 1)[0].decode()


class TlsOnced(Onced):
    """onced serving HTTPS; ready when /healthz answers over TLS."""

    def wait_ready(self, timeout=15.0):
        def up():
            if self.proc.poll() is not None:
                raise RuntimeError("onced exited: %s" % self.logtext())
            try:
                return served_cert(self.port)
            except (OSError, ssl.SSLError):
                return None
        wait_until(up, timeout=timeout, what="onced to serve HTTPS")


def test_tls_pair():
    if not needs("tls", "the TLS pair's reload"):
        return
    for name in ("one", "two", "rogue"):
        self_signed(name)
    copy("one.pem", "srv.pem")
    copy("one.key", "srv.key")
    with TlsOnced(["--tls-cert", path("srv.pem"), "--tls-key", path("srv.key"),
                   "--log-format", "json"]) as srv:
        first = served_cert(srv.port)
        eq(first, der_sha256("one.pem"), "the certificate served at start")
        old = handshaken(srv.port)
        copy("two.pem", "srv.pem")
        copy("two.key", "srv.key")
        eq(hup(srv, tls=True), (1, 0), "reloads (ok, failed)")
        now = served_cert(srv.port)
        eq(now, der_sha256("two.pem"), "a new connection gets the new certificate")
        eq(reload_lines(srv, "tls")[-1]["sha256"], now, "the reload line's fingerprint")
        eq(hashlib.sha256(old.getpeercert(binary_form=True)).hexdigest(), first,
           "a connection handshaken before keeps its certificate")
        eq(healthz_on(old), "HTTP/1.1 200 OK", "and is served")
        old.close()

        copy("rogue.key", "srv.key")   # another pair's key
        eq(hup(srv, tls=True), (1, 1), "reloads after a bad key")
        again = served_cert(srv.port)
        eq(again, der_sha256("two.pem"), "a bad key keeps the pair served")
        line = reload_lines(srv, "tls")[-1]
        eq(line["result"], "failed", "the failure line")
        check(path("srv.key") in line["message"], "it names the key file: %r" % line)


def card(port):
    st, hd, data = http_get(port, "/.well-known/agent-card.json")
    eq(st, 200, "the card")
    return json.loads(data), hd.get("etag")


def test_card():
    write("card.json", json.dumps({"name": "Alpha", "description": "before"}))
    with Onced(["--card", path("card.json"), "--log-format", "json"]) as srv:
        doc, etag = card(srv.port)
        eq(doc["name"], "Alpha", "the card at start")
        write("card.json", json.dumps({"name": "Beta", "description": "after"}))
        eq(hup(srv), (1, 0), "reloads (ok, failed)")
        doc, etag2 = card(srv.port)
        eq((doc["name"], doc["description"]), ("Beta", "after"), "the card after the reload")
        check(etag2 != etag, "a new ETag")
        eq(reload_lines(srv, "card")[-1]["changed"], "true", "the reload line")

        write("card.json", json.dumps({"name": "Gamma", "capabilities": {}}))
        eq(hup(srv), (1, 1), "reloads after a bad card")
        doc, etag3 = card(srv.port)
        eq((doc["name"], etag3), ("Beta", etag2), "a bad card keeps the card served")
        line = reload_lines(srv, "card")[-1]
        check(line["result"] == "failed" and "capabilities" in line["message"],
              "the failure names the member: %r" % line)


def request_logged(srv, rid):
    return any('"request_id":"%s"' % rid in line for line in srv.logtext_all().splitlines())


def test_log_level():
    write("level", "info\n")
    with Onced(["--log-level-file", path("level"), "--log-format", "json"]) as srv:
        write("level", "# quieter for a while\nwarn\n")
        eq(hup(srv), (1, 0), "reloads (ok, failed)")
        eq(reload_lines(srv, "log_level")[-1]["level"], "warn", "the reload line")
        rpc(srv.port, "ListTasks", {}, headers={"X-Request-Id": "under-warn"})
        write("level", "info")
        eq(hup(srv), (2, 0), "reloads (ok, failed)")
        rpc(srv.port, "ListTasks", {}, headers={"X-Request-Id": "under-info"})
        wait_until(lambda: request_logged(srv, "under-info"), what="the request line under info")
        check(not request_logged(srv, "under-warn"), "no request line under warn")
        write("level", "loud\n")
        eq(hup(srv), (2, 1), "reloads after a bad level")
        check("expected one word" in reload_lines(srv, "log_level")[-1]["message"],
              "the failure says what the file must hold")


def check_config(*args):
    port = free_port()
    p = subprocess.run([ONCED, "--listen", "127.0.0.1:%d" % port] + list(args),
                       capture_output=True, text=True, timeout=scaled(30))
    return p.returncode, p.stdout, p.stderr


def test_check_config():
    self_signed("cc")
    self_signed("cc-other")
    write("cc-tokens", "tok alice\n")
    write("cc-card.json", json.dumps({"name": "Checked"}))
    write("cc-level", "debug\n")
    # Without TLS built in, --tls-cert is itself the problem.
    tls = ["--tls-cert", path("cc.pem"), "--tls-key", path("cc.key")] if BUILT_TLS else []
    rc, out, err = check_config("--store", "sqlite:" + path("never.db"), "--auth-tokens",
                                path("cc-tokens"), *tls, "--card", path("cc-card.json"),
                                "--log-level-file", path("cc-level"), "--check-config")
    eq((rc, out.strip()), (0, "configuration OK"), "a good configuration: " + err)
    check(not os.path.exists(path("never.db")), "the store is not opened")

    write("cc-tokens", "tok alice\ntok bob\n")
    write("cc-card.json", json.dumps({"name": "Checked", "url": "http://elsewhere/"}))
    write("cc-level", "chatty\n")
    rc, out, err = check_config("--store", "mysql://db", "--auth-tokens", path("cc-tokens"),
                                "--tls-cert", path("cc.pem"), "--tls-key",
                                path("cc-other.key"), "--card", path("cc-card.json"),
                                "--log-level-file", path("cc-level"), "--check-config")
    eq(rc, 2, "a bad configuration's exit status")
    eq(out, "", "nothing on stdout")
    for want in ("--store: unknown store scheme 'mysql'",
                 "--auth-tokens %s: line 2: duplicate token" % path("cc-tokens"),
                 "--tls-key %s does not belong" % path("cc-other.key") if BUILT_TLS
                 else "--tls-cert: TLS support was not built in",
                 "--card %s: " % path("cc-card.json"),
                 "--log-level-file %s: expected one word" % path("cc-level"),
                 "configuration has 5 problems"):
        check(want in err, "stderr says %r: %s" % (want, err))

    rc, _, err = check_config("--store", "memory:", "--log-level", "info", "--log-level-file",
                              path("cc-level"), "--check-config")
    eq(rc, 2, "a bad command line is still exit 2")
    check("exclusive" in err, "and says why: " + err)


if __name__ == "__main__":
    run([test_tokens, test_tls_pair, test_card, test_log_level, test_check_config])
