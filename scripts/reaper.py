#!/usr/bin/env python3
"""reaper.py -- ends every process a harness started, however the harness ends.

A harness (demo/story.py, demo/amplify.py, the test helpers in
tests/e2e/harness.py, bench/run.sh, bench/backends.sh, the soak) calls
guard() before it starts anything:

    Python:  sys.path.insert(0, "<root>/scripts"); import reaper; reaper.guard()
    shell:   eval "$(python3 "$root/scripts/reaper.py" guard $$)"

guard() puts a marker in the harness's environment, ONCE_REAP_<token>=1, and
starts a watcher for the harness's process id. Everything the harness starts
inherits the marker, and so does everything those start: onced hands its
environment to its --exec agents, an agent to its background workers, also
when they leave the harness's process group or session (setsid), which is
why a signal to a process group is not enough.

The watcher detaches (double fork, a session of its own, SIGINT and SIGHUP
ignored), so neither Ctrl-C, nor a signal to the harness's process group,
nor a test runner that kills the harness's process tree ends it. It waits on
a pidfd for the harness to exit, whatever the cause (a normal end, SIGINT,
SIGTERM, a timeout, SIGKILL), then SIGKILLs every process whose environment
holds the marker, scanning /proc again until a scan finds none (a process
forked meanwhile is found by the next scan). After a clean end the harness
has stopped its processes itself and the scan finds nothing.

A Python harness that has no SIGTERM handler of its own gets one that raises
SystemExit, so its finally: blocks stop its processes gently first. It may
also name scratch folders with remove_after(): the watcher removes them
after the sweep, so a SIGKILL leaves no folder behind either (amplify keeps
its stores in /dev/shm, memory).

Processes that rewrite their environment block (PostgreSQL and Redis
servers retitle themselves over it) may hide the marker; the harnesses that
start those stop them by data directory or pid as before (the soak's own
tests/soak/reaper.py, scripts/test-services.sh). Python 3 standard library
only; Linux (pidfd_open, /proc).
"""
import os
import select
import shutil
import signal
import sys
import tempfile

PREFIX = "ONCE_REAP_"
_guarded = None   # this process's token, once guard() ran


def _holds(pid, needle):
    """Whether the environment of pid holds the entry needle (bytes)."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return needle in f.read().split(b"\0")
    except OSError:   # gone meanwhile, or not ours to read
        return False


def marked(var):
    """Pids of the live processes (zombies have no environment left) whose
    environment holds var=1, this one excepted."""
    needle, me = var.encode() + b"=1", os.getpid()
    return [int(d) for d in os.listdir("/proc")
            if d.isdigit() and int(d) != me and _holds(int(d), needle)]


def reap(var, rounds=200):
    """SIGKILL every process marked with var until a scan finds none. Each
    kill goes through a pidfd opened before the marker is checked again, so
    a pid reused meanwhile is never hit."""
    needle = var.encode() + b"=1"
    for _ in range(rounds):
        fds = []
        for pid in marked(var):
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            if _holds(pid, needle):
                try:
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                except OSError:
                    pass
            fds.append(fd)
        if not fds:
            return
        # Wait for the kills to land (a pidfd turns readable when its
        # process exits), so the next scan does not count them again.
        select.select(fds, [], [], 5.0)
        for fd in fds:
            os.close(fd)


def _folders(token):
    """The file listing the folders to remove after the sweep."""
    return os.path.join(tempfile.gettempdir(), "once-reap-%s.folders" % token)


def _note(what, path):
    with open(_folders(_guarded[1]), "a") as f:
        f.write("%s %s\n" % (what, os.path.abspath(path)))


def remove_after(path):
    """Have the watcher of this process (guard() first) remove path, a
    folder, once the process has exited and its processes are ended. The
    harness may remove it itself before; that is fine."""
    _note("rm", path)


def keep(path):
    """Undo remove_after(path): the harness keeps it (logs of a failed run)."""
    _note("keep", path)


def _remove_folders(token):
    try:
        with open(_folders(token)) as f:
            lines = [ln.split(" ", 1) for ln in f.read().splitlines() if " " in ln]
    except OSError:
        return
    kept = {path for what, path in lines if what == "keep"}
    for what, path in lines:
        if what == "rm" and path not in kept:
            shutil.rmtree(path, ignore_errors=True)
    os.unlink(_folders(token))


def watch(pid, token):
    """Detach, wait for pid to exit, reap its marker. Returns in the caller
    (the detached part never returns)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:   # already gone: reap at once
        pidfd = None
    child = os.fork()
    if child > 0:
        if pidfd is not None:
            os.close(pidfd)
        os.waitpid(child, 0)   # the middle process exits at once
        return
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    # Hold none of the harness's files open: a pipe a test runner reads to
    # its end must close when the harness exits.
    top = os.sysconf("SC_OPEN_MAX")
    if pidfd is None:
        os.closerange(3, top)
    else:
        os.closerange(3, pidfd)
        os.closerange(pidfd + 1, top)
    os.chdir("/")
    if pidfd is not None:
        select.select([pidfd], [], [])
    reap(PREFIX + token)
    _remove_folders(token)
    os._exit(0)


def _on_term(sig, _frame):
    sys.exit(128 + sig)


def guard():
    """Mark this process's environment and watch it (once per process).
    Returns the marker's variable name."""
    global _guarded
    if _guarded is None or _guarded[0] != os.getpid():
        token = "%d_%s" % (os.getpid(), os.urandom(6).hex())
        watch(os.getpid(), token)
        os.environ[PREFIX + token] = "1"
        _guarded = (os.getpid(), token)
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_term)
    return PREFIX + _guarded[1]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "guard" and sys.argv[2].isdigit():
        # For a shell harness: watch it, and print the export it evals.
        token = "%s_%s" % (sys.argv[2], os.urandom(6).hex())
        sys.stdout.flush()
        watch(int(sys.argv[2]), token)
        print("export %s%s=1" % (PREFIX, token))
        return 0
    print("usage: eval \"$(python3 %s guard $$)\"" % sys.argv[0], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
