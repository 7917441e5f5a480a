"""The cluster view (issue #32, item 5): two onced replicas beat into one
SQLite file, and `once admin replicas` (once/admin/replicas) lists both as
alive; after one is killed with SIGKILL it is listed as not alive once its
last beat is older than 3 heartbeats (waited for, not slept), while the
other stays alive; a clean stop marks a replica stopped. The operator
method answers only principals named by --admin-principals: without a
token 401, with another principal's 403, and every call, allowed or not,
leaves one "admin" audit line (JSON, one object per line) naming the
caller, the method and the outcome."""
import json
import os
import subprocess

from harness import ROOT, Onced, check, eq, rpc, run, scaled, scratch_dir, wait_until

TMP = scratch_dir()
BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
ONCE = os.path.join(BUILD, "once")
LEASE = "600ms"   # heartbeat every 200 ms: "not alive" comes within 600 ms of the kill

TOKENS = os.path.join(TMP, "tokens")
with open(TOKENS, "w") as f:
    f.write("tok-ops ops\ntok-alice alice\n")


def cli(port, token, *args):
    """`once admin ... --agent URL --json`: (exit status, parsed stdout or text, stderr)."""
    env = dict(os.environ, ONCE_TOKEN=token)
    p = subprocess.run([ONCE, "--outbox", os.path.join(TMP, "outbox.db"), "admin"] + list(args)
                       + ["--agent", "http://127.0.0.1:%d/" % port], capture_output=True,
                       text=True, env=env, timeout=scaled(30))
    return p.returncode, p.stdout, p.stderr


def replicas(port):
    code, out, err = cli(port, "tok-ops", "replicas", "--json")
    eq(code, 0, "once admin replicas exits 0 (%s)" % err)
    return {r["id"]: r for r in json.loads(out)["replicas"]}


def audit_lines(srv):
    lines = []
    for line in srv.logtext_all().splitlines():
        doc = json.loads(line)   # JSON mode: one object per line, always
        if doc.get("event") == "admin":
            lines.append(doc)
    return lines


def test_cluster_view():
    store = "sqlite:" + os.path.join(TMP, "registry.db")
    common = ["--lease", LEASE, "--auth-tokens", TOKENS, "--admin-principals", "ops",
              "--log-format", "json"]
    a = Onced(args=common + ["--replica-id", "replica-a"], tmpdir=TMP, store=store)
    b = Onced(args=common + ["--replica-id", "replica-b"], tmpdir=TMP, store=store)
    try:
        wait_until(lambda: set(replicas(a.port)) >= {"replica-a", "replica-b"},
                   timeout=scaled(10), what="both replicas beat")
        rows = replicas(b.port)
        for rid in ("replica-a", "replica-b"):
            check(rows[rid]["alive"] and not rows[rid]["stopped"], "%s alive: %r" % (rid, rows))
            eq(rows[rid]["leases"], 0, "%s holds no lease" % rid)
            check(rows[rid]["version"], "%s says its version" % rid)

        # The table a person reads.
        code, out, _ = cli(a.port, "tok-ops", "replicas")
        eq(code, 0, "the table")
        check(out.splitlines()[0].split()[:2] == ["ID", "VERSION"], "a header: %r" % out)
        check(any(l.startswith("replica-b") and " yes " in l for l in out.splitlines()),
              "replica-b alive in the table: %r" % out)

        # Refusals: no token (401 at the HTTP layer), a principal not listed (403).
        st, _, doc = rpc(a.port, "once/admin/replicas", {})
        eq(st, 401, "no token: 401")
        st, _, doc = rpc(a.port, "once/admin/replicas", {}, token="tok-alice")
        eq(st, 403, "alice is no operator: 403 (%r)" % doc)
        code, _, err = cli(a.port, "tok-alice", "replicas")
        check(code != 0 and "403" in err and "--admin-principals" in err,
              "the CLI says why: %r" % err)

        # A replica killed outright stops beating: not alive after 3 beats.
        b.kill9()
        wait_until(lambda: not replicas(a.port)["replica-b"]["alive"], timeout=scaled(10),
                   what="replica-b seen dead")
        rows = replicas(a.port)
        check(rows["replica-a"]["alive"], "replica-a still alive")
        check(not rows["replica-b"]["stopped"], "a killed replica never said it stopped")

        # Every call left one audit line with who, what and how it went.
        lines = audit_lines(a)
        check(any(l["principal"] == "ops" and l["method"] == "once/admin/replicas"
                  and l["outcome"] == "ok" and l["params"] == "{}" for l in lines),
              "an allowed call audited: %r" % lines)
        check(any(l["principal"] == "alice" and l["outcome"] == "PERMISSION_DENIED"
                  for l in lines), "a refused call audited too: %r" % lines)
    finally:
        b.kill9()
        a.stop()
    # A clean stop says so: read through a fresh replica on the same file.
    c = Onced(args=common + ["--replica-id", "replica-c"], tmpdir=TMP, store=store)
    try:
        rows = replicas(c.port)
        check(rows["replica-a"]["stopped"] and not rows["replica-a"]["alive"],
              "replica-a stopped cleanly: %r" % rows["replica-a"])
    finally:
        c.stop()


def test_closed_by_default():
    """Without --admin-principals nobody may: even "anonymous" on a server
    without tokens gets 403, until it is named."""
    store = "sqlite:" + os.path.join(TMP, "closed.db")
    srv = Onced(tmpdir=TMP, store=store)
    try:
        st, _, _ = rpc(srv.port, "once/admin/replicas", {})
        eq(st, 403, "no --admin-principals: 403")
    finally:
        srv.stop()
    srv = Onced(args=["--admin-principals", "anonymous"], tmpdir=TMP, store=store)
    try:
        st, _, doc = rpc(srv.port, "once/admin/replicas", {})
        eq(st, 200, "named explicitly: allowed (%r)" % doc)
        rows = {r["id"]: r for r in doc["result"]["replicas"]}
        eq(len(rows), 2, "the stopped one and itself: %r" % doc)
        eq(sum(r["alive"] for r in rows.values()), 1, "itself alive: %r" % doc)
    finally:
        srv.stop()


if __name__ == "__main__":
    run([test_cluster_view, test_closed_by_default])
