"""Blocking sends wait without holding a thread, and one principal cannot
hold every waiting slot.

A blocking SendMessage waits until its task settles. onced answers it from
the engine's await thread and a worker picks up the answer once the task
settled; while it waits, no request worker is held. The --exec agent of
these tests blocks every turn on a shared lock the test holds (flock, no
CPU), so the tasks stay working for exactly as long as the test wants.

- with three times as many blocking sends waiting as onced has request
  workers (--workers 4), GetTask, ListTasks and a new returnImmediately
  send are answered while every blocking send still waits (the engine's
  `waiting` gauge says so); opened, every blocking send is answered with
  its completed task;
- with --max-waits-per-principal 3, Alice's fourth blocking send is
  answered at once with the task as it stands (working, not failed) and
  counted in waitsShed, while Bob's blocking send still waits and is
  answered completed;
- onced stopping answers every waiting send with its task as it stands
  (HTTP 200, a task that is not terminal) instead of leaving it hanging.
"""
import fcntl
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, admin_stats, check, eq, new_id, run, scaled,  # noqa
                     scratch_dir, task_state, user_message, wait_until)

TMP = scratch_dir("once-blockfair-")
WORKERS = 4
BLOCKERS = 3 * WORKERS
TOKENS = {"alice": "tok-alice-0123456789", "bob": "tok-bob-0123456789"}


class Gate:
    """An exclusive flock the test holds; each turn takes it shared, so
    every turn blocks until open() (without spinning)."""

    def __init__(self, name):
        self.path = os.path.join(TMP, name)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def agent(self):
        return ("flock -s %s true; "
                "echo '{\"status\":\"completed\",\"text\":\"done\"}'" % self.path)

    def open(self):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class Blocking:
    """A blocking SendMessage on its own thread; .result once answered."""

    def __init__(self, srv, tid, token=None):
        self.tid = tid
        self.result = None
        self.thread = threading.Thread(target=self._run, args=(srv, token), daemon=True)
        self.thread.start()

    def _run(self, srv, token):
        try:
            self.result = srv.rpc("SendMessage", {"message": user_message("work", task_id=self.tid)},
                                  ext=True, token=token, timeout=scaled(120))
        except Exception as e:   # noqa: BLE001 -- reported by the assertions
            self.result = (0, {}, {"exception": repr(e)})

    def join(self, what):
        self.thread.join(scaled(60))
        check(not self.thread.is_alive(), "%s: the blocking send was answered" % what)
        return self.result


def waiting(srv, token=None):
    st, _, doc = srv.rpc("once/admin/stats", {}, token=token)
    check(st == 200, "once/admin/stats answered")
    return doc["result"]["engine"].get("waiting", -1)


def test_waiting_holds_no_worker():
    gate = Gate("gate-workers")
    with Onced(args=["--exec", gate.agent(), "--workers", str(WORKERS), "--turn-workers",
                     str(BLOCKERS + 4), "--test-admin"], tmpdir=TMP) as srv:
        sends = [Blocking(srv, "t-wait-%02d-%s" % (n, new_id()[:8])) for n in range(BLOCKERS)]
        # Every blocking send is in and waiting: none answered (the gate is
        # closed, no turn can end), the engine holds BLOCKERS waits.
        wait_until(lambda: waiting(srv) == BLOCKERS, timeout=30,
                   what="%d blocking sends waiting" % BLOCKERS)
        check(all(s.result is None for s in sends), "no blocking send answered before the gate")

        # Other calls are served while they all wait.
        st, _, doc = srv.rpc("GetTask", {"id": sends[0].tid}, timeout=scaled(20))
        eq(st, 200, "GetTask while %d blocking sends wait" % BLOCKERS)
        eq(task_state(doc), "TASK_STATE_WORKING", "the waited-on task, read meanwhile")
        st, _, doc = srv.rpc("ListTasks", {"pageSize": 100}, timeout=scaled(20))
        eq(st, 200, "ListTasks while they wait")
        eq(len(doc["result"]["tasks"]), BLOCKERS, "ListTasks sees every waiting task")
        st, _, doc = srv.rpc("SendMessage", {"message": user_message("x", task_id="t-quick-" + new_id()[:8]),
                                             "configuration": {"returnImmediately": True}},
                             ext=True, timeout=scaled(20))
        eq(st, 200, "a returnImmediately send while they wait")
        check(all(s.result is None for s in sends), "the blocking sends still wait")
        eq(waiting(srv), BLOCKERS, "still waiting after the other calls")

        gate.open()
        for s in sends:
            st, _, doc = s.join("after the gate opened")
            eq(st, 200, "a blocking send's answer")
            eq(task_state(doc), "TASK_STATE_COMPLETED", "a blocking send answers the settled task")
        wait_until(lambda: waiting(srv) == 0, what="no wait left")


