"""The contract-review story (docs/design.md section 9), end to end, with real
processes on the embedded SQLite store. Every line of the timeline is
checked against what the processes really did; the run ends with a verdict
table, one row per claim, and exits 0 only if every claim held.

The cast (all on 127.0.0.1, each a real process):

  orchestrator     the once CLI (build/once) with its own outbox
                   (ORCH/outbox.db), and its webhook receiver `once listen`
                   (a durable processed-set, ORCH/processed.db; each event
                   it hands over once is a line of ORCH/handled.jsonl)
  link             build/tools/proxy between the orchestrator and the two
                   reviewer replicas: round robin, and it loses the answer
                   to the first SendMessage
  reviewer-a/-b    two onced replicas sharing one SQLite registry, running
                   demo/reviewer.py with --exec; the reviewer's first turn
                   starts a background analysis (demo/analysis.py) that
                   holds fence 1
  hook link        a proxy in front of the orchestrator's receiver that
                   loses the receiver's first 2xx answer
  signing service  demo/signing_service.py, counting requests and signatures
                   per Idempotency-Key, behind a proxy that loses its first
                   answer

  python3 demo/story.py [--build DIR] [--quick] [--keep]

--quick shortens leases and waits (the test suite runs it so); --keep keeps
the scratch folder (logs, registry, outbox, journal) and prints its path.
"""
import argparse
import base64
import json
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import re
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import harness as h  # noqa: E402

SECRET = "whsec_" + base64.b64encode(b"demo-push-secret-0123456789abcdef").decode()
HOOK_TOKEN = "orchestrator-hook-token"
CONTRACT = ("ACME supply agreement; 1. ACME delivers 10,000 widgets a month; 7. liability: "
            "unlimited; 12. renews every year unless cancelled; 15. disputes: see governing law")
ANSWER = "Swiss law (canton of Zurich)"
RETENTION_JUMP_MS = 73 * 3600 * 1000

TTY = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

STATES = {1: "submitted", 2: "working", 3: "input-required", 4: "auth-required",
          5: "completed", 6: "failed", 7: "canceled", 8: "rejected"}

CLAIMS = [
    ("minted", "the orchestrator minted t-... and wrote its outbox record before sending"),
    ("registered", "the link lost the answer; reviewer-a registered the task and is working"),
    ("replayed", "the retry landed on reviewer-b: it replayed `working`; one task in the registry"),
    ("webhook", "input-required (gen {gen}): the webhook reached the receiver twice, handled once"),
    ("continued", "the continuation with the same ID moved the fence to 2; work resumed"),
    ("fenced", "the phase-1 worker's write with fence 1 was refused; its half-result is nowhere"),
    ("signed", "the signing call (Idempotency-Key t-...:step-4) was retried; signed once"),
    ("completed", "the task completed; the signed-contract artifact is stored under t-..."),
    ("expired", "past retention the replayed outbox record got TASK_EXPIRED; nothing re-ran"),
]

# The terms a newcomer meets in the timeline, each explained once, under the
# line where it first appears (docs/design.md has the whole picture).
GLOSSARY = [
    (r"\bfence\b", "fence: a counter the registry moves whenever who may write to the task changes "
     "(registration, continuation, cancel, takeover); a write carrying an older fence is refused"),
    (r"\bgen(eration)?\b", "gen (generation): the task's event counter, moved by every change that "
     "emits an event; SSE ids and webhook ids carry it, so a reader resumes with no gap and no copy"),
    (r"\blease\b", "lease: one replica's right to run the task's turn until a deadline, renewed while "
     "the turn runs; once it lapses another replica takes the task over with fence + 1"),
    (r"\btombstone\b", "tombstone: what is left of a finished task after the retention window (its "
     "key and first digest): the ID answers TASK_EXPIRED and never runs again"),
]


def paint(code, s):
    return "\033[%sm%s\033[0m" % (code, s) if TTY else s


def mint_task_id():
    """t- + a ULID (48-bit milliseconds, 80 random bits, Crockford base32):
    minted here, before anything touches the network."""
    n = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return "t-" + "".join(alphabet[(n >> (5 * i)) & 31] for i in range(25, -1, -1))


def wait_for(fn, timeout, step=0.05):
    """fn() until it returns something other than None/False; that value, or None."""
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() >= end:
            return None
        time.sleep(step)


