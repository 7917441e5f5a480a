"""packaging/onced.service as `cmake --install` writes it (ExecStart naming
the onced it installed) passes `systemd-analyze verify` without a word,
including its Documentation=man:onced(8), looked up in the installed man
pages. Skipped (exit 77) where systemd-analyze is absent (Debian's systemd
package has it).

Python 3 standard library and systemd-analyze.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import check, eq, run, scaled, scratch_dir  # noqa: E402

BUILD = os.environ["ONCE_BUILD"]
PREFIX = os.path.join(scratch_dir("once-unit-"), "prefix")


def test_verify():
    p = subprocess.run(["cmake", "--install", BUILD, "--prefix", PREFIX], capture_output=True,
                       text=True, timeout=scaled(120))
    eq(p.returncode, 0, "cmake --install: %s" % p.stderr)
    unit = os.path.join(PREFIX, "lib", "systemd", "system", "onced.service")
    with open(unit) as f:
        check("ExecStart=%s " % os.path.join(PREFIX, "sbin", "onced") in f.read(),
              "ExecStart names the installed onced")
    env = dict(os.environ, MANPATH=os.path.join(PREFIX, "share", "man"))
    p = subprocess.run(["systemd-analyze", "verify", "--man=yes", unit], capture_output=True,
                       text=True, env=env, timeout=scaled(120))
    said = [l for l in (p.stdout + p.stderr).splitlines() if "onced" in l]
    eq((p.returncode, said), (0, []), "systemd-analyze verify passes without a warning")


if __name__ == "__main__":
    if shutil.which("systemd-analyze") is None:
        print("SKIP: systemd-analyze is not installed (Debian package systemd)")
        sys.exit(77)
    run([test_verify])
