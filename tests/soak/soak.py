"""The chaos soak (tests/soak/README.md): three onced replicas on one shared
PostgreSQL or Redis store, each behind a proxy that loses responses, killed
with SIGKILL and restarted every few seconds, while `once` clients (each with
its own outbox) send tasks and are themselves killed mid-send and recovered.
Every task's one side effect goes to a counting service keyed by its
Idempotency-Key. At the end, the claims once makes are checked against the
outboxes, the store, the counting service and the agent's log; a table of
what happened is printed and the exit status is 0 only if every claim held.

    python3 tests/soak/soak.py [--build DIR] [--seconds N] [--clients N]
                               [--seed S] [--lease DUR] [--store-outages S]
                               [--keep] TARGET...

TARGET: `postgres` or `redis` (a throwaway server of the soak's own,
tests/replicas/fleet.py), or a postgres:// / redis:// URL of a running server
(a fresh schema / key prefix is used). `make soak` runs both backends for
SOAK_SECONDS (120); the ctest soak/{postgres,redis} runs 30 s on the shared
test servers. --store-outages S adds crashes of the store itself (own
servers only) about every S seconds. Every timeout is scaled by ONCE_TEST_TIMEOUT_FACTOR
(harness.scaled); the chaos itself (kill every few seconds) is the workload,
not a timeout. Python 3 standard library only.
"""
import argparse
import json
import os
import random
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def parse_args():
    ap = argparse.ArgumentParser(description="the once chaos soak (tests/soak/README.md)")
    ap.add_argument("targets", nargs="+", metavar="TARGET",
                    help="postgres | redis (own server) | postgres://... | redis://...")
    ap.add_argument("--build", help="build directory (default: $ONCE_BUILD, else build/)")
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("SOAK_SECONDS") or 120),
                    help="chaos time per backend (default $SOAK_SECONDS, else 120)")
    ap.add_argument("--clients", type=int, default=4, help="concurrent once clients (4)")
    ap.add_argument("--seed", type=int, help="the run's random seed (default: random, printed)")
    ap.add_argument("--lease", default="3s", help="onced --lease (3s)")
    ap.add_argument("--store-outages", type=float, metavar="SECONDS",
                    default=float(os.environ.get("SOAK_STORE_OUTAGES") or 0),
                    help="also crash and restart the store about every SECONDS (own servers "
                         "only; default $SOAK_STORE_OUTAGES, else 0: never)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, outboxes)")
    return ap.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None and ARGS.build:
    _b = os.path.abspath(ARGS.build)
    os.environ.update({"ONCED": os.path.join(_b, "onced"), "ONCE_BUILD": _b,
                       "ONCE_TOOLS": os.path.join(_b, "tools")})
BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
TOOLS = os.environ.get("ONCE_TOOLS", os.path.join(BUILD, "tools"))
os.environ.setdefault("ONCED", os.path.join(BUILD, "onced"))
ONCE = os.path.join(BUILD, "once")
PROXY = os.path.join(TOOLS, "proxy")
EFFECT_CALL = os.path.join(TOOLS, "effect_call")

sys.path.insert(0, os.path.join(ROOT, "tests", "replicas"))
import fleet  # noqa: E402  (puts tests/e2e on sys.path)
import harness  # noqa: E402
from harness import scaled  # noqa: E402
from effects import CountingService  # noqa: E402

NAMES = ["r1", "r2", "r3"]
REPLICA_LOSS = 0.1        # each replica's proxy loses this share of responses
EFFECT_LOSS = 0.15        # the counting service's proxy, likewise
KILL_EVERY = (2.0, 5.0)   # seconds between replica kills (uniform)
DOWN_FOR = (0.2, 1.5)     # seconds a killed replica stays down (uniform)
STORE_DOWN_FOR = (1.0, 3.0)   # seconds the store stays down, with --store-outages
CLIENT_KILL_P = 0.25      # share of sends whose client is killed
WORK = (0.0, 1.0)         # seconds of work before and after the effect (uniform each)


class Stopped(BaseException):
    """Raised in the main thread by SIGINT/SIGTERM/SIGHUP."""

    def __init__(self, sig):
        super().__init__("stopped by signal %d" % sig)
        self.sig = sig


def _on_signal(sig, _frame):
    _ENDING.set()
    raise Stopped(sig)


