"""The build options (README, "Build options"): what onced offers and refuses
matches what this build has. ONCE_BUILT (set by ctest from CMakeLists.txt)
names the optional parts built: postgres, redis, dynamodb, tls, systemd, jemalloc.

  - `onced --help` lists the store URL of each backend built and of no other;
  - a URL of a backend left out is refused, at start, by --check-config and
    by `onced migrate`, saying "<scheme>:// support was not built in
    (configure with -DONCE_<NAME>=ON)", with the exit status an unknown
    scheme gets; one built passes --check-config;
  - an unknown scheme's refusal lists the schemes built in;
  - without TLS, --tls-cert is refused saying TLS was not built in; with it,
    a missing certificate file is named instead.

Without systemd, packaging/notify checks that onced runs and tells nothing.

  - onced's start line names the allocator serving its malloc: jemalloc
    with its version where ONCE_JEMALLOC is built (onced checks that
    jemalloc's count of its thread's bytes moves by a malloc, so a build
    that links it but allocates elsewhere says "libc"), "libc" without.

The minimal build (make test's build-minimal, all five parts OFF) runs this
beside the unit tests; the default build runs it with everything built.
"""
import json
import os
import subprocess

from harness import BUILT, ONCED, check, eq, free_port, run, scaled, scratch_dir

TMP = scratch_dir("once-build-")
# scheme as --help shows it, a URL of it, the part, its CMake option
BACKENDS = [
    ("postgres://", "postgres://app@127.0.0.1:1/once", "postgres", "ONCE_POSTGRES"),
    ("postgresql://", "postgresql://app@127.0.0.1:1/once", "postgres", "ONCE_POSTGRES"),
    ("redis://", "redis://127.0.0.1:1/0", "redis", "ONCE_REDIS"),
    ("dynamodb://", "dynamodb://tasks?region=us-east-1", "dynamodb", "ONCE_DYNAMODB"),
]


def onced(*args, env=None):
    """onced with args, expected to exit by itself: (status, stdout, stderr)."""
    p = subprocess.run([ONCED] + list(args), capture_output=True, text=True,
                       timeout=scaled(30), env=env)
    return p.returncode, p.stdout, p.stderr


def start(store, *flags):
    """Start onced on store: (exit status, the message of its refusal)."""
    rc, _, err = onced("--listen", "127.0.0.1:%d" % free_port(), "--store", store,
                       "--log-format", "json", *flags)
    refused = [r for r in map(json.loads, err.splitlines()) if r.get("event") == "refused"]
    eq(len(refused), 1, "one refused line: %r" % err)
    return rc, refused[0]["message"]


def test_help_lists_what_is_built():
    rc, out, _ = onced("--help")
    eq(rc, 0, "--help")
    head = out.split("(replicas sharing one store")[0]
    for scheme in ("memory:", "sqlite:PATH"):
        check(scheme in head, "%s in --help" % scheme)
    for scheme, _, part, _ in BACKENDS:
        if scheme == "postgresql://":
            continue   # an alias, never listed
        check((scheme in head) == (part in BUILT),
              "%s %sin --help: %r" % (scheme, "" if part in BUILT else "not ", head[-300:]))


def test_left_out_schemes_are_refused():
    unknown_rc, msg = start("mysql://db/once")
    check("unknown store scheme 'mysql'" in msg, "an unknown scheme: %r" % msg)
    for scheme, _, part, _ in BACKENDS:
        if scheme != "postgresql://":
            check((scheme in msg) == (part in BUILT),
                  "the unknown scheme's refusal lists %s only when built: %r" % (scheme, msg))
    for scheme, url, part, option in BACKENDS:
        rc, out, err = onced("--listen", "127.0.0.1:1", "--store", url, "--check-config")
        if part in BUILT:
            eq((rc, out.strip()), (0, "configuration OK"), "--check-config takes %s" % url)
            continue
        want = "%s support was not built in (configure with -D%s=ON)" % (scheme, option)
        eq(rc, 2, "--check-config refuses %s" % url)
        check(want in err, "--check-config says %r: %r" % (want, err))
        rc, msg = start(url)
        eq(rc, unknown_rc, "%s exits as an unknown scheme does" % url)
        check(want in msg, "the start says %r: %r" % (want, msg))
        rc, _, err = onced("migrate", "--store", url)
        eq(rc, 1, "onced migrate refuses %s" % url)
        check(want in err, "onced migrate says %r: %r" % (want, err))


def test_tls_flags():
    missing = os.path.join(TMP, "missing.pem")
    rc, msg = start("memory:", "--tls-cert", missing, "--tls-key", missing)
    eq(rc, 1, "a --tls-cert onced cannot serve stops the start")
    off = "TLS support was not built in (configure with -DONCE_TLS=ON)"
    if "tls" in BUILT:
        check("missing.pem" in msg and off not in msg, "the missing file is named: %r" % msg)
        return
    check(off in msg, "without TLS --tls-cert says so: %r" % msg)
    rc, _, err = onced("--listen", "127.0.0.1:1", "--store", "memory:", "--tls-cert", missing,
                       "--tls-key", missing, "--check-config")
    eq(rc, 2, "--check-config refuses --tls-cert")
    check(off in err, "--check-config says TLS was not built in: %r" % err)


def test_allocator():
    p = subprocess.Popen([ONCED, "--listen", "127.0.0.1:%d" % free_port(), "--store", "memory:",
                          "--log-format", "json"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        start_line = None
        for line in p.stderr:   # ends with onced's stderr; the start line comes first
            rec = json.loads(line)
            if rec.get("event") == "start":
                start_line = rec
                break
        check(start_line is not None, "onced logged its start line")
        got = (start_line or {}).get("allocator", "")
        if "jemalloc" in BUILT:
            check(got.startswith("jemalloc 5."), "a jemalloc build allocates with it: %r" % got)
        else:
            eq(got, "libc", "without jemalloc onced allocates with the C library's malloc")
    finally:
        p.terminate()
        p.wait(timeout=scaled(30))
        p.stderr.close()


if __name__ == "__main__":
    run([test_help_lists_what_is_built, test_left_out_schemes_are_refused, test_tls_flags,
         test_allocator])
