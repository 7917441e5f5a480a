"""Shared pieces of the replica tests (tests/replicas): several onced
processes on one PostgreSQL, Redis or DynamoDB (dynalite) store, an --exec
agent that logs what really ran, and throwaway PostgreSQL / Redis / dynalite
servers a test may restart.

- namespaced(url): the store URL with a fresh schema (PostgreSQL), key
  prefix (Redis) or table (DynamoDB), so a run never sees another run's
  tasks;
- Agent: writes the --exec command; every turn appends
      start <task> <fence> <replica> <resumed 0|1> <unix time> <effect key>
  before its work and
      done <task> <fence> <replica>
  after it printed its completion to onced. A turn whose onced died cannot
  print (broken pipe) and logs no "done": one "done" per task is one
  completed execution. Message text "work:S" makes the turn work S seconds,
  "gate:NAME" makes it wait until the test calls Agent.release(NAME);
- list_all(): every task through ListTasks paging;
- PgServer / RedisServer / DynaliteServer: a server of our own on a free
  loopback port with its data in a temporary folder, started the way
  scripts/test-services.sh does (PostgreSQL as the `postgres` user when we
  are root; dynalite on LevelDB files, so its data outlives a kill), that
  crash() and start() can take away and bring back.
Python 3 standard library only.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from harness import Onced, check, free_port, rpc, scaled  # noqa: E402


def backend_of(url):
    if url.startswith(("postgres://", "postgresql://")):
        return "postgres"
    if url.startswith("redis://"):
        return "redis"
    if url.startswith("dynamodb://"):
        return "dynamodb"
    raise ValueError("not a shared store URL: " + url)


def namespaced(url, tag):
    """url with a fresh schema / prefix / table named after tag."""
    name = "%s_%s" % (tag, uuid.uuid4().hex[:10])
    if backend_of(url) == "dynamodb":   # dynamodb://TABLE?...: a new table
        return "dynamodb://" + name + url[url.index("?"):]
    key = "schema" if backend_of(url) == "postgres" else "prefix"
    return "%s%s%s=%s" % (url, "&" if "?" in url else "?", key, name)


def store_url_from_argv():
    if len(sys.argv) < 2:
        sys.exit("usage: %s STORE_URL   (postgres://..., redis://... or dynamodb://...)" %
                 sys.argv[0])
    return sys.argv[1]


AGENT = r'''
import json, os, signal, sys, time
log = sys.argv[1]
turn = json.loads(sys.stdin.readline())
tid, fence = os.environ["ONCE_TASK_ID"], os.environ["ONCE_FENCE"]
rep = os.environ.get("ONCE_TEST_REPLICA", "?")

def note(line):
    # one write(2) on an O_APPEND file: lines of concurrent turns never mix
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)

text = ""
for p in turn["message"].get("parts", []):
    if "text" in p:
        text = p["text"]
        break
note("start %s %s %s %s %.3f %s%s" % (tid, fence, rep, os.environ["ONCE_RESUMED"], time.time(),
                                     os.environ["ONCE_EFFECT_KEY_PREFIX"], os.environ["ONCE_STEP"]))
if text.startswith("work:"):
    time.sleep(float(text[5:]))
elif text.startswith("gate:"):
    # until the test releases the gate (or its folder is gone with the test)
    gate = os.path.join(os.path.dirname(log), "gate-" + text[5:])
    while not os.path.exists(gate) and os.path.isdir(os.path.dirname(log)):
        time.sleep(0.02)
# From the completion line to its "done", a SIGTERM (onced ending the turn
# on a slow machine) must not split the pair.
signal.signal(signal.SIGTERM, signal.SIG_IGN)
try:
    line = {"status": "completed", "text": "done by %s fence %s" % (rep, fence)}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
except (BrokenPipeError, OSError):
    os._exit(1)   # our onced is gone: this run completed nothing
note("done %s %s %s" % (tid, fence, rep))
'''


class Agent:
    """The --exec command and its log of what really ran."""

    def __init__(self, tmp):
        self.script = os.path.join(tmp, "agent.py")
        self.log = os.path.join(tmp, "runs.log")
        with open(self.script, "w") as f:
            f.write(AGENT)
        self.cmd = "%s %s %s" % (sys.executable, self.script, self.log)

    def release(self, name):
        """Let every turn waiting at "gate:<name>" (now or later) go on."""
        open(os.path.join(os.path.dirname(self.log), "gate-" + name), "w").close()

    def lines(self):
        try:
            with open(self.log) as f:
                return [ln.split() for ln in f if ln.strip()]
        except FileNotFoundError:
            return []

    def starts(self):
        """{task: [(fence, replica, resumed, time), ...]} in log order."""
        out = {}
        for w in self.lines():
            if w[0] == "start":
                out.setdefault(w[1], []).append((int(w[2]), w[3], w[4] == "1", float(w[5])))
        return out

    def effect_keys(self):
        """{task: [side-effect key of each run, ...]} in log order: the key a
        run would send with its side effect (<task>:step-<n>)."""
        out = {}
        for w in self.lines():
            if w[0] == "start":
                out.setdefault(w[1], []).append(w[6])
        return out

    def dones(self):
        """{task: [(fence, replica), ...]} in log order."""
        out = {}
        for w in self.lines():
            if w[0] == "done":
                out.setdefault(w[1], []).append((int(w[2]), w[3]))
        return out


def start_fleet(url, agent, tmp, names, extra=()):
    """One onced per name on store url, all started at once (so they also
    race to apply the schema migrations); ONCE_TEST_REPLICA tells the agent
    which replica runs it."""
    out, errs = {}, []

    def one(name):
        try:
            o = Onced(args=["--exec", agent.cmd, "--replica-id", name] + list(extra),
                      store=url, tmpdir=tmp, env={"ONCE_TEST_REPLICA": name})
            o.name = name
            out[name] = o
        except Exception as ex:  # reported below, after the others are stopped
            errs.append(ex)
    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(scaled(60))
    if errs or len(out) != len(names):
        for r in out.values():
            r.stop()
        raise errs[0] if errs else RuntimeError("a replica did not start")
    return [out[n] for n in names]


def list_all(port, timeout=30, unavailable_for=0):
    """Every task the (anonymous) caller has, through ListTasks paging.
    unavailable_for: for that many seconds (scaled), a retryable 503 (the
    store not reachable yet: a replica's pool may still be in its reconnect
    backoff just after a store restart) is retried after its Retry-After, as
    a client does; after that, or with 0, any answer but 200 fails."""
    tasks, token = [], ""
    give_up = time.time() + scaled(unavailable_for)
    for _ in range(1000):
        params = {"pageSize": 100}
        if token:
            params["pageToken"] = token
        st, hd, doc = rpc(port, "ListTasks", params, timeout=timeout)
        while (st == 503 and hd.get("retry-after", "").isdigit() and
               time.time() < give_up):
            time.sleep(int(hd["retry-after"]))
            st, hd, doc = rpc(port, "ListTasks", params, timeout=timeout)
        check(st == 200 and "result" in (doc or {}), "ListTasks answered: %s %r" % (st, doc))
        tasks.extend(doc["result"]["tasks"])
        token = doc["result"].get("nextPageToken") or ""
        if not token:
            return tasks
    check(False, "ListTasks paging ended")
    return tasks


def _scratch(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)   # the postgres user must reach its folder inside
    return d


class PgServer:
    """A PostgreSQL cluster of our own (fsync on, the production default)."""

    def __init__(self):
        self.bin = os.environ.get("ONCE_PG_BIN", "/usr/lib/postgresql/15/bin")
        if not os.path.exists(os.path.join(self.bin, "pg_ctl")):
            found = sorted(d for d in (os.path.join("/usr/lib/postgresql", v, "bin")
                                       for v in (os.listdir("/usr/lib/postgresql")
                                                 if os.path.isdir("/usr/lib/postgresql") else []))
                           if os.path.exists(os.path.join(d, "pg_ctl")))
            if found:
                self.bin = found[-1]
            elif shutil.which("pg_ctl"):
                self.bin = os.path.dirname(shutil.which("pg_ctl"))
        self.dir = _scratch("once-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.url = "postgres://postgres@127.0.0.1:%d/postgres" % self.port
        if os.getuid() == 0:
            subprocess.run(["chown", "postgres:", self.dir], check=True)
        self._pg("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                 "--no-locale", "--no-sync")
        self.start()

    def _pg(self, tool, *args):
        cmd = [os.path.join(self.bin, tool)] + list(args)
        if os.getuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=scaled(90))
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s\n%s" % (tool, r.stdout.decode(errors="replace"),
                                                      self.logtail()))

    def logtail(self):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def start(self):
        self._pg("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "server.log"), "-w",
                 "-t", "%d" % scaled(60), "start", "-o",
                 "-c port=%d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s "
                 "-c shared_buffers=32MB -c max_connections=200 -c fsync=on "
                 "-c synchronous_commit=on" % (self.port, self.dir))

    def crash(self):
        """Stop at once, as a crash would (no checkpoint; WAL recovery at start)."""
        self._pg("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "-t", "%d" % scaled(30),
                 "stop")

    def close(self):
        try:
            self.crash()
        except Exception:  # already stopped
            pass
        shutil.rmtree(self.dir, True)


class _KillableServer:
    """A server process of our own with its data in self.dir: start() runs
    cmd() and waits until answers() (or it exits); crash() is SIGKILL."""

    name = "server"

    def start(self):
        self.log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen(self.cmd(), stdout=self.log, stderr=self.log)
        end = time.time() + scaled(30)
        while time.time() < end:
            if self.answers():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("%s did not start on port %d" % (self.name, self.port))

    def crash(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.crash()
        shutil.rmtree(self.dir, True)


class RedisServer(_KillableServer):
    """A Redis of our own: append-only file, fsync before every reply."""

    name = "redis-server"

    def __init__(self):
        self.dir = _scratch("once-redis-")
        self.port = free_port()
        self.url = "redis://127.0.0.1:%d/0" % self.port
        self.proc = None
        self.start()

    def cmd(self):
        return ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "yes", "--appendfsync", "always", "--dir", self.dir]

    def answers(self):
        r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), "ping"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return r.stdout.strip() == b"PONG"   # not LOADING: the AOF is read


class DynaliteServer(_KillableServer):
    """A dynalite of our own (DynamoDB's API; ONCE_DYNALITE names its
    cli.js) on LevelDB files: a killed dynalite keeps what it acknowledged,
    as DynamoDB does. onced signs with whatever AWS_ACCESS_KEY_ID the
    environment has; dynalite checks no signature."""

    name = "dynalite"

    def __init__(self):
        self.cli = os.environ["ONCE_DYNALITE"]
        self.dir = _scratch("once-dynalite-")
        self.port = free_port()
        self.url = ("dynamodb://once?region=us-east-1&endpoint=http://127.0.0.1:%d&create=1" %
                    self.port)
        self.proc = None
        self.start()

    def cmd(self):
        return ["node", self.cli, "--host", "127.0.0.1", "--port", str(self.port), "--path",
                os.path.join(self.dir, "data"), "--createTableMs", "0", "--deleteTableMs", "0",
                "--updateTableMs", "0"]

    def answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as c:
                c.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                return c.recv(12).startswith(b"HTTP/1.1")
        except OSError:
            return False