def proc_start_time(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
        return stat[stat.rfind(")") + 2:].split()[19]
    except (OSError, IndexError):
        return None


class Reaper:
    """tests/soak/reaper.py, in a session of its own: whatever ends the soak,
    it ends every process the soak registered here and removes the scratch
    folders (README.md, "Ending every process")."""

    def __init__(self, top):
        self.registry = os.path.join(top, "registry")
        self.lock = threading.Lock()
        self.add("rm", top)
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "reaper.py"),
                                      self.registry],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)

    def add(self, kind, arg):
        with self.lock, open(self.registry, "a") as f:
            f.write("%s %s\n" % (kind, arg))

    def pid(self, pid):
        self.add("pid", "%d %s" % (pid, proc_start_time(pid)))

    def finish(self, timeout):
        """Hand over (the soak's own cleanup is done) and wait for the sweep."""
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


# Every process the soak runs directly (clients, proxies), to end on the way
# out; once _ENDING is set, nothing new starts.
_LIVE = set()
_LIVE_LOCK = threading.Lock()
_ENDING = threading.Event()


class Ending(Exception):
    """A thread tried to start a process while the soak is being torn down."""


def popen(reaper, argv, **kw):
    with _LIVE_LOCK:
        if _ENDING.is_set():
            raise Ending()
        p = subprocess.Popen(argv, **kw)
        _LIVE.add(p)
    reaper.pid(p.pid)
    return p


def forget(p):
    with _LIVE_LOCK:
        _LIVE.discard(p)


def kill_live():
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        if p.poll() is None:
            try:
                p.kill()
            except OSError:
                pass
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass


class Proxy:
    """One tests/tools/proxy process losing a share of the responses."""

    def __init__(self, reaper, tmp, name, targets, loss, seed, first_drop):
        self.name = name
        self.logpath = os.path.join(tmp, "proxy-%s.log" % name)
        args = [PROXY, "--listen", "0"]
        for t in targets:
            args += ["--to", "127.0.0.1:%d" % t]
        # connection first_drop always loses its answer: every run loses some,
        # however few connections a slow machine makes
        args += ["--drop-response", str(first_drop), "--drop-response-prob", str(loss),
                 "--seed", str(seed)]
        with open(self.logpath, "wb") as err:
            self.proc = popen(reaper, args, stdout=subprocess.PIPE, stderr=err)
        ready, _, _ = select.select([self.proc.stdout], [], [], scaled(10))
        line = self.proc.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            raise RuntimeError("proxy %s did not start: %r" % (name, line))
        self.port = int(line)
        self.url = "http://127.0.0.1:%d/" % self.port

    def count(self, what):
        try:
            with open(self.logpath, errors="replace") as f:
                return sum(1 for ln in f if ln.startswith("conn ") and (" %s" % what) in ln)
        except OSError:
            return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        forget(self.proc)


class SoakAgent(fleet.Agent):
    """fleet's Agent (its runs log and its parsers), running tests/soak/agent.py."""

    def __init__(self, tmp, effect_url):
        super().__init__(tmp)
        self.cmd = " ".join(shlex.quote(a) for a in (sys.executable, os.path.join(HERE, "agent.py"),
                                                     self.log, effect_url, EFFECT_CALL))

    def events(self, tid):
        return [" ".join(w) for w in self.lines() if len(w) > 1 and w[1] == tid]

    def effect_runs(self):
        out = {}
        for w in self.lines():
            if w[0] == "effect":
                out.setdefault(w[1], []).append((int(w[2]), w[3]))
        return out


