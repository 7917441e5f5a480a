"""The `--exec CMD` subprocess executor over the wire (docs/protocol.md), with
real onced processes and a real agent command:

- a command that prints nothing and exits 0 completes the task; exit 3, garbage
  output and an exit in the middle of a line each fail it with a reason that
  names the problem; a command hanging past --exec-deadline fails the task and
  is killed (it ignores SIGTERM, so only the SIGKILL after the grace ends it);
- the environment (ONCE_TASK_ID, ONCE_CONTEXT_ID, ONCE_FENCE, ONCE_STEP,
  ONCE_EFFECT_KEY_PREFIX, ONCE_RESUMED) and the stdin turn are right on a first
  turn and on a continuation (fence 2, the step the first turn checkpointed);
- CancelTask on a running turn: the command gets SIGTERM (its trap writes a
  marker), the task is TASK_STATE_CANCELED, the process is gone;
- after every failure onced keeps serving: the next send completes;
- the shipped examples (examples/echo_agent.sh, examples/review_agent.py) work
  through --exec, including an input-required continuation and its replay.

The agent command writes what it saw into files of a scratch folder: those
files are what really ran, not what the server says ran.
"""
import json
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ROOT, Onced, check, eq, error_info, new_id, result_task, run, scaled,
                     scratch_dir, status_text, task_state, user_message, wait_until)

TMP = scratch_dir("once-exec-")
STATE = os.path.join(TMP, "state")
os.mkdir(STATE)

AGENT = r'''
import json, os, signal, sys, time
D = sys.argv[1]
turn = json.loads(sys.stdin.readline())
tid = os.environ["ONCE_TASK_ID"]
text = ""
for p in turn["message"].get("parts", []):
    if "text" in p:
        text = p["text"]
        break

def emit(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()

def mark(name, content=""):
    tmp = os.path.join(D, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(content)
    os.rename(tmp, os.path.join(D, name))

if text == "empty":
    sys.exit(0)
elif text == "exit3":
    emit({"status": "working", "text": "about to exit 3"})
    sys.exit(3)
elif text == "garbage":
    sys.stdout.write("Traceback (most recent call last):\n")
    sys.stdout.flush()
    sys.exit(0)
elif text == "midline":
    sys.stdout.write('{"status":"compl')
    sys.stdout.flush()
    sys.exit(0)
elif text == "hang":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    mark("hang-" + tid, str(os.getpid()))
    time.sleep(60)
    emit({"status": "completed"})
elif text == "cancelme":
    def on_term(signum, frame):
        mark("term-" + tid, str(os.getpid()))
        time.sleep(0.3)   # a clean-up that takes a while (well within the grace)
        mark("cleaned-" + tid, str(os.getpid()))
        os._exit(143)
    signal.signal(signal.SIGTERM, on_term)
    mark("started-" + tid, str(os.getpid()))
    emit({"status": "working", "text": "waiting to be canceled"})
    time.sleep(60)
    emit({"artifact": {"artifactId": "late", "parts": [{"text": "should never show"}]}})
    emit({"status": "completed"})
elif text == "env":
    seen = dict((k, v) for k, v in os.environ.items() if k.startswith("ONCE_"))
    seen["stdin"] = {k: turn.get(k) for k in ("taskId", "contextId", "fence", "step",
                                               "resumed", "checkpoint")}
    mark("env-%s-%s" % (tid, os.environ["ONCE_FENCE"]), json.dumps(seen))
    if turn["checkpoint"] is None:
        emit({"checkpoint": "cp-after-turn-1", "step": 5})
        emit({"status": "input-required", "text": "once more?"})
    else:
        emit({"status": "completed"})
else:
    emit({"artifact": {"artifactId": "ok", "parts": [{"text": "ok:" + text}]}, "lastChunk": True})
    emit({"status": "completed"})
'''

AGENT_PY = os.path.join(TMP, "agent.py")
with open(AGENT_PY, "w") as f:
    f.write(AGENT)
EXEC = "%s %s %s" % (shlex.quote(sys.executable), shlex.quote(AGENT_PY), shlex.quote(STATE))

srv = None        # --exec AGENT --exec-grace GRACE, no deadline
deadline = None   # --exec AGENT --exec-deadline DEADLINE_MS --exec-grace 500ms
# The deadline must leave the agent (a Python process) time to start and
# reach its hang, however busy the machine: it is what the tests wait for.
DEADLINE_MS = int(scaled(4000))
DEADLINE = "%dms" % DEADLINE_MS
# The grace a canceled command has for its 0.3 s clean-up: ample even on a
# busy machine (a command that finishes earlier is not kept waiting).
GRACE = "%dms" % scaled(5000)


