"""The task inspector (onced --inspect, docs/wire.md "The task inspector") on
a real onced: off unless asked for (404); the same bearer auth as JSON-RPC,
or the login form's cookie, and another principal's task is a 404 like
GetTask; everything taken from a task is HTML-escaped and every page carries
the CSP; the timeline JSON (version 1) holds the record, every event by
generation, the side-effect keys, the push delivery rows and the retention
deadlines, then the tombstone after the clock jump; `once inspect` prints
it for a terminal and, with --json, as served. The journal: the turn that
ran the task, the retry of a send whose answer was lost counted as a replay
(written by the sweeper, not by the replay), a reused messageId counted as a
refusal by reason. The page as a story: the user's messages in the rows of
the first event and of a continuation, elapsed times, the timeline above the
record, a line on each counter. An artifact's part downloaded from
/inspect/file/ID: auth, another principal's task a 404, an attachment with
a safe name and a type that renders nothing.
"""
import http.client
import json
import re
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, ROOT, check, eq, free_port, http_request, new_id, run,  # noqa: E402
                     scaled, scratch_dir, user_message, wait_until)

ONCE = os.path.join(os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build")), "once")
ALICE, BOB = "tok-alice-" + new_id(), "tok-bob-" + new_id()
HOUR = 3600 * 1000
EVIL = "<script>alert('x')</script> & \"quoted\""
TMP = scratch_dir("once-inspect-")


def tokens_file():
    path = os.path.join(TMP, "tokens")
    with open(path, "w") as f:
        f.write("%s alice\n%s bob\n" % (ALICE, BOB))
    return path


def get(srv, path, token=None, cookie=None):
    h = {}
    if token:
        h["Authorization"] = "Bearer " + token
    if cookie:
        h["Cookie"] = cookie
    return http_request(srv.port, "GET", path, headers=h)


def timeline(srv, tid, token=None):
    st, hd, body = get(srv, "/inspect/api/task/" + tid, token=token)
    eq(st, 200, "timeline of %s: HTTP status" % tid)
    return json.loads(body)


def send(srv, text, tid=None, token=None, **cfg):
    params = {"message": user_message(text, task_id=tid or new_id())}
    if cfg:
        params["configuration"] = cfg
    st, _, doc = srv.rpc("SendMessage", params, ext=True, token=token)
    eq(st, 200, "SendMessage HTTP status")
    check("result" in doc, "SendMessage answered: %r" % (doc,))
    return doc["result"]["task"]


def once_cli(srv, *args, token=None):
    cmd = [ONCE, "--outbox", os.path.join(TMP, "outbox.db")] + (["--token", token] if token else [])
    cmd += list(args) + ["--agent", "http://127.0.0.1:%d/" % srv.port]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=scaled(60))
    return p.returncode, p.stdout, p.stderr


def test_off_by_default():
    with Onced(tmpdir=scratch_dir()) as srv:
        task = send(srv, "hello")
        for path in ("/inspect/", "/inspect/task/" + task["id"], "/inspect/api/task/" + task["id"],
                     "/inspect/inspect.js"):
            eq(get(srv, path)[0], 404, "without --inspect, GET %s" % path)
        rc, out, err = once_cli(srv, "inspect", task["id"])
        eq(rc, 1, "once inspect against onced without --inspect: exit status")
        check("--inspect" in err, "the error names --inspect: %r" % err)