class Replicas:
    """The three onced processes. The chaos thread replaces a killed one by
    a new process on the same port (its proxy keeps pointing at it); lock
    guards the list and the counters."""

    def __init__(self, run, url, agent, extra):
        self.run, self.url, self.agent, self.extra = run, url, agent, extra
        self.lock = threading.Lock()
        self.reps = fleet.start_fleet(url, agent, run.tmp, NAMES, extra)
        self.incarnation = dict((n, 1) for n in NAMES)
        self.down = set()             # names killed and not yet restarted
        self.killed = 0
        self.kills = []               # (unix time, "name/incarnation") of every kill
        self.died = []                # (name, exit status): exits we did not cause
        self.stats = {}               # (name, incarnation) -> last engine counters seen
        for r in self.reps:
            run.reaper.pid(r.proc.pid)

    def by_name(self, name):
        return self.reps[NAMES.index(name)]

    def poll_stats(self, name=None):
        with self.lock:
            live = [(r.name, self.incarnation[r.name], r.port) for r in self.reps
                    if r.name not in self.down and (name is None or r.name == name)]
        for n, inc, port in live:
            try:
                st, _, doc = harness.rpc(port, "once/admin/stats", {}, timeout=scaled(2))
            except Exception:  # killed meanwhile: its last counters are kept
                continue
            if st == 200 and isinstance(doc, dict) and "result" in doc:
                with self.lock:
                    self.stats[(n, inc)] = doc["result"].get("engine") or {}

    def stat_total(self, field):
        with self.lock:
            return sum(int(s.get(field) or 0) for s in self.stats.values())

    def kill(self, name):
        self.poll_stats(name)   # the counters this incarnation reached
        with self.lock:
            r = self.by_name(name)
            self.down.add(name)
            self.killed += 1
            self.kills.append((time.time(), "%s/%d" % (name, self.incarnation[name])))
        r.kill9()
        r.log.close()
        self.run.event("killed %s (pid %d, incarnation %d)" % (name, r.proc.pid,
                                                               self.incarnation[name]))

    def restart(self, name):
        if _ENDING.is_set():
            return
        old = self.by_name(name)
        with open(old.log.name, "a") as f:
            f.write("=== soak: %s restarted at %.3f ===\n" % (name, time.time()))
        last = None
        env = {"ONCE_TEST_REPLICA": name, "SOAK_INCARNATION": str(self.incarnation[name] + 1)}
        for _ in range(5):
            try:
                with self.run.store_up:   # (held by a store outage while it lasts)
                    r = harness.Onced(args=["--exec", self.agent.cmd, "--replica-id", name] +
                                      list(self.extra), store=self.url, port=old.port,
                                      tmpdir=self.run.tmp, env=env)
                break
            except RuntimeError as ex:   # e.g. the port still held: try again
                last = ex
                time.sleep(0.2)
        else:
            raise RuntimeError("replica %s did not restart: %s" % (name, last))
        r.name = name
        self.run.reaper.pid(r.proc.pid)
        with self.lock:
            self.reps[NAMES.index(name)] = r
            self.incarnation[name] += 1
            self.down.discard(name)
        self.run.event("restarted %s (pid %d, incarnation %d)" % (name, r.proc.pid,
                                                                  self.incarnation[name]))

    def check_alive(self):
        """Restart a replica that exited without being killed (and note it)."""
        for name in NAMES:
            with self.lock:
                r = self.by_name(name)
                gone = name not in self.down and r.proc.poll() is not None
                if gone:
                    self.down.add(name)
                    self.died.append((name, r.proc.returncode))
                    self.kills.append((time.time(), "%s/%d" % (name, self.incarnation[name])))
            if gone:
                self.run.event("%s EXITED BY ITSELF with status %s" % (name, r.proc.returncode))
                r.log.close()
                self.restart(name)

    def all_up(self):
        for name in NAMES:
            with self.lock:
                down = name in self.down
            if down:
                self.restart(name)

    def ports(self):
        with self.lock:
            return [r.port for r in self.reps]

    def logs(self):
        return [(n, self.by_name(n).log.name) for n in NAMES]

    def stop(self):
        for r in self.reps:
            if r.proc.poll() is None:
                r.stop()
            elif not r.log.closed:
                r.log.close()


