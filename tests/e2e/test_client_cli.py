"""The `once` CLI's manners, driven as a user would against a real onced:

- an agent URL the client cannot use (no scheme, a port past 65535, no
  host, another scheme) is refused as a usage error that says what a valid
  one looks like, and nothing is written to the outbox;
- `once abandon ID`: a pending intent that can never succeed (its agent is
  not there) and an acknowledged one become abandoned, stay listed, and
  `once recover` neither re-sends nor polls them and exits 0; abandoning a
  final or an abandoned intent exits 6 naming its state; an unknown ID
  exits 1;
- messages speak the CLI's language: a 401 says "pass --token or set
  ONCE_TOKEN", with or without a (wrong) token; a wait
  that times out says the intent is acknowledged and `once wait ID` resumes
  (the outbox agrees: acknowledged, not pending); onced answers an A2A 0.3
  method (message/send) in 0.3 shape; an unknown name is "Method not
  found"; an agent that does not know SendMessage is named as not speaking 1.0;
- every artifact part is listed by name, kind (text, file, data) and size;
  `--out DIR` saves text parts as .txt, raw parts decoded, url parts as the
  URL, data parts as JSON, under names the agent cannot turn into a path
  (`../x`, `/etc/x`, `..`, a dot file all land inside DIR, visible), each
  line naming its file with one '/' (also for `DIR/`); a second save of the
  same answer writes nothing, exits 0 and says "already saved"; a file the
  user changed is never overwritten: the part goes beside it, numbered, and
  the line says why; an answer with no parts says nothing was saved;
- `once send --push-url URL --push-token T` subscribes `once listen --token T`
  in the same send: the receiver gets every generation of the task, in
  order, up to completed; a send killed after its outbox write subscribes
  when `once recover` sends it; a bad push URL or a token without a URL is
  a usage error and leaves nothing in the outbox;
"""
import http.server
import json
import os
import shutil
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Onced, check, eq, run, wait_until  # noqa: E402
import test_client  # noqa: E402
import test_client_listen  # noqa: E402
from test_client_listen import Listener  # noqa: E402
from test_client import FAST, ONCE, TMP, dead_port, once, once_json, outbox_intents  # noqa: E402


def test_bad_agent_url_writes_nothing():
    outbox = os.path.join(TMP, "badurl.db")
    rc, out, err = once(outbox, "send", "--agent", "127.0.0.1:41701", "--text", "hi")
    eq(rc, 2, "a URL without a scheme is a usage error (%s)" % err)
    check("http://127.0.0.1:41701/" in err, "the message shows a valid URL: %r" % err)
    for url, says in (("http://127.0.0.1:99999/", "1 to 65535"), ("http://:8080/", "no host"),
                      ("ftp://127.0.0.1/", "http:// or https://"), ("http://a b/", "spaces")):
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "hi")
        eq(rc, 2, "%s: usage error (%s)" % (url, err))
        check(says in err, "%s: the message says %r: %r" % (url, says, err))
    rc, out, err = once(outbox, "continue", "T1", "--agent", "localhost:1", "--text", "hi")
    eq(rc, 2, "continue checks the URL too (%s)" % err)
    eq(outbox_intents(outbox), [], "nothing was written to the outbox")


def test_recover_nothing_to_do():
    """`once recover` with nothing pending says so (and exits 0)."""
    outbox = os.path.join(TMP, "nothing.db")
    rc, out, err = once(outbox, "recover")
    eq(rc, 0, "nothing to recover is no error (%s)" % err)
    check("nothing to recover" in err, "it says so: %r" % err)


