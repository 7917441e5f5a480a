#!/usr/bin/env python3
"""amplify.py -- the amplification experiment (docs/design.md
sections 1 and 8).

A delegation tree with fan-out 2 over three delegation levels: a root agent
delegates to 2 agents, each to 2 more, each of those to 2 leaf agents, and
each of the 8 leaves performs one side effect on a counting service. Every
link loses responses with probability p (tests/tools/proxy.c: the request is
delivered and served, the answer never arrives), and every client retries.

    client -> [proxy] -> L0 onced -> [proxy] -> L1 onced -> [proxy] -> L2 onced
           -> [proxy] -> L3 onced (leaves) -> [proxy] -> counter (amplify_counter.py)

Each level is one onced whose --exec agent is demo/amplify_agent.sh. Two
modes run over the same seeds (the same drop decisions per link, in order):

  naive  onced --experiment-naive (every send makes a new task under a
         server-minted ID) and blind retries (each retry a new message),
         no idempotency key on the side effect;
  once   client-minted IDs (the once CLI: outbox, retries with the same ID),
         child IDs once_child_id(parent, step), side effects keyed
         <task>:step-<n> and deduplicated by the counter.

Two more modes build the same tree of PLAIN @a2a-js/sdk 1.3.0 agents
(demo/amplify_js_agent.mjs, one node process per level: the SDK's server,
and its client to delegate; no once code in them):

  js-naive    the agents call each other's agent (through the lossy links):
              plain A2A, blind retries that repeat the messageId of the
              first attempt (what a plain client does when it resends its
              Message); the SDK's server does not dedup a messageId, so each
              retry that reached it is a new task;
  js-gateway  the same agents, each fronted by an onced gateway (onced
              --upstream http://AGENT/ --store sqlite:...): a parent calls its
              children's GATEWAY, the root client level 0's. The losses are
              on the links a client sees (client -> gateway, parent agent ->
              child gateway, leaf -> service) and on every gateway -> agent
              hop. The retried messageId is what makes a plain parent's
              retry idempotent there: onced derives the task ID of a plain
              first message from (principal, messageId) (--plain-ids
              derived, the default), so the retry replays; and the gateway
              keeps one upstream (a2a-js) task per once task.

    client -> [proxy] -> L0 gateway -> [proxy] -> L0 a2a-js agent -> [proxy]
           -> L1 gateway -> [proxy] -> L1 agent -> ... -> L3 agent (leaves)
           -> [proxy] -> counter

The js leaves key their side effect by their own a2a-js task ID (the one ID
a plain agent has): a retried effect call is deduplicated, a second task for
the same leaf is not. Each agent counts the a2a-js tasks it created per tree
node, which gives a second table: upstream tasks and duplicated upstream
tasks per level.

For every (mode, p) it prints one row: root tasks, the leaf side effects
expected (8 per root), observed, duplicates (effects beyond the first per
leaf), lost (leaves with no effect). Run it with demo/amplify.sh.
Exit status: 0 when once and js-gateway had no duplicate (js-gateway: also
no duplicated upstream task at any level) and no loss in any row (and, with
--expect-naive-duplicates, naive and js-naive had duplicates in every row
with p > 0), 1 otherwise, 2 when the setup failed.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
import reaper  # noqa: E402
JS_AGENT = os.path.join(HERE, "amplify_js_agent.mjs")
MODES = ("naive", "once", "js-naive", "js-gateway", "js-gateway-up")
DEPTH = 3                   # delegation levels: 1 -> 2 -> 4 -> 8 leaves
LEAVES = 2 ** DEPTH
AGENTS_PER_ROOT = 2 ** (DEPTH + 1) - 1
PATHS = [format(i, "0%db" % DEPTH) for i in range(LEAVES)]

# The retry policy, the same for both modes: generous enough that once
# always converges at p = 0.3 (10 attempts: 0.3^10 ~ 6e-6 per call).
POLICY = {"AMP_ATTEMPTS": "10", "AMP_TIMEOUT_S": "60", "AMP_BACKOFF_BASE_MS": "50",
          "AMP_BACKOFF_CAP_MS": "1000"}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_roots(args, reaper, tmp, env, progress, command):
    """Every root task, args.concurrency at once: command(text) is the root
    client's argv for "amp R<i> p"; a client that fails is logged in
    roots-failed.log. How many succeeded. Interrupted: end every process of
    the run now, the root clients the pool's threads wait on among them, so
    nothing waits for them."""
    def root(i):
        text = "amp R%04d p" % i
        r = subprocess.run(command(text), env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=900)
        if r.returncode != 0:
            with open(os.path.join(tmp, "roots-failed.log"), "ab") as f:
                f.write(b"%s exit %d\n%s%s\n" % (text.encode(), r.returncode, r.stdout, r.stderr))
        progress.tick()
        return r.returncode == 0

    pool = concurrent.futures.ThreadPoolExecutor(args.concurrency)
    try:
        return sum(pool.map(root, range(args.roots)))
    except BaseException:
        reaper.reap(args.reap_var)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def leaf_fields(mode, p, args, ok, per_leaf, stray):
    """A row's fields about the leaves' side effects (per_leaf: the count
    at each expected slot; stray: effects at no expected slot)."""
    return {
        "mode": mode, "p": p, "roots": args.roots, "rootsCompleted": ok,
        "expected": LEAVES * args.roots,
        "observed": sum(per_leaf) + stray,
        "duplicates": sum(max(0, c - 1) for c in per_leaf) + stray,
        "lost": sum(1 for c in per_leaf if c == 0),
    }


def settle(probe, quiet_s, limit_s):
    """Wait until probe() stops changing for quiet_s (at most limit_s)."""
    last, stable_since, end = None, time.time(), time.time() + limit_s
    while time.time() < end:
        now = probe()
        if now != last:
            last, stable_since = now, time.time()
        elif time.time() - stable_since >= quiet_s:
            return
        time.sleep(0.2)


class Progress:
    """One row's progress: a line rewritten in place on a terminal, else a
    line at every tenth of the root tasks."""

    def __init__(self, label, total):
        self.label, self.total, self.done = label, total, 0
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.tty = sys.stderr.isatty()

    def tick(self):
        with self.lock:
            self.done += 1
            line = "  %s: %d/%d root tasks done, %.0f s" % (self.label, self.done, self.total,
                                                          time.time() - self.t0)
            if self.tty:
                sys.stderr.write("\r\033[K" + line)
                sys.stderr.flush()
            elif self.done * 10 // self.total != (self.done - 1) * 10 // self.total:
                log(line)

    def end(self):
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_json(port, method, path, body=None, headers=None, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        c.close()


class Stack:
    """The processes of one run; stop() ends every one of them (by pid)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.onced_ports = []
        self.agent_ports = []
        self.gateway_ports = []
        self.gateway_restarts = 0

    def spawn(self, name, args, env=None, port_line=False):
        logf = open(os.path.join(self.tmp, name + ".log"), "ab")
        p = subprocess.Popen(args, stdout=subprocess.PIPE if port_line else logf, stderr=logf,
                             env=env, start_new_session=True)
        self.procs.append((p, logf))
        if not port_line:
            return p, None
        line = p.stdout.readline().decode().strip()
        if not line.isdigit():
            raise RuntimeError("%s did not start (see %s.log)" % (name, name))
        return p, int(line)

    def proxy(self, build, name, to_port, p, seed):
        args = [os.path.join(build, "tools", "proxy"), "--listen", "0", "--to",
                "127.0.0.1:%d" % to_port]
        if p > 0:
            args += ["--drop-response-prob", repr(p), "--seed", str(seed)]
        return self.spawn(name, args, port_line=True)[1]

    def onced(self, build, level, mode, env):
        # A free port can be taken by someone else before onced binds it:
        # then try another one.
        for _ in range(3):
            port = free_port()
            args = [os.path.join(build, "onced"), "--drain-delay", "0",
                    "--listen", "127.0.0.1:%d" % port, "--store",
                    "sqlite:" + os.path.join(self.tmp, "level%d.db" % level), "--exec",
                    "sh " + os.path.join(HERE, "amplify_agent.sh") + " turn",
                    "--exec-grace", "1s", "--max-wait", "120s", "--turn-workers", "256",
                    "--workers", "256", "--test-admin", "--replica-id", "level%d" % level]
            if mode == "naive":
                args.append("--experiment-naive")
            p, _ = self.spawn("onced-level%d" % level, args, env=env)
            end = time.time() + 15
            while time.time() < end and p.poll() is None:
                try:
                    if http_json(port, "GET", "/.well-known/agent-card.json", timeout=1)[0] == 200:
                        self.onced_ports.append(port)
                        return port
                except (OSError, ValueError):
                    pass
                time.sleep(0.05)
            if p.poll() is None:
                break
        raise RuntimeError("onced level %d did not start (see %s)" % (level, self.tmp))

    def js_agent(self, level, next_url, env):
        """One plain a2a-js agent (demo/amplify_js_agent.mjs) for level."""
        node = shutil.which("node") or shutil.which("nodejs")
        if node is None:
            raise RuntimeError("node is missing (scripts/deps.sh installs it)")
        port = self.spawn("agent-level%d" % level,
                          [node, JS_AGENT, "serve", "--level", str(level), "--depth", str(DEPTH),
                           "--next", next_url], env=env, port_line=True)[1]
        self.agent_ports.append(port)
        return port

    def gateway(self, build, level, upstream_port, proxy_name):
        """onced --upstream in front of the agent behind upstream_port (a
        lossy proxy, proxy_name; None: the agent's own port). Its start reads
        the agent's card and probes ListTasks through that proxy. onced
        1c31bb7 made one attempt at each: a lost card stopped it, and a lost
        probe put every task of that gateway on rung 4 (a re-send without a
        look-up first); dfda3d4 retries both. So that no row depends on
        which onced runs, a start that lost an answer (a dropped connection
        in the proxy's log before onced was ready) is started again, on new
        connections."""
        plog = os.path.join(self.tmp, (proxy_name or "none") + ".log")

        def lines():
            if proxy_name is None:   # straight to the agent: nothing lost there
                return []
            with open(plog) as f:
                return f.read().splitlines()

        for attempt in range(20):
            seen = len(lines())   # this start's connections are logged after these
            port = free_port()
            args = [os.path.join(build, "onced"), "--drain-delay", "0",
                    "--listen", "127.0.0.1:%d" % port, "--store",
                    "sqlite:" + os.path.join(self.tmp, "gw-level%d-%d.db" % (level, attempt)),
                    "--upstream", "http://127.0.0.1:%d/" % upstream_port,
                    "--max-wait", "120s", "--turn-workers", "256", "--workers", "256",
                    "--test-admin", "--replica-id", "gw-level%d" % level]
            p, _ = self.spawn("gateway-level%d" % level, args)
            end = time.time() + 30
            ready = False
            while time.time() < end and p.poll() is None:
                try:
                    if http_json(port, "GET", "/.well-known/agent-card.json", timeout=1)[0] == 200:
                        ready = True
                        break
                except (OSError, ValueError):
                    pass
                time.sleep(0.05)
            lost = any(line.split()[-1:] == ["drop"] for line in lines()[seen:])
            if ready and not lost:
                self.gateway_ports.append(port)
                self.onced_ports.append(port)
                return port
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(10)
            self.gateway_restarts += 1
            log("  gateway level %d: start %d %s; starting it again" % (
                level, attempt + 1, "lost an answer on its upstream link" if lost
                else "did not become ready"))
        raise RuntimeError("gateway level %d did not start (see %s)" % (level, self.tmp))

    def agent_counts(self):
        return [http_json(port, "GET", "/counts")[1] for port in self.agent_ports]

    def gateway_metrics(self):
        """once_gateway_* counters summed over the gateways."""
        tot = {}
        for port in self.gateway_ports:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                c.request("GET", "/metrics")
                text = c.getresponse().read().decode()
            finally:
                c.close()
            for line in text.splitlines():
                if line.startswith("once_gateway_") and not line.startswith("#"):
                    name, _, val = line.rpartition(" ")
                    try:
                        tot[name] = tot.get(name, 0) + float(val)
                    except ValueError:
                        pass
        return tot

    def engine_stats(self):
        out = []
        for port in self.onced_ports:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "once/admin/stats",
                               "params": {}})
            _, doc = http_json(port, "POST", "/", body=body,
                               headers={"Content-Type": "application/json", "A2A-Version": "1.0"})
            out.append(doc["result"]["engine"])
        return out

    def stop(self):
        for p, _ in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p, logf in reversed(self.procs):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()
            logf.close()