def test_one_principal_cannot_take_every_slot():
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        for who, tok in TOKENS.items():
            f.write("%s %s\n" % (tok, who))
    gate = Gate("gate-fair")
    with Onced(args=["--exec", gate.agent(), "--workers", str(WORKERS), "--turn-workers", "8",
                     "--max-waits-per-principal", "3", "--auth-tokens", tokens, "--test-admin"],
               tmpdir=TMP) as srv:
        alice = [Blocking(srv, "t-alice-%d-%s" % (n, new_id()[:8]), TOKENS["alice"]) for n in range(3)]
        wait_until(lambda: waiting(srv, TOKENS["alice"]) == 3, timeout=30,
                   what="Alice's three blocking sends waiting")

        # Her fourth is answered at once, with the task as it stands.
        extra = Blocking(srv, "t-alice-x-" + new_id()[:8], TOKENS["alice"])
        st, _, doc = extra.join("Alice's fourth, past her limit")
        eq(st, 200, "a blocking send past the principal's limit")
        check(task_state(doc) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
              "past the limit the answer is the task as it stands: %r" % (task_state(doc),))
        st, _, sd = srv.rpc("once/admin/stats", {}, token=TOKENS["alice"])
        eq(sd["result"]["engine"].get("waitsShed"), 1, "waitsShed counts it")

        # Bob is not shut out: his blocking send waits for its task.
        bob = Blocking(srv, "t-bob-" + new_id()[:8], TOKENS["bob"])
        wait_until(lambda: waiting(srv, TOKENS["bob"]) == 4, timeout=30,
                   what="Bob's blocking send waiting beside Alice's")
        check(bob.result is None, "Bob's send waits (the gate is closed)")

        gate.open()
        for s in alice + [bob]:
            st, _, doc = s.join("after the gate opened")
            eq(task_state(doc), "TASK_STATE_COMPLETED", "a waiting send answers the settled task")


def test_stop_answers_waiting_sends():
    gate = Gate("gate-stop")
    srv = Onced(args=["--exec", gate.agent(), "--workers", str(WORKERS), "--turn-workers", "8",
                      "--exec-grace", "100ms", "--test-admin"], tmpdir=TMP)
    try:
        sends = [Blocking(srv, "t-stop-%d-%s" % (n, new_id()[:8])) for n in range(6)]
        wait_until(lambda: waiting(srv) == 6, timeout=30, what="six blocking sends waiting")
        srv.signal(signal.SIGTERM)
        for s in sends:
            st, _, doc = s.join("onced stopping")
            eq(st, 200, "a waiting send answered at shutdown")
            check(task_state(doc) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
                  "at shutdown the answer is the task as it stands: %r" % (task_state(doc),))
        srv.proc.wait(scaled(30))
    finally:
        gate.open()
        srv.stop()


if __name__ == "__main__":
    sys.exit(run([test_waiting_holds_no_worker, test_one_principal_cannot_take_every_slot,
                  test_stop_answers_waiting_sends]))