def test_abandon():
    outbox = os.path.join(TMP, "abandon.db")
    gone = "http://127.0.0.1:%d/" % dead_port()
    rc, doc = once_json(outbox, "send", "--agent", gone, "--text", "hi", "--attempts", "2", *FAST)
    eq(rc, 4, "a send to an agent that is not there is exhausted")
    lost = doc["taskId"]
    rc, doc = once_json(outbox, "recover", "--attempts", "1", *FAST)
    eq((rc, doc["resent"]), (4, 1), "recover tries it again, and fails")
    with Onced() as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        rc, doc = once_json(outbox, "send", "--agent", url, "--text", "sleep:60")
        check(rc == 0 and doc["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
              "a long task is acknowledged: %r" % doc)
        acked = doc["taskId"]
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "hello", "--wait")
        eq(rc, 0, "a task that completes")
        done = out.split("\t")[0]

        rc, out, err = once(outbox, "abandon", lost)
        eq(rc, 0, "a pending intent is abandoned (%s)" % err)
        check(lost in out and "pending -> abandoned" in out, "abandon says what it did: %r" % out)
        rc, doc = once_json(outbox, "abandon", acked)
        eq((rc, doc["abandoned"], doc["intents"][0]["was"]), (0, 1, "acknowledged"),
           "an acknowledged intent is abandoned")

        rc, doc = once_json(outbox, "recover", *FAST)
        eq((rc, doc["resent"], doc["polled"]), (0, 0, 0), "recover skips abandoned intents")
        states = {i["taskId"] or i["messageId"]: i["state"] for i in outbox_intents(outbox)}
        eq(states, {lost: "abandoned", acked: "abandoned", done: "final"},
           "abandoned intents stay listed")
        rc, doc = once_json(outbox, "outbox", "--state", "abandoned")
        eq(sorted(i["taskId"] or i["messageId"] for i in doc["intents"]), sorted([lost, acked]),
           "--state abandoned")

        rc, out, err = once(outbox, "abandon", done)
        eq(rc, 6, "a final intent is not abandoned (%s)" % err)
        check("is final" in err and "TASK_STATE_COMPLETED" in err, "the message names the state: %r" % err)
        rc, out, err = once(outbox, "abandon", lost)
        eq(rc, 6, "abandoning twice (%s)" % err)
        check("is abandoned" in err, "the message names the state: %r" % err)
        rc, out, err = once(outbox, "abandon", "no-such-id")
        eq(rc, 1, "an unknown ID (%s)" % err)
        check("no intent for no-such-id" in err, "the message says so: %r" % err)
        rc, out, err = once(outbox, "abandon")
        eq(rc, 2, "abandon without an ID is a usage error")
        rc, out, err = once(outbox, "--help")
        check("\n  6 " in out and "abandon ID" in out, "--help documents abandon and exit 6")
        # The agent was not told: the task still runs there.
        st, _, d = srv.rpc("GetTask", {"id": acked})
        check(d["result"]["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
              "abandon is local: %r" % d)
        once(outbox, "cancel", acked, "--agent", url)


def test_messages():
    outbox = os.path.join(TMP, "messages.db")
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        f.write("tok-alice alice\n")
    with Onced(["--auth-tokens", tokens]) as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "hi", *FAST)
        eq(rc, 1, "no token: an error (%s)" % err)
        check("pass --token or set ONCE_TOKEN" in err, "401 speaks the CLI's language: %r" % err)
        check("wants a token" in err, "without a token: %r" % err)
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "hi", *FAST,
                            env={"ONCE_TOKEN": "tok-wrong"})
        eq(rc, 1, "a wrong token: an error (%s)" % err)
        check("does not accept this token" in err and "ONCE_TOKEN" in err, "wrong token: %r" % err)
        eq([i["state"] for i in outbox_intents(outbox)], ["refused", "refused"],
           "nothing the agent refused is left pending")
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "hi", "--token", "tok-alice")
        eq(rc, 0, "with --token the send goes through (%s)" % err)

        rc, out, err = once(outbox, "send", "--agent", url, "--text", "sleep:60", "--wait",
                            "--wait-timeout", "300ms", "--token", "tok-alice")
        eq(rc, 4, "the wait gives up (%s)" % err)
        tid = [i for i in outbox_intents(outbox) if i["kind"] == "send"][-1]["taskId"]
        check("stays pending" not in err, "a timed-out wait is not called pending: %r" % err)
        check("acknowledged" in err and "once wait %s" % tid in err,
              "it says the intent is acknowledged and how to resume: %r" % err)
        eq(outbox_intents(outbox)[-1]["state"], "acknowledged", "the outbox agrees")
        once(outbox, "cancel", tid, "--token", "tok-alice")

        st, _, doc = srv.rpc("message/send", {"message": {"messageId": "m", "role": "user",
                                                          "parts": [{"kind": "text", "text": "x"}]}},
                             token="tok-alice")
        eq((doc.get("result", {}).get("kind"), doc.get("result", {}).get("status", {}).get("state")),
           ("task", "completed"), "a 0.3 method is served, in 0.3 shape: %r" % (doc,))
        st, _, doc = srv.rpc("NoSuchMethod", {}, token="tok-alice")
        eq(doc["error"]["message"], "Method not found: NoSuchMethod", "other names: as before")

    class OldAgent(http.server.BaseHTTPRequestHandler):
        """An A2A 0.3 agent: no SendMessage."""
        def log_message(self, *a):
            pass

        def reply(self, doc):
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self.reply({"name": "old", "protocolVersion": "0.3.0", "capabilities": {}})

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.reply({"jsonrpc": "2.0", "id": 1,
                        "error": {"code": -32601, "message": "Method not found"}})

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OldAgent)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d/" % httpd.server_address[1]
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "hi", *FAST)
        eq(rc, 1, "an agent without SendMessage: an error (%s)" % err)
        check("once speaks A2A 1.0" in err, "the message says the agent is not A2A 1.0: %r" % err)
    finally:
        httpd.shutdown()
        httpd.server_close()


