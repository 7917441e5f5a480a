"""The sample settings (packaging/onced.env, installed with the
documentation for /etc/once/onced.env) and the systemd unit
(packaging/onced.service) agree:

  - the sample's lines in force are exactly the unit's Environment=
    defaults, name for name and value for value (so the sample as installed
    changes nothing, and the address it shows is the one onced serves);
  - every variable the unit's ExecStart uses is in the sample, in force or
    commented, so each is documented where an operator edits it;
  - the default address is loopback: nothing is served on every interface
    until an operator says so.

Python 3 standard library only.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import check, eq, run  # noqa: E402

SOURCE = os.environ.get("ONCE_SOURCE", os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
ASSIGN = re.compile(r'^(#?)([A-Z][A-Z0-9_]*)=(.*)$')


def read(name):
    with open(os.path.join(SOURCE, "packaging", name)) as f:
        return f.read()


def unquote(v):
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] == '"' else v


def sample():
    """(in force, commented): NAME -> value of the sample's assignments."""
    active, commented = {}, {}
    for line in read("onced.env").splitlines():
        m = ASSIGN.match(line.strip())
        if m:
            (commented if m.group(1) else active).setdefault(m.group(2), unquote(m.group(3)))
    return active, commented


def unit():
    """(Environment= defaults, the variables ExecStart uses)."""
    text = read("onced.service")
    defaults = dict(m.groups() for m in re.finditer(r"^Environment=([A-Z0-9_]+)=(.*)$", text, re.M))
    execstart = re.search(r"^ExecStart=(.*)$", text, re.M).group(1)
    used = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)\}?", execstart))
    return defaults, used


def test_sample_and_unit_agree():
    active, commented = sample()
    defaults, used = unit()
    check("ONCED_LISTEN" in defaults and "ONCED_STORE" in defaults, "the unit has defaults: %r" % defaults)
    eq(active, defaults, "the sample's lines in force are the unit's defaults")
    missing = sorted(used - set(active) - set(commented))
    eq(missing, [], "every variable ExecStart uses is in the sample")
    host = defaults["ONCED_LISTEN"].rsplit(":", 1)[0]
    check(host in ("127.0.0.1", "[::1]", "localhost"),
          "the default address is loopback: %r" % defaults["ONCED_LISTEN"])


if __name__ == "__main__":
    run([test_sample_and_unit_agree])