class Run:
    """One backend's soak: everything it started and everything it saw."""

    def __init__(self, target, top, reaper, seed):
        self.target = target
        self.backend = target if target in ("postgres", "redis") else fleet.backend_of(target)
        self.tmp = tempfile.mkdtemp(dir=top, prefix=self.backend + "-")
        self.reaper = reaper
        self.seed = seed
        self.t0 = time.time()
        self.timeline = open(os.path.join(self.tmp, "timeline.log"), "a")
        self.tl_lock = threading.Lock()
        self.events = []              # (unix time, what), as in timeline.log
        self.store_up = threading.Lock()
        self.store_outages = 0
        self.stop_chaos = threading.Event()
        self.stop_clients = threading.Event()
        self.stat_lock = threading.Lock()
        self.clients_killed = 0
        self.recovers = 0
        self.sends = []               # one dict per `once send` run
        self.errors = []              # harness failures (not claims): the run is void
        self.server = self.counter = self.reps = None
        self.proxies = []

    def event(self, what):
        with self.tl_lock:
            now = time.time()
            self.events.append((now, what))
            if not self.timeline.closed:
                self.timeline.write("%8.3f %s\n" % (now - self.t0, what))
                self.timeline.flush()

    # --- the cast ----------------------------------------------------------

    def start(self, lease):
        if self.target == "postgres":
            self.server = fleet.PgServer()
            self.reaper.add("pg", self.server.data)
            self.reaper.add("rm", self.server.dir)
            base = self.server.url
        elif self.target == "redis":
            self.server = fleet.RedisServer()
            self.reaper.pid(self.server.proc.pid)
            self.reaper.add("rm", self.server.dir)
            base = self.server.url
        else:
            base = self.target
        url = fleet.namespaced(base, "soak")
        if self.backend == "postgres":
            url += "&pool=6"   # 3 replicas (and the killed ones' leftovers) on one server
        self.event("store %s" % url)
        self.counter = CountingService()
        self.effect_proxy = Proxy(self.reaper, self.tmp, "effects", [self.counter.port],
                                  EFFECT_LOSS, self.seed + 100, 1)
        self.agent = SoakAgent(self.tmp, "http://127.0.0.1:%d/effect" % self.effect_proxy.port)
        self.reps = Replicas(self, url, self.agent, ["--lease", lease, "--test-admin"])
        ports = self.reps.ports()
        for i, (name, port) in enumerate(zip(NAMES, ports)):
            self.proxies.append(Proxy(self.reaper, self.tmp, name, [port], REPLICA_LOSS,
                                      self.seed + 1 + i, 2))
        # a load balancer in front of all three: a retry lands on another replica
        self.proxies.append(Proxy(self.reaper, self.tmp, "lb", ports, REPLICA_LOSS,
                                  self.seed + 9, 2))

    def stop(self):
        self.stop_chaos.set()
        self.stop_clients.set()
        kill_live()
        if self.reps is not None:
            self.reps.stop()
        for p in self.proxies + ([self.effect_proxy] if hasattr(self, "effect_proxy") else []):
            p.stop()
        if self.counter is not None:
            self.counter.close()
        if self.server is not None:
            self.server.close()
        with self.tl_lock:
            self.timeline.close()

    # --- the chaos ---------------------------------------------------------

    def chaos(self):
        rng = random.Random(self.seed + 7)
        try:
            while not self.stop_chaos.wait(rng.uniform(*KILL_EVERY)):
                self.reps.check_alive()
                victim = rng.choice(NAMES)
                self.reps.kill(victim)
                self.stop_chaos.wait(rng.uniform(*DOWN_FOR))
                self.reps.restart(victim)
        except Exception as ex:  # reported: the run is void
            self.errors.append("chaos: %r" % ex)
            self.event("chaos failed: %r" % ex)

    def store_chaos(self, every):
        """Crash the store (PostgreSQL: immediate shutdown; Redis: SIGKILL)
        about every `every` s and start it again 1-3 s later. No replica is
        restarted while it is away (store_up)."""
        rng = random.Random(self.seed + 13)
        try:
            while not self.stop_chaos.wait(rng.uniform(0.7 * every, 1.3 * every)):
                with self.store_up:
                    self.server.crash()
                    self.store_outages += 1
                    self.event("store crashed")
                    self.stop_chaos.wait(rng.uniform(*STORE_DOWN_FOR))
                    self.server.start()
                    if self.backend == "redis":
                        self.reaper.pid(self.server.proc.pid)
                    self.event("store restarted")
        except Exception as ex:  # reported: the run is void
            self.errors.append("store chaos: %r" % ex)
            self.event("store chaos failed: %r" % ex)

    def stats_poller(self):
        while not self.stop_chaos.wait(0.5):
            try:
                self.reps.poll_stats()
            except Exception as ex:  # the poller must not die of a race with a kill
                self.event("stats poll: %r" % ex)

    # --- the clients -------------------------------------------------------

    def once(self, outbox, *args, crash=None):
        """Start the CLI on outbox; returns the Popen."""
        env = dict(os.environ)
        env["XDG_STATE_HOME"] = self.tmp
        env.pop("ONCE_TEST_CRASH", None)
        if crash:
            env["ONCE_TEST_CRASH"] = crash
        return popen(self.reaper, [ONCE, "--outbox", outbox, "--json"] + list(args), env=env,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, p, timeout):
        """Wait for a CLI run; (exit status, parsed stdout or None, stderr)."""
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err = "(the soak killed it after %.0f s) %s" % (timeout, err)
        forget(p)
        try:
            doc = json.loads(out) if out.strip() else None
        except ValueError:
            doc = None
        return p.returncode, doc, err

    def recover(self, outbox):
        p = self.once(outbox, "recover", "--attempts", "10")
        rc, doc, err = self.finish(p, scaled(240))
        with self.stat_lock:
            self.recovers += 1
        return rc, doc

    def client(self, k):
        rng = random.Random(self.seed * 1000 + k)
        outbox = os.path.join(self.tmp, "outbox-%d.db" % k)
        n = 0
        try:
            while not self.stop_clients.is_set():
                url = rng.choice(self.proxies).url
                text = "work:%.2f,%.2f" % (rng.uniform(*WORK), rng.uniform(*WORK))
                # The first send of client 0 always dies (so every run kills a
                # client); then a share of them, at a point of the protocol or
                # at a random moment.
                kill = "after-send" if (k, n) == (0, 0) else None
                if kill is None and rng.random() < CLIENT_KILL_P:
                    kill = rng.choice(["after-outbox", "after-send", "timer", "timer", "timer"])
                p = self.once(outbox, "send", "--agent", url, "--text", text, "--wait",
                              "--attempts", "10", "--wait-timeout", "%ds" % scaled(60),
                              crash=kill if kill != "timer" else None)
                if kill == "timer":
                    try:
                        p.wait(rng.uniform(0.05, 1.5))
                    except subprocess.TimeoutExpired:
                        p.kill()
                rc, doc, err = self.finish(p, scaled(240))
                rec = {"client": k, "n": n, "kill": kill, "rc": rc, "doc": doc,
                       "err": err.strip()[-300:], "agent": url}
                with self.stat_lock:
                    self.sends.append(rec)
                    if rc == -signal.SIGKILL:
                        self.clients_killed += 1
                if rc == -signal.SIGKILL:
                    self.event("client %d killed (%s) in send %d" % (k, kill, n))
                if rc != 0:
                    rrc, rdoc = self.recover(outbox)
                    self.event("client %d: send %d exit %s, recover exit %s" % (k, n, rc, rrc))
                n += 1
        except Ending:
            return
        except Exception as ex:  # reported: the run is void
            self.errors.append("client %d: %r" % (k, ex))
            self.event("client %d failed: %r" % (k, ex))

    def outboxes(self):
        return sorted(os.path.join(self.tmp, f) for f in os.listdir(self.tmp)
                      if f.startswith("outbox-") and f.endswith(".db"))

    def intents(self, outbox):
        rc, doc, err = self.finish(self.once(outbox, "outbox"), scaled(60))
        if rc != 0 or not isinstance(doc, dict):
            raise RuntimeError("once outbox %s: exit %s %s" % (outbox, rc, err))
        return doc["intents"]

    def drain(self):
        """Recover every outbox until each intent is final (or time is up)."""
        end = time.time() + scaled(180)
        while True:
            pending = [(o, [i for i in self.intents(o) if i["state"] != "final"])
                       for o in self.outboxes()]
            pending = [(o, its) for o, its in pending if its]
            if not pending or time.time() > end:
                return
            for o, _ in pending:
                self.recover(o)
            time.sleep(0.5)