def run_one(args, mode, p, pidx, tmp):
    """One (mode, p) run; returns its row (a dict)."""
    if mode.startswith("js-"):
        return run_js(args, mode, p, pidx, tmp)
    st = Stack(tmp)
    progress = Progress("%s p=%g" % (mode, p), args.roots)
    try:
        counter_port = st.spawn("counter", [sys.executable, os.path.join(HERE, "amplify_counter.py")],
                                port_line=True)[1]
        env = dict(os.environ)
        env.update(POLICY)
        env.update({"AMP_MODE": mode, "AMP_DEPTH": str(DEPTH),
                    "AMP_ONCE": os.path.join(args.build, "once"), "AMP_IDS": args.ids})

        def seed(link):
            # The same in both modes: link `link` of the pidx-th p.
            return args.seed * 1000 + pidx * 10 + link

        nxt = st.proxy(args.build, "proxy-link4", counter_port, p, seed(4))
        next_url = "http://127.0.0.1:%d/effect" % nxt
        for level in range(DEPTH, -1, -1):
            e = dict(env, AMP_NEXT=next_url,
                     AMP_OUTBOX=os.path.join(tmp, "outbox-level%d.db" % level))
            port = st.onced(args.build, level, mode, e)
            link = st.proxy(args.build, "proxy-link%d" % level, port, p, seed(level))
            next_url = "http://127.0.0.1:%d/" % link
        root_url = next_url
        if mode == "once":
            # Create every outbox before concurrent turns share it: two once
            # processes opening a NEW outbox file at the same moment can fail
            # "PRAGMA journal_mode=WAL: database is locked" (src/client/
            # outbox.c, once__outbox_open; an existing file is fine).
            for name in ["client"] + ["level%d" % level for level in range(DEPTH)]:
                subprocess.run([os.path.join(args.build, "once"), "outbox", "--json", "--outbox",
                                os.path.join(tmp, "outbox-%s.db" % name)],
                               stdout=subprocess.DEVNULL, check=True)

        def command(text):
            if mode == "once":
                return [os.path.join(args.build, "once"), "send", "--agent", root_url, "--text",
                        text, "--wait", "--json", "--outbox", os.path.join(tmp, "outbox-client.db"),
                        "--attempts", POLICY["AMP_ATTEMPTS"],
                        "--timeout", POLICY["AMP_TIMEOUT_S"] + "s", "--deadline", "10m",
                        "--backoff-base", POLICY["AMP_BACKOFF_BASE_MS"] + "ms",
                        "--backoff-cap", POLICY["AMP_BACKOFF_CAP_MS"] + "ms",
                        "--budget-ratio", "1", "--budget-burst", "1000"]
            return ["sh", os.path.join(HERE, "amplify_agent.sh"), "send", root_url, text]

        t0 = time.time()
        ok = run_roots(args, reaper, tmp, env, progress, command)
        progress.end()
        # Every send waits for its subtree, so the tree is done; still, wait
        # until nothing moves for a second before counting.
        settle(lambda: (http_json(counter_port, "GET", "/stats")[1]["requests"],
                        tuple(s["executedTurns"] for s in st.engine_stats())), 1.0, 60)
        elapsed = time.time() - t0
        counts = http_json(counter_port, "GET", "/stats")[1]
        engines = st.engine_stats()
    finally:
        st.stop()

    slots = counts["slots"]
    expected = {"R%04d.%s" % (i, path) for i in range(args.roots) for path in PATHS}
    per_leaf = [slots.get(s, 0) for s in sorted(expected)]
    stray = sum(v for s, v in slots.items() if s not in expected)
    return dict(leaf_fields(mode, p, args, ok, per_leaf, stray), **{
        "agentTasks": sum(e["registered"] for e in engines),
        "expectedAgentTasks": AGENTS_PER_ROOT * args.roots,
        # Retried sends answered from the registry, and retried effect
        # calls the counter recognised by key: what once absorbed.
        "deduplicated": sum(e["replayed"] for e in engines) + counts["replayed"],
        "counterRequests": counts["requests"],
        "seconds": round(elapsed, 1),
    })


