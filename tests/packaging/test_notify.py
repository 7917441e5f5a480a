"""onced under systemd's Type=notify (packaging/onced.service): with
NOTIFY_SOCKET set it sends READY=1 (and a STATUS naming its URL) once its
port serves, so the first request made on READY is answered without any
polling; on SIGTERM it sends STOPPING=1 before it drains, and exits 0.
Built without libsystemd (-DONCE_SYSTEMD=OFF: "systemd" is not in
ONCE_BUILT) onced serves and drains the same and sends nothing.

Python 3 standard library only (the socket plays systemd's part).
"""
import os
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import (BUILT, ONCED, check, eq, free_port, http_get, run, scaled, scratch_dir,  # noqa: E402
                     wait_until)

TMP = scratch_dir("once-notify-")
SYSTEMD = "systemd" in BUILT


def receive(sock, what):
    sock.settimeout(scaled(15))
    try:
        return sock.recv(4096).decode()
    except socket.timeout:
        check(False, "no notification (%s) within the bound" % what)


def serves(port):
    try:
        return http_get(port, "/healthz", timeout=1)[0] == 200
    except OSError:
        return False


def test_ready_then_stopping():
    path = os.path.join(TMP, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    port = free_port()
    env = dict(os.environ, NOTIFY_SOCKET=path)
    log = open(os.path.join(TMP, "onced.log"), "w+")
    p = subprocess.Popen([ONCED, "--listen", "127.0.0.1:%d" % port, "--store", "memory:", "--drain-delay", "0"],
                         stdout=log, stderr=log, env=env)
    try:
        if SYSTEMD:
            msg = receive(sock, "READY=1")
            lines = msg.split("\n")
            check("READY=1" in lines, "the first notification says READY=1: %r" % msg)
            check("STATUS=serving on http://127.0.0.1:%d/" % port in lines,
                  "with a STATUS naming the URL: %r" % msg)
        else:
            wait_until(lambda: p.poll() is not None or serves(port), 15, what="the port serves")
        eq(http_get(port, "/healthz", timeout=scaled(5))[0], 200,
           "the port serves when READY=1 arrives" if SYSTEMD else "onced serves")
        p.send_signal(signal.SIGTERM)
        if SYSTEMD:
            msg = receive(sock, "STOPPING=1")
            check("STOPPING=1" in msg.split("\n"), "SIGTERM: STOPPING=1 is sent: %r" % msg)
        eq(p.wait(scaled(30)), 0, "onced exits 0 after the drain")
        if not SYSTEMD:
            # It exited: anything it sent is queued on the socket by now.
            sock.setblocking(False)
            try:
                check(False, "without libsystemd nothing is sent: %r" % sock.recv(4096))
            except BlockingIOError:
                pass
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        sock.close()
        log.close()


if __name__ == "__main__":
    run([test_ready_then_stopping])