def fresh_store():
    return "sqlite:" + os.path.join(TMP, "registry-%s.db" % new_id())


def send(s, text, task_id=None, ext=False, immediately=False, message_id=None, timeout=30):
    params = {"message": user_message(text, task_id=task_id, message_id=message_id)}
    if immediately:
        params["configuration"] = {"returnImmediately": True}
    st, hd, doc = s.rpc("SendMessage", params, ext=ext, timeout=timeout)
    eq(st, 200, "SendMessage %r: HTTP status" % text)
    return doc


def get_task(s, tid):
    st, _, doc = s.rpc("GetTask", {"id": tid})
    eq(st, 200, "GetTask HTTP status")
    return result_task(doc, "GetTask")


def state_file(name):
    return os.path.join(STATE, name)


def read_file(name):
    with open(state_file(name)) as f:
        return f.read()


def pid_alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def still_serving(s, what):
    """onced keeps serving after a failed turn: a plain send completes."""
    doc = send(s, "after " + what)
    t = result_task(doc, "send after " + what)
    eq(t["status"]["state"], "TASK_STATE_COMPLETED", "a send after %s completes" % what)
    eq(t["artifacts"][0]["parts"][0]["text"], "ok:after " + what, "and its artifact is right")


def expect_failed(doc, what, *needles):
    t = result_task(doc, what)
    eq(t["status"]["state"], "TASK_STATE_FAILED", what + ": state")
    reason = status_text(t) or ""
    for n in needles:
        check(n in reason, "%s: the reason %r names %r" % (what, reason, n))
    return t


def test_silent_exit_0_completes():
    doc = send(srv, "empty")
    t = result_task(doc, "empty")
    eq(t["status"]["state"], "TASK_STATE_COMPLETED", "printing nothing and exiting 0 completes")
    eq(t.get("artifacts", []), [], "and publishes no artifact")


def test_exit_3_fails():
    t = expect_failed(send(srv, "exit3"), "exit 3", "exited with status 3")
    eq(get_task(srv, t["id"])["status"]["state"], "TASK_STATE_FAILED", "stored as failed")
    still_serving(srv, "exit 3")


def test_garbage_fails():
    expect_failed(send(srv, "garbage"), "garbage output", "malformed output line 1", "Traceback")
    still_serving(srv, "garbage")


def test_exit_mid_line_fails():
    expect_failed(send(srv, "midline"), "exit mid-line", "middle of line 1", '{"status":"compl')
    still_serving(srv, "midline")


def failed_at(task):
    """status.timestamp (RFC 3339, UTC) as seconds since the epoch."""
    from datetime import datetime, timezone
    ts = task["status"]["timestamp"]
    check(ts.endswith("Z"), "a UTC timestamp: %r" % ts)
    return datetime.fromisoformat(ts[:-1]).replace(tzinfo=timezone.utc).timestamp()


def deadline_kill(s, what, grace_s=None):
    t0 = time.time()
    doc = send(s, "hang")
    took = time.time() - t0
    t = expect_failed(doc, what + ": hang past the deadline", "deadline exceeded",
                      "%d ms" % DEADLINE_MS)
    check(took >= 0.9 * DEADLINE_MS / 1000,
          what + ": the blocking send waited for the deadline (%.2fs)" % took)
    check(took < DEADLINE_MS / 1000 + scaled(15),
          what + ": the deadline was enforced (%.2fs)" % took)
    # When onced failed the task (then sent SIGTERM): its own timestamp, not
    # when the answer reached us, which a busy machine may delay.
    t_failed = failed_at(t)
    pid = int(wait_until(lambda: os.path.exists(state_file("hang-" + t["id"])) and
                         read_file("hang-" + t["id"]), timeout=5, what="the hang pid file"))
    # It ignores SIGTERM: the SIGKILL after the grace period ends it.
    wait_until(lambda: not pid_alive(pid), timeout=10, step=0.02,
               what="the hung command (pid %d) killed" % pid)
    if grace_s is not None:
        waited = time.time() - t_failed
        check(waited >= grace_s * 0.5, what + ": SIGKILL only after the grace period "
              "(%.2fs after the failure, grace %.1fs)" % (waited, grace_s))
    # The command is gone: nothing it could still do can change the task.
    eq(get_task(s, t["id"])["status"]["state"], "TASK_STATE_FAILED", what + ": still failed")
    still_serving(s, "a deadline")


