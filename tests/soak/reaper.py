"""The soak's reaper: ends what a soak run started, however the run ends.

    python3 reaper.py REGISTRY     (stdin: a pipe from the soak)

soak.py starts this in a session of its own, so a signal to the soak's
process group (Ctrl-C, a ctest timeout, kill -9 of the group) does not reach
it, and keeps the write end of its stdin open without writing. When the soak
exits, however it exits (even by SIGKILL), the pipe closes; the reaper then
reads REGISTRY, one line per thing to end, appended by the soak as it starts
things:

    pid PID STARTTIME   SIGKILL that process if it still runs and is the same
                        process (its start time in /proc/PID/stat matches)
    scan PATH           SIGKILL every process whose command line contains PATH
                        (a scratch folder of the run: agent turns orphaned by
                        a killed onced live in process groups of their own)
    pg DATADIR          immediate shutdown (SIGQUIT) of the PostgreSQL whose
                        postmaster.pid is in DATADIR
    rm PATH             remove that folder
    keep PATH           ... unless this line says to keep it

After a clean exit of the soak there is nothing left to do and every line is
a no-op. Every process is ended by its own id, never by name.
Python 3 standard library only.
"""
import os
import shutil
import signal
import sys
import time


def start_time(pid):
    """Field 22 of /proc/PID/stat (clock ticks since boot), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[19]


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def kill_pid(pid, started):
    if started is None or start_time(pid) == started:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def scan(path):
    me = (os.getpid(), os.getppid())
    needle = path.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in me:
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if needle in f.read():
                    os.kill(int(d), signal.SIGKILL)
        except OSError:
            pass


def stop_pg(datadir):
    try:
        with open(os.path.join(datadir, "postmaster.pid")) as f:
            pid = int(f.readline())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGQUIT)   # immediate shutdown
    except OSError:
        return
    end = time.monotonic() + 30
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.1)
    if alive(pid):
        kill_pid(pid, None)


def sweep(registry):
    try:
        with open(registry) as f:
            lines = [ln.split(None, 1) for ln in f.read().splitlines() if ln.strip()]
    except OSError:
        return
    keep = set(arg for kind, arg in lines if kind == "keep")
    for kind, arg in lines:
        if kind == "pid":
            pid, started = arg.split()
            kill_pid(int(pid), started)
    for kind, arg in lines:
        if kind == "scan":
            scan(arg)
    for kind, arg in lines:
        if kind == "pg":
            stop_pg(arg)
    for kind, arg in lines:
        if kind == "rm" and arg not in keep:
            shutil.rmtree(arg, True)


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    sweep(sys.argv[1])


if __name__ == "__main__":
    main()