def slots_at(roots, level):
    """The tree nodes of one level: ROOT.PATH with a PATH of level digits."""
    return ["R%04d.%s" % (i, format(j, "0%db" % level) if level else "")
            for i in range(roots) for j in range(2 ** level)]


def run_js(args, mode, p, pidx, tmp):
    """One row of a tree of plain a2a-js agents: js-naive (agent to agent)
    or js-gateway (each agent behind onced --upstream)."""
    st = Stack(tmp)
    progress = Progress("%s p=%g" % (mode, p), args.roots)
    gw = mode in ("js-gateway", "js-gateway-up")
    up_p = p if mode == "js-gateway-up" else 0   # losses on the gateway -> agent hops too
    try:
        counter_port = st.spawn("counter", [sys.executable, os.path.join(HERE, "amplify_counter.py")],
                                port_line=True)[1]
        env = dict(os.environ)
        env.update(POLICY)

        def seed(link):
            # Links 0-4 as in the other modes; the gateway -> agent hops 5-8.
            return args.seed * 1000 + pidx * 10 + link

        nxt = st.proxy(args.build, "proxy-link4", counter_port, p, seed(4))
        next_url = "http://127.0.0.1:%d/effect" % nxt
        for level in range(DEPTH, -1, -1):
            port = st.js_agent(level, next_url, env)
            if gw and up_p > 0:
                up = st.proxy(args.build, "proxy-up%d" % level, port, up_p, seed(5 + level))
                port = st.gateway(args.build, level, up, "proxy-up%d" % level)
            elif gw:
                port = st.gateway(args.build, level, port, None)
            link = st.proxy(args.build, "proxy-link%d" % level, port, p, seed(level))
            next_url = "http://127.0.0.1:%d/" % link
        root_url = next_url
        node = shutil.which("node") or shutil.which("nodejs")

        t0 = time.time()
        ok = run_roots(args, reaper, tmp, env, progress,
                       lambda text: [node, JS_AGENT, "send", root_url, text])
        progress.end()
        # A naive subtree abandoned by a lost answer may still be at work
        # (nobody waits for it): wait until nothing moves for two seconds.
        settle(lambda: (http_json(counter_port, "GET", "/stats")[1]["requests"],
                        tuple((c["tasksCreated"], c["completed"], c["failed"], c["sendAttempts"])
                              for c in st.agent_counts())), 2.0, 300)
        elapsed = time.time() - t0
        counts = http_json(counter_port, "GET", "/stats")[1]
        agents = sorted(st.agent_counts(), key=lambda c: c["level"])
        engines = st.engine_stats() if gw else []
        gmetrics = st.gateway_metrics() if gw else {}
    finally:
        st.stop()

    slots = counts["slots"]
    expected = {"R%04d.%s" % (i, path) for i in range(args.roots) for path in PATHS}
    per_leaf = [slots.get(s, 0) for s in sorted(expected)]
    stray = sum(v for s, v in slots.items() if s not in expected)
    levels = []
    for c in agents:
        want = slots_at(args.roots, c["level"])
        per = [c["bySlot"].get(s, 0) for s in want]
        extra = sum(v for s, v in c["bySlot"].items() if s not in set(want))
        levels.append({"level": c["level"], "expected": len(want), "created": c["tasksCreated"],
                       "duplicates": sum(max(0, n - 1) for n in per) + extra,
                       "lost": sum(1 for n in per if n == 0), "failed": c["failed"]})
    return dict(leaf_fields(mode, p, args, ok, per_leaf, stray), **{
        # a2a-js tasks made by the agents (the upstream tasks)
        "agentTasks": sum(c["tasksCreated"] for c in agents),
        "expectedAgentTasks": AGENTS_PER_ROOT * args.roots,
        "deduplicated": sum(e["replayed"] for e in engines) + counts["replayed"],
        "counterRequests": counts["requests"],
        "levels": levels,
        "gateway": {
            "restarts": st.gateway_restarts,
            "reattached": int(gmetrics.get("once_gateway_reattached_total", 0)),
            "unverifiedResends": int(gmetrics.get("once_gateway_unverified_resends_total", 0)),
            "upstreamRetries": int(gmetrics.get("once_gateway_upstream_retries_total", 0)),
            "onceTasks": sum(e["registered"] for e in engines),
            "replayed": sum(e["replayed"] for e in engines),
        } if gw else None,
        "seconds": round(elapsed, 1),
    })


