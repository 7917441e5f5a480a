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
                               [--keep] [--gateway] TARGET...

TARGET: `postgres` or `redis` (a throwaway server of the soak's own,
tests/replicas/fleet.py), or a postgres:// / redis:// URL of a running server
(a fresh schema / key prefix is used). `make soak` runs both backends for
SOAK_SECONDS (120); the ctest soak/{postgres,redis} runs 30 s on the shared
test servers. --store-outages S adds crashes of the store itself (own
servers only) about every S seconds. --gateway runs the gateway variant: the
replicas are `onced --upstream` in front of tests/interop/upstream_agent.mjs
(@a2a-js/sdk, node) behind a lossy proxy, each intent one "effect:K" at that
agent; the claims add one upstream task and one applied side effect per
intent (README.md, "The gateway variant"). Every timeout is scaled by ONCE_TEST_TIMEOUT_FACTOR
(harness.scaled); the chaos itself (kill every few seconds) is the workload,
not a timeout. Python 3 standard library only.
"""
import argparse
import json
import os
import random
import select
import shutil
import shlex
import signal
import subprocess
import sqlite3
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
    ap.add_argument("--gateway", action="store_true",
                    help="the gateway variant: the replicas run onced --upstream in front of "
                         "tests/interop/upstream_agent.mjs (@a2a-js/sdk) behind a lossy proxy")
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
UPSTREAM_AGENT = os.path.join(ROOT, "tests", "interop", "upstream_agent.mjs")

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
# --gateway: the upstream agent holds each answer this long after its work is
# done, so replica kills land between a send and its stored upstream task ID;
# the proxy in front of it loses this share of its answers.
UPSTREAM_DELAY_MS = 300
UPSTREAM_LOSS = 0.1


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


class Upstream:
    """--gateway: the upstream A2A agent, tests/interop/upstream_agent.mjs
    (@a2a-js/sdk 1.3.0), run by node from tests/interop (its node_modules);
    it counts the tasks it creates, the messages each gets and the side
    effects ("effect:K") it performs. Asked directly, never through a proxy."""

    def __init__(self, reaper, tmp, delay_ms):
        node = shutil.which("node") or shutil.which("nodejs")
        if node is None or not os.path.isdir(os.path.join(os.path.dirname(UPSTREAM_AGENT),
                                                          "node_modules", "@a2a-js")):
            raise RuntimeError("--gateway needs node and tests/interop/node_modules "
                               "(@a2a-js/sdk): run scripts/deps.sh")
        self.logpath = os.path.join(tmp, "upstream-agent.log")
        with open(self.logpath, "wb") as err:
            self.proc = popen(reaper, [node, UPSTREAM_AGENT, "--port", "0", "--delay-answer-ms",
                                       str(delay_ms)], stdout=subprocess.PIPE, stderr=err,
                              cwd=os.path.dirname(UPSTREAM_AGENT))
        ready, _, _ = select.select([self.proc.stdout], [], [], scaled(30))
        line = self.proc.stdout.readline().decode(errors="replace") if ready else ""
        if not line.startswith("listening http://127.0.0.1:"):
            raise RuntimeError("upstream agent did not start: %r" % line)
        self.port = int(line.split(":")[2].strip("/\n"))

    def counts(self):
        st, _, data = harness.http_request(self.port, "GET", "/counts", timeout=scaled(30))
        if st != 200:
            raise RuntimeError("upstream /counts: HTTP %s" % st)
        return json.loads(data)

    def tasks(self):
        """Every upstream task (ListTasks, every page, history included)."""
        out, token = [], ""
        for _ in range(10000):
            params = {"pageSize": 100}
            if token:
                params["pageToken"] = token
            st, _, doc = harness.rpc(self.port, "ListTasks", params, timeout=scaled(30))
            if st != 200 or "result" not in (doc or {}):
                raise RuntimeError("upstream ListTasks: %s %r" % (st, doc))
            out.extend(doc["result"].get("tasks") or [])
            token = doc["result"].get("nextPageToken") or ""
            if not token:
                break
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(scaled(10))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        forget(self.proc)


GW_METRICS = ("once_gateway_reattached_total", "once_gateway_unverified_resends_total",
              "once_gateway_upstream_retries_total")


class Replicas:
    """The three onced processes. The chaos thread replaces a killed one by
    a new process on the same port (its proxy keeps pointing at it); lock
    guards the list and the counters."""

    def __init__(self, run, url, agent, extra, role=None):
        self.run, self.url, self.agent, self.extra = run, url, agent, extra
        # what each onced runs: --exec agent.py, or (--gateway) --upstream URL
        self.role = role if role is not None else ["--exec", agent.cmd]
        self.gateway = role is not None
        self.lock = threading.Lock()
        self.refused = 0              # --gateway: starts that failed (the card's answer lost)
        self.gw = {}                  # (name, incarnation) -> {metric: last value seen}
        if self.gateway:
            # one at a time: the upstream proxy's first connections are the
            # card and ListTasks probe of r1, r2, r3 in turn
            self.reps = [self.start_one(n, {"ONCE_TEST_REPLICA": n}) for n in NAMES]
        else:
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
            if self.gateway:
                try:
                    st, _, text = harness.http_request(port, "GET", "/metrics",
                                                       timeout=scaled(2))
                except Exception:  # killed meanwhile
                    continue
                got = {}
                for ln in text.decode(errors="replace").splitlines():
                    f = ln.split()
                    if st == 200 and len(f) == 2 and f[0] in GW_METRICS:
                        got[f[0]] = int(float(f[1]))
                if got:
                    with self.lock:
                        self.gw[(n, inc)] = got

    def gw_total(self, metric):
        with self.lock:
            return sum(m.get(metric, 0) for m in self.gw.values())

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
        env = {"ONCE_TEST_REPLICA": name, "SOAK_INCARNATION": str(self.incarnation[name] + 1)}
        r = self.start_one(name, env, old.port)
        self.run.reaper.pid(r.proc.pid)
        with self.lock:
            self.reps[NAMES.index(name)] = r
            self.incarnation[name] += 1
            self.down.discard(name)
        self.run.event("restarted %s (pid %d, incarnation %d)" % (name, r.proc.pid,
                                                                  self.incarnation[name]))

    def start_one(self, name, env, port=None):
        """One onced (port None: a free one); tried again when it does not
        start (the port still held; a gateway whose card answer was lost)."""
        last = None
        for _ in range(10 if self.gateway else 5):
            try:
                with self.run.store_up:   # (held by a store outage while it lasts)
                    r = harness.Onced(args=self.role + ["--replica-id", name] + list(self.extra),
                                      store=self.url, port=port, tmpdir=self.run.tmp, env=env)
                break
            except RuntimeError as ex:   # e.g. the port still held: try again
                last = ex
                if self.gateway and "agent card" in str(ex):
                    with self.lock:
                        self.refused += 1
                    self.run.event("%s did not start: its upstream card answer was lost" % name)
                time.sleep(0.2)
        else:
            raise RuntimeError("replica %s did not start: %s" % (name, last))
        r.name = name
        return r

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

    def __init__(self, target, top, reaper, seed, gateway=False):
        self.target = target
        self.backend = target if target in ("postgres", "redis") else fleet.backend_of(target)
        self.gateway = gateway
        self.tmp = tempfile.mkdtemp(dir=top, prefix=("gateway-" if gateway else "") +
                                    self.backend + "-")
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
        self.upstream = self.up_proxy = None   # --gateway
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
        if self.gateway:
            self.start_gateway(url, lease)
            return
        self.counter = CountingService()
        self.effect_proxy = Proxy(self.reaper, self.tmp, "effects", [self.counter.port],
                                  EFFECT_LOSS, self.seed + 100, 1)
        self.agent = SoakAgent(self.tmp, "http://127.0.0.1:%d/effect" % self.effect_proxy.port)
        self.reps = Replicas(self, url, self.agent, ["--lease", lease, "--test-admin"])
        self.front_proxies()

    def front_proxies(self):
        """A lossy proxy in front of each replica, and a load balancer in
        front of all three: a retry lands on another replica."""
        ports = self.reps.ports()
        for i, (name, port) in enumerate(zip(NAMES, ports)):
            self.proxies.append(Proxy(self.reaper, self.tmp, name, [port], REPLICA_LOSS,
                                      self.seed + 1 + i, 2))
        self.proxies.append(Proxy(self.reaper, self.tmp, "lb", ports, REPLICA_LOSS,
                                  self.seed + 9, 2))

    def start_gateway(self, url, lease):
        """--gateway: the upstream agent behind its lossy proxy, the replicas
        as `onced --upstream <that proxy>` (README.md, "The gateway variant")."""
        self.upstream = Upstream(self.reaper, self.tmp, UPSTREAM_DELAY_MS)
        self.event("upstream agent on port %d (answers held %d ms)" % (self.upstream.port,
                                                                       UPSTREAM_DELAY_MS))
        # connections 1-6 are the three replicas' card reads and ListTasks
        # probes (started one at a time; more when one of their answers is
        # lost: they are retried); 7 is then a call some turn makes
        self.up_proxy = Proxy(self.reaper, self.tmp, "upstream", [self.upstream.port],
                              UPSTREAM_LOSS, self.seed + 20, 7)
        self.agent = None
        self.reps = Replicas(self, url, None, ["--lease", lease, "--test-admin"],
                             role=["--upstream", self.up_proxy.url])
        self.front_proxies()

    def stop(self):
        self.stop_chaos.set()
        self.stop_clients.set()
        kill_live()
        if self.reps is not None:
            self.reps.stop()
        for p in self.proxies + ([self.effect_proxy] if hasattr(self, "effect_proxy") else []):
            p.stop()
        if self.up_proxy is not None:
            self.up_proxy.stop()
        if self.upstream is not None:
            self.upstream.stop()
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
                if self.gateway:
                    # one side effect at the upstream agent, counted under a
                    # key of this intent's own (read back from the outbox)
                    text = "effect:c%d-%d" % (k, n)
                else:
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


def store_check(run, ids):
    """One task per intent in the store: ListTasks on each replica directly,
    every page. ([(task or replica, reason)], the first replica's listing)."""
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
    return bad, tasks


def common_claims(run, keyed=False):
    """What both verifiers start with: the intents of every outbox (with
    their effect key K when keyed), the claims list and its claim(), and
    the first two claims (outboxes final, one task per intent in the
    store). Returns (intents, ids, by_id, claims, claim, tasks, state)."""
    intents = []
    for o in run.outboxes():
        keys = outbox_keys(o) if keyed else {}
        for it in run.intents(o):
            it["outbox"] = os.path.basename(o)
            if keyed:
                it["key"] = keys.get(it["messageId"])
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
    bad, tasks = store_check(run, ids)
    claim("one task per intent in the store (ListTasks on every replica, every page)", bad)
    tasks = tasks or []
    state = dict((t["id"], (t.get("status") or {}).get("state")) for t in tasks)
    return intents, ids, by_id, claims, claim, tasks, state


def acked_claim(run, claim, ids, by_id, state):
    """No acknowledged task lost: every task an outbox marked acknowledged,
    or a send reported, exists in the store and completed."""
    acked = set(t for t in ids if by_id[t].get("ackedMs"))
    acked |= set((s["doc"] or {}).get("taskId") for s in run.sends
                 if s["rc"] == 0 and (s["doc"] or {}).get("taskId"))
    claim("no acknowledged task lost (exists in the store and completed)",
          [(t, state.get(t, "missing")) for t in sorted(acked)
           if state.get(t) != "TASK_STATE_COMPLETED"])


def chaos_claims(run, claim, intents, upstream_drops=None):
    """The last two claims of both verifiers: the replicas died only when
    killed, and the chaos happened (a soak that injects nothing proves
    nothing); with upstream_drops (--gateway), answers were lost on both
    hops. Returns the answers the replicas' proxies lost."""
    claim("replicas exited only when the soak killed them",
          [(n, "exit status %s" % rc) for n, rc in run.reps.died])
    drops = sum(p.count("drop") for p in run.proxies)
    bad = []
    if not intents:
        bad.append(("-", "no intent was made"))
    if run.reps.killed < 1:
        bad.append(("-", "no replica was killed"))
    if run.clients_killed < 1:
        bad.append(("-", "no client was killed"))
    if drops < 1:
        bad.append(("-", "no response was lost" if upstream_drops is None
                    else "no answer of a replica was lost"))
    if upstream_drops is None:
        claim("the chaos happened (replicas and clients killed, responses lost)", bad)
        return drops
    if upstream_drops < 1:
        bad.append(("-", "no answer of the upstream was lost"))
    claim("the chaos happened (replicas and clients killed, answers lost on both hops)", bad)
    return drops


def verify(run):
    """The claims [(claim, held, detail, task ids to show)], the table row,
    the details line, the intents by task ID, and the tasks whose run again
    took over a live worker."""
    intents, ids, by_id, claims, claim, tasks, state = common_claims(run)

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
    acked_claim(run, claim, ids, by_id, state)

    # 5. a turn ran again only after a takeover
    bad = []
    for t, starts in run.agent.starts().items():
        for prev, cur in zip(starts, starts[1:]):
            if not cur[2] or cur[0] <= prev[0]:
                bad.append((t, "start fence %d on %s (resumed %s) after fence %d on %s" %
                            (cur[0], cur[1], int(cur[2]), prev[0], prev[1])))
                break
    claim("a turn ran again only after a takeover (fence + 1, ONCE_RESUMED=1)", bad)

    drops = chaos_claims(run, claim, intents)

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


# --- the claims of the gateway variant (--gateway) ---------------------------

def outbox_keys(outbox):
    """{messageId: K} from the messages an outbox stored ("effect:K"; None
    for another text): which side effect each intent asked for."""
    con = sqlite3.connect(outbox, timeout=scaled(10))
    try:
        rows = con.execute("SELECT message_id, message FROM intents").fetchall()
    finally:
        con.close()
    out = {}
    for mid, msg in rows:
        text = ""
        try:
            doc = json.loads(msg)
            doc = doc.get("message", doc)   # the message, or the params around it
            for p in doc.get("parts") or []:
                if isinstance(p, dict) and isinstance(p.get("text"), str):
                    text = p["text"]
                    break
        except (ValueError, AttributeError):
            pass
        out[mid] = text[len("effect:"):] if text.startswith("effect:") else None
    return out


def upstream_by_key(utasks):
    """{K: [upstream task, ...]}: the upstream tasks whose history holds a
    user message "effect:K"."""
    out = {}
    for ut in utasks:
        keys = set()
        for m in ut.get("history") or []:
            if m.get("role") not in ("ROLE_USER", "user"):
                continue
            for p in m.get("parts") or []:
                t = p.get("text") if isinstance(p, dict) else None
                if isinstance(t, str) and t.startswith("effect:"):
                    keys.add(t[len("effect:"):])
        for k in keys or {None}:
            out.setdefault(k, []).append(ut)
    return out


def verify_gateway(run):
    """verify() for --gateway: the claims, the row, the details, the intents
    by task ID (each with its "key" K) and the upstream's view."""
    intents, ids, by_id, claims, claim, tasks, state = common_claims(run, keyed=True)
    by_key = dict((it["key"], it["taskId"]) for it in intents if it["key"] is not None)

    # 3. the upstream: one task per intent, one message per task
    counts = run.upstream.counts()
    utasks = run.upstream.tasks()
    ukey = upstream_by_key(utasks)
    per_up = counts.get("tasks") or {}
    bad = [(t, "no effect key in its stored message") for t in ids if by_id[t]["key"] is None]
    for t in ids:
        k = by_id[t]["key"]
        if k is not None and len(ukey.get(k, [])) != 1:
            bad.append((t, "%d upstream tasks for effect:%s (%s)" % (
                len(ukey.get(k, [])), k, ", ".join(u["id"] for u in ukey.get(k, [])))))
    for k, uts in ukey.items():
        if k not in by_key:
            bad += [("-", "upstream task %s (effect:%s) no intent asked for" % (u["id"], k))
                    for u in uts]
    for uid, c in sorted(per_up.items()):
        if c.get("messages") != 1:
            u = [x for x in utasks if x["id"] == uid]
            k = next((kk for kk, uts in ukey.items() if any(x["id"] == uid for x in uts)), None)
            bad.append((by_key.get(k, "-"), "upstream task %s got %s messages" % (
                uid, c.get("messages"))))
    if counts.get("tasksCreated") != len(intents):
        bad.append(("-", "the upstream created %s tasks for %d intents" % (
            counts.get("tasksCreated"), len(intents))))
    claim("one upstream task per intent (the agent's /counts and ListTasks: tasksCreated = "
          "intents, one message each)", bad)

    # 4. the upstream: one applied side effect per intent
    effects = counts.get("effects") or {}
    bad = [(t, "effect:%s applied %d times" % (by_id[t]["key"], effects.get(by_id[t]["key"], 0)))
           for t in ids if by_id[t]["key"] is not None and effects.get(by_id[t]["key"], 0) != 1]
    bad += [("-", "effect:%s applied %d times, no intent asked for it" % (k, n))
            for k, n in sorted(effects.items()) if k not in by_key]
    claim("one applied side effect per intent (the agent's effects[K] = 1, no K nobody sent)",
          bad)

    # 5. nothing acknowledged was lost
    acked_claim(run, claim, ids, by_id, state)

    updrops = run.up_proxy.count("drop")
    drops = chaos_claims(run, claim, intents, updrops)

    row = {
        "backend": "gateway/" + run.backend,
        "seconds": int(round(run.chaos_seconds)),
        "intents": len(intents),
        "tasks": len(tasks),
        "upstream tasks": counts.get("tasksCreated"),
        "effects applied": sum(effects.values()),
        "reattached": run.reps.gw_total("once_gateway_reattached_total"),
        "unverified resends": run.reps.gw_total("once_gateway_unverified_resends_total"),
        "takeovers": run.reps.stat_total("takeovers"),
        "replicas killed": run.reps.killed,
        "clients killed": run.clients_killed,
        "result": "ok" if all(c[1] for c in claims) else "BREACH",
    }
    logged = dict((w, 0) for w in ("gateway_reattach", "gateway_unverified_resend"))
    resenders = {}   # name/incarnation -> {rung: unverified re-sends it logged}
    for who, ln in replica_lines(run):
        for w in logged:
            if ('"%s"' % w) in ln:
                logged[w] += 1
        if '"gateway_unverified_resend"' in ln:
            try:
                rung = json.loads(ln).get("rung")
            except ValueError:
                rung = "?"
            r = resenders.setdefault(who, {})
            r[rung] = r.get(rung, 0) + 1
    extra = {
        "answers lost (replica proxies)": drops,
        "upstream answers lost": updrops,
        "upstream connections": run.up_proxy.count(""),
        "upstream requests": counts.get("requests"),
        "replica starts refused (card answer lost)": run.reps.refused,
        "re-attaches logged": logged["gateway_reattach"],
        "unverified re-sends logged": "%d%s" % (logged["gateway_unverified_resend"], (
            " (by %s)" % ", ".join("%s rung %s: %d" % (who, rung, n) for who, rr in
                                    sorted(resenders.items()) for rung, n in sorted(rr.items()))
            if resenders else "")),
        "upstream retries": run.reps.gw_total("once_gateway_upstream_retries_total"),
        "sends": len(run.sends),
        "sends that exited non-zero": sum(1 for s in run.sends if s["rc"] != 0),
        "recover runs": run.recovers,
        "fenced writes": run.reps.stat_total("fencedWrites"),
        "store errors": run.reps.stat_total("storeErrors"),
        "lease lost": run.reps.stat_total("leaseLost"),
    }
    return claims, row, extra, by_id, (counts, utasks, ukey)


def replica_lines(run):
    """Every line of the replicas' logs as (name/incarnation, line): a
    restart's "=== soak" marker starts the next incarnation."""
    out = []
    for name, path in run.reps.logs():
        inc = 1
        try:
            with open(path, errors="replace") as f:
                for ln in f:
                    if ln.startswith("=== soak"):
                        inc += 1
                    out.append(("%s/%d" % (name, inc), ln))
        except OSError:
            pass
    return out


def evidence_gateway(run, tid, by_id, view, out):
    """What the soak knows about task tid in the gateway variant: the
    intent and its K, its sends, the upstream tasks for K and their counts,
    the chaos around it and the replicas' log lines about it."""
    counts, utasks, ukey = view
    w = out.write
    w("\n--- task %s\n" % tid)
    it = by_id.get(tid) or {}
    k = it.get("key")
    w("intent: %s\n" % json.dumps(dict((f, it.get(f)) for f in (
        "outbox", "key", "state", "taskState", "attempts", "agent", "createdMs", "ackedMs",
        "finishedMs", "lastError", "refusal"))))
    for s in run.sends:
        if (s["doc"] or {}).get("taskId") == tid:
            w("send: client %d #%d kill=%s exit %s outcome=%s state=%s replayed=%s\n" % (
                s["client"], s["n"], s["kill"], s["rc"], s["doc"].get("outcome"),
                s["doc"].get("state"), s["doc"].get("replayed")))
    w("(times: seconds since the soak started, unix %.3f)\n" % run.t0)
    w("upstream: effects[%s] = %s\n" % (k, (counts.get("effects") or {}).get(k)))
    for ut in ukey.get(k, []):
        c = (counts.get("tasks") or {}).get(ut["id"], {})
        w("upstream task %s: context %s, state %s, messages %s, status at %s, history %s\n" % (
            ut["id"], ut.get("contextId"), (ut.get("status") or {}).get("state"),
            c.get("messages"), (ut.get("status") or {}).get("timestamp"),
            [(m.get("role"), m.get("messageId")) for m in ut.get("history") or []]))
    lo = (it.get("createdMs") or 0) / 1000.0 - 5
    hi = (it.get("finishedMs") or time.time() * 1000) / 1000.0 + 5
    for tm, what in list(run.events):
        if lo <= tm <= hi and not what.startswith("client") and any(
                x in what for x in ("killed", "restarted", "EXITED", "did not start")):
            w("chaos: %.3f %s\n" % (tm - run.t0, what))
    for who, ln in replica_lines(run):
        if ln.startswith("=== soak"):   # a restart inside the window
            try:
                near = lo <= float(ln.split()[-2]) <= hi
            except (ValueError, IndexError):
                near = False
            if near:
                w("%s log: %s\n" % (who, ln.rstrip()))
        elif tid in ln:
            w("%s log: %s\n" % (who, ln.rstrip()[:600]))


def run_one(target, top, reaper, seed, args):
    run = Run(target, top, reaper, seed, gateway=args.gateway)
    print("== soak %s: %d s of chaos, %d clients%s, seed %d, scratch %s" %
          (("gateway/" if run.gateway else "") + run.backend, args.seconds, args.clients,
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
        if run.gateway:
            claims, row, extra, by_id, view = verify_gateway(run)
            live = []
        else:
            claims, row, extra, by_id, live = verify(run)
        ok = all(c[1] for c in claims) and not run.errors
        with open(os.path.join(run.tmp, "evidence.txt"), "w") as ev:
            for name, good, detail, tids in claims:
                if not good:
                    ev.write("\n=== BROKEN: %s: %s\n" % (name, detail))
                    for tid in [t for t in tids if t in by_id][:5]:
                        if run.gateway:
                            evidence_gateway(run, tid, by_id, view, ev)
                        else:
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
GW_COLUMNS = ["backend", "seconds", "intents", "tasks", "upstream tasks", "effects applied",
              "reattached", "unverified resends", "takeovers", "replicas killed",
              "clients killed", "result"]


def table(rows, columns=COLUMNS):
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in columns) + " |")
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
        print("\n" + table(rows, GW_COLUMNS if args.gateway else COLUMNS))
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
