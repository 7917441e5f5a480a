"""What an --exec agent can put in front of an operator and a user, tried by
a hostile one (issue 31, items 5, 9 and 10):

- onced's log: the agent's `log` lines and stderr lines hold newlines,
  complete JSON log records, terminal escapes (ESC[2J, an OSC title set,
  8-bit CSI), a NUL-free binary byte. With --log-format json every line of
  onced's log is one JSON object, the agent's text is exact inside it, and
  no forged record appears; with --log-format text no control byte at all
  reaches the log;
- the `once` CLI: `once send --wait` and `once get --out` run under a
  pseudo-terminal print the agent's status texts, artifact and file names,
  media types, URLs and text parts with their control characters visible
  (\\u001b), never an ESC, BEL or C1 byte; on a pipe the same; with --json
  the agent's bytes come back exact; saved file names stay plain;
- A2A 1.0 `raw` and `url` file parts read as files (name, media type, size
  or URL) in the inspector's JSON and in `once inspect`, not as [data].
"""
import base64
import json
import os
import pty
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, check, eq, http_get, run, scaled, scratch_dir,  # noqa: E402
                     wait_until)
from test_client import ONCE, TMP  # noqa: E402

ESC, BEL, CSI8 = "\x1b", "\x07", "\u009b"
HOSTILE = ESC + "[2J" + ESC + "]0;pwned" + BEL + CSI8 + "31m" + "\r"
FORGED = {"ts": "2026-01-01T00:00:00.000Z", "level": "info", "event": "request",
          "method": "SendMessage", "principal": "forged-admin", "status": 200}
FORGED_LINE = json.dumps(FORGED, separators=(",", ":"))
LOG_TEXT = "innocent\n" + FORGED_LINE + "\n" + HOSTILE + "tail"
RAW = b"\x00\x01binary\x1b[2J"

AGENT = r'''
import json, sys
sys.stdin.readline()
H = %(hostile)r
out = lambda o: print(json.dumps(o), flush=True)
out({"log": %(logtext)r})
sys.stderr.buffer.write(b'before\n' + %(forged)r.encode() + b'\n' + H.encode() + b'\xff\x9b tail\n')
sys.stderr.flush()
out({"status": "working", "text": "status " + H})
out({"artifact": {"name": "report" + H, "parts": [
    {"text": "text part " + H + "\nsecond line"},
    {"raw": %(raw)r, "filename": "evil" + H + ".bin", "mediaType": "application/x-" + H},
    {"url": "https://example.invalid/" + H, "filename": "ref" + H, "mediaType": "text/plain"}]},
    "lastChunk": True})
out({"status": "completed", "text": "done " + H})
''' % {"hostile": HOSTILE, "logtext": LOG_TEXT, "forged": FORGED_LINE,
       "raw": base64.b64encode(RAW).decode()}


def agent_cmd():
    d = scratch_dir("once-hostile-")
    path = os.path.join(d, "agent.py")
    with open(path, "w") as f:
        f.write(AGENT)
    return "%s %s" % (sys.executable, path)


def log_lines(srv):
    """onced's stderr, line by line: the harness also sends its stdout
    (the one "onced listening on" line) to the same file."""
    with open(srv.log.name, "rb") as f:
        data = f.read()
    return [l for l in data.split(b"\n") if l and not l.startswith(b"onced listening on ")], data


def send_and_wait(srv, outbox, *extra):
    rc, out, err = once_pipe(outbox, "send", "--agent", "http://127.0.0.1:%d/" % srv.port,
                             "--text", "go", "--wait", *extra)
    eq(rc, 0, "once send --wait: %r %r" % (out, err))
    return out


def once_pipe(outbox, *args):
    e = dict(os.environ, XDG_STATE_HOME=TMP)
    p = subprocess.run([ONCE, "--outbox", outbox] + list(args), capture_output=True, env=e,
                       timeout=scaled(60))
    return p.returncode, p.stdout, p.stderr


def once_tty(outbox, *args):
    """Run once with stdout and stderr on a pseudo-terminal; all it wrote."""
    e = dict(os.environ, XDG_STATE_HOME=TMP)
    master, slave = pty.openpty()
    p = subprocess.Popen([ONCE, "--outbox", outbox] + list(args), stdin=subprocess.DEVNULL,
                         stdout=slave, stderr=slave, env=e)
    os.close(slave)
    got = b""
    end = time.time() + scaled(60)
    while time.time() < end:
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:   # EIO: the child closed its side
                break
            if not chunk:
                break
            got += chunk
        elif p.poll() is not None:
            continue
    os.close(master)
    return p.wait(scaled(10)), got


def no_control(data, what):
    """No ESC, BEL, 8-bit CSI or any C1 in bytes a terminal receives."""
    for bad, name in ((b"\x1b", "ESC"), (b"\x07", "BEL"), (b"\x9b", "a raw 0x9b"),
                      (b"\xc2\x9b", "C1 CSI")):
        check(bad not in data, "%s: no %s reaches the terminal: %r" % (what, name, data[:600]))


def hostile_turn(log_format):
    """onced in this log format, after one turn of the hostile agent whose
    last stderr line reached its log."""
    srv = Onced(["--exec", agent_cmd(), "--log-format", log_format, "--push-secret",
                 "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTAxMjM0NTY3"])
    try:
        send_and_wait(srv, os.path.join(TMP, "hostile-%s-log.db" % log_format))
        wait_until(lambda: b" tail" in log_lines(srv)[1].split(b"agent_stderr")[-1],
                   timeout=10, what="the agent's last stderr line in the log")
    except BaseException:
        srv.stop()
        raise
    return srv


