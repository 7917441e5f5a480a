"""The man pages keep step with --help: the options man/once.1 names are
exactly the options `once --help` names, and the same for man/onced.8 and
`onced --help`, in both directions. An option counts as named wherever it
appears (an entry, a synopsis, a description), so a flag added to the
program and not to its page, or left on the page after it went, fails.
Each page's title line (.TH) names the version the program prints.

Python 3 standard library only.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import BUILT, check, run, scaled  # noqa: E402

SOURCE = os.environ["ONCE_SOURCE"]
BUILD = os.environ["ONCE_BUILD"]
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def help_options(prog):
    p = subprocess.run([os.path.join(BUILD, prog), "--help"], capture_output=True, text=True,
                       timeout=scaled(30))
    check(p.returncode == 0, "%s --help exits 0" % prog)
    return set(OPTION.findall(p.stdout))


def page_options(page):
    with open(os.path.join(SOURCE, "man", page)) as f:
        text = "\n".join(l for l in f.read().split("\n") if not l.startswith('.\\"'))
    # roff: \- is a minus, \fB \fI \fR \fP switch fonts, \& is nothing.
    text = re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-").replace("\\&", "")
    return set(OPTION.findall(text))


def page_version(page):
    with open(os.path.join(SOURCE, "man", page)) as f:
        th = next(l for l in f if l.startswith(".TH "))
    return re.search(r'"once ([^"]+)"', th).group(1)


def same(prog, page):
    p = subprocess.run([os.path.join(BUILD, prog), "--version"], capture_output=True, text=True,
                       timeout=scaled(30))
    check(p.stdout.split() == [prog, page_version(page)],
          "%s's title names the version %s prints: %r" % (page, prog, p.stdout))
    want, got = help_options(prog), page_options(page)
    check(len(want) > 10, "%s --help names its options (%d)" % (prog, len(want)))
    check(not want - got, "%s: in --help but not on the page: %s" % (page, sorted(want - got)))
    check(not got - want, "%s: on the page but not in --help: %s" % (page, sorted(got - want)))


TEST_ONLY = ("--clock-offset", "--test-admin", "--experiment-naive")


def test_onced_testing_section_and_stores():
    """onced's test-only flags stand apart, after every other one, in --help
    and on the page; the page names every store scheme, --help those this
    build has (ONCE_BUILT: a backend left out is not offered)."""
    p = subprocess.run([os.path.join(BUILD, "onced"), "--help"], capture_output=True, text=True,
                       timeout=scaled(30))
    head, sep, tail = p.stdout.partition("testing only")
    check(sep != "", "--help has a testing-only section: %r" % p.stdout[-400:])
    for flag in TEST_ONLY:
        check(flag in tail and flag not in head, "%s only in the testing section" % flag)
    with open(os.path.join(SOURCE, "man", "onced.8")) as f:
        page = f.read().replace("\\-", "-")
    mhead, msep, mtail = page.partition(".SS Testing only")
    check(msep != "", "onced.8 has a Testing only section")
    for flag in TEST_ONLY:
        check(flag in mtail.split(".SH")[0] and flag not in mhead,
              "onced.8: %s only in the testing section" % flag)
    for scheme, part in (("memory:", None), ("sqlite:", None), ("postgres://", "postgres"),
                         ("redis://", "redis"), ("dynamodb://", "dynamodb")):
        check(scheme in page, "store scheme %s on the page" % scheme)
        want = part is None or part in BUILT
        check((scheme in p.stdout) == want, "store scheme %s %sin --help"
              % (scheme, "" if want else "not "))


def test_once_1():
    same("once", "once.1")


def test_onced_8():
    same("onced", "onced.8")


if __name__ == "__main__":
    run([test_once_1, test_onced_8, test_onced_testing_section_and_stores])