def test_deadline_kills_hung_command():
    deadline_kill(deadline, "shell-led command")


def test_deadline_grace_then_sigkill():
    """`exec python3 agent.py`: the agent leads its group and ignores SIGTERM,
    so only the SIGKILL sent after --exec-grace can end it."""
    with Onced(args=["--exec", "exec " + EXEC, "--exec-deadline", DEADLINE, "--exec-grace", "1s"],
               tmpdir=TMP, store=fresh_store()) as s:
        deadline_kill(s, "exec-led command", grace_s=1.0)


def test_env_and_stdin():
    tid = "t-env-" + new_id()
    doc = send(srv, "env", task_id=tid, ext=True)
    t1 = result_task(doc, "env turn 1")
    eq(t1["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "turn 1 parks in input-required")
    eq(status_text(t1), "once more?", "with the command's question")
    seen = json.loads(read_file("env-%s-1" % tid))
    eq(seen.get("ONCE_TASK_ID"), tid, "ONCE_TASK_ID")
    eq(seen.get("ONCE_CONTEXT_ID"), t1["contextId"], "ONCE_CONTEXT_ID")
    eq(seen.get("ONCE_FENCE"), "1", "ONCE_FENCE on the first turn")
    eq(seen.get("ONCE_STEP"), "0", "ONCE_STEP on a new task")
    eq(seen.get("ONCE_EFFECT_KEY_PREFIX"), tid + ":step-", "ONCE_EFFECT_KEY_PREFIX")
    eq(seen.get("ONCE_RESUMED"), "0", "ONCE_RESUMED on a fresh turn")
    eq(seen["stdin"], {"taskId": tid, "contextId": t1["contextId"], "fence": 1, "step": 0,
                       "resumed": False, "checkpoint": None}, "the stdin turn agrees")

    doc = send(srv, "env", task_id=tid, ext=True)
    t2 = result_task(doc, "env turn 2")
    eq(t2["status"]["state"], "TASK_STATE_COMPLETED", "the continuation completes")
    seen = json.loads(read_file("env-%s-2" % tid))
    eq(seen.get("ONCE_TASK_ID"), tid, "ONCE_TASK_ID (turn 2)")
    eq(seen.get("ONCE_FENCE"), "2", "ONCE_FENCE moved with the continuation")
    eq(seen.get("ONCE_STEP"), "5", "ONCE_STEP is the step turn 1 checkpointed")
    eq(seen.get("ONCE_EFFECT_KEY_PREFIX"), tid + ":step-", "ONCE_EFFECT_KEY_PREFIX (turn 2)")
    eq(seen.get("ONCE_RESUMED"), "0", "a continuation is not a resumed turn")
    eq(seen["stdin"], {"taskId": tid, "contextId": t1["contextId"], "fence": 2, "step": 5,
                       "resumed": False, "checkpoint": "cp-after-turn-1"},
       "the stdin turn carries the checkpoint")
    check(not os.path.exists(state_file("env-%s-3" % tid)), "no third turn ran")


def cancel_running(s, what):
    doc = send(s, "cancelme", immediately=True)
    tid = result_task(doc, "cancelme")["id"]
    pid = int(wait_until(lambda: os.path.exists(state_file("started-" + tid)) and
                         read_file("started-" + tid), timeout=10, what="the command to start"))
    wait_until(lambda: get_task(s, tid)["status"]["state"] == "TASK_STATE_WORKING",
               timeout=5, what="the task to be working")
    st, _, doc = s.rpc("CancelTask", {"id": tid})
    eq(st, 200, "CancelTask HTTP status")
    eq(task_state(doc), "TASK_STATE_CANCELED", what + ": CancelTask answers the canceled task")
    wait_until(lambda: not pid_alive(pid), timeout=10, what="the canceled command to exit")
    check(os.path.exists(state_file("term-" + tid)),
          what + ": the command got SIGTERM (its trap ran) before it was killed")
    eq(int(read_file("term-" + tid)), pid, what + ": the command that ran the turn got SIGTERM")
    check(os.path.exists(state_file("cleaned-" + tid)),
          what + ": the trap had its grace period (%s) to finish a 0.3s clean-up; the command "
          "was SIGKILLed first" % GRACE)
    # The command is gone: whatever it would have printed later cannot come.
    t = get_task(s, tid)
    eq(t["status"]["state"], "TASK_STATE_CANCELED", what + ": the task stays canceled")
    eq(t.get("artifacts", []), [], what + ": nothing the command would print later shows")
    st, _, doc = s.rpc("CancelTask", {"id": tid})
    eq(task_state(doc), "TASK_STATE_CANCELED", "a second cancel is idempotent (docs/wire.md)")
    still_serving(s, "a cancel")


def test_cancel_sends_sigterm_exec_leader():
    """`exec python3 agent.py`: the agent itself leads its process group."""
    with Onced(args=["--exec", "exec " + EXEC, "--exec-grace", GRACE], tmpdir=TMP,
               store=fresh_store()) as s:
        cancel_running(s, "exec-led command")


def test_cancel_sends_sigterm():
    """`python3 agent.py` as docs/protocol.md writes it: /bin/sh (dash forks)
    leads the group and the agent is its child. SIGTERM kills the shell at
    once; the agent must still get its grace period."""
    cancel_running(srv, "shell-led command")


def test_echo_agent_example():
    script = os.path.join(ROOT, "examples", "echo_agent.sh")
    check(os.path.exists(script), "examples/echo_agent.sh exists")
    with Onced(args=["--exec", "sh " + shlex.quote(script)], tmpdir=TMP, store=fresh_store()) as s:
        doc = send(s, 'say "hi" twice')
        t = result_task(doc, "echo_agent")
        eq(t["status"]["state"], "TASK_STATE_COMPLETED", "echo_agent completes")
        eq(t["artifacts"][0]["artifactId"], "echo", "its artifact")
        eq(t["artifacts"][0]["parts"][0]["text"], 'say "hi" twice', "echoes the text, quotes too")


def test_review_agent_continuation():
    script = os.path.join(ROOT, "examples", "review_agent.py")
    check(os.path.exists(script), "examples/review_agent.py exists")
    cmd = "%s %s" % (shlex.quote(sys.executable), shlex.quote(script))
    with Onced(args=["--exec", cmd], tmpdir=TMP, store=fresh_store()) as s:
        tid = "t-review-" + new_id()
        doc = send(s, "ACME supply agreement", task_id=tid, ext=True)
        t = result_task(doc, "review turn 1")
        eq(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the reviewer asks")
        eq(status_text(t), "Which jurisdiction governs this contract?", "the question")
        cont = user_message("Swiss", task_id=tid)
        st, hd, doc = s.rpc("SendMessage", {"message": cont}, ext=True)
        t = result_task(doc, "review turn 2")
        eq(t["status"]["state"], "TASK_STATE_COMPLETED", "the continuation completes")
        eq(status_text(t), "review filed as %s:step-0" % tid,
           "the side effect used the persisted step's key")
        arts = [a for a in t.get("artifacts", []) if a.get("artifactId") == "review"]
        eq(len(arts), 1, "one review artifact (the two chunks appended)")
        text = "".join(p.get("text", "") for p in arts[0]["parts"])
        check("Contract: ACME supply agreement" in text, "turn 2 read turn 1's checkpoint: %r" % text)
        check("Governing law: Swiss" in text, "the answer reached the agent: %r" % text)
        eq([m["role"] for m in t["history"] if m["role"] == "ROLE_USER"], ["ROLE_USER"] * 2,
           "both user messages in the history")
        # A retried continuation replays, nothing runs again.
        st, hd, again = s.rpc("SendMessage", {"message": cont}, ext=True)
        eq(hd.get("idempotent-replayed"), "true", "the retried continuation replays")
        eq(result_task(again, "replay"), t, "and answers the same task")
        # A new message to the completed task is refused, naming the state.
        st, _, doc = s.rpc("SendMessage", {"message": user_message("more", task_id=tid)}, ext=True)
        c, r, m = error_info(doc)
        eq((c, r, m.get("state")), (-32004, "TASK_TERMINAL", "TASK_STATE_COMPLETED"),
           "a new message to the completed task")


def main():
    global srv, deadline
    with Onced(args=["--exec", EXEC, "--exec-grace", GRACE], tmpdir=TMP,
               store=fresh_store()) as s, \
            Onced(args=["--exec", EXEC, "--exec-deadline", DEADLINE, "--exec-grace", "500ms"],
                  tmpdir=TMP, store=fresh_store()) as d:
        srv, deadline = s, d
        run([test_silent_exit_0_completes, test_exit_3_fails, test_garbage_fails,
             test_exit_mid_line_fails, test_deadline_kills_hung_command,
             test_deadline_grace_then_sigkill, test_env_and_stdin,
             test_cancel_sends_sigterm_exec_leader, test_cancel_sends_sigterm,
             test_echo_agent_example, test_review_agent_continuation])


if __name__ == "__main__":
    main()
