"""The man pages and the README keep step with the programs. Their option
lists are generated from the programs' option tables (apps/cli/*_opts.c):
each generated region (between BEGIN/END GENERATED markers) must be what
`scripts/gendocs.py` writes now, i.e. what `onced --help-man`, `once
--help-man` and `--help-markdown` print, so an option added, changed or
removed in a table and not regenerated (`make docs`) fails. Beyond that,
the options man/once.1 names anywhere (an entry, a synopsis, the hand-written
prose around the lists) are exactly the options `once --help` names, and the
same for man/onced.8 and `onced --help`, in both directions. Each page's
title line (.TH) names the version the program prints.

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


def test_generated_regions_current():
    """Every generated region is what the tables print now; a hand edit
    inside one, or a table change not regenerated, fails here."""
    p = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "gendocs.py"), "--check",
                        "--build", BUILD, "--source", SOURCE],
                       capture_output=True, text=True, timeout=scaled(60))
    check(p.returncode == 0, "gendocs --check: %s%s" % (p.stdout[-3000:], p.stderr))
    for page, marker in (("man/onced.8", "BEGIN GENERATED: onced --help-man"),
                         ("man/once.1", "BEGIN GENERATED: once --help-man"),
                         ("README.md", "BEGIN GENERATED: onced --help-markdown"),
                         ("README.md", "BEGIN GENERATED: once --help-markdown")):
        with open(os.path.join(SOURCE, page)) as f:
            check(marker in f.read(), "%s has the region %r" % (page, marker))


def test_gendocs_sees_drift():
    """The check can fail: a page whose generated region lost a line is
    reported stale (on a copy; the source tree is not touched)."""
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("man", "scripts"):
            shutil.copytree(os.path.join(SOURCE, d), os.path.join(tmp, d))
        shutil.copy(os.path.join(SOURCE, "README.md"), tmp)
        page = os.path.join(tmp, "man", "onced.8")
        with open(page) as f:
            text = f.read()
        with open(page, "w") as f:
            f.write(text.replace("dynamodb://TABLE?region=R", "", 1))
        p = subprocess.run([sys.executable, os.path.join(tmp, "scripts", "gendocs.py"), "--check",
                            "--build", BUILD, "--source", tmp],
                           capture_output=True, text=True, timeout=scaled(60))
        check(p.returncode == 1 and "man/onced.8" in p.stdout,
              "a stale onced.8 is reported: %d %r" % (p.returncode, p.stdout[-500:]))


def test_markdown_table_rows():
    """The README's onced table lists every option with a Markdown meaning
    as a `| flag | default | meaning |` row, and no row names an option
    --help does not."""
    with open(os.path.join(SOURCE, "README.md")) as f:
        readme = f.read()
    region = readme.split("BEGIN GENERATED: onced --help-markdown -->\n")[1]
    region = region.split("<!-- END GENERATED -->")[0]
    rows = [l for l in region.splitlines() if l.startswith("| `")]
    check(len(rows) > 30, "the onced table has its rows (%d)" % len(rows))
    named = set(OPTION.findall("\n".join(r.split("|")[1] for r in rows)))
    check(not named - help_options("onced"), "README rows not in --help: %s"
          % sorted(named - help_options("onced")))


def test_once_1():
    same("once", "once.1")


def test_onced_8():
    same("onced", "onced.8")


if __name__ == "__main__":
    run([test_once_1, test_onced_8, test_onced_testing_section_and_stores,
         test_generated_regions_current, test_gendocs_sees_drift, test_markdown_table_rows])