# --- the claims ----------------------------------------------------------------

def few(items, n=5):
    items = list(items)
    return "%d, e.g. %s" % (len(items), ", ".join(str(i) for i in items[:n])) if items else "none"


def verify(run):
    """The claims [(claim, held, detail, task ids to show)], the table row,
    the details line, the intents by task ID, and the tasks whose run again
    took over a live worker."""
    intents = []
    for o in run.outboxes():
        for it in run.intents(o):
            it["outbox"] = os.path.basename(o)
            intents.append(it)
    ids = [it["taskId"] for it in intents]
    by_id = dict((it["taskId"], it) for it in intents)
    claims = []

    def claim(name, bad, detail=""):
        bad = list(dict.fromkeys(bad))   # one line per (task, reason)
        claims.append((name, not bad, (few(bad) + (" " + detail if detail else "")) if bad else "",
                       [b if isinstance(b, str) else b[0] for b in bad]))

    # 1. the outboxes: every intent final, its task completed
    claim("every intent final, its task completed (outboxes)",
          [(t, by_id[t]["state"], by_id[t]["taskState"]) for t in ids
           if by_id[t]["state"] != "final" or by_id[t]["taskState"] != "TASK_STATE_COMPLETED"])

    # 2. the store: one task per intent, on every replica, every page
    tasks = None
    bad = []
    for name, port in zip(NAMES, run.reps.ports()):
        try:
            listed = fleet.list_all(port, timeout=scaled(30))
        except (AssertionError, OSError) as ex:
            bad.append((name, "ListTasks failed: %r" % ex))
            continue
        got = [t["id"] for t in listed]
        if tasks is None:
            tasks = listed
        dup = sorted(set(t for t in got if got.count(t) > 1))
        missing = sorted(set(ids) - set(got))
        extra = sorted(set(got) - set(ids))
        for t in missing:
            bad.append((t, "no task on %s" % name))
        for t in extra:
            bad.append((t, "a task on %s no intent made" % name))
        for t in dup:
            bad.append((t, "listed twice on %s" % name))
    twice = sorted(set(t for t in ids if ids.count(t) > 1))
    bad += [(t, "two intents share the ID") for t in twice]
    claim("one task per intent in the store (ListTasks on every replica, every page)", bad)
    tasks = tasks or []
    state = dict((t["id"], (t.get("status") or {}).get("state")) for t in tasks)

    # 3. the counting service: one applied effect per intent
    calls, applied, elog, mismatched = run.counter.snapshot()
    per_task = {}
    for key in applied:
        per_task.setdefault(key.rsplit(":step-", 1)[0], []).append(key)
    bad = [(t, "%d effects applied (%s)" % (len(per_task.get(t, [])), per_task.get(t)))
           for t in ids if len(per_task.get(t, [])) != 1]
    bad += [(t, "an effect for a task no intent made") for t in per_task if t not in by_id]
    bad += [(k.rsplit(":step-", 1)[0], "Idempotency-Key %s but the agent's env said %s" % (k, e))
            for k, e in mismatched]
    claim("one applied effect per intent (counting service, keyed <task>:step-<n>)", bad)

    # 4. nothing acknowledged was lost
    acked = set(t for t in ids if by_id[t].get("ackedMs"))
    acked |= set((s["doc"] or {}).get("taskId") for s in run.sends
                 if s["rc"] == 0 and (s["doc"] or {}).get("taskId"))
    claim("no acknowledged task lost (exists in the store and completed)",
          [(t, state.get(t, "missing")) for t in sorted(acked)
           if state.get(t) != "TASK_STATE_COMPLETED"])

    # 5. a turn ran again only after a takeover
    bad = []
    for t, starts in run.agent.starts().items():
        for prev, cur in zip(starts, starts[1:]):
            if not cur[2] or cur[0] <= prev[0]:
                bad.append((t, "start fence %d on %s (resumed %s) after fence %d on %s" %
                            (cur[0], cur[1], int(cur[2]), prev[0], prev[1])))
                break
    claim("a turn ran again only after a takeover (fence + 1, ONCE_RESUMED=1)", bad)

    # 6. the replicas died only when killed
    claim("replicas exited only when the soak killed them",
          [(n, "exit status %s" % rc) for n, rc in run.reps.died])

    # 7. the soak did what it says (a soak that injects nothing proves nothing)
    drops = sum(p.count("drop") for p in run.proxies)
    bad = []
    if not intents:
        bad.append(("-", "no intent was made"))
    if run.reps.killed < 1:
        bad.append(("-", "no replica was killed"))
    if run.clients_killed < 1:
        bad.append(("-", "no client was killed"))
    if drops < 1:
        bad.append(("-", "no response was lost"))
    claim("the chaos happened (replicas and clients killed, responses lost)", bad)

    row = {
        "backend": run.backend,
        "seconds": int(round(run.chaos_seconds)),
        "intents": len(intents),
        "tasks": len(tasks),
        "effects applied": len(applied),
        "effect calls": sum(calls.values()),
        "takeovers": run.reps.stat_total("takeovers"),
        "replicas killed": run.reps.killed,
        "clients killed": run.clients_killed,
        "result": "ok" if all(c[1] for c in claims) else "BREACH",
    }
    resumed = sum(1 for v in run.agent.starts().values() for s in v if s[2])
    # A run again whose previous worker's replica process had not been killed
    # when it started: that worker lost its lease while alive (a late
    # heartbeat, a store outage).
    live = []
    for t, v in run.agent.starts().items():
        for prev, cur in zip(v, v[1:]):
            if not any(who == prev[1] and tm <= cur[3] for tm, who in run.reps.kills):
                live.append(t)
    effect_runs = sum(len(v) for v in run.agent.effect_runs().values())
    # what the replicas logged about turn output they did not apply
    unapplied = fenced_off = 0
    for _, path in run.reps.logs():
        with open(path, errors="replace") as f:
            for ln in f:
                unapplied += "could not be applied" in ln
                fenced_off += "was fenced off" in ln
    extra = {
        "resumed turns (agent)": resumed,
        "of them taking over a live worker": len(live),
        "turns that made the effect call": effect_runs,
        "output lines not applied (store error)": unapplied,
        "output lines fenced off": fenced_off,
        "responses lost (replica proxies)": drops,
        "effect answers lost": run.effect_proxy.count("drop"),
        "store outages": run.store_outages,
        "sends": len(run.sends),
        "sends that exited non-zero": sum(1 for s in run.sends if s["rc"] != 0),
        "recover runs": run.recovers,
        "fenced writes": run.reps.stat_total("fencedWrites"),
        "store errors": run.reps.stat_total("storeErrors"),
        "lease lost": run.reps.stat_total("leaseLost"),
    }
    return claims, row, extra, by_id, live


