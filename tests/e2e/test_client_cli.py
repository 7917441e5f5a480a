"""The `once` CLI's manners, driven as a user would against a real onced:

- an agent URL the client cannot use (no scheme, a port past 65535, no
  host, another scheme) is refused as a usage error that says what a valid
  one looks like, and nothing is written to the outbox;
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, run  # noqa: E402
import test_client  # noqa: E402
from test_client import ONCE, TMP, once, outbox_intents  # noqa: E402


def test_bad_agent_url_writes_nothing():
    outbox = os.path.join(TMP, "badurl.db")
    rc, out, err = once(outbox, "send", "--agent", "127.0.0.1:41701", "--text", "hi")
    eq(rc, 2, "a URL without a scheme is a usage error (%s)" % err)
    check("http://127.0.0.1:41701/" in err, "the message shows a valid URL: %r" % err)
    for url, says in (("http://127.0.0.1:99999/", "1 to 65535"), ("http://:8080/", "no host"),
                      ("ftp://127.0.0.1/", "http:// or https://"), ("http://a b/", "spaces")):
        rc, out, err = once(outbox, "send", "--agent", url, "--text", "hi")
        eq(rc, 2, "%s: usage error (%s)" % (url, err))
        check(says in err, "%s: the message says %r: %r" % (url, says, err))
    rc, out, err = once(outbox, "continue", "T1", "--agent", "localhost:1", "--text", "hi")
    eq(rc, 2, "continue checks the URL too (%s)" % err)
    eq(outbox_intents(outbox), [], "nothing was written to the outbox")


if __name__ == "__main__":
    if not os.path.exists(ONCE):
        print("FAIL: %s is missing (build first)" % ONCE, file=sys.stderr)
        sys.exit(1)
    try:
        run([test_bad_agent_url_writes_nothing])
    finally:
        shutil.rmtree(test_client.TMP, ignore_errors=True)
