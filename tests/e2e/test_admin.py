"""The cluster view (issue #32, item 5): two onced replicas beat into one
SQLite file, and `once admin replicas` (once/admin/replicas) lists both as
alive; after one is killed with SIGKILL it is listed as not alive once its
last beat is older than 3 heartbeats (waited for, not slept), while the
other stays alive; a clean stop marks a replica stopped. The operator
method answers only principals named by --admin-principals: without a
token 401, with another principal's 403, and every call, allowed or not,
leaves one "admin" audit line (JSON, one object per line) naming the
caller, the method and the outcome.

Leases and bulk cancel: replica A runs a task held at a gate and is killed
with SIGKILL; on replica B, which runs no sweeper (ONCE_TEST_SWEEPER=off,
so nothing takes the lease over on its own), `once admin leases` lists the
expired lease (A's, fence 1) once it has run out, and `once admin release`
makes B take the task over (fence 2), after which the list is empty and the
task completes on B. `once admin cancel --principal alice --state
TASK_STATE_WORKING` with --dry-run names alice's two working tasks and
cancels nothing; without it cancels both, and bob's working task is
untouched."""
import json
import os
import subprocess

from harness import (ROOT, GatedAgent, Onced, check, eq, http_request, new_id, rpc, run, scaled,
                     scratch_dir, task_state, user_message, wait_until)

TMP = scratch_dir()
BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
ONCE = os.path.join(BUILD, "once")
LEASE = "600ms"   # heartbeat every 200 ms: "not alive" comes within 600 ms of the kill

TOKENS = os.path.join(TMP, "tokens")
with open(TOKENS, "w") as f:
    f.write("tok-ops ops\ntok-alice alice\ntok-bob bob\n")


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
        # Alive means a beat in the last lease: on a loaded machine a beat
        # can come late, so wait for both to be seen alive at once.
        wait_until(lambda: all(r.get("alive") for r in (replicas(b.port).get(i, {})
                                                        for i in ("replica-a", "replica-b"))),
                   timeout=scaled(10), what="both replicas beat")
        rows = replicas(b.port)
        for rid in ("replica-a", "replica-b"):
            check(not rows[rid]["stopped"], "%s not stopped: %r" % (rid, rows))
            eq(rows[rid]["leases"], 0, "%s holds no lease" % rid)
            check(rows[rid]["version"], "%s says its version" % rid)

        # The table a person reads.
        def table():
            code, out, _ = cli(a.port, "tok-ops", "replicas")
            eq(code, 0, "the table")
            return out
        out = table()
        check(out.splitlines()[0].split()[:2] == ["ID", "VERSION"], "a header: %r" % out)
        wait_until(lambda: any(l.startswith("replica-b") and " yes " in l
                               for l in table().splitlines()),
                   timeout=scaled(10), what="replica-b alive in the table")

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
        wait_until(lambda: replicas(a.port)["replica-a"]["alive"], timeout=scaled(10),
                   what="replica-a still alive")
        rows = replicas(a.port)
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


def send_held(port, token, gated):
    tid = new_id()
    st, _, doc = rpc(port, "SendMessage", {"message": user_message("hold", task_id=tid),
                                           "configuration": {"returnImmediately": True}},
                     ext=True, token=token)
    eq(st, 200, "the held task is accepted (%r)" % doc)
    wait_until(lambda: state_of(port, token, tid) == "TASK_STATE_WORKING", timeout=scaled(10),
               what="the task %s to run" % tid)
    return tid


def state_of(port, token, tid):
    st, _, doc = rpc(port, "GetTask", {"id": tid}, token=token)
    return task_state(doc) if st == 200 else None