def evidence(run, tid, by_id, out):
    """What the soak knows about task tid: the intent, its sends, the
    agent's runs, the effect calls and the replicas' log lines about it."""
    w = out.write
    w("\n--- task %s\n" % tid)
    it = by_id.get(tid)
    if it:
        w("intent: %s\n" % json.dumps(dict((k, it.get(k)) for k in (
            "outbox", "state", "taskState", "attempts", "agent", "ackedMs", "finishedMs",
            "lastError", "refusal"))))
    for s in run.sends:
        if (s["doc"] or {}).get("taskId") == tid:
            w("send: client %d #%d kill=%s exit %s outcome=%s state=%s replayed=%s\n" % (
                s["client"], s["n"], s["kill"], s["rc"], s["doc"].get("outcome"),
                s["doc"].get("state"), s["doc"].get("replayed")))
    w("(times: seconds since the soak started, unix %.3f)\n" % run.t0)
    for ln in run.agent.events(tid):
        f = ln.split()
        at = " (t %.3f)" % (float(f[5]) - run.t0) if f[0] in ("start", "effect") else ""
        w("agent: %s%s\n" % (ln, at))
    _, _, elog, _ = run.counter.snapshot()
    for key, recs in sorted(elog.items()):
        if key.startswith(tid + ":"):
            for tm, fence, rep, resumed, replayed in recs:
                w("effect call: %s at %.3f fence %s from %s resumed %s -> %s\n" % (
                    key, tm - run.t0, fence, rep, resumed, "replayed" if replayed else "APPLIED"))
    times = [float(ln.split()[5]) for ln in run.agent.events(tid) if ln.startswith("start ")]
    if times:
        lo, hi = min(times) - 5, max(times) + 5
        for tm, what in list(run.events):
            if lo <= tm <= hi and not what.startswith("client") and any(
                    k in what for k in ("killed", "restarted", "EXITED", "store crashed")):
                w("chaos: %.3f %s\n" % (tm - run.t0, what))
    for name, path in run.reps.logs():
        try:
            with open(path, errors="replace") as f:
                for ln in f:
                    if tid in ln:
                        w("%s log: %s\n" % (name, ln.rstrip()[:400]))
        except OSError:
            pass