class Story:
    def __init__(self, build, quick, keep):
        self.build = os.path.abspath(build)
        self.quick = quick
        self.keep = keep
        self.tools = os.path.join(self.build, "tools")
        self.once_bin = os.path.join(self.build, "once")
        h.ONCED = os.path.join(self.build, "onced")
        self.tmp = tempfile.mkdtemp(prefix="once-demo-")
        self.orch = os.path.join(self.tmp, "orchestrator")
        os.makedirs(os.path.join(self.tmp, "cues"))
        os.makedirs(self.orch)
        self.registry = os.path.join(self.tmp, "registry.db")
        self.store = "sqlite:" + self.registry
        self.outbox = os.path.join(self.orch, "outbox.db")
        self.journal_path = os.path.join(self.tmp, "journal.jsonl")
        self.procs = []          # (name, Popen) of helper processes, stopped in reverse
        self.replicas = []
        self.analysis_pid = None
        self.paused_at = self.paused_gen = None
        self.t0 = time.monotonic()
        self.wall0 = time.time()
        self.tid = None
        self.gen_n = "N"
        self.checks = {k: [] for k, _ in CLAIMS}
        self.unexplained = list(GLOSSARY)

    # --- output ----------------------------------------------------------

    def heading(self, n, text):
        print()
        print(paint("1", "%d. %s" % (n, text)))

    def event(self, who, what, fence=None, gen=None, at=None, wall=None):
        """One timeline line. at: a time.monotonic() instant; wall: a Unix
        time (journal, registry and outbox timestamps); default now."""
        if wall is not None:
            at = self.t0 + (wall - self.wall0)
        when = "+%5.2fs" % ((at if at is not None else time.monotonic()) - self.t0)
        where = ""
        if self.tid:
            where = "%s fence %s gen %s" % (self.tid, "-" if fence is None else fence,
                                            "-" if gen is None else gen)
        print("  %s  %s %s  %s" % (paint("2", when), paint("36", "%-15s" % who), where, what))
        self.explain(where + " " + what)
        sys.stdout.flush()

    def explain(self, text):
        """Under a line, one line for each glossary term it is the first to use."""
        for entry in list(self.unexplained):
            if re.search(entry[0], text):
                print("            %s %s" % (paint("2", "·"), paint("2", entry[1])))
                self.unexplained.remove(entry)

    def check(self, claim, ok, text):
        self.checks[claim].append((bool(ok), text))
        mark = paint("32", "ok  ") if ok else paint("31", "FAIL")
        print("            %s %s" % (mark, text))
        self.explain(text)
        sys.stdout.flush()
        return bool(ok)

    # --- processes -------------------------------------------------------

    def spawn(self, name, argv, ready_prefix=None, env=None):
        """Start a helper; returns (Popen, first stdout line's last word)."""
        err = open(os.path.join(self.tmp, name + ".log"), "wb")
        e = dict(os.environ)
        e.update(env or {})
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=e)
        err.close()
        self.procs.append((name, p))
        line = p.stdout.readline().decode().strip()
        if not line or (ready_prefix and not line.startswith(ready_prefix)):
            raise RuntimeError("%s did not start (%r); see %s.log" % (name, line, name))
        return p, line.split()[-1]

    def listen(self):
        """The orchestrator's receiver: once listen --json, its stdout (one
        line per event handed over) the handled log. Returns its port."""
        log = os.path.join(self.tmp, "receiver.log")
        with open(os.path.join(self.orch, "handled.jsonl"), "wb") as out, open(log, "wb") as err:
            p = subprocess.Popen([self.once_bin, "--json", "listen", "--port", "0",
                                  "--secret", SECRET, "--token", HOOK_TOKEN,
                                  "--state", os.path.join(self.orch, "processed.db")],
                                 stdout=out, stderr=err)
        self.procs.append(("receiver", p))

        def port():
            with open(log) as f:
                for line in f:
                    if "listening on http://" in line:
                        return int(line.split("listening on http://")[1].split("/")[0].rsplit(":", 1)[1])
            if p.poll() is not None:
                raise RuntimeError("once listen exited (%s); see receiver.log" % p.returncode)
            return None
        got = wait_for(port, 15)
        if not got:
            raise RuntimeError("once listen did not start; see receiver.log")
        return got

    def proxy(self, name, targets, *opts):
        argv = [os.path.join(self.tools, "proxy"), "--listen", "0"]
        for t in targets:
            argv += ["--to", "127.0.0.1:%d" % t]
        _, port = self.spawn(name, argv + list(opts))
        return int(port)

    def replica_name(self, port):
        return {self.a.port: "reviewer-a", self.b.port: "reviewer-b"}.get(port, "?")

    def proxy_log(self, name):
        """{conn: {"mode", "to", "requests": [(method, path, header value)]}}"""
        conns = {}
        with open(os.path.join(self.tmp, name + ".log")) as f:
            for line in f:
                w = line.split()
                if len(w) < 3 or w[0] != "conn":
                    continue
                c = conns.setdefault(int(w[1]), {"mode": None, "to": None, "requests": []})
                if w[2] in ("forward", "drop", "reset"):
                    c["mode"] = w[2]
                    if len(w) >= 5 and w[3] == "to":
                        c["to"] = int(w[4].rsplit(":", 1)[1])
                elif w[2] == "request" and len(w) >= 5:
                    c["requests"].append((w[3], w[4], w[6] if len(w) >= 7 else None))
        return conns

    def stop_all(self):
        # The analysis normally ended long ago; if a broken run left it
        # stopped, end it -- only if that pid is still our analysis.
        if self.analysis_pid and _is_analysis(self.analysis_pid):
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(self.analysis_pid, sig)
                except OSError:
                    pass
        for r in self.replicas:
            r.stop()
        self.replicas = []
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            if p.stdout:
                p.stdout.close()
        self.procs = []

    # --- looking at things -----------------------------------------------

    def row(self):
        """The task's row in the shared SQLite registry (read-only), or None."""
        db = sqlite3.connect("file:%s?mode=ro" % self.registry, uri=True, timeout=5)
        try:
            db.row_factory = sqlite3.Row
            r = db.execute("SELECT * FROM tasks WHERE task_id=?", (self.tid,)).fetchone()
            return dict(r) if r else None
        finally:
            db.close()

    def registry_query(self, sql, *args):
        db = sqlite3.connect("file:%s?mode=ro" % self.registry, uri=True, timeout=5)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def intents(self):
        db = sqlite3.connect("file:%s?mode=ro" % self.outbox, uri=True, timeout=5)
        try:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute("SELECT * FROM intents ORDER BY seq")]
        finally:
            db.close()

    def journal(self, who=None, what=None):
        """The reviewer's and the analysis' records of what they did (complete
        lines only: they may be appending right now)."""
        recs = []
        try:
            with open(self.journal_path) as f:
                for line in f:
                    if not line.endswith("\n"):
                        continue
                    try:
                        recs.append(json.loads(line))
                    except ValueError:
                        pass
        except FileNotFoundError:
            return []
        return [r for r in recs if (who is None or r["who"] == who) and
                (what is None or r["what"] == what) and r.get("task") == self.tid]

    def handled(self):
        """[(generation, event)] the orchestrator's receiver handed over for the task."""
        try:
            with open(os.path.join(self.orch, "handled.jsonl")) as f:
                rows = [json.loads(l) for l in f if l.endswith("\n") and l.strip()]
        except FileNotFoundError:
            return []
        return [(r["generation"], r["event"]) for r in rows if r.get("taskId") == self.tid]

    def get_task(self, replica):
        st, _, doc = replica.rpc("GetTask", {"id": self.tid})
        return doc or {}

    def stats(self, replica):
        st, _, doc = replica.rpc("once/admin/stats", {})
        return ((doc or {}).get("result") or {}).get("engine") or {}

    def signing_stats(self):
        st, _, body = h.http_get(self.sign_port, "/stats")
        return json.loads(body)

    def cue(self, name):
        open(os.path.join(self.tmp, "cues", "%s-%s" % (name, self.tid)), "w").close()

    def once(self, *args, timeout=90, meanwhile=None):
        """Run the once CLI as the orchestrator: (exit status, JSON answer).
        meanwhile(), if given, runs while the command does."""
        argv = [self.once_bin, "--outbox", self.outbox, "--json"] + list(args)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if meanwhile is not None:
            meanwhile()
        stdout, stderr = proc.communicate(timeout=timeout)
        p = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
        out = p.stdout.decode(errors="replace").strip()
        try:
            doc = json.loads(out.splitlines()[-1]) if out else {}
        except ValueError:
            doc = {"_unparsed": out}
        if p.stderr:
            with open(os.path.join(self.orch, "once.log"), "ab") as f:
                f.write(b"$ " + " ".join(shlex.quote(a) for a in argv).encode() + b"\n" + p.stderr)
        return p.returncode, doc

    # --- the cast --------------------------------------------------------

    def setup(self):
        q = self.quick
        self.sign_port = int(self.spawn("signing-service", [sys.executable, os.path.join(
            HERE, "signing_service.py")], "listening")[1])
        self.sign_link = self.proxy("sign-link", [self.sign_port], "--drop-response", "1",
                                    "--log-header", "idempotency-key")
        rx_port = self.listen()
        self.hook_link = self.proxy("hook-link", [rx_port], "--drop-response", "1",
                                    "--log-header", "webhook-id")
        common = ["--exec", "%s %s" % (shlex.quote(sys.executable),
                                       shlex.quote(os.path.join(HERE, "reviewer.py"))),
                  "--test-admin", "--retention", "72h", "--tombstone-retention", "30d",
                  "--lease", "5s" if q else "10s",
                  "--push-secret", SECRET, "--push-allow", "127.0.0.1/32",
                  "--push-timeout", "2s", "--push-backoff", "100ms"]
        env = {"DEMO_DIR": self.tmp, "DEMO_STORE": self.store, "DEMO_TOOLS": self.tools,
               "DEMO_SIGN_URL": "http://127.0.0.1:%d/sign" % self.sign_link,
               "DEMO_ANALYSIS_SECONDS": "1.5" if q else "2", "DEMO_ANALYSIS_FREEZE": "1"}
        for name in ("reviewer-a", "reviewer-b"):
            e = dict(env, DEMO_REPLICA=name)
            self.replicas.append(h.Onced(common + ["--replica-id", name], store=self.store,
                                         tmpdir=self.tmp, env=e))
        self.a, self.b = self.replicas
        # Round robin by connection: the client reads the agent card first
        # (conn 1 -> reviewer-b), then sends (conn 2 -> reviewer-a, answer
        # lost: held open until the client's attempt times out), then
        # retries (conn 3 -> reviewer-b).
        self.link = self.proxy("link", [self.b.port, self.a.port], "--drop-response", "2",
                               "--drop-hold", "60000", "--log-header", "a2a-version")
        self.agent_url = "http://127.0.0.1:%d/" % self.link

    # --- the story -------------------------------------------------------

    def run(self):
        q = self.quick
        print(paint("1", "once: the contract-review story") +
              " (embedded SQLite registry %s)" % self.registry)
        self.setup()
        self.event("cast", "reviewer-a :%d and reviewer-b :%d share the registry; link :%d "
                   "round-robins to them; signing service :%d behind a lossy link :%d; the "
                   "orchestrator's receiver behind a lossy link :%d"
                   % (self.a.port, self.b.port, self.link, self.sign_port, self.sign_link,
                      self.hook_link))

        # 1 ---------------------------------------------------------------
        self.heading(1, "The orchestrator mints a task ID, writes its outbox, sends the contract")
        self.tid = mint_task_id()
        self.event("orchestrator", "minted the task ID before any network activity")
        self.event("orchestrator", "once send --id %s --text <contract> --agent %s"
                   % (self.tid, self.agent_url))
        rc, res = self.once("send", "--agent", self.agent_url, "--id", self.tid, "--text", CONTRACT,
                            "--timeout", "1s" if q else "1500ms", "--backoff-base", "100ms",
                            "--backoff-cap", "500ms", meanwhile=self.pause_analysis)
        # The reviewer is now parked before its question (its last progress
        # line is in: the checkpoint written after it is).
        parked = wait_for(lambda: "analysing" in ((self.row() or {}).get("checkpoint") or ""), 20)
        row = self.row() or {}
        intents = self.intents()
        first = intents[0] if intents else {}
        link = self.proxy_log("link")
        c1, c2, c3 = link.get(1, {}), link.get(2, {}), link.get(3, {})
        sa, sb = self.stats(self.a), self.stats(self.b)
        turn1 = self.journal("reviewer", "turn started")
        started = self.journal("reviewer", "analysis started")
        t_reg = row.get("created_at", 0) / 1000.0
        self.event("orchestrator", "outbox intent #%s written: send %s, pending"
                   % (first.get("seq"), first.get("task_id")), wall=first.get("created_ms", 0) / 1000.0)
        self.event("link", "conn 1 %s -> %s: %s %s" % (
            c1.get("mode"), self.replica_name(c1.get("to")),
            *(c1.get("requests") or [("?", "?", None)])[0][:2]), wall=t_reg)
        self.event("link", "conn 2 %s -> %s: the SendMessage gets through" % (
            c2.get("mode"), self.replica_name(c2.get("to"))), wall=t_reg)
        self.check("minted", rc == 0 and res.get("taskId") == self.tid,
                   "once send answered for %s (exit %d, outcome %s)"
                   % (res.get("taskId"), rc, res.get("outcome")))
        self.check("minted", len(intents) == 1 and first.get("kind") == "send" and
                   first.get("task_id") == self.tid and first.get("message_id") == self.tid,
                   "the outbox holds intent #%s: send %s (messageId = task ID)"
                   % (first.get("seq"), first.get("task_id")))
        self.check("minted", row and first.get("created_ms", 1 << 62) <= row.get("created_at", 0),
                   "the intent was written (%s ms) before the reviewer registered the task (%s ms)"
                   % (first.get("created_ms"), row.get("created_at")))

        # 2 ---------------------------------------------------------------
        self.heading(2, "The link loses the answer; reviewer-a registered the task and works")
        self.event("reviewer-a", "registered the client-minted task and took its lease (fence 1)",
                   1, 1, wall=t_reg)
        self.event("link", "conn 2: the answer is lost (held open, silent, until the client "
                   "gives up)", wall=t_reg)
        for j in turn1[:1]:
            self.event(j["replica"], "turn 1 (ONCE_FENCE=%s, ONCE_STEP=%s): reading the contract, "
                       "extracting clauses" % (j["fence"], j["step"]), 1, None, wall=j["t"])
        for j in started[:1]:
            self.event(j["replica"], "step 2: started the deep analysis in the background (pid %s, "
                       "ONCE_FENCE=%s)" % (j["pid"], j["fence"]), 1, None, wall=j["t"])
        self.event("analysis", "a stop-the-world pause freezes the analysis mid-work (SIGSTOP)",
                   1, self.paused_gen, at=self.paused_at)
        self.check("registered", c2.get("mode") == "drop" and c2.get("to") == self.a.port and
                   c2.get("requests", [("", "", "")])[0][0] == "POST",
                   "the link dropped the answer to the SendMessage on conn 2 (to reviewer-a)")
        self.check("registered", sa.get("registered") == 1 and sb.get("registered") == 0,
                   "reviewer-a registered it (registered: a=%s b=%s)"
                   % (sa.get("registered"), sb.get("registered")))
        self.check("registered", row.get("lease_owner") == "reviewer-a" and row.get("fence") == 1 and
                   row.get("state") == 2,
                   "registry: %s, lease owner %s, fence %s"
                   % (STATES.get(row.get("state")), row.get("lease_owner"), row.get("fence")))
        self.check("registered", len(turn1) == 1 and turn1[0]["replica"] == "reviewer-a" and
                   turn1[0]["fence"] == 1,
                   "the reviewer's turn 1 runs on %s with ONCE_FENCE=%s"
                   % (turn1[0]["replica"] if turn1 else "-", turn1[0]["fence"] if turn1 else "-"))
        stopped = self.analysis_pid and _proc_state(self.analysis_pid) == "T"
        self.check("fenced", parked and stopped and not self.journal("analysis", "wrote half-result"),
                   "the analysis is stopped (process state %s) and has written nothing"
                   % (_proc_state(self.analysis_pid) if self.analysis_pid else "-"))

        # 3 ---------------------------------------------------------------
        self.heading(3, "The orchestrator's retry lands on reviewer-b, which replays `working`")
        t_ack = (first.get("acked_ms") or 0) / 1000.0
        self.event("orchestrator", "no answer to attempt 1; retries with the same task ID and body",
                   wall=t_ack)
        self.event("link", "conn 3 %s -> %s" % (c3.get("mode"), self.replica_name(c3.get("to"))),
                   wall=t_ack)
        self.event("reviewer-b", "replayed the stored task: %s, Idempotent-Replayed: true (no new "
                   "task, no new turn)" % res.get("state"), 1, h.generation(res.get("task")),
                   wall=t_ack)
        self.check("replayed", res.get("attempts") == 2 and res.get("replayed") is True and
                   res.get("state") == "TASK_STATE_WORKING",
                   "once send: attempts %s, replayed %s, state %s"
                   % (res.get("attempts"), res.get("replayed"), res.get("state")))
        self.check("replayed", c3.get("mode") == "forward" and c3.get("to") == self.b.port and
                   sb.get("replayed") == 1,
                   "the retry reached reviewer-b (replayed: b=%s)" % sb.get("replayed"))
        lists = []
        for r in (self.a, self.b):
            st, _, doc = r.rpc("ListTasks", {})
            lists.append([t.get("id") for t in ((doc or {}).get("result") or {}).get("tasks", [])])
        count = self.registry_query("SELECT count(*) FROM tasks")[0][0]
        self.check("replayed", lists == [[self.tid], [self.tid]] and count == 1,
                   "one task: ListTasks on a and on b list only %s; the SQLite file holds %d row(s)"
                   % (self.tid, count))
        self.check("replayed", first.get("state") == "acknowledged",
                   "the outbox intent is %s" % first.get("state"))

        # 4 ---------------------------------------------------------------
        self.heading(4, "The reviewer needs clarification: input-required, announced by webhook")
        hook_url = "http://127.0.0.1:%d/hook" % self.hook_link
        st, _, doc = h.rpc(self.link, "CreateTaskPushNotificationConfig",
                           {"taskId": self.tid, "url": hook_url, "token": HOOK_TOKEN})
        sub = ((doc or {}).get("result") or {})
        self.event("orchestrator", "subscribed its receiver to the task's events: push config %s"
                   % (sub.get("id") or doc), row.get("fence"), row.get("generation"))
        self.check("webhook", sub.get("taskId") == self.tid and sub.get("url") == hook_url,
                   "CreateTaskPushNotificationConfig: %s" % ("ok" if sub else doc))
        self.cue("ask")
        task = wait_for(lambda: _state_is(self.get_task(self.a), "TASK_STATE_INPUT_REQUIRED"), 20)
        gen_n = self.gen_n = h.generation(task)
        row = self.row() or {}
        asked = (self.journal("reviewer", "asked") or [{}])[0]
        self.event(asked.get("replica", "reviewer"), "step 3: asked \"%s\" -> input-required"
                   % h.status_text(task or {}), row.get("fence"), gen_n, wall=asked.get("t"))
        got = wait_for(lambda: [b for g, b in self.handled() if g == gen_n], 20)
        delivered = wait_for(lambda: self._delivered(gen_n), 20)
        hook = self.proxy_log("hook-link")
        copies = [(n, c["mode"]) for n, c in sorted(hook.items())
                  for m, p, wid in c["requests"]
                  # webhook-id: <subscriber tag>/<config>/<since>/<task>.<generation>
                  if wid.endswith("/%s.%d" % (self.tid, gen_n))]
        self.event("hook link", "webhook %s.%s: %s" % (self.tid, gen_n, ", ".join(
            "conn %d %s" % (n, "answer lost" if m == "drop" else "delivered") for n, m in copies)))
        self.event("onced", "redelivered the event after the lost 2xx (delivery retries %s)"
                   % (delivered or {}).get("retries"), row.get("fence"), gen_n)
        self.event("receiver", "once listen recorded %s.%s, handed it over, answered the copy "
                   "2xx and dropped it (processed-set)" % (self.tid, gen_n))
        body = got[0] if got else {}
        state = ((body.get("statusUpdate") or {}).get("status") or {}).get("state")
        self.check("webhook", task and gen_n and row.get("state") == 3,
                   "GetTask: input-required at generation %s" % gen_n)
        self.check("webhook", [m for _, m in copies] == ["drop", "forward"],
                   "the event reached the receiver twice: %d request(s) with webhook-id %s.%s"
                   % (len(copies), self.tid, gen_n))
        self.check("webhook", got and len(got) == 1 and state == "TASK_STATE_INPUT_REQUIRED",
                   "the receiver handed it over once (%s): one line in its handled log" % state)
        self.check("webhook", delivered and delivered.get("retries") == 1,
                   "onced delivered generation %s after %s retry"
                   % ((delivered or {}).get("deliveredGeneration"), (delivered or {}).get("retries")))

        # 5 ---------------------------------------------------------------
        self.heading(5, "The orchestrator answers: the same task ID, continued")
        self.event("orchestrator", "once continue %s --text \"%s\"" % (self.tid, ANSWER))
        rc, res = self.once("continue", self.tid, "--text", ANSWER, "--timeout", "5s")
        resumed = wait_for(lambda: "resuming" in ((self.row() or {}).get("task_json") or ""), 20)
        row = self.row() or {}
        turn2 = self.journal("reviewer", "turn started")[1:]
        who = turn2[0]["replica"] if turn2 else "reviewer"
        self.event(who, "turn 2 (ONCE_FENCE=%s, ONCE_STEP=%s): resuming the review under the "
                   "answer" % (turn2[0]["fence"] if turn2 else "-", turn2[0]["step"] if turn2 else "-"),
                   row.get("fence"), row.get("generation"), wall=turn2[0]["t"] if turn2 else None)
        self.check("continued", rc == 0 and res.get("taskId") == self.tid and
                   res.get("state") in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"),
                   "once continue: %s %s (exit %d)" % (res.get("taskId"), res.get("state"), rc))
        self.check("continued", resumed and row.get("fence") == 2 and row.get("state") == 2,
                   "registry: fence %s, state %s" % (row.get("fence"), STATES.get(row.get("state"))))
        self.check("continued", len(turn2) == 1 and turn2[0]["fence"] == 2 and turn2[0]["step"] == 4,
                   "the reviewer's turn 2 holds fence %s at step %s"
                   % (turn2[0]["fence"] if turn2 else "-", turn2[0]["step"] if turn2 else "-"))

        # 6 ---------------------------------------------------------------
        self.heading(6, "The paused phase-1 worker comes back and writes with fence 1")
        before = self.row() or {}
        if self.analysis_pid:
            os.kill(self.analysis_pid, signal.SIGCONT)
        self.event("analysis", "resumed: SIGCONT; writes its half-result with fence 1 "
                   "(build/tools/fenced_write)", before.get("fence"), before.get("generation"))
        rec = wait_for(lambda: self.journal("analysis", "wrote half-result"), 20)
        rec = rec[0] if rec else {}
        result = rec.get("result") or {}
        after = self.row() or {}
        self.event("engine (store)", "refused: %s (the worker holds fence %s, the task fence %s)"
                   % (result.get("error"), result.get("fence"), result.get("storedFence")),
                   after.get("fence"), after.get("generation"), wall=rec.get("t"))
        self.check("fenced", rec.get("exit") == 3 and result.get("error") == "ONCE_EFENCED" and
                   result.get("fence") == 1 and result.get("storedFence") == 2,
                   "the write was refused with %s (exit %s)" % (result.get("error"), rec.get("exit")))
        marker = rec.get("marker", "DRAFT-RISK-NOTES")
        seen = [name for name, r in (("reviewer-a", self.a), ("reviewer-b", self.b))
                if marker in json.dumps(self.get_task(r))]
        in_events = self.registry_query(
            "SELECT count(*) FROM events WHERE tid=? AND payload LIKE ?", after.get("rid"),
            "%" + marker + "%")[0][0]
        in_row = marker in (after.get("task_json") or "")
        self.check("fenced", not seen and not in_row and in_events == 0,
                   "its half-result is nowhere: GetTask (a, b) %s, task row %s, events table %d"
                   % ("clean" if not seen else "shows it on " + ",".join(seen),
                      "clean" if not in_row else "HAS IT", in_events))
        self.check("fenced", after.get("generation") == before.get("generation") and
                   after.get("fence") == 2 and after.get("task_json") == before.get("task_json"),
                   "the task did not move: generation %s, fence %s, same content"
                   % (after.get("generation"), after.get("fence")))

        # 7 ---------------------------------------------------------------
        self.heading(7, "The fence-2 worker has the contract signed (Idempotency-Key t-...:step-4)")
        self.cue("sign")
        self.event("orchestrator", "once wait %s" % self.tid)
        rc, res = self.once("wait", self.tid, "--wait-timeout", "40s")
        sign = (self.journal("reviewer", "signing call") or [{}])[0]
        svc = self.signing_stats()
        key = "%s:step-4" % self.tid
        sl = self.proxy_log("sign-link")
        t_sign = sign.get("t")
        for n, c in sorted(sl.items()):
            self.event("sign link", "conn %d %s: POST /sign Idempotency-Key %s" % (
                n, "answer lost" if c["mode"] == "drop" else "delivered",
                (c["requests"] or [(None, None, "?")])[0][2]), wall=t_sign)
        self.event(sign.get("replica", who), "step 4: effect_call: %s" % "; ".join(
            a.replace("effect_call: ", "") for a in sign.get("attempts", [])), 2, None, wall=t_sign)
        self.event("signing service", "requests for %s: %s; signatures: %s"
                   % (key, svc["requests"].get(key), svc["signatures"].get(key)), wall=t_sign)
        self.check("signed", sign.get("key") == key and sign.get("step") == 4,
                   "the worker used key %s (step %s)" % (sign.get("key"), sign.get("step")))
        self.check("signed", len(sign.get("attempts", [])) == 2 and
                   [c["mode"] for _, c in sorted(sl.items())] == ["drop", "forward"],
                   "the call was retried: %d attempts, the first answer lost"
                   % len(sign.get("attempts", [])))
        self.check("signed", svc["requests"].get(key) == 2 and svc["signatures"].get(key) == 1 and
                   svc["totalSignatures"] == 1,
                   "the service saw %s requests and signed %s time(s)"
                   % (svc["requests"].get(key), svc["signatures"].get(key)))

        # 8 ---------------------------------------------------------------
        self.heading(8, "The task completes; the artifact is stored under the task ID")
        row = self.row() or {}
        ta, tb = self.get_task(self.a).get("result") or {}, self.get_task(self.b).get("result") or {}
        art = [a for a in ta.get("artifacts", []) if a.get("artifactId") == "signed-contract"]
        sig = next((p["data"].get("signatureId") for a in art for p in a.get("parts", [])
                    if isinstance(p.get("data"), dict)), None)
        fin = (self.journal("reviewer", "completed") or [{}])[0]
        self.event(fin.get("replica", who), "published the signed-contract artifact; completed: %s"
                   % h.status_text(ta), row.get("fence"), row.get("generation"), wall=fin.get("t"))
        done = wait_for(lambda: [b for g, b in self.handled()
                                 if _event_state(b) == "TASK_STATE_COMPLETED"], 15)
        self.event("orchestrator", "once wait: %s; its receiver also handled the completion"
                   % res.get("state"))
        self.check("completed", rc == 0 and res.get("state") == "TASK_STATE_COMPLETED" and
                   row.get("state") == 5,
                   "once wait: %s (exit %d); registry state %s"
                   % (res.get("state"), rc, STATES.get(row.get("state"))))
        answered = ((sign.get("answer") or {}).get("signatureId"))
        self.check("completed", sig is not None and sig == answered and
                   tb.get("artifacts") == ta.get("artifacts") and sig in (row.get("task_json") or ""),
                   "artifact signed-contract under %s holds %s (GetTask a = b = registry)"
                   % (ta.get("id"), sig))
        self.check("completed", bool(done), "the receiver handed over the completed event (generation %s)"
                   % (max([g for g, _ in self.handled()] or [0])))

        # 9 ---------------------------------------------------------------
        self.heading(9, "The clock jumps past retention; a batch job replays the old outbox record")
        turns_before = sum(self.stats(r).get("executedTurns", 0) for r in self.replicas)
        rid = (self.row() or {}).get("rid")   # the task's row: its events are keyed by it
        journal_turns = len(self.journal("reviewer", "turn started"))
        for name, r in (("reviewer-a", self.a), ("reviewer-b", self.b)):
            st, _, doc = r.rpc("once/admin/setClockOffset", {"offsetMs": RETENTION_JUMP_MS})
            self.event(name, "clock +73h: now %s" % ((doc or {}).get("result") or {}).get("now"))
        expired = wait_for(lambda: all(_reason(self.get_task(r)) == "TASK_EXPIRED"
                                       for r in self.replicas), 20)
        tomb = self.registry_query("SELECT count(*) FROM tombstones WHERE task_id=?", self.tid)[0][0]
        sweeper = [n for n, r in (("reviewer-a", self.a), ("reviewer-b", self.b))
                   if self.stats(r).get("swept", 0) > 0]
        self.event("/".join(sweeper) or "retention", "retention sweep: the finished task is "
                   "compacted to a tombstone")
        old = (self.intents() or [{}])[0]
        text = next((p.get("text") for p in json.loads(old.get("message", "{}")).get("parts", [])
                     if "text" in p), "")
        self.event("batch job", "replays outbox intent #%s: once send --id %s --text <the same "
                   "contract> --agent %s" % (old.get("seq"), self.tid, old.get("agent")))
        rc, res = self.once("send", "--agent", old.get("agent", ""), "--id", self.tid, "--text", text,
                            "--timeout", "5s")
        err = res.get("error") or {}
        replay = self.intents()[-1] if len(self.intents()) > 1 else {}
        self.event("reviewer (link)", "answered %s %s: expiredAt %s" % (
            err.get("code"), err.get("reason"), _expired_at(self.get_task(self.a))))
        svc = self.signing_stats()
        turns_after = sum(self.stats(r).get("executedTurns", 0) for r in self.replicas)
        events = self.registry_query("SELECT count(*) FROM events WHERE tid=?", rid)[0][0]
        self.check("expired", expired and tomb == 1 and rid is not None and self.row() is None and
                   events == 0,
                   "GetTask on a and b: TASK_EXPIRED; the registry keeps only a tombstone "
                   "(task rows 0, events 0, tombstones %d)" % tomb)
        self.check("expired", replay.get("message") == old.get("message") and
                   replay.get("task_id") == self.tid,
                   "the replay carried the same ID and the same body as intent #%s" % old.get("seq"))
        self.check("expired", rc == 3 and err.get("code") == -32001 and err.get("reason") == "TASK_EXPIRED",
                   "the reviewer answered %s %s (once exit %d)" % (err.get("code"), err.get("reason"), rc))
        self.check("expired", turns_after == turns_before == 2 and self.row() is None and
                   len(self.journal("reviewer", "turn started")) == journal_turns == 2,
                   "nothing re-ran: reviewer turns %s -> %s, no task row" % (turns_before, turns_after))
        self.check("expired", svc["totalSignatures"] == 1 and svc["requests"].get(key) == 2,
                   "the signing service still counts %s signature(s)" % svc["totalSignatures"])

        # Every event the receiver handed over, once each, in order.
        self.heading(10, "Afterwards: the orchestrator's receiver over the whole story")
        self.stop_all()
        gens = [g for g, _ in self.handled()]
        self.check("webhook", gens == list(range(gen_n, gens[-1] + 1)) if gens else False,
                   "over the whole story the receiver handed over generations %s..%s, each once, "
                   "in order" % (gens[0] if gens else "-", gens[-1] if gens else "-"))

    def pause_analysis(self):
        """Turn 1's background analysis freezes (SIGSTOP) right after it
        starts: it stops itself (DEMO_ANALYSIS_FREEZE), so the pause lands
        before its result however late this process gets to look; here we
        wait to see it stopped. (A SIGSTOP sent from here as well could land
        before the process's own, which would then stop it again after the
        story's SIGCONT.)"""
        pidfile = os.path.join(self.tmp, "analysis-%s.pid" % self.tid)
        if wait_for(lambda: os.path.exists(pidfile), 20, step=0.01):
            with open(pidfile) as f:
                self.analysis_pid = int(f.read())
            wait_for(lambda: _stopped(self.analysis_pid), 20, step=0.01)
            self.paused_at = time.monotonic()
            self.paused_gen = (self.row() or {}).get("generation")

    def _delivered(self, gen):
        st, _, doc = self.a.rpc("ListTaskPushNotificationConfigs", {"taskId": self.tid}, ext=True)
        cfgs = ((doc or {}).get("result") or {}).get("configs") or []
        d = (cfgs[0].get("delivery") or {}) if cfgs else {}
        return d if d.get("deliveredGeneration", 0) >= gen else None

    def verdict(self):
        print()
        print(paint("1", "Verdict") + " for task %s" % (self.tid or "-"))
        claims = [(k, t.format(gen=self.gen_n)) for k, t in CLAIMS]
        width = max(len(t) for _, t in claims)
        print(paint("1", " #  %-*s  verdict" % (width, "claim")))
        held = 0
        for i, (k, text) in enumerate(claims, 1):
            ok = bool(self.checks[k]) and all(o for o, _ in self.checks[k])
            held += ok
            print("%2d  %-*s  %s" % (i, width, text, paint("32", "held") if ok else paint("31", "FAILED")))
        print("%d of %d claims held" % (held, len(CLAIMS)))
        return held == len(CLAIMS)