def test_auth_and_tenants():
    with Onced(["--inspect", "--auth-tokens", tokens_file()], tmpdir=scratch_dir()) as srv:
        mine = send(srv, "alice's task", token=ALICE)["id"]
        for path in ("/inspect/", "/inspect/task/" + mine, "/inspect/api/task/" + mine):
            for tok in (None, "wrong-" + new_id()):
                st, hd, _ = get(srv, path, token=tok)
                eq(st, 401, "%s with %s" % (path, "no token" if tok is None else "a wrong token"))
                check(hd.get("www-authenticate", "").startswith("Bearer"), path + ": challenge")
        # the script and style sheet hold no data: served to anyone
        eq(get(srv, "/inspect/inspect.js")[0], 200, "the script without a token")
        # Bob sees Alice's task exactly as a task that does not exist
        for path in ("/inspect/task/", "/inspect/api/task/"):
            st_b, _, body_b = get(srv, path + mine, token=BOB)
            st_n, _, body_n = get(srv, path + "no-such-" + new_id(), token=BOB)
            eq((st_b, st_n), (404, 404), path + ": another principal's task and a missing one")
            if "api" in path:
                eq(body_b, body_n, "the same 404 body")
        st, _, doc = srv.rpc("GetTask", {"id": mine}, token=BOB)
        eq(st, 200, "GetTask by Bob answers")
        check("error" in doc, "and refuses like the inspector: %r" % (doc,))
        eq(timeline(srv, mine, token=ALICE)["taskId"], mine, "Alice reads her own timeline")
        # the list holds only the caller's tasks
        bobs = send(srv, "bob's task", token=BOB)["id"]
        _, _, page = get(srv, "/inspect/", token=BOB)
        check(bobs in page.decode() and mine not in page.decode(), "Bob's list: his task only")
        # the login form: a known token becomes a cookie; the cookie authenticates
        st, hd, _ = http_request(srv.port, "POST", "/inspect/login", body=b"token=" + BOB.encode(),
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
        eq(st, 303, "login: See Other")
        eq(hd.get("location"), "/inspect/", "login: back to the list")
        cookie = hd.get("set-cookie", "")
        check(cookie.startswith("once_session=v1.") and "SameSite=Strict" in cookie and
              "Path=/inspect" in cookie and "HttpOnly" in cookie and "Max-Age=" in cookie,
              "login sets the session cookie: %r" % cookie)
        check(BOB not in cookie and "Secure" not in cookie,
              "the cookie holds no token (and is not Secure over plain HTTP): %r" % cookie)
        st, _, page = get(srv, "/inspect/", cookie=cookie.split(";")[0])
        eq(st, 200, "the list with the cookie")
        check(bobs in page.decode(), "the cookie is Bob's")
        st, _, _ = http_request(srv.port, "POST", "/inspect/login", body=b"token=nope",
                                headers={"Content-Type": "application/x-www-form-urlencoded"})
        eq(st, 401, "login with an unknown token")
        st, hd, _ = http_request(srv.port, "POST", "/inspect/login", body=b"token=" + BOB.encode(),
                                 headers={"Content-Type": "application/x-www-form-urlencoded",
                                          "Origin": "https://evil.example"})
        eq(st, 403, "login from another site's form")
        check("set-cookie" not in hd, "no cookie for it")
        st, hd, _ = http_request(srv.port, "POST", "/inspect/login", body=b"token=" + BOB.encode(),
                                 headers={"Content-Type": "application/x-www-form-urlencoded",
                                          "Origin": "http://127.0.0.1:%d" % srv.port})
        eq(st, 303, "login from the inspector's own form")
        eq(get(srv, "/inspect/", cookie="once_session=nope")[0], 401, "an unknown cookie")
        # the raw token in the old cookie's place is no session
        eq(get(srv, "/inspect/", cookie="once_token=" + BOB)[0], 401, "a token as a cookie")
        eq(get(srv, "/inspect/", cookie="once_session=" + BOB)[0], 401, "a token as a session")


def login(srv, token):
    st, hd, _ = http_request(srv.port, "POST", "/inspect/login", body=b"token=" + token.encode(),
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
    eq(st, 303, "login")
    return hd.get("set-cookie", "").split(";")[0]


def first_event(srv, path, cookie=None):
    """GET path; (status, content type, the first SSE frame or the body)."""
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=scaled(10))
    try:
        c.request("GET", path, headers={"Cookie": cookie} if cookie else {})
        r = c.getresponse()
        kind = r.getheader("Content-Type", "")
        if not kind.startswith("text/event-stream"):
            return r.status, kind, r.read().decode()
        buf = b""
        while b"\n\n" not in buf:
            chunk = r.read1(4096)
            if not chunk:
                break
            buf += chunk
        return r.status, kind, buf.decode()
    finally:
        c.close()


def forged(cookie, principal):
    """The session with another principal's name in it (the MAC kept)."""
    name, value = cookie.split("=", 1)
    v, exp, _, mac = value.split(".")
    return "%s=%s.%s.%s.%s" % (name, v, exp, principal.encode().hex(), mac)


def test_session_cookie():
    """The login cookie is a session, not the token: tampering with it, or
    a tokens file without the token that signed it, makes it worthless; the
    task page's stream is served under /inspect with it, as its principal."""
    tmp = scratch_dir("once-inspect-session-")
    alice2 = "tok-alice2-" + new_id()
    with Onced(["--inspect", "--auth-tokens", tokens_file()], tmpdir=tmp) as srv:
        bob = login(srv, BOB)
        eq(get(srv, "/inspect/", cookie=bob)[0], 200, "the session works")
        eq(get(srv, "/inspect/", cookie=forged(bob, "alice"))[0], 401,
           "a session renamed to another principal")
        name, value = bob.split("=", 1)
        flipped = value[:-1] + ("0" if value[-1] != "0" else "1")
        eq(get(srv, "/inspect/", cookie="%s=%s" % (name, flipped))[0], 401, "a changed MAC")
        v, exp, ph, mac = value.split(".")
        eq(get(srv, "/inspect/", cookie="%s=%s.%d.%s.%s" % (name, v, int(exp) + 3600, ph, mac))[0],
           401, "a later expiry")
        # the task page's live stream: SubscribeToTask as the session's principal
        bobs = send(srv, "ask:which one?", token=BOB)["id"]
        alices = send(srv, "ask:hers", token=ALICE)["id"]
        st, kind, frame = first_event(srv, "/inspect/api/stream/" + bobs, bob)
        eq((st, kind.split(";")[0]), (200, "text/event-stream"), "the stream with the session")
        check(bobs in frame and "TASK_STATE_INPUT_REQUIRED" in frame,
              "Bob's task, as it stands: %r" % frame[:300])
        eq(first_event(srv, "/inspect/api/stream/" + bobs)[0], 401, "the stream without a session")
        st, kind, body = first_event(srv, "/inspect/api/stream/" + alices, bob)
        eq(kind.split(";")[0], "application/json", "no stream of Alice's task for Bob")
        check("TASK_NOT_FOUND" in body and "TASK_STATE_INPUT_REQUIRED" not in body,
              "Alice's task is not Bob's to follow: %r" % body[:300])
    # The same tokens file later: the session still holds (it is no
    # server-side state) ...
    with Onced(["--inspect", "--auth-tokens", tokens_file()], tmpdir=tmp) as srv:
        eq(get(srv, "/inspect/", cookie=bob)[0], 200, "the session across a restart")
    # ... and a file where bob has another token revokes it.
    path = os.path.join(tmp, "tokens-rotated")
    with open(path, "w") as f:
        f.write("%s alice\n%s bob\n" % (ALICE, alice2))
    with Onced(["--inspect", "--auth-tokens", path], tmpdir=tmp) as srv:
        eq(get(srv, "/inspect/", cookie=bob)[0], 401, "the token left the file: the session too")
        eq(get(srv, "/inspect/", cookie=login(srv, alice2))[0], 200, "the new token signs in")


def test_escaping_and_csp():
    with Onced(["--inspect"], tmpdir=scratch_dir()) as srv:
        tid = send(srv, EVIL)["id"]
        for path in ("/inspect/", "/inspect/task/" + tid, "/inspect/?context=%22%3E%3Cscript%3E",
                     "/inspect/login", "/inspect/task/missing-" + new_id()):
            st, hd, body = get(srv, path)
            csp = hd.get("content-security-policy", "")
            check("default-src 'self'" in csp and "script-src 'self'" in csp and
                  "unsafe-inline" not in csp, "%s: CSP %r" % (path, csp))
            text = body.decode()
            check("<script>alert" not in text and '"><script>' not in text,
                  "%s: no markup from a task or a query" % path)
            scripts = text.count("<script")
            check(scripts == text.count('<script src="/inspect/inspect.js"></script>'),
                  "%s: the only script is ours" % path)
        _, _, page = get(srv, "/inspect/task/" + tid)
        check("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;" in
              page.decode(), "the task's text is shown, escaped")


def test_list_filters_and_pages():
    with Onced(["--inspect"], tmpdir=scratch_dir()) as srv:
        ctx = "ctx-" + new_id()
        ids = []
        for i in range(52):
            params = {"message": user_message("task %d" % i, task_id="list-%02d-%s" % (i, new_id()),
                                              context_id=ctx if i < 2 else None)}
            st, _, doc = srv.rpc("SendMessage", params, ext=True)
            check(st == 200 and "result" in doc, "send %d: %r" % (i, doc))
            ids.append(doc["result"]["task"]["id"])
        asking = send(srv, "ask:which one?")["id"]
        _, _, page = get(srv, "/inspect/")
        first = page.decode()
        check(ids[0] in first and ids[49] in first and ids[50] not in first, "page 1: tasks 1..50")
        nxt = first.split('id="next" href="')[1].split('"')[0].replace("&amp;", "&")
        _, _, page = get(srv, nxt)
        check(ids[50] in page.decode() and asking in page.decode() and ids[0] not in page.decode(),
              "page 2: the rest, through ListTasks' page token")
        _, _, page = get(srv, "/inspect/?state=TASK_STATE_INPUT_REQUIRED")
        check(asking in page.decode() and ids[0] not in page.decode(), "the state filter")
        _, _, page = get(srv, "/inspect/?context=" + ctx)
        rows = page.decode().count('<a href="/inspect/task/')
        eq(rows, 2, "the context filter")
        st, _, page = get(srv, "/inspect/?after=yesterday")
        eq(st, 400, "a bad time filter: ListTasks' own refusal")
        check("statusTimestampAfter" in page.decode(), "the page says what was wrong")
        _, _, page = get(srv, "/inspect/?after=2999-01-01T00:00:00Z")
        check('<a href="/inspect/task/' not in page.decode(), "nothing updated after 2999")


def test_timeline_json_and_cli():
    script = ("printf '{\"status\":\"working\",\"text\":\"step one\"}\\n'; "
              "printf '{\"checkpoint\":\"c\",\"step\":2}\\n'; "
              "printf '{\"artifact\":{\"artifactId\":\"a1\",\"name\":\"notes\","
              "\"parts\":[{\"text\":\"n\"}]},\"lastChunk\":true}\\n'; "
              "printf '{\"status\":\"completed\",\"text\":\"done\"}\\n'")
    dead = "http://127.0.0.1:%d/hook" % free_port()   # nothing listens: every delivery fails
    args = ["--inspect", "--test-admin", "--retention", "1h", "--tombstone-retention", "2h",
            "--exec", script, "--push-allow", "127.0.0.1/32", "--push-backoff", "100ms",
            "--push-timeout", "1s"]
    with Onced(args, tmpdir=scratch_dir()) as srv:
        tid = "insp-" + new_id()
        send(srv, "go", tid=tid,
             taskPushNotificationConfig={"id": "cfg-1", "url": dead, "token": "T"})
        tl = wait_until(lambda: (lambda t: t if t["task"]["terminal"] and
                                 (t["push"][0]["delivery"] or {}).get("failures", 0) >= 1
                                 else None)(timeline(srv, tid)),
                        timeout=30, what="the task finished and a delivery failed")
        eq(tl["inspect"], 1, "version")
        eq(tl["taskId"], tid, "taskId")
        task = tl["task"]
        eq(task["state"], "TASK_STATE_COMPLETED", "state")
        eq((task["fence"], task["step"]), (1, 2), "fence and step")
        gens = [e["generation"] for e in tl["entries"] if e["kind"] == "event"]
        eq(gens, list(range(1, task["generation"] + 1)), "every event by generation, in order")
        ats = [e["at"] for e in tl["entries"]]
        eq(ats, sorted(ats), "entries sorted by time")
        check(all(isinstance(e.get("time"), str) for e in tl["entries"]), "every entry has a time")
        texts = [e.get("text") for e in tl["entries"]]
        check("go" in texts and "step one" in texts and "done" in texts, "event texts: %r" % texts)
        eq([k["key"] for k in tl["effectKeys"]], ["%s:step-%d" % (tid, n) for n in range(3)],
           "side-effect keys, steps 0..2")
        eq([k["current"] for k in tl["effectKeys"]], [False, False, True], "step 2 is current")
        r = tl["retention"]
        eq(r["tombstoneAt"], task["finishedAt"] + HOUR, "tombstone at finished + --retention")
        eq(r["forgetAt"], task["finishedAt"] + 3 * HOUR, "forgotten --tombstone-retention later")
        dl = [(e["what"], e["at"]) for e in tl["entries"] if e["kind"] == "deadline"]
        eq(dl, [("tombstone", r["tombstoneAt"]), ("forget", r["forgetAt"])], "deadline entries")
        push = tl["push"][0]
        eq((push["id"], push["url"]), ("cfg-1", dead), "the push config (no token)")
        check("token" not in push, "the push token is not shown")
        d = push["delivery"]
        check(d["delivered"] < d["target"] and d["lastError"], "a failing delivery: %r" % d)
        # each attempt reaches the journal at the sweeper's next flush
        tl = wait_until(lambda: (lambda t: t if any(e["kind"] == "delivery" for e in t["entries"])
                                 else None)(timeline(srv, tid)),
                        timeout=30, what="the delivery attempts in the timeline")
        att = [e for e in tl["entries"] if e["kind"] == "delivery"]
        a = att[0]
        eq((a["config"], a["status"], a["result"]), ("cfg-1", 0, "retry"),
           "a delivery attempt nobody answered: %r" % a)
        check(1 <= a["generation"] <= task["generation"], "the attempt names its event: %r" % a)
        check("webhook cfg-1, generation %d: no answer (retry)" % a["generation"] in a["summary"],
              "the attempt's summary: %r" % a["summary"])

        rc, out, err = once_cli(srv, "inspect", tid)
        eq(rc, 0, "once inspect: exit status (%s)" % err)
        for want in ("TASK_STATE_COMPLETED", "fence 1  step 2", "%s:step-2  (current step)" % tid,
                     "becomes a tombstone", '"step one"', "cfg-1"):
            check(want in out, "once inspect prints %r:\n%s" % (want, out))
        # An event without a timestamp of its own (an artifact update) is
        # marked '*', and a legend under the timeline says what that means.
        untimed = [e for e in timeline(srv, tid)["entries"] if e.get("timed") is False]
        check(untimed, "the task has an event with no timestamp of its own")
        marked = [ln for ln in out.splitlines() if re.match(r"  \S+Z\* gen ", ln)]
        eq(len(marked), len(untimed), "once inspect marks each such event with '*':\n%s" % out)
        check(out.rstrip("\n").endswith(
                  "  * no timestamp in the event: shown at the time of the one before"),
              "the timeline ends with the mark's legend:\n%s" % out)
        rc, out, _ = once_cli(srv, "--json", "inspect", tid)
        eq(rc, 0, "once --json inspect: exit status")
        eq(json.loads(out)["task"]["generation"], task["generation"], "--json: the timeline")
        rc, _, err = once_cli(srv, "inspect", "missing-" + new_id())
        eq(rc, 3, "once inspect of a missing task: refused")

        # the clock jump: past --retention the ID becomes a tombstone
        st, _, doc = srv.rpc("once/admin/setClockOffset", {"offsetMs": 2 * HOUR})
        check(st == 200 and "result" in doc, "setClockOffset: %r" % (doc,))
        tl = wait_until(lambda: (lambda t: t if t["expired"] else None)(timeline(srv, tid)),
                        timeout=30, what="the timeline to show the tombstone")
        eq(tl["task"], None, "no record any more")
        eq(tl["expired"]["finishedAt"], task["finishedAt"], "the tombstone keeps finishedAt")
        kinds = [e["kind"] for e in tl["entries"]]
        eq(kinds, ["finished", "expired", "deadline"], "a tombstone's entries")
        eq(tl["retention"]["forgetAt"], tl["expired"]["expiredAt"] + 2 * HOUR, "forgotten at")
        _, _, page = get(srv, "/inspect/task/" + tid)
        check('id="expired"' in page.decode() and "TASK_EXPIRED" in page.decode(),
              "the page shows the expired state")
        rc, out, _ = once_cli(srv, "inspect", tid)
        check(rc == 0 and "EXPIRED" in out, "once inspect shows the tombstone:\n%s" % out)


def test_journal_turn_replay_refusal():
    with Onced(["--inspect"], tmpdir=scratch_dir()) as srv:
        tid, mid = "jr-" + new_id(), new_id()
        params = {"message": user_message("hello", message_id=mid, task_id=tid)}
        st, _, doc = srv.rpc("SendMessage", params, ext=True)
        check(st == 200 and "result" in doc, "the first send: %r" % (doc,))
        # Its answer was lost: the client sends the same message again.
        st, hd, doc = srv.rpc("SendMessage", params, ext=True)
        check(st == 200 and "result" in doc, "the retry: %r" % (doc,))
        eq(hd.get("idempotent-replayed"), "true", "the retry is a replay")
        params2 = {"message": user_message("other text", message_id=mid, task_id=tid)}
        st, _, doc = srv.rpc("SendMessage", params2, ext=True)
        check("error" in doc, "a reused messageId is refused: %r" % (doc,))
        tl = wait_until(lambda: (lambda t: t if t["replays"] and
                                 any(e["kind"] == "refusal" for e in t["entries"])
                                 else None)(timeline(srv, tid)),
                        timeout=30, what="the sweeper to write the replay and the refusal")
        eq(tl["replays"]["count"], 1, "one replay")
        turns = [e for e in tl["entries"] if e["kind"] == "turn"]
        eq(len(turns), 1, "one turn")
        eq((turns[0]["fence"], turns[0]["resumed"], turns[0]["result"]),
           (1, False, "TASK_STATE_COMPLETED"), "the turn: fence 1, fresh, completed")
        eq(turns[0]["replica"], tl["replica"], "the turn ran on this replica")
        ref = [e for e in tl["entries"] if e["kind"] == "refusal"]
        eq([(e["reason"], e["count"]) for e in ref], [("MESSAGE_ID_REUSED", 1)], "the refusal")
        ats = [e["at"] for e in tl["entries"]]
        eq(ats, sorted(ats), "entries sorted by time")
        _, _, page = get(srv, "/inspect/task/" + tid)
        check("replayed 1 time, last at" in page.decode(), "the page shows the replay count")
        rc, out, err = once_cli(srv, "inspect", tid)
        eq(rc, 0, "once inspect: exit status (%s)" % err)
        for want in ("replayed 1 time, last at", "new turn on", "refused 1 send: MESSAGE_ID_REUSED"):
            check(want in out, "once inspect prints %r:\n%s" % (want, out))


def test_story_rows():
    """The rows read as the task's story: the user's message in the row of
    the first event and in the row of the continuation (a working status
    with no message of its own: the text comes from the history), the time
    since the row before, the timeline above the record, a line on each
    counter."""
    with Onced(["--inspect"], tmpdir=scratch_dir()) as srv:
        tid = "story-" + new_id()
        eq(send(srv, "ask:Which law?", tid=tid)["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
           "the agent asks")
        eq(send(srv, "Swiss " + EVIL, tid=tid)["status"]["state"], "TASK_STATE_COMPLETED",
           "the answer completes the task")
        ev = [e for e in timeline(srv, tid)["entries"] if e["kind"] == "event"]
        users = [(e["generation"], e.get("user"), e.get("continued", False)) for e in ev
                 if "user" in e]
        eq(users, [(1, "ask:Which law?", False), (4, "Swiss " + EVIL, True)],
           "the user's messages: the first and the continuation")
        eq((ev[3]["event"], ev[3]["state"]), ("statusUpdate", "TASK_STATE_WORKING"),
           "the continuation's own event is a bare working status")
        _, _, page = get(srv, "/inspect/task/" + tid)
        page = page.decode()
        check('The user answered: <q class="user">Swiss &lt;script&gt;' in page,
              "the continuation's row quotes the answer, escaped")
        check(page.index('id="timeline"') < page.index('id="f-fence"'), "the timeline first")
        dts = re.findall(r'<td class="dt">([^<]*)</td>', page)
        eq(dts[0], "", "no elapsed time on the first row")
        check(len(dts) > 4 and all(re.match(r"^\+\d+(\.\d)? (ms|s|min|h|d)", d) for d in dts[1:]),
              "every later row says how long after the one before: %r" % dts)
        for word in ("Fence", "Version", "Generation"):
            check(re.search(r"<th title=\"[^\"]{40,}\">%s</th>" % word, page) and
                  re.search(r"<dt>%s</dt><dd>[^<]{40,}</dd>" % word, page),
                  "%s has a tooltip and a line in the legend" % word)


# The agent of test_artifact_download: an artifact with a text part (with
# markup), a file inline (HTML with a script, a name that climbs
# directories), a data part and a file by reference.
ARTIFACT_AGENT = r"""read line
printf '{"artifact":{"artifactId":"review","name":"review","parts":[{"text":"Clause 4 <b>caps</b> it."},{"raw":"%s","filename":"../../x\"y.html","mediaType":"text/html"},{"data":{"risk":"low"}},{"url":"https://files.example/r.pdf","filename":"r.pdf","mediaType":"application/pdf"}]},"lastChunk":true}
'
printf '{"status":"completed","text":"done"}
'
"""
HOSTILE_FILE = b"<html><script>alert(1)</script></html>"


def test_artifact_download():
    """GET /inspect/file/ID?artifact=A&part=N: a part's bytes as an
    attachment, behind the inspector's auth and principal scoping (another
    principal's task is a 404 like a missing one), never rendered: a type
    that runs nothing (an agent's text/html is application/octet-stream),
    nosniff, a sandboxing CSP and a file name of safe bytes only."""
    import base64
    agent = ARTIFACT_AGENT % base64.b64encode(HOSTILE_FILE).decode()
    with Onced(["--inspect", "--auth-tokens", tokens_file(), "--exec", agent],
               tmpdir=scratch_dir()) as srv:
        tid = "art-" + new_id()
        send(srv, "review it", tid=tid, token=ALICE)
        tl = wait_until(lambda: (lambda t: t if t["task"]["terminal"] else None)(
            timeline(srv, tid, token=ALICE)), timeout=30, what="the task to finish")
        parts = tl["artifacts"][0]["parts"]
        eq([(p["kind"], p.get("filename"), p.get("mediaType"), p.get("size")) for p in parts],
           [("text", None, None, None), ("file", '../../x"y.html', "text/html", len(HOSTILE_FILE)),
            ("data", None, None, None), ("file", "r.pdf", "application/pdf", None)],
           "the timeline lists the parts")
        path = "/inspect/file/%s?artifact=review&part=" % tid
        st, hd, _ = get(srv, path + "1")
        eq(st, 401, "a download without a token")
        check(hd.get("www-authenticate", "").startswith("Bearer"), "the challenge")
        st_b, _, body_b = get(srv, path + "1", token=BOB)
        st_n, _, body_n = get(srv, "/inspect/file/no-such-%s?artifact=review&part=1" % new_id(),
                              token=BOB)
        eq((st_b, st_n), (404, 404), "another principal's part and a missing task's")
        eq(body_b.replace(b"no-such", b""), body_n.replace(b"no-such", b""), "the same page")
        for cred in ({"token": ALICE}, {"cookie": login(srv, ALICE)}):
            st, hd, body = get(srv, path + "1", **cred)
            eq(st, 200, "the file part (%s)" % list(cred)[0])
            eq(body, HOSTILE_FILE, "its bytes, decoded")
        eq(hd.get("content-type"), "application/octet-stream", "the agent's text/html is not served")
        eq(hd.get("x-content-type-options"), "nosniff", "no sniffing")
        check("sandbox" in hd.get("content-security-policy", ""), "a sandboxing CSP: %r" % hd)
        disp = hd.get("content-disposition", "")
        check(re.fullmatch(r'attachment; filename="[A-Za-z0-9_-][A-Za-z0-9._-]*"', disp) and
              "/" not in disp, "an attachment named in safe bytes: %r" % disp)
        st, hd, body = get(srv, path + "0", token=ALICE)
        eq((st, body), (200, b"Clause 4 <b>caps</b> it."), "the text part")
        eq(hd.get("content-type"), "text/plain; charset=utf-8", "as plain text")
        eq(hd.get("content-disposition"), 'attachment; filename="review-0.txt"', "named after it")
        st, hd, body = get(srv, path + "2", token=ALICE)
        eq((st, hd.get("content-type"), json.loads(body)), (200, "application/json", {"risk": "low"}),
           "the data part as JSON")
        for bad, want in (("3", 404), ("4", 404), ("99999", 400), ("x", 400), ("-1", 400)):
            eq(get(srv, path + bad, token=ALICE)[0], want, "part=%s" % bad)
        eq(get(srv, "/inspect/file/%s?artifact=other&part=0" % tid, token=ALICE)[0], 404,
           "an artifact the task does not have")
        _, _, page = get(srv, "/inspect/task/" + tid, token=ALICE)
        page = page.decode()
        check('href="/inspect/file/%s?artifact=review&amp;part=1">../../x&quot;y.html</a>' % tid
              in page, "the page links the file by its name, escaped")
        check("<q>Clause 4 &lt;b&gt;caps&lt;/b&gt; it.</q>" in page, "the text part shown, escaped")
        check("https://files.example/r.pdf" in page and 'href="https://files.example' not in page,
              "a file by reference: its URL shown, not linked")


if __name__ == "__main__":
    run([test_off_by_default, test_auth_and_tenants, test_session_cookie, test_escaping_and_csp,
         test_list_filters_and_pages, test_timeline_json_and_cli, test_journal_turn_replay_refusal,
         test_story_rows, test_artifact_download])
