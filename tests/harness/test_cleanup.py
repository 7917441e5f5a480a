#!/usr/bin/env python3
"""test_cleanup.py -- every harness the project ships ends every process it
started, however it is stopped (issue 18; scripts/reaper.py).

    test_cleanup.py CASE [SHARED_STORE_URL]

One CASE per ctest (tests/harness/tests.cmake), each in its quick mode:

  demo-int        demo/run.sh --quick, Ctrl-C (SIGINT to its process group)
                  once the analysis worker is frozen (SIGSTOP, a session of
                  its own)
  demo-kill       the same, SIGKILL of the harness alone
  amplify-term    demo/amplify.sh --quick, SIGTERM of the harness alone (as
                  timeout(1) sends it) once root tasks complete
  helpers-kill    a program using tests/e2e/harness.py (onced with an --exec
                  agent held at a gate), SIGKILL once the agent runs
  bench-run-kill  bench/run.sh, SIGKILL once wrk is loading a server
  bench-backends-term  bench/backends.sh (memory row), SIGTERM once wrk runs
  interop-kill    tests/interop/client_vs_onced.mjs (node), SIGKILL once its
                  onced serves
  soak-term       tests/soak/soak.py on SHARED_STORE_URL, SIGTERM once its
                  three replicas serve

The harness runs in a session of its own with a marker in its environment,
ONCE_LEAKCHECK_<random>=1, that every process it starts inherits (onced
hands it to its agents, they to theirs). Before the interruption the test
waits for a positive sign that the run is mid-way (a line of output and the
processes it names, found by the marker); after it, that the harness exited
and then that no process with the marker is left (and, for the demo and
amplify, that their scratch folders are gone). Nothing waits for a
duration: every wait is for a condition, bounded by scaled().
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from harness import ROOT, check, reaper, run, scaled, wait_until  # noqa: E402

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return "?"


def proc_state(pid):
    """The one-letter state of /proc/PID/stat ("T": stopped), or "?"."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


class Harness:
    """One harness run, in a session of its own, output in a file, every
    process it starts marked by self.var in its environment."""

    def __init__(self, argv, env=None):
        self.var = "ONCE_LEAKCHECK_" + uuid.uuid4().hex
        self.scratch = tempfile.mkdtemp(prefix="once-cleanup-")
        self.outpath = os.path.join(self.scratch, "output")
        e = dict(os.environ, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
        e.update(env or {})
        e[self.var] = "1"
        self.final = None
        # stdin: a pipe held open until the end (a harness may read it)
        with open(self.outpath, "wb") as out:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out,
                                         stderr=subprocess.STDOUT, env=e, cwd=ROOT,
                                         start_new_session=True)

    def output(self):
        if self.final is not None:
            return self.final
        with open(self.outpath, errors="replace") as f:
            return f.read()

    def marked(self):
        """{pid: comm} of the live processes of this run, the harness included."""
        return {pid: comm(pid) for pid in reaper.marked(self.var)}

    def mid_run(self, line, names, timeout=120, also=None):
        """Wait until the output holds line (None: any) and the run's
        processes include every comm in names (a list; repeats count) and
        also({pid: comm}) holds, if given; fail if the harness ends first."""
        def there():
            if self.proc.poll() is not None:
                check(False, "the harness ended (status %s) before it was mid-run:\n%s" % (
                    self.proc.returncode, self.output()[-3000:]))
            if line is not None and line not in self.output():
                return False
            marked = self.marked()
            have = list(marked.values())
            return (all(have.count(n) >= names.count(n) for n in set(names)) and
                    (also is None or also(marked)))
        wait_until(there, timeout=timeout, step=0.05,
                   what="the run to reach %r with %s running" % (line, names))
        return self.marked()

    def interrupt(self, how):
        if how == "int":      # Ctrl-C: SIGINT to the whole (foreground) process group
            os.killpg(self.proc.pid, signal.SIGINT)
        elif how == "term":   # timeout(1), a service manager: SIGTERM to the harness alone
            self.proc.send_signal(signal.SIGTERM)
        else:                 # SIGKILL of the harness alone: no trap sees it
            self.proc.kill()

    def check_clean(self, before):
        """The harness exits, then nothing with its marker is left."""
        try:
            self.proc.wait(scaled(60))
        except subprocess.TimeoutExpired:
            check(False, "the harness did not exit after the interruption:\n%s" %
                  self.output()[-3000:])
        left = {}

        def none_left():
            left.clear()
            left.update({pid: cmdline(pid) for pid in reaper.marked(self.var)})
            return not left
        try:
            wait_until(none_left, timeout=30, step=0.05, what="the run's processes to end")
        except AssertionError:
            for pid, cmd in left.items():
                print("left running: pid %d: %s" % (pid, cmd), file=sys.stderr)
            # end them here, so that a failed run does not leave them either
            reaper.reap(self.var)
            raise
        check(len(before) > 1, "the run had started processes before it was stopped: %s" %
              sorted(before.values()))
        self.final = self.output()
        self.proc.stdin.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        print("  %d processes (%s) ended with the harness" % (
            len(before), ", ".join(sorted(set(before.values())))))


def scratch_of(r, pattern):
    """The scratch folder the harness's output names (pattern: a regex
    with one group)."""
    m = re.search(pattern, r.output())
    check(m is not None, "the output names the scratch folder (%s)" % pattern)
    return m.group(1)