NOTES = """# The amplification experiment

`%(cmd)s`: %(roots)d root tasks per row, each a delegation tree of 1 -> 2 -> 4 -> 8
agents (4 onced processes, one per level, whose `--exec` agent is
`demo/amplify_agent.sh`); each of the 8 leaves performs one side effect on a counting
HTTP service. Every link (client -> root, parent -> child, leaf -> service) loses
responses with probability p: the request is served, the answer never arrives. Every
client retries (10 attempts, full-jitter backoff). Seed %(seed)d; %(secs).0f s.

- **naive**: `onced --experiment-naive` (server-minted task IDs), blind retries (each retry
  a new message), no idempotency key on the side effect.
- **once**: client-minted task IDs (`once send`), child IDs `once_child_id(parent, step)`,
  side effects keyed `<task>:step-<n>` (`Idempotency-Key`), deduplicated by the service.

%(table)s

*duplicates*: side effects beyond the first per leaf; *lost*: leaves without a side effect
(a lost response means the work was done, so retries lose nothing in either mode; what a
blind retry does is redo the whole subtree below the lost answer). *retries deduplicated*:
retried sends answered from the registry plus retried side-effect calls the service
recognised by their key.
"""


def table(rows):
    head = ["mode", "p", "root tasks", "expected leaf side effects", "observed", "duplicates",
            "lost", "roots completed", "agent tasks run (15/root)", "retries deduplicated"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        lines.append("| %s | %g | %d | %d | %d | %d | %d | %d | %d | %d |" % (
            r["mode"], r["p"], r["roots"], r["expected"], r["observed"], r["duplicates"],
            r["lost"], r["rootsCompleted"], r["agentTasks"], r["deduplicated"]))
    return "\n".join(lines)


JS_HEAD = """# The amplification experiment: plain @a2a-js/sdk agents, and the onced gateway

`%(cmd)s`: %(roots)d root tasks per row, each a delegation tree of 1 -> 2 -> 4 -> 8
plain @a2a-js/sdk agents (4 node processes, one per level); each of the 8 leaves performs one
side effect on a counting HTTP service. Every link a client sees (client -> root, parent ->
child, leaf -> service) loses responses with probability p: the request is served, the answer
never arrives. Every client retries (10 attempts, full-jitter backoff). Seed %(seed)d; %(secs).0f s;
load average at the end %(load)s.

%(table)s

*duplicates*: side effects beyond the first per leaf; *lost*: leaves without a side effect;
*agent tasks run*: a2a-js tasks the agents created; *retries deduplicated*: retried sends the
gateways answered from their registry plus retried side-effect calls the service recognised by
their key.
"""

JS_NOTES = """
The js rows: the same tree of plain @a2a-js/sdk 1.3.0 agents (`demo/amplify_js_agent.mjs`,
one node process per level: the SDK's `DefaultRequestHandler` + express JSON-RPC server, and its
client to delegate; no once code). Every client retries blindly, and a retry resends the same
Message object, so it repeats the messageId of its first attempt (what a plain A2A client does).

- **js-naive**: agent to agent, through the lossy links. The SDK's server does not dedup a
  messageId: each retry that reached it is a new task, which runs its whole subtree again.
- **js-gateway**: each agent behind `onced --upstream http://127.0.0.1:AGENT/ --store sqlite:...`;
  a parent (and the root client) calls its child's gateway, through the lossy links. The retried
  messageId is what makes a plain parent's retry idempotent there: onced derives the task ID of a
  plain first message from (principal, messageId) (`--plain-ids derived`, the default), so the
  retry replays the once task, and the gateway keeps one a2a-js task per once task.
- **js-gateway-up**: as js-gateway, and every gateway -> agent hop loses answers with the same
  p (seeds of their own): a gateway whose answer from its agent was lost looks its a2a-js task up
  by ListTasks on the contextId it derived (rung 2; *re-attached*). A gateway reads its agent's
  card and probes ListTasks when it starts (onced 1c31bb7 tried each once: a lost probe put all its
  tasks on rung 4), so a start that lost an answer (seen in that hop's proxy log) is started
  again. The gateway's upstream calls spend the client library's retry budget (0.1
  retries per call, bursts of 10; onced has no flag for it): at p = 0.3 it runs out, and the once
  task fails naming the upstream while its a2a-js task goes on (*roots completed* < roots); it
  never makes a second a2a-js task.

The leaves key their side effect by their own a2a-js task ID (the one ID a plain agent has):
a retried effect call is deduplicated by the service, a second task for the same leaf is not.

%(levels)s

*a2a-js tasks*: tasks the agents of each level created (expected: roots x 1/2/4/8);
*duplicated*: tasks beyond the first per tree node; *once tasks*: tasks the gateways registered;
*re-attached*: gateway turns that found the a2a-js task they had made after a lost answer;
*unverified re-sends*: re-sends the gateway could not check first (rung 4; 0 expected here).
"""


def js_table(rows):
    head = ["mode", "p", "root tasks", "a2a-js tasks L0/L1/L2/L3", "expected",
            "duplicated a2a-js tasks L0/L1/L2/L3", "roots completed", "once tasks (gateways)",
            "re-attached", "unverified re-sends"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        if "levels" not in r:
            continue
        lv = r["levels"]
        g = r["gateway"]
        lines.append("| %s | %g | %d | %s | %s | %s | %d | %s | %s | %s |" % (
            r["mode"], r["p"], r["roots"], "/".join(str(x["created"]) for x in lv),
            "/".join(str(x["expected"]) for x in lv), "/".join(str(x["duplicates"]) for x in lv),
            r["rootsCompleted"], g["onceTasks"] if g else "-", g["reattached"] if g else "-",
            g["unverifiedResends"] if g else "-"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description="the amplification experiment (naive vs once)")
    ap.add_argument("--build", required=True, help="build directory (onced, once, tools/proxy)")
    ap.add_argument("--ids", required=True, help="the amplify_ids helper")
    ap.add_argument("--roots", type=int, default=100)
    ap.add_argument("--p", default="0,0.1,0.3", help="comma-separated loss probabilities")
    ap.add_argument("--modes", default="naive,once",
                    help="comma-separated, of: naive, once, js-naive, js-gateway")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--concurrency", type=int, default=24, help="root tasks in flight")
    ap.add_argument("--out", help="also write the table (markdown) here")
    ap.add_argument("--json", help="also write the rows (JSON) here")
    ap.add_argument("--keep", action="store_true", help="keep the logs and stores")
    ap.add_argument("--expect-naive-duplicates", action="store_true",
                    help="also fail unless naive shows duplicates at every p > 0")
    args = ap.parse_args()
    ps = [float(x) for x in args.p.split(",")]
    modes = args.modes.split(",")
    if any(m not in MODES for m in modes) or args.roots < 1 or args.concurrency < 1:
        ap.error("modes are %s; --roots and --concurrency must be >= 1" % ", ".join(MODES))

    # Whatever ends this run (Ctrl-C, SIGTERM, a timeout, SIGKILL), the onced
    # processes, their agents, the proxies and the counter end with it.
    args.reap_var = reaper.guard()
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    top = tempfile.mkdtemp(prefix="once-amplify-", dir=base)
    if not args.keep:
        reaper.remove_after(top)
    rows, started = [], time.time()
    nrows = len(ps) * len(modes)
    log("amplification experiment: %d rows of %d root tasks, 1 -> 2 -> 4 -> %d leaves, "
        "logs in %s" % (nrows, args.roots, LEAVES, top))
    log("a row's time grows with p and the machine's load (naive rows redo whole subtrees); "
        "after each row an estimate of the rest follows")
    try:
        for pidx, p in enumerate(ps):
            for mode in modes:
                tmp = os.path.join(top, "%s-p%g" % (mode, p))
                os.makedirs(tmp)
                r = run_one(args, mode, p, pidx, tmp)
                rows.append(r)
                log("  %-5s p=%-4g roots %d/%d completed, leaf effects %d (expected %d), "
                    "duplicates %d, lost %d, agent tasks %d, %.1fs" % (
                        mode, p, r["rootsCompleted"], r["roots"], r["observed"], r["expected"],
                        r["duplicates"], r["lost"], r["agentTasks"], r["seconds"]))
                if "levels" in r:
                    log("  %s p=%g a2a-js tasks per level %s, duplicated %s%s" % (
                        mode, p, "/".join(str(x["created"]) for x in r["levels"]),
                        "/".join(str(x["duplicates"]) for x in r["levels"]),
                        "" if r["gateway"] is None else ", gateway re-attached %d, unverified "
                        "re-sends %d" % (r["gateway"]["reattached"],
                                         r["gateway"]["unverifiedResends"])))
                left = nrows - len(rows)
                if left:
                    spent = time.time() - started
                    log("  row %d of %d done after %.0f s; at this pace the other %d take about "
                        "%.0f s more" % (len(rows), nrows, spent, left, spent / len(rows) * left))
    except (RuntimeError, OSError, subprocess.CalledProcessError) as ex:
        log("amplify: setup failed: %s (logs in %s)" % (ex, top))
        reaper.keep(top)
        return 2
    except (KeyboardInterrupt, SystemExit) as ex:
        log("\namplify: interrupted after %d of %d rows; its processes are stopped" % (
            len(rows), nrows))
        reaper.reap(args.reap_var)
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
        return 130 if isinstance(ex, KeyboardInterrupt) else ex.code

    out = table(rows)
    print(out)
    js = any("levels" in r for r in rows)
    if js:
        print()
        print(js_table(rows))
    cmd = "demo/amplify.sh --roots %d --p %s --modes %s --seed %d" % (
        args.roots, args.p, args.modes, args.seed)
    if cmd == "demo/amplify.sh --roots 100 --p 0,0.1,0.3 --modes naive,once --seed 7":
        cmd = "make amplify"
    if cmd == ("demo/amplify.sh --roots 100 --p 0,0.1,0.3 --modes js-naive,js-gateway,"
               "js-gateway-up --seed 7"):
        cmd = "demo/amplify.sh --gateway"
    if args.out:
        with open(args.out, "w") as f:
            if all("levels" in r for r in rows):
                f.write(JS_HEAD % {"cmd": cmd, "roots": args.roots, "seed": args.seed,
                                   "secs": time.time() - started, "table": out,
                                   "load": " ".join(open("/proc/loadavg").read().split()[:3])})
            else:
                f.write(NOTES % {"cmd": cmd, "roots": args.roots, "seed": args.seed,
                                 "secs": time.time() - started, "table": out})
            if js:
                f.write(JS_NOTES % {"levels": js_table(rows)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)

    # js-gateway-up: the gateways' own calls to their agents lose answers too,
    # and their retry budget (the client library's: 0.1 retries per call,
    # bursts of 10; onced has no flag for it) can run out at p = 0.3: the
    # once task then fails, naming the upstream, while its a2a-js task goes
    # on. What it must never do is make a second a2a-js task.
    bad = [r for r in rows if r["mode"] in ("once", "js-gateway", "js-gateway-up") and
           (r["duplicates"] or r["lost"] or
            (r["rootsCompleted"] != r["roots"] and r["mode"] != "js-gateway-up") or
            any(x["duplicates"] or x["lost"] for x in r.get("levels", [])))]
    if args.expect_naive_duplicates:
        bad += [r for r in rows if r["mode"] in ("naive", "js-naive") and r["p"] > 0 and
                not r["duplicates"]]
    for r in bad:
        log("amplify: unexpected row: %s" % json.dumps(r))
    if bad or args.keep:
        reaper.keep(top)
        log("amplify: logs kept in %s" % top)
    else:
        shutil.rmtree(top, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
