"""scripts/test-services.sh start starts what it can: here PostgreSQL's
binaries and dynalite are pointed at paths that do not exist (ONCE_PG_BIN,
ONCE_DYNALITE), on ports and in a folder of this test's own, so only Redis
can start:

  - `start` exits 0, prints the URL of Redis alone, and names on stderr
    what did not start (postgres, dynamodb) with each one's reason; Redis
    answers PING;
  - `status` still means "all answer": it exits non-zero;
  - `start redis` (a name: it must run) exits 0, Redis being up;
  - `start postgres redis` exits 1 naming postgres, and still prints Redis'
    URL; an unknown name is a usage error (2);
  - `stop` stops Redis.

Skipped (exit 77) where redis-server is not installed. Python 3 standard
library only.
"""
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import ROOT, check, eq, free_port, run, scaled, scratch_dir, wait_until  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "test-services.sh")
TMP = scratch_dir("once-svc-test-")
REDIS_PORT = free_port()
ENV = dict(os.environ, ONCE_PG_BIN=os.path.join(TMP, "no-postgres", "bin"),
           ONCE_DYNALITE=os.path.join(TMP, "no-dynalite", "cli.js"), ONCE_PG_PORT=str(free_port()),
           ONCE_REDIS_PORT=str(REDIS_PORT), ONCE_DYNAMO_PORT=str(free_port()),
           ONCE_SVC_DIR=os.path.join(TMP, "svc"))


def svc(*args):
    p = subprocess.run(["bash", SCRIPT] + list(args), capture_output=True, text=True, env=ENV,
                       timeout=scaled(120))
    return p.returncode, p.stdout, p.stderr


def redis_ping():
    try:
        with socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=scaled(2)) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16) == b"+PONG\r\n"
    except OSError:
        return False


def test_start_what_it_can():
    redis_url = "ONCE_TEST_REDIS_URL=redis://127.0.0.1:%d/0" % REDIS_PORT
    try:
        rc, out, err = svc("start")
        eq(rc, 0, "start with one of three startable exits 0 (%s)" % err)
        eq(out.splitlines(), [redis_url], "only what started is printed")
        check("not started: postgres dynamodb" in err, "stderr names what did not start: %r" % err)
        check("no PostgreSQL binaries" in err and ("dynalite" in err or "node" in err),
              "and why: %r" % err)
        check(redis_ping(), "Redis answers")
        rc, _, _ = svc("status")
        check(rc != 0, "status: not all of them answer (%d)" % rc)
        rc, out, err = svc("start", "redis")
        eq((rc, out.splitlines()), (0, [redis_url]), "start redis: it runs (%s)" % err)
        rc, out, err = svc("start", "postgres", "redis")
        eq(rc, 1, "a named service that cannot start fails start (%s)" % err)
        check("not started: postgres" in err, "it is named: %r" % err)
        eq(out.splitlines(), [redis_url], "what runs is still printed")
        rc, _, err = svc("start", "mysql")
        eq(rc, 2, "an unknown name is a usage error (%s)" % err)
    finally:
        rc, _, err = svc("stop")
        eq(rc, 0, "stop (%s)" % err)
    wait_until(lambda: not redis_ping(), timeout=15, what="Redis to stop")


if __name__ == "__main__":
    if shutil.which("redis-server") is None:
        print("SKIP: redis-server is not installed")
        sys.exit(77)
    run([test_start_what_it_can])