HOSTILE_AGENT = r"""
import base64, json, sys
sys.stdin.readline()
parts = [{"text": "plain words"},
         {"raw": base64.b64encode(bytes(range(256))).decode(), "filename": "../escape.bin",
          "mediaType": "application/octet-stream"},
         {"url": "https://example.com/c.pdf", "filename": "/etc/passwd"},
         {"data": {"score": 1, "flags": ["ok"]}},
         {"text": "set -x", "filename": ".bashrc"},
         {"data": {"second": True}}]
print(json.dumps({"artifact": {"artifactId": "a1", "name": "..", "parts": parts}, "lastChunk": True}))
print(json.dumps({"artifact": {"artifactId": "a2", "name": "sub/report",
                               "parts": [{"data": [1, 2, 3]}]}, "lastChunk": True}))
print(json.dumps({"status": "completed"}))
"""


def test_artifacts_shown_and_saved():
    outbox = os.path.join(TMP, "parts.db")
    agent = os.path.join(TMP, "hostile_agent.py")
    with open(agent, "w") as f:
        f.write(HOSTILE_AGENT)
    base = os.path.join(TMP, "saved")
    os.mkdir(base)
    out_dir = os.path.join(base, "out")
    with Onced(["--exec", "python3 " + agent]) as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "go", "--wait", "--out", out_dir)
        eq(rc, 0, "send --wait --out (%s)" % err)
        tid = out.split("\t")[0]
        lines = out.splitlines()
        for want in ("artifact ..: text (11 bytes): plain words",
                     "artifact ..: file ../escape.bin (application/octet-stream, 256 bytes)",
                     "artifact ..: file /etc/passwd (url https://example.com/c.pdf)",
                     "artifact ..: data (26 bytes)",
                     "artifact sub/report: data (7 bytes)"):
            check(any(ln.strip().startswith(want) for ln in lines),
                  "listed by name, kind and size: %r in %r" % (want, out))
        eq(os.listdir(base), ["out"], "nothing was written beside --out")
        names = sorted(os.listdir(out_dir))
        eq(names, sorted(["part.txt", "_escape.bin", "_etc_passwd.url", "part.json", "bashrc",
                          "part-2.json", "sub_report.json"]),
           "safe names, all inside --out; a name taken in the same answer is numbered")
        with open(os.path.join(out_dir, "part.txt")) as f:
            eq(f.read(), "plain words", "a text part is saved as .txt")
        with open(os.path.join(out_dir, "_escape.bin"), "rb") as f:
            eq(f.read(), bytes(range(256)), "a raw part is saved decoded")
        with open(os.path.join(out_dir, "_etc_passwd.url")) as f:
            eq(f.read(), "https://example.com/c.pdf\n", "a url part is saved as the URL")
        with open(os.path.join(out_dir, "part.json")) as f:
            eq(json.load(f), {"score": 1, "flags": ["ok"]}, "a data part is saved as JSON")
        with open(os.path.join(out_dir, "part-2.json")) as f:
            eq(json.load(f), {"second": True}, "the second data part")
        with open(os.path.join(out_dir, "bashrc")) as f:
            eq(f.read(), "set -x", "a text part with a filename is a file")
        check("out//" not in out and out_dir + "/part.txt" in out,
              "paths are joined with one slash: %r" % out)

        rc, out, err = once(outbox, "get", tid, "--out", out_dir + "/")
        eq(rc, 0, "saving the same answer again is no error (%s)" % err)
        saved_lines = [ln for ln in out.splitlines() if " -> " in ln]
        eq(len(saved_lines), len(names), "every part says where it is: %r" % out)
        check(all(ln.endswith("(already saved: unchanged)") for ln in saved_lines),
              "each says it was saved before: %r" % out)
        check("out//" not in out and out_dir + "/part.txt" in out,
              "DIR/ and a name make one path: %r" % out)
        eq(sorted(os.listdir(out_dir)), names, "nothing new was written")

        with open(os.path.join(out_dir, "part.json"), "w") as f:
            f.write("mine")
        rc, out, err = once(outbox, "get", tid, "--out", out_dir)
        eq(rc, 0, "a name taken by another file is no error (%s)" % err)
        check(out_dir + "/part-3.json (" + out_dir + "/part.json holds something else: "
              "not overwritten)" in out, "it says where the part went, and why: %r" % out)
        with open(os.path.join(out_dir, "part.json")) as f:
            eq(f.read(), "mine", "the existing file is untouched")
        with open(os.path.join(out_dir, "part-3.json")) as f:
            eq(json.load(f), {"score": 1, "flags": ["ok"]}, "the part is beside it")
        rc, doc = once_json(outbox, "get", tid, "--out", os.path.join(base, "again"))
        eq(rc, 0, "get --json --out")
        eq(sorted(s["file"] for s in doc["saved"]), names, "--json lists what was saved")
        check(not any(s["unchanged"] for s in doc["saved"]), "all of it new: %r" % doc["saved"])

    # An agent that completes with no artifact at all: the final answer has
    # no part to save, and says so.
    plain = os.path.join(TMP, "plain_agent.py")
    with open(plain, "w") as f:
        f.write("import json, sys\nsys.stdin.readline()\n"
                "print(json.dumps({'status': 'completed'}))\n")
    with Onced(["--exec", "python3 " + plain]) as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        rc, doc = once_json(outbox, "send", "--agent", url, "--text", "x", "--wait")
        eq(doc.get("state"), "TASK_STATE_COMPLETED", "the plain task finished: %r" % doc)
        rc, out, err = once(outbox, "get", doc["taskId"], "--out", os.path.join(base, "none"))
        check("nothing saved" in err, "an answer without parts says nothing was saved: %r" % err)