def folder_gone(path):
    wait_until(lambda: not os.path.exists(path), timeout=30,
               what="the scratch folder %s to be removed" % path)


def frozen_analysis(marked):
    """The demo's background analysis is among the run's processes, stopped
    (it stops itself as it starts, and stays so until the story resumes it
    in step 3): a window the whole of step 2 long, where the story's line
    about the pause is printed only a moment before the resume."""
    return any("analysis.py" in cmdline(p) and proc_state(p) == "T" for p in marked)


def story(how):
    r = Harness(["bash", os.path.join(ROOT, "demo", "run.sh"), BUILD, "--quick"])
    before = r.mid_run(None, ["onced", "onced", "proxy", "python3"], also=frozen_analysis)
    check(any("analysis.py" in cmdline(p) for p in before), "the frozen analysis is running")
    scratch = os.path.dirname(scratch_of(r, r"registry (/\S+/registry\.db)"))
    r.interrupt(how)
    r.check_clean(before)
    folder_gone(scratch)


def test_demo_int():
    story("int")


def test_demo_kill():
    story("kill")


def test_amplify_term():
    r = Harness(["bash", os.path.join(ROOT, "demo", "amplify.sh"), BUILD, "--quick"])
    before = r.mid_run("root tasks done", ["onced"] * 4 + ["proxy"] * 5)
    scratch = scratch_of(r, r"logs in (/\S+)")
    r.interrupt("term")
    r.check_clean(before)
    folder_gone(scratch)
    check("interrupted" in r.output(), "amplify says it was interrupted")


# A program that uses the test harness as a test does: onced with an --exec
# agent held at a gate (a process group of its own, started by onced).
HELPER = r"""
import os, sys
sys.path.insert(0, %(e2e)r)
import harness as h
agent = h.GatedAgent("step started; gate hold")
srv = h.Onced(agent.args)
tid = h.new_id()
srv.rpc("SendMessage", {"message": h.user_message("hold", task_id=tid),
                        "configuration": {"returnImmediately": True}}, ext=True)
h.wait_until(lambda: h.task_state(srv.rpc("GetTask", {"id": tid})[2]) == "TASK_STATE_WORKING",
             what="the agent to run")
print("agent running", flush=True)
sys.stdin.read()
"""


def test_helpers_kill():
    r = Harness([sys.executable, "-c", HELPER % {"e2e": os.path.join(ROOT, "tests", "e2e")}],
                env={"ONCED": os.path.join(BUILD, "onced")})
    before = r.mid_run("agent running", ["onced", "sh"])
    r.interrupt("kill")
    r.check_clean(before)


def test_interop_kill():
    r = Harness([os.environ.get("NODE", "node"),
                 os.path.join(ROOT, "tests", "interop", "client_vs_onced.mjs")],
                env={"ONCED": os.path.join(BUILD, "onced")})
    before = r.mid_run("", ["onced"])
    r.interrupt("kill")
    r.check_clean(before)


def bench_build():
    """A build folder for the bench scripts: this build's onced, and room
    for what they write."""
    d = tempfile.mkdtemp(prefix="once-cleanup-bench-")
    os.symlink(os.path.join(BUILD, "onced"), os.path.join(d, "onced"))
    return d


def test_bench_run_kill():
    b = bench_build()
    r = Harness(["bash", os.path.join(ROOT, "bench", "run.sh")],
                env={"BENCH_BUILD": b, "BENCH_SKIP_BUILD": "1", "BENCH_WARMUP": "600",
                     "BENCH_DURATION": "600"})
    before = r.mid_run("warm-up", ["wrk"], timeout=180)
    r.interrupt("kill")
    r.check_clean(before)
    shutil.rmtree(b, ignore_errors=True)


def test_bench_backends_term():
    b = bench_build()
    r = Harness(["bash", os.path.join(ROOT, "bench", "backends.sh")],
                env={"BENCH_BUILD": b, "BENCH_BACKENDS": "memory", "BENCH_WARMUP": "600",
                     "BENCH_DURATION": "600"})
    before = r.mid_run("warm-up", ["onced", "wrk"], timeout=180)
    r.interrupt("term")
    r.check_clean(before)
    shutil.rmtree(b, ignore_errors=True)


def test_soak_term():
    check(len(sys.argv) > 2, "soak-term needs the shared store URL")
    r = Harness([sys.executable, os.path.join(ROOT, "tests", "soak", "soak.py"), "--seconds",
                 "600", "--clients", "1", sys.argv[2]],
                env={"ONCED": os.path.join(BUILD, "onced"),
                     "ONCE_TOOLS": os.path.join(BUILD, "tools"), "ONCE_BUILD": BUILD})
    before = r.mid_run("== soak", ["onced"] * 3 + ["proxy"], timeout=120)
    r.interrupt("term")
    r.check_clean(before)


CASES = {"demo-int": test_demo_int, "demo-kill": test_demo_kill,
         "amplify-term": test_amplify_term, "helpers-kill": test_helpers_kill,
         "interop-kill": test_interop_kill,
         "bench-run-kill": test_bench_run_kill, "bench-backends-term": test_bench_backends_term,
         "soak-term": test_soak_term}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        print("usage: %s {%s} [SHARED_STORE_URL]" % (sys.argv[0], "|".join(CASES)),
              file=sys.stderr)
        sys.exit(2)
    run([CASES[sys.argv[1]]])