def test_leases_release_and_cancel():
    store = "sqlite:" + os.path.join(TMP, "leases.db")
    gated = GatedAgent("step started; gate hold")
    common = ["--lease", LEASE, "--auth-tokens", TOKENS, "--admin-principals", "ops",
              "--log-format", "json"] + gated.args
    a = Onced(args=common + ["--replica-id", "replica-a"], tmpdir=TMP, store=store)
    b = Onced(args=common + ["--replica-id", "replica-b"], tmpdir=TMP, store=store,
              env={"ONCE_TEST_SWEEPER": "off"})
    try:
        tid = send_held(a.port, "tok-alice", gated)
        a.kill9()

        def expired():
            code, out, err = cli(b.port, "tok-ops", "leases", "--json")
            eq(code, 0, "once admin leases exits 0 (%s)" % err)
            return [r for r in json.loads(out)["expired"] if r["taskId"] == tid]
        wait_until(lambda: expired(), timeout=scaled(10), what="A's lease to run out")
        row = expired()[0]
        eq((row["principal"], row["leaseOwner"], row["fence"], row["state"]),
           ("alice", "replica-a", 1, "TASK_STATE_WORKING"), "the expired lease: %r" % row)
        code, out, err = cli(b.port, "tok-ops", "leases")
        check(code == 0 and tid in out and "replica-a" in out, "the table: %r %r" % (out, err))

        code, out, err = cli(b.port, "tok-ops", "release", "--principal", "alice", "--task", tid,
                             "--json")
        eq(code, 0, "once admin release exits 0 (%s)" % err)
        eq(json.loads(out)["fence"], 2, "taken over with fence 2: %r" % out)
        eq(expired(), [], "no longer listed")
        code, out, err = cli(b.port, "tok-ops", "release", "--principal", "alice", "--task",
                             "no-such-task")
        check(code != 0 and "no live task" in err, "a missing task is refused: %r" % err)
        gated.release(tid, "hold")
        wait_until(lambda: state_of(b.port, "tok-alice", tid) == "TASK_STATE_COMPLETED",
                   timeout=scaled(10), what="the released task to complete on B")

        mine = [send_held(b.port, "tok-alice", gated) for _ in range(2)]
        bobs = send_held(b.port, "tok-bob", gated)
        code, out, err = cli(b.port, "tok-ops", "cancel", "--principal", "alice", "--state",
                             "TASK_STATE_WORKING", "--dry-run", "--json")
        eq(code, 0, "cancel --dry-run exits 0 (%s)" % err)
        doc = json.loads(out)
        eq((doc["matched"], sorted(doc["canceled"]), doc["dryRun"]), (2, sorted(mine), True),
           "the dry run names alice's working tasks: %r" % doc)
        check(all(state_of(b.port, "tok-alice", t) == "TASK_STATE_WORKING" for t in mine),
              "a dry run cancels nothing")
        code, out, err = cli(b.port, "tok-ops", "cancel", "--principal", "alice", "--state",
                             "TASK_STATE_WORKING")
        eq(code, 0, "cancel exits 0 (%s)" % err)
        check("2 matched, 2 canceled" in out, "the summary: %r" % out)
        for t in mine:
            eq(state_of(b.port, "tok-alice", t), "TASK_STATE_CANCELED", "alice's %s" % t)
        eq(state_of(b.port, "tok-bob", bobs), "TASK_STATE_WORKING", "bob's task untouched")
        calls = [l["method"] for l in audit_lines(b)]
        for m in ("once/admin/leases", "once/admin/releaseLease", "once/admin/cancelTasks"):
            check(m in calls, "%s audited: %r" % (m, calls))
        gated.release(bobs, "hold")
    finally:
        b.stop()


def test_inspector_cluster():
    """The inspector's task list shows the replicas to an operator first,
    and to nobody else."""
    store = "sqlite:" + os.path.join(TMP, "inspect.db")
    srv = Onced(args=["--auth-tokens", TOKENS, "--admin-principals", "ops", "--inspect",
                      "--replica-id", "replica-i"], tmpdir=TMP, store=store)
    try:
        wait_until(lambda: "replica-i" in replicas(srv.port), timeout=scaled(10),
                   what="the replica's first beat")
        st, _, body = http_request(srv.port, "GET", "/inspect/",
                                   headers={"Authorization": "Bearer tok-ops"})
        page = body.decode()
        eq(st, 200, "the list page for ops")
        check('id="cluster"' in page and "<code>replica-i</code>" in page and
              'class="alive-yes"' in page, "the operator sees the replicas: %s" % page[:2000])
        check(page.index('id="cluster"') < page.index('id="tasks"'), "before the tasks")
        st, _, body = http_request(srv.port, "GET", "/inspect/",
                                   headers={"Authorization": "Bearer tok-alice"})
        eq(st, 200, "the list page for alice")
        check('id="cluster"' not in body.decode(), "alice does not see them")
    finally:
        srv.stop()


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
    run([test_cluster_view, test_leases_release_and_cancel, test_inspector_cluster,
         test_closed_by_default])