def test_push_url_subscribes():
    outbox = os.path.join(TMP, "push.db")
    lst = Listener("push", os.path.join(TMP, "webhooks.db"))
    try:
        with Onced(test_client_listen.ONCED_FLAGS) as srv:
            url = "http://127.0.0.1:%d/" % srv.port
            push = ["--push-url", lst.url, "--push-token", test_client_listen.TOKEN]

            def events(tid):
                """(generation, state) of every event of tid the receiver printed."""
                rows = [ln.split("\t") for ln in lst.printed().splitlines()]
                return [(int(r[1]), r[3]) for r in rows if len(r) == 4 and r[0] == tid]

            def wait_completed(tid, what):
                wait_until(lambda: ("TASK_STATE_COMPLETED" in [e[1] for e in events(tid)]),
                           timeout=20, what=what)
                gens = [g for g, _ in events(tid)]
                eq(gens, list(range(1, len(gens) + 1)), "every generation once, in order")

            rc, doc = once_json(outbox, "send", "--agent", url, "--text", "hello", *push)
            eq(rc, 0, "send --push-url")
            wait_completed(doc["taskId"], "the receiver to see the task complete")

            rc, out, err = once(outbox, "send", "--agent", url, "--text", "crash", *push,
                                env={"ONCE_TEST_CRASH": "after-outbox"})
            check(rc < 0, "killed after the outbox write (%d)" % rc)
            crashed = [i for i in outbox_intents(outbox) if i["state"] == "pending"]
            eq(len(crashed), 1, "one pending intent")
            rc, doc = once_json(outbox, "recover")
            eq((rc, doc["resent"]), (0, 1), "recover sends it")
            wait_completed(crashed[0]["taskId"], "the recovered send's events")

            before = len(outbox_intents(outbox))
            rc, out, err = once(outbox, "send", "--agent", url, "--text", "x", "--push-url",
                                "127.0.0.1:9/")
            eq(rc, 2, "a bad push URL is a usage error (%s)" % err)
            check("push URL" in err and "http://127.0.0.1:9/" in err, "it says what is wrong: %r" % err)
            rc, out, err = once(outbox, "send", "--agent", url, "--text", "x", "--push-token", "t")
            eq(rc, 2, "--push-token without --push-url (%s)" % err)
            eq(len(outbox_intents(outbox)), before, "nothing was written")
    finally:
        lst.stop()


if __name__ == "__main__":
    if not os.path.exists(ONCE):
        print("FAIL: %s is missing (build first)" % ONCE, file=sys.stderr)
        sys.exit(1)
    try:
        run([test_bad_agent_url_writes_nothing, test_recover_nothing_to_do, test_abandon,
             test_messages, test_artifacts_shown_and_saved, test_push_url_subscribes])
    finally:
        shutil.rmtree(test_client.TMP, ignore_errors=True)
