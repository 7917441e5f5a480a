"""onced --card FILE (docs/wire.md "The agent card"): the file's name,
description, provider, version, documentationUrl, iconUrl, skills and
default modes go into the card while interfaces, capabilities and the
idempotency extension stay onced's; every kind of bad file stops onced
before it serves, with a message naming the field; without a file the
echo / --exec defaults stay.

Python 3 standard library only.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (ONCED, Onced, check, eq, free_port, http_get, http_request, run, scaled,
                     scratch_dir)

TMP = scratch_dir("once-card-")

GOOD = {
    "name": "Contract reviewer",
    "description": "Reviews contracts, once per request.",
    "provider": {"organization": "Example Legal", "url": "https://legal.example.com"},
    "version": "2.3.1",
    "documentationUrl": "https://legal.example.com/docs",
    "iconUrl": "https://legal.example.com/icon.png",
    "defaultInputModes": ["text/plain", "application/pdf"],
    "defaultOutputModes": ["text/markdown"],
    "skills": [
        {"id": "review", "name": "Review", "description": "Reviews a contract.",
         "tags": ["legal", "review"], "examples": ["Review this NDA"],
         "inputModes": ["application/pdf"], "outputModes": ["text/markdown"]},
        {"id": "summarise", "name": "Summarise", "description": "", "tags": ["legal"]},
    ],
}


def write(name, content):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(content if isinstance(content, str) else json.dumps(content))
    return path


def card_of(srv):
    st, _, data = http_get(srv.port, "/.well-known/agent-card.json")
    eq(st, 200, "the card is served")
    return json.loads(data)


def test_good_file_is_reflected():
    with Onced(["--card", write("good.json", GOOD)]) as srv:
        card = card_of(srv)
    for k, v in GOOD.items():
        eq(card.get(k), v, "card." + k + " comes from the file")
    url = "http://127.0.0.1:%d/" % srv.port
    eq(sorted(i["protocolBinding"] for i in card["supportedInterfaces"]),
       ["HTTP+JSON", "HTTP+JSON", "JSONRPC", "JSONRPC"], "interfaces stay onced's")
    check(all(i["url"] == url for i in card["supportedInterfaces"]), "with onced's URL")
    eq(card["capabilities"]["streaming"], True, "capabilities stay onced's")
    eq([e["uri"] for e in card["capabilities"]["extensions"]], ["urn:once:a2a:idempotency:v1"],
       "the idempotency extension stays declared")


def test_partial_file_keeps_the_defaults():
    with Onced(["--card", write("name.json", {"name": "Only a name"})]) as srv:
        card = card_of(srv)
    eq(card["name"], "Only a name", "the name from the file")
    eq([s["id"] for s in card["skills"]], ["echo"], "the echo skill stays")
    eq(card["defaultInputModes"], ["text/plain"], "default modes stay")


def test_no_file_defaults():
    with Onced(["--exec", "true"]) as srv:
        card = card_of(srv)
    eq((card["name"], [s["id"] for s in card["skills"]]), ("once", ["exec"]),
       "without --card: the --exec default card")


def refused(path, names, what):
    """onced --card path exits 1 before serving, and stderr names `names`."""
    p = subprocess.run([ONCED, "--listen", "127.0.0.1:%d" % free_port(), "--store", "memory:",
                        "--card", path], capture_output=True, timeout=scaled(15))
    err = p.stderr.decode(errors="replace")
    eq(p.returncode, 1, what + ": onced stops (stderr %r)" % err)
    check("--card" in err and all(n in err for n in names),
          what + ": the message names %r: %r" % (names, err))


def test_card_for_a2a_03():
    """The 0.3 card where a 0.3 client asks for it (/.well-known/agent.json,
    or A2A-Version 0.x): url, preferredTransport and protocolVersion of the
    0.3 interface, the descriptive members and capabilities of the 1.0 card,
    the bearer scheme flat, its own ETag; the 1.0 card stays the default."""
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        f.write("tok-card alice\n")
    with Onced(["--card", write("good03.json", GOOD), "--auth-tokens", tokens]) as srv:
        url = "http://127.0.0.1:%d/" % srv.port
        st, hd, data = http_request(srv.port, "GET", "/.well-known/agent.json")
        eq(st, 200, "the 0.3 card's path")
        c03 = json.loads(data)
        eq((c03.get("url"), c03.get("preferredTransport"), c03.get("protocolVersion")),
           (url, "JSONRPC", "0.3.0"), "the 0.3 interface")
        eq(c03.get("additionalInterfaces"), [{"url": url, "transport": "HTTP+JSON"}],
           "0.3's HTTP+JSON routes as its additional interface")
        for k in ("name", "description", "version", "skills", "defaultInputModes"):
            eq(c03.get(k), GOOD[k], "card." + k)
        eq(c03["capabilities"]["streaming"], True, "capabilities")
        eq(c03.get("supportsAuthenticatedExtendedCard"), False, "no extended card")
        eq(c03["securitySchemes"]["bearer"]["type"], "http", "a flat 0.3 security scheme")
        eq(c03.get("security"), [{"bearer": []}], "the 0.3 security requirement")
        check("Vary" in hd or "vary" in hd, "Vary: A2A-Version: %r" % hd)
        st, hd2, data = http_request(srv.port, "GET", "/.well-known/agent-card.json",
                                     headers={"A2A-Version": "0.3"})
        eq(json.loads(data), c03, "A2A-Version 0.3 gets the same card")
        st, hd1, data = http_request(srv.port, "GET", "/.well-known/agent-card.json")
        c10 = json.loads(data)
        check("url" not in c10 and "supportedInterfaces" in c10, "the 1.0 card by default")
        check(hd1.get("etag") != hd2.get("etag"), "each card its own ETag")
        st, _, _ = http_request(srv.port, "GET", "/.well-known/agent.json",
                                headers={"If-None-Match": hd2.get("etag")})
        eq(st, 304, "the 0.3 card's ETag validates")


def test_bad_files_are_refused():
    def skill(**kw):
        s = {"id": "s", "name": "S", "description": "d", "tags": ["t"]}
        s.update(kw)
        return {"skills": [dict((k, v) for k, v in s.items() if v is not None)]}
    cases = [
        ("not JSON", "{\"name\": ", ["not JSON"]),
        ("not an object", "[1, 2]", ["object"]),
        ("a name of the wrong type", {"name": 42}, ["name must be a string"]),
        ("an empty version", {"version": ""}, ["version"]),
        ("a member onced owns", {"capabilities": {"streaming": False}}, ["capabilities"]),
        ("interfaces", {"supportedInterfaces": []}, ["supportedInterfaces"]),
        ("an unknown member", {"colour": "blue"}, ["colour", "unknown"]),
        ("a provider without url", {"provider": {"organization": "X"}}, ["provider.url"]),
        ("a skill without id", skill(id=None), ["skills[0].id"]),
        ("a skill without name", skill(name=None), ["skills[0].name"]),
        ("a skill with an empty id", skill(id=""), ["skills[0].id"]),
        ("a skill with a tag that is not a string", skill(tags=["ok", 3]), ["skills[0].tags[1]"]),
        ("a skill with its own security", skill(securityRequirements=[]),
         ["skills[0].securityRequirements"]),
        ("two skills with one id", {"skills": skill()["skills"] * 2}, ["skills[1].id"]),
        ("no skills", {"skills": []}, ["skills"]),
        ("modes not strings", {"defaultInputModes": "text/plain"}, ["defaultInputModes"]),
    ]
    for i, (what, content, names) in enumerate(cases):
        refused(write("bad-%d.json" % i, content), names, what)
    refused(os.path.join(TMP, "missing.json"), ["missing.json"], "a file that does not exist")


if __name__ == "__main__":
    run([test_good_file_is_reflected, test_partial_file_keeps_the_defaults, test_no_file_defaults,
         test_card_for_a2a_03,
         test_bad_files_are_refused])