def run_one(target, top, reaper, seed, args):
    run = Run(target, top, reaper, seed)
    print("== soak %s: %d s of chaos, %d clients%s, seed %d, scratch %s" %
          (run.backend, args.seconds, args.clients,
           ", store crashed about every %g s" % args.store_outages if args.store_outages else "",
           seed, run.tmp), flush=True)
    threads = []
    try:
        run.start(args.lease)
        threads = [threading.Thread(target=run.chaos, daemon=True),
                   threading.Thread(target=run.stats_poller, daemon=True)]
        if args.store_outages > 0:
            threads.append(threading.Thread(target=run.store_chaos, args=(args.store_outages,),
                                            daemon=True))
        nchaos = len(threads)
        threads += [threading.Thread(target=run.client, args=(k,), daemon=True)
                    for k in range(args.clients)]
        for t in threads:
            t.start()
        chaos_start = time.time()
        end = chaos_start + args.seconds
        while time.time() < end:
            time.sleep(min(1.0, max(0.0, end - time.time())))
        run.stop_clients.set()
        run.stop_chaos.set()
        run.chaos_seconds = time.time() - chaos_start
        for t in threads[:nchaos]:
            t.join(scaled(60))
        run.reps.check_alive()
        run.reps.all_up()
        run.event("chaos over; all replicas up")
        for t in threads[nchaos:]:
            t.join(scaled(300))
        if any(t.is_alive() for t in threads):
            run.errors.append("a client or the chaos did not finish in time")
        run.reps.poll_stats()
        run.event("clients done; draining the outboxes")
        run.drain()
        run.reps.poll_stats()
        claims, row, extra, by_id, live = verify(run)
        ok = all(c[1] for c in claims) and not run.errors
        with open(os.path.join(run.tmp, "evidence.txt"), "w") as ev:
            for name, good, detail, tids in claims:
                if not good:
                    ev.write("\n=== BROKEN: %s: %s\n" % (name, detail))
                    for tid in [t for t in tids if t in by_id][:5]:
                        evidence(run, tid, by_id, ev)
            if live:
                # not a broken claim (fencing makes it safe), but a lease
                # lost by a worker that still ran: worth a look
                ev.write("\n=== NOTE: %d runs again took over a worker whose replica was not "
                         "killed\n" % len(live))
                for tid in live[:3]:
                    evidence(run, tid, by_id, ev)
        for name, good, detail, _ in claims:
            print("%-6s %s%s" % ("ok" if good else "BROKEN", name,
                                 (": " + detail) if detail else ""))
        for e in run.errors:
            print("ERROR  the soak itself: %s" % e)
        print("       " + ", ".join("%s %s" % (k, v) for k, v in extra.items()))
        if live:
            print("       took over a live worker: %s (evidence.txt, --keep keeps it)" %
                  few(live, 3))
        if not ok:
            with open(os.path.join(run.tmp, "evidence.txt")) as ev:
                text = ev.read()
            sys.stdout.write(text[:20000])
            if len(text) > 20000:
                print("\n... (%d more bytes in %s/evidence.txt)" % (len(text) - 20000, run.tmp))
        return ok, row, run.tmp
    except BaseException:
        _ENDING.set()   # the threads start nothing more
        raise
    finally:
        run.stop()


