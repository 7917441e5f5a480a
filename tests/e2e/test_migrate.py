"""Migrations as a step of their own (issue #32, item 7): `onced migrate
--store URL [--dry-run]` applies or shows the store's pending schema
changes and exits, and `onced --no-migrate` refuses a store that needs
one, so that a rollout migrates once before its replicas start. On SQLite
files: an older schema (version 2, before the journal column), a store not
there yet, and one a newer once migrated."""
import json
import os
import sqlite3
import subprocess

from harness import (ONCED, Onced, check, eq, free_port, result_task, run, scaled, scratch_dir,
                     user_message)

TMP = scratch_dir()
VERSION = 7   # src/store/sqlite_int.h, SQ_SCHEMA_VERSION
# Takes a file of this once back to version 6's tables (the versions before had those).
V6_LAYOUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sqlite",
                         "v6_layout.sql")


def migrate(url, *flags):
    """`onced migrate --store url flags`: (exit status, stdout, stderr)."""
    p = subprocess.run([ONCED, "migrate", "--store", url] + list(flags), capture_output=True,
                       text=True, timeout=scaled(30))
    return p.returncode, p.stdout, p.stderr


def refused_start(url, *flags):
    """Start onced on url; it must exit by itself (it refuses the store).
    (exit status, the message of its "refused" log line)."""
    p = subprocess.run([ONCED, "--listen", "127.0.0.1:%d" % free_port(), "--store", url,
                        "--log-format", "json"] + list(flags),
                       capture_output=True, text=True, timeout=scaled(30))
    lines = [json.loads(line) for line in p.stderr.splitlines()]
    refused = [r for r in lines if r.get("event") == "refused"]
    eq(len(refused), 1, "one refused line: %r" % lines)
    eq(refused[0]["exit"], p.returncode, "the line names the exit status")
    return p.returncode, refused[0]["message"]


def user_version(path):
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def version_2_file(path):
    """A file as once wrote it at schema version 2, holding one task: a
    version-3 file that served a send, its journal column taken out again
    (3 added only that column; packed and the tables of 7 are the later
    versions'). Returns the task's ID."""
    with Onced(store="sqlite:" + path) as srv:
        _, _, doc = srv.rpc("SendMessage", {"message": user_message("kept across the upgrade")})
        task_id = result_task(doc, "send before the upgrade")["id"]
    db = sqlite3.connect(path)
    with open(V6_LAYOUT) as f:
        db.executescript(f.read())
    db.executescript("ALTER TABLE tasks DROP COLUMN journal; ALTER TABLE tasks DROP COLUMN packed; PRAGMA user_version=2;")
    db.close()
    eq(user_version(path), 2, "the file is at version 2")
    return task_id


def test_older_store():
    path = os.path.join(TMP, "old.db")
    url = "sqlite:" + path
    task_id = version_2_file(path)
    before = file_bytes(path)

    # A dry run says what is pending and writes nothing.
    eq(migrate(url, "--dry-run"),
       (0, "store at version 2; would apply 3..%d (dry run: nothing written)\n" % VERSION, ""),
       "onced migrate --dry-run on a version-2 file")
    check(file_bytes(path) == before, "the dry run left the file as it was")

    # A replica told not to migrate refuses it, naming both versions.
    status, message = refused_start(url, "--no-migrate")
    eq(status, 1, "onced --no-migrate on a version-2 file exits 1")
    check("store schema is at version 2, this once needs %d: run onced migrate" % VERSION in message,
          "the refusal says why and what to do: %r" % message)
    check(file_bytes(path) == before, "the refusal left the file as it was")

    # The migration, then nothing more to do.
    eq(migrate(url),
       (0, "store at version 2; applied 3..%d (now at version %d)\n" % (VERSION, VERSION), ""),
       "onced migrate on a version-2 file")
    eq(user_version(path), VERSION, "the file is at this once's version")
    eq(migrate(url), (0, "up to date (version %d)\n" % VERSION, ""), "onced migrate once more")
    eq(migrate(url, "--dry-run"), (0, "up to date (version %d)\n" % VERSION, ""),
       "onced migrate --dry-run on a migrated file")

    # Now a --no-migrate replica starts, names the version, and serves what
    # the old file held.
    with Onced(["--no-migrate", "--log-format", "json"], store=url) as srv:
        _, _, doc = srv.rpc("GetTask", {"id": task_id})
        eq(result_task(doc, "the task from before the upgrade")["id"], task_id,
           "the task written before the migration")
        srv.stop()
        start = [json.loads(line) for line in srv.logtext_all().splitlines()
                 if '"event":"start"' in line]
        eq([s.get("schema_version") for s in start], [VERSION], "the start-up line's version")


