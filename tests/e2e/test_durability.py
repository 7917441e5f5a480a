"""test_durability: the SQLite store onced opens commits at the durability the
README promises, and says so.

- With a plain `--store sqlite:PATH`, the store's writer connection reads back
  PRAGMA synchronous = FULL (admin stats `storeSynchronous`, which onced reads
  from the store itself, never from its own flags); `?synchronous=normal`
  and `?synchronous=off` in the URL are what the store then reports.
- A bad or unknown store URL setting makes onced exit non-zero at start with
  a message naming it, before any file is created.
- Every acknowledged blocking task cost at least one fdatasync/fsync at the
  default, counted by strace over onced's whole life; the same count at
  ?synchronous=normal stays below the number of tasks, which shows the count
  tells the two apart. Skipped (said so) where strace is missing or may not
  trace.

The power-cut side (every acknowledged write survives a cut at any point at
FULL, and NORMAL loses some) is tests/sqlite/powerloss.c.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ONCED, Onced, admin_stats, check, eq, free_port, http_get,  # noqa: E402
                     result_task, rpc, run, scaled, scratch_dir, user_message)

TASKS = 20   # blocking tasks in the fsync count


def sqlite_url(tail=""):
    return "sqlite:" + os.path.join(scratch_dir("once-durable-"), "registry.db") + tail


def store_synchronous(tail):
    with Onced(args=["--test-admin"], store=sqlite_url(tail)) as s:
        return admin_stats(s).get("storeSynchronous")


def test_default_is_full():
    eq(store_synchronous(""), "full", "the store onced opens by default commits at")


def test_url_setting_is_what_the_store_reports():
    eq(store_synchronous("?synchronous=normal"), "normal", "?synchronous=normal")
    eq(store_synchronous("?synchronous=off&busy_timeout=100"), "off", "?synchronous=off")
    eq(store_synchronous("?synchronous=FULL"), "full", "?synchronous=FULL")


def test_bad_settings_stop_onced():
    cases = [
        ("?synchronous=extra", "synchronous=extra: must be full, normal or off"),
        ("?synchronous=normal&synchronous=full", "given twice"),
        ("?fsync=1", "unknown parameter 'fsync'"),
        ("?busy_timeout=soon", "busy_timeout=soon"),
        ("?vfs=no-such-vfs", "not a registered SQLite VFS"),
    ]
    for tail, says in cases:
        url = sqlite_url(tail)
        path = url[len("sqlite:"):].split("?")[0]
        p = subprocess.run([ONCED, "--listen", "127.0.0.1:%d" % free_port(), "--store", url],
                           capture_output=True, timeout=scaled(30))
        err = p.stderr.decode(errors="replace")
        check(p.returncode != 0, "onced --store %s exits non-zero (got %d)" % (tail, p.returncode))
        check(says in err and "--store" in err,
              "onced --store %s says why (%r in %r)" % (tail, says, err))
        check(not os.path.exists(path), "onced --store %s created no file" % tail)


class TracedOnced:
    """onced under `strace -f`, recording its fsync and fdatasync calls."""

    def __init__(self, store):
        self.dir = scratch_dir("once-strace-")
        self.out = os.path.join(self.dir, "syncs.txt")
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "onced.log"), "ab")
        self.proc = subprocess.Popen(
            ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", self.out,
             ONCED, "--listen", "127.0.0.1:%d" % self.port, "--store", store,
             "--drain-delay", "0"],
            stdout=self.log, stderr=self.log)
        end = time.time() + scaled(30)
        while time.time() < end:
            check(self.proc.poll() is None, "strace onced exited early: %s" % self.logtext())
            try:
                if http_get(self.port, "/.well-known/agent-card.json", timeout=1)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        check(False, "onced under strace did not become ready: %s" % self.logtext())

    def logtext(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode(errors="replace")[-2000:]

    def stop(self):
        """SIGTERM to onced itself (strace passes it on, then exits with
        it); the number of sync calls it made over its life."""
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        for k in kids:
            os.kill(k, signal.SIGTERM)
        try:
            self.proc.wait(scaled(30))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        with open(self.out) as f:
            # "<pid> fdatasync(7) = 0", or "... fdatasync(7 <unfinished ...>" when
            # another thread's line came between: one line per call either way.
            return sum(1 for line in f if re.search(r"\b(fsync|fdatasync)\(", line))


def syncs_for_blocking_tasks(tail):
    """(tasks acknowledged completed, sync calls over onced's life)."""
    srv = TracedOnced(sqlite_url(tail))
    done = 0
    try:
        for _ in range(TASKS):
            st, _, doc = rpc(srv.port, "SendMessage", {"message": user_message("hello")})
            check(st == 200, "blocking send answered 200 (got %d: %r)" % (st, doc))
            t = result_task(doc, "blocking send")
            eq(t["status"]["state"], "TASK_STATE_COMPLETED", "blocking answer")
            done += 1
    finally:
        syncs = srv.stop()
    return done, syncs


def strace_usable():
    """Why strace cannot count here, or None when it can."""
    if shutil.which("strace") is None:
        return "strace is not installed"
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=none", "true"], capture_output=True,
                       timeout=scaled(30))
    if p.returncode != 0:
        return "strace cannot trace here: %s" % p.stderr.decode(errors="replace").strip()[:200]
    return None


def test_a_sync_per_acknowledged_task():
    why = strace_usable()
    if why:
        print("skip test_a_sync_per_acknowledged_task:", why)
        return
    done, full = syncs_for_blocking_tasks("")
    print("synchronous=full: %d blocking tasks acknowledged, %d fsync+fdatasync calls by onced "
          "(start and stop included)" % (done, full))
    check(full >= done, "at least one sync per acknowledged task at the default (%d syncs for %d "
          "tasks)" % (full, done))
    done, normal = syncs_for_blocking_tasks("?synchronous=normal")
    print("synchronous=normal: %d blocking tasks acknowledged, %d fsync+fdatasync calls" %
          (done, normal))
    check(normal < done, "at synchronous=normal the count falls below one per task (%d for %d): "
          "the count tells the levels apart" % (normal, done))


if __name__ == "__main__":
    run([test_default_is_full, test_url_setting_is_what_the_store_reports,
         test_bad_settings_stop_onced, test_a_sync_per_acknowledged_task])