def test_json_log_has_no_forged_record():
    srv = hostile_turn("json")
    try:
        lines, _ = log_lines(srv)
        recs = []
        for l in lines:
            try:
                recs.append(json.loads(l.decode("utf-8")))
            except ValueError:
                check(False, "every line of the json log is one JSON object: %r" % l[:300])
        check(all(isinstance(r, dict) for r in recs), "each line is an object")
        forged = [r for r in recs if r.get("principal") == "forged-admin"]
        eq(forged, [], "no record the agent forged")
        logs = [r for r in recs if r.get("event") == "agent_log"]
        eq([r.get("text") for r in logs], [LOG_TEXT], "the agent's log line, exact, in one record")
        errs = [r.get("text") for r in recs if r.get("event") == "agent_stderr"]
        eq(errs[:2], ["before", FORGED_LINE], "stderr lines, each one record")
        check(len(errs) == 3 and errs[2].startswith(HOSTILE) and errs[2].endswith(" tail") and
              "\\xff\\x9b" in errs[2], "the escapes and the bytes that are not UTF-8: %r" % errs)
    finally:
        srv.stop()


def test_text_log_has_no_control_byte():
    srv = hostile_turn("text")
    try:
        lines, data = log_lines(srv)
        for l in lines:
            bad = [b for b in l if b < 0x20 or b == 0x7f]
            eq(bad, [], "no control byte in a text log line: %r" % l[:300])
            check(b"\xc2\x9b" not in l and b"\x9b" not in l, "no C1 CSI: %r" % l[:300])
            check(l[:4].isdigit(), "every line is a record of onced's: %r" % l[:120])
        check(b'text="innocent\\u000a{\\"ts\\"' in data, "the newline and the record, escaped")
        check(b"\\u001b[2J\\u001b]0;pwned\\u0007\\u009b31m\\u000dtail" in data,
              "ESC, BEL, C1 and CR made visible")
    finally:
        srv.stop()


def test_cli_shows_controls_visible():
    srv = Onced(["--exec", agent_cmd(), "--inspect", "--push-secret",
                 "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTAxMjM0NTY3"])
    try:
        agent = "http://127.0.0.1:%d/" % srv.port
        outbox = os.path.join(TMP, "hostile-cli.db")
        rc, got = once_tty(outbox, "send", "--agent", agent, "--text", "go", "--wait")
        eq(rc, 0, "send --wait on a terminal: %r" % got[-400:])
        no_control(got, "send --wait")
        shown = "\\u001b[2J\\u001b]0;pwned\\u0007\\u009b31m\\u000d"
        for want in ("agent: done " + shown, "artifact report" + shown, "evil" + shown + ".bin",
                     "application/x-" + shown, "url https://example.invalid/" + shown,
                     "text part " + shown + "\\u000asecond line"):
            check(want.encode() in got, "send --wait shows %r: %r" % (want, got[-1500:]))
        tid = got.split(b"\t")[0].split(b"\n")[-1].decode()
        out = scratch_dir("once-hostile-out-")
        rc, got = once_tty(outbox, "get", tid, "--out", out)
        eq(rc, 0, "get --out on a terminal: %r" % got[-400:])
        no_control(got, "get --out")
        for name in os.listdir(out):
            check(all(c.isalnum() or c in "._-" for c in name), "a saved name is plain: %r" % name)
        with open(os.path.join(out, sorted(n for n in os.listdir(out) if n.startswith("evil"))[0]),
                  "rb") as f:
            eq(f.read(), RAW, "the raw part saved as its bytes")
        rc, out_pipe, err_pipe = once_pipe(outbox, "get", tid)
        eq(rc, 0, "get on a pipe")
        no_control(out_pipe + err_pipe, "get on a pipe")
        rc, out_json, _ = once_pipe(outbox, "--json", "get", tid)
        eq(rc, 0, "get --json")
        doc = json.loads(out_json)
        eq(doc["task"]["status"]["message"]["parts"][0]["text"], "done " + HOSTILE,
           "--json: the status text exact")
        art = doc["task"]["artifacts"][0]
        eq(art["name"], "report" + HOSTILE, "--json: the artifact name exact")
        eq(art["parts"][0]["text"], "text part " + HOSTILE + "\nsecond line", "--json: text exact")
        eq(art["parts"][1]["filename"], "evil" + HOSTILE + ".bin", "--json: file name exact")

        # Item 10: raw and url parts read as files in the inspector and `once inspect`.
        st, _, body = http_get(srv.port, "/inspect/api/task/" + tid)
        eq(st, 200, "the inspector's JSON")
        texts = [e.get("text", "") for e in json.loads(body)["entries"]]
        art_text = [t for t in texts if t.startswith("text part")]
        check(len(art_text) == 1, "the artifact's entry: %r" % texts)
        check(("[file evil%s.bin (application/x-%s, %d bytes)]" % (HOSTILE, HOSTILE, len(RAW)))
              in art_text[0], "raw: name, media type, decoded size: %r" % art_text)
        check(("[file ref%s (text/plain, url https://example.invalid/%s)]" % (HOSTILE, HOSTILE))
              in art_text[0], "url: name, media type, the URL: %r" % art_text)
        check("[data]" not in art_text[0], "no file part reads [data]")
        rc, got = once_tty(outbox, "inspect", tid, "--agent", agent)
        eq(rc, 0, "once inspect: %r" % got[-400:])
        no_control(got, "once inspect")
        check(("[file evil%s.bin (application/x-%s, %d bytes)]" % (shown, shown, len(RAW))).encode()
              in got, "once inspect shows the raw part as a file: %r" % got[-1500:])
        check(b"url https://example.invalid/" in got, "and the url part")
    finally:
        srv.stop()


if __name__ == "__main__":
    run([test_json_log_has_no_forged_record, test_text_log_has_no_control_byte,
         test_cli_shows_controls_visible])