def _stopped(pid):
    """1 if process pid is stopped (state T in /proc/PID/stat)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def _is_analysis(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"analysis.py" in f.read()
    except OSError:
        return False


def _proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def _state_is(doc, state):
    t = (doc or {}).get("result") or {}
    return t if (t.get("status") or {}).get("state") == state else None


def _event_state(body):
    return ((body.get("statusUpdate") or {}).get("status") or {}).get("state")


def _expired_at(doc):
    return h.error_info(doc or {})[2].get("expiredAt")


def _reason(doc):
    return h.error_info(doc or {})[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build")))
    ap.add_argument("--quick", action="store_true", help="short leases and waits (tests)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args()
    story = Story(args.build, args.quick, args.keep)
    if not args.keep:
        h.reaper.remove_after(story.tmp)
    ok = False
    try:
        story.run()
    except Exception as ex:  # a broken run is a failed run, reported as such
        print(paint("31", "\nthe story broke off: %r" % ex))
        import traceback
        traceback.print_exc()
    except (KeyboardInterrupt, SystemExit) as ex:
        # Ctrl-C or SIGTERM (the harness turns it into SystemExit): stop
        # every process (also those a turn started), then the scratch folder.
        print("\nthe story was interrupted; stopping its processes", file=sys.stderr)
        h.reaper.reap(h.REAP_VAR)
        story.stop_all()
        if not args.keep:
            shutil.rmtree(story.tmp, ignore_errors=True)
        return 130 if isinstance(ex, KeyboardInterrupt) else ex.code
    finally:
        story.stop_all()
    ok = story.verdict()
    print("%.1f s" % (time.monotonic() - story.t0))
    if args.keep or not ok:
        h.reaper.keep(story.tmp)
        print("logs, registry, outbox and journal: %s" % story.tmp)
    else:
        shutil.rmtree(story.tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
