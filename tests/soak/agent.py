"""The soak's --exec agent (tests/soak/README.md): one side effect per task.

    onced --exec "python3 agent.py RUNS_LOG EFFECT_URL EFFECT_CALL"

Message text "work:A,B": work A seconds, then perform the task's one side
effect (step 0), checkpoint step 1, work B seconds, complete. A turn that
starts at step >= 1 (a takeover after the checkpoint landed) skips the
effect. The effect is a POST to the counting service through EFFECT_CALL
(build/tools/effect_call: Idempotency-Key <task>:step-<n>, computed by
once_effect_key; it retries lost answers with the same key). The body also
carries the key as this turn derives it from ONCE_EFFECT_KEY_PREFIX and
ONCE_STEP, so the service can check that both agree.

RUNS_LOG gets one line per event, start and done in the format of
tests/replicas/fleet.py (Agent.starts()/dones() parse them); <replica> is
name/incarnation, e.g. r2/3 for the third process of replica r2:
    start <task> <fence> <replica> <resumed 0|1> <unix time> <effect key>
    effect <task> <fence> <replica> <key> <unix time>
    done <task> <fence> <replica>
"done" is written only after onced took the completion line (a turn whose
onced died meets a broken pipe and writes no "done"). Each event is also a
line on stderr, which onced puts in its own log (an agent_stderr line with its task), so a
replica's log tells what its turns did. Python 3 standard library only.
"""
import json
import os
import subprocess
import sys
import time

LOG, EFFECT_URL, EFFECT_CALL = sys.argv[1], sys.argv[2], sys.argv[3]
EFFECT_PATIENCE_S = 120.0   # a turn is canceled long before; only bounds an orphan


def note(line):
    # one write(2) on an O_APPEND file: lines of concurrent turns never mix
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)
    try:
        sys.stderr.write("soak-agent: " + line + "\n")
        sys.stderr.flush()
    except OSError:
        pass


def emit(obj):
    try:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        os._exit(1)   # our onced is gone: nothing more of this turn counts


def work_plan(turn):
    for p in turn["message"].get("parts", []):
        if "text" in p and p["text"].startswith("work:"):
            a, _, b = p["text"][5:].partition(",")
            return float(a or 0), float(b or 0)
    return 0.0, 0.0


def main():
    turn = json.loads(sys.stdin.readline())
    tid, fence = os.environ["ONCE_TASK_ID"], os.environ["ONCE_FENCE"]
    step = int(os.environ["ONCE_STEP"])
    resumed = os.environ["ONCE_RESUMED"]
    # which replica process runs this turn: name/incarnation (soak.py counts
    # the processes of each replica name from 1)
    rep = "%s/%s" % (os.environ.get("ONCE_TEST_REPLICA", "?"),
                     os.environ.get("SOAK_INCARNATION", "1"))
    before, after = work_plan(turn)
    note("start %s %s %s %s %.3f %s%d" % (tid, fence, rep, resumed, time.time(),
                                         os.environ["ONCE_EFFECT_KEY_PREFIX"], step))
    if step == 0:
        time.sleep(before)
        key = os.environ["ONCE_EFFECT_KEY_PREFIX"] + str(step)
        body = json.dumps({"task": tid, "envKey": key, "fence": int(fence), "replica": rep,
                           "resumed": resumed == "1"})
        end = time.time() + EFFECT_PATIENCE_S
        while True:
            p = subprocess.run([EFFECT_CALL, tid, str(step), EFFECT_URL, body],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if p.returncode == 0:
                break
            if time.time() > end:
                note("effect-failed %s %s %s %s %.3f" % (tid, fence, rep, key, time.time()))
                sys.exit(1)
            time.sleep(0.2)
        note("effect %s %s %s %s %.3f" % (tid, fence, rep, key, time.time()))
        emit({"checkpoint": json.dumps({"effect": key}), "step": step + 1})
    time.sleep(after)
    emit({"status": "completed", "text": "done by %s fence %s" % (rep, fence)})
    note("done %s %s %s" % (tid, fence, rep))


if __name__ == "__main__":
    main()