COLUMNS = ["backend", "seconds", "intents", "tasks", "effects applied", "effect calls",
           "takeovers", "replicas killed", "clients killed", "result"]


def table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in COLUMNS) + " |")
    return "\n".join(lines)


def main():
    args = ARGS
    for exe in (harness.ONCED, ONCE, PROXY, EFFECT_CALL):
        if not os.path.exists(exe):
            sys.exit("soak: %s is missing (build first: make build)" % exe)
    if args.store_outages > 0 and any(t not in ("postgres", "redis") for t in args.targets):
        sys.exit("soak: --store-outages needs a server of the soak's own (postgres, redis)")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    top = tempfile.mkdtemp(prefix="once-soak-")
    os.chmod(top, 0o755)
    reaper = Reaper(top)
    reaper.add("scan", top)   # agent turns a killed onced left behind
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)
    rows, keep, status = [], args.keep, 0
    try:
        for i, target in enumerate(args.targets):
            ok, row, tmp = run_one(target, top, reaper, seed + 1000 * i, args)
            rows.append(row)
            if not ok:
                status, keep = 1, True
        print("\n" + table(rows))
        print("seed %d; %s" % (seed, "every claim held" if status == 0 else
                               "A CLAIM BROKE (see BROKEN above; evidence kept in %s)" % top))
    except Stopped as ex:
        print("soak: %s; ending everything it started" % ex, file=sys.stderr)
        status = 128 + ex.sig
    except Exception as ex:
        print("soak: the harness failed: %r" % ex, file=sys.stderr)
        status, keep = 2, True
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kill_live()
        if keep:
            reaper.add("keep", top)
            print("soak: scratch kept in %s" % top, file=sys.stderr)
        reaper.finish(scaled(60))
    return status


if __name__ == "__main__":
    sys.exit(main())