def test_store_not_there_yet():
    path = os.path.join(TMP, "new.db")
    url = "sqlite:" + path
    eq(migrate(url, "--dry-run"),
       (0, "store at version 0; would apply 1..%d (dry run: nothing written)\n" % VERSION, ""),
       "onced migrate --dry-run on a missing file")
    check(not os.path.exists(path), "the dry run created no file")
    status, message = refused_start(url, "--no-migrate")
    eq(status, 1, "onced --no-migrate on a missing file exits 1")
    check("store schema is at version 0, this once needs %d: run onced migrate" % VERSION in message,
          "the refusal: %r" % message)
    check(not os.path.exists(path), "the refusal created no file")
    eq(migrate(url),
       (0, "store at version 0; applied 1..%d (now at version %d)\n" % (VERSION, VERSION), ""),
       "onced migrate creates the schema")
    eq(user_version(path), VERSION, "the new file's version")


def test_newer_store():
    path = os.path.join(TMP, "newer.db")
    url = "sqlite:" + path
    eq(migrate(url)[0], 0, "a current file")
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=9")
    db.close()
    before = file_bytes(path)
    want = "store schema is at version 9, this once knows up to %d: upgrade once" % VERSION
    for flags in ((), ("--dry-run",)):
        status, out, err = migrate(url, "--log-format", "text", *flags)
        eq((status, out), (1, ""), "onced migrate %s on a newer file" % " ".join(flags))
        check(err.startswith("onced: migrate: ") and want in err, "its message: %r" % err)
    for flags in ((), ("--no-migrate",)):
        status, message = refused_start(url, *flags)
        eq(status, 1, "onced %s on a newer file exits 1" % " ".join(flags))
        check(want in message, "the refusal: %r" % message)
    check(file_bytes(path) == before, "nothing wrote the newer file")


def test_command_line():
    p = subprocess.run([ONCED, "migrate", "--help"], capture_output=True, text=True,
                       timeout=scaled(10))
    eq(p.returncode, 0, "onced migrate --help")
    check("--dry-run" in p.stdout and "--store URL" in p.stdout, "its text: %r" % p.stdout)
    p = subprocess.run([ONCED, "--help"], capture_output=True, text=True, timeout=scaled(10))
    check("onced migrate --store URL [--dry-run]" in p.stdout and "--no-migrate" in p.stdout,
          "onced --help names the command and the flag")
    for args, want in (([], "migrate: --store URL is required"),
                       (["--store"], "migrate: --store needs a value"),
                       (["--store", "memory:", "--apply"], "migrate: unknown option --apply")):
        p = subprocess.run([ONCED, "migrate", "--log-format", "text"] + args,
                           capture_output=True, text=True, timeout=scaled(10))
        eq(p.returncode, 2, "onced migrate %s exits 2" % " ".join(args))
        check(want in p.stderr, "onced migrate %s: %r" % (" ".join(args), p.stderr))
    status, out, err = migrate("memory:", "--log-format", "text")
    eq((status, out), (1, ""), "onced migrate on memory:")
    check("no schema to migrate" in err, "its message: %r" % err)


if __name__ == "__main__":
    run([test_older_store, test_store_not_there_yet, test_newer_store, test_command_line])
