"""The once story as it stands today: two onced replicas share one SQLite
registry; a client-minted task is sent, retried on the other replica,
parked in input-required, continued, completed, refused when messaged again,
and finally expired after a clock jump past retention. Each line of the
timeline is a claim checked against the servers' real answers."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import harness as h  # noqa: E402

TTY = sys.stdout.isatty()


def color(code, s):
    return "\033[%sm%s\033[0m" % (code, s) if TTY else s


claims = []


def claim(text, ok, detail=""):
    claims.append((text, bool(ok), detail))
    mark = color("32", "ok  ") if ok else color("31", "FAIL")
    print("  %s %s%s" % (mark, text, (" — " + detail) if detail else ""))


def step(who, what):
    print(color("1", "%-14s" % who) + what)


def main():
    tmp = tempfile.mkdtemp(prefix="once-demo-")
    store = "sqlite:" + os.path.join(tmp, "registry.db")
    common = ["--test-admin", "--retention", "72h", "--tombstone-retention", "30d"]
    a = h.Onced(common + ["--replica-id", "reviewer-a"], store=store, tmpdir=tmp)
    b = h.Onced(common + ["--replica-id", "reviewer-b"], store=store, tmpdir=tmp)
    try:
        tid = "t-" + h.new_id()
        send1 = h.user_message("ask:Which jurisdiction governs the contract?", task_id=tid)
        step("orchestrator", "mints %s and sends the contract for review to reviewer-a" % tid)
        st, hd, doc = a.rpc("SendMessage", {"message": send1, "configuration": {"returnImmediately": False}},
                            ext=True)
        task = (doc or {}).get("result", {}).get("task", {})
        claim("reviewer-a registered the client-minted task", task.get("id") == tid, task.get("id", ""))
        state = task.get("status", {}).get("state")
        claim("the reviewer parks the task in input-required", state == "TASK_STATE_INPUT_REQUIRED", state or "")

        step("orchestrator", "the response was lost; the same send is retried on reviewer-b")
        st, hd, doc = b.rpc("SendMessage", {"message": send1}, ext=True)
        task2 = (doc or {}).get("result", {}).get("task", {})
        claim("reviewer-b replays the stored task (same ID, nothing re-run)",
              task2.get("id") == tid and hd.get("idempotent-replayed") == "true",
              "Idempotent-Replayed: %s" % hd.get("idempotent-replayed"))
        st, hd, doc = a.rpc("ListTasks", {})
        ids = [t.get("id") for t in (doc or {}).get("result", {}).get("tasks", [])]
        claim("the registry holds exactly one task", ids.count(tid) == 1 and len(ids) == 1, "%d task(s)" % len(ids))

        step("orchestrator", "answers the question: continues %s with a new message" % tid)
        cont = h.user_message("English law", task_id=tid)
        st, hd, doc = b.rpc("SendMessage", {"message": cont}, ext=True)
        task3 = (doc or {}).get("result", {}).get("task", {})
        state = task3.get("status", {}).get("state")
        claim("the continuation advances the task to completed", state == "TASK_STATE_COMPLETED", state or "")
        arts = task3.get("artifacts") or []
        claim("the artifact is stored under the task", len(arts) >= 1)

        step("orchestrator", "sends one more message to the finished task")
        st, hd, doc = a.rpc("SendMessage", {"message": h.user_message("again?", task_id=tid)}, ext=True)
        code, reason, meta = h.error_info(doc or {})
        claim("a message for a finished task is refused naming its state",
              code == -32004 and reason == "TASK_TERMINAL" and meta.get("state") == "TASK_STATE_COMPLETED",
              "%s %s %s" % (code, reason, meta.get("state")))

        step("clock", "jumps 73 hours: past the 72h retention window")
        for r in (a, b):
            r.rpc("once/admin/setClockOffset", {"offsetMs": 73 * 3600 * 1000})
        expired = h.wait_until_value(lambda: _expired(a, send1), timeout=10)
        claim("a replayed send of the old task gets TASK_EXPIRED, never a re-run", expired is not None,
              "expiredAt %s" % (expired or ""))
    finally:
        a.stop()
        b.stop()

    print()
    print(color("1", "%-64s %s" % ("claim", "verdict")))
    for text, ok, _ in claims:
        print("%-64s %s" % (text, color("32", "held") if ok else color("31", "FAILED")))
    failed = sum(1 for _, ok, _ in claims if not ok)
    print("%d passed, %d failed" % (len(claims) - failed, failed))
    return 1 if failed else 0


def _expired(replica, msg):
    st, hd, doc = replica.rpc("SendMessage", {"message": msg}, ext=True)
    code, reason, meta = h.error_info(doc or {})
    if code == -32001 and reason == "TASK_EXPIRED":
        return meta.get("expiredAt", "?")
    return None


if __name__ == "__main__":
    sys.exit(main())
