#!/usr/bin/env python3
"""The gRPC message codec against protobuf's own Python runtime.

  pbjson_vs_python.py PBJSON_TOOL SOURCE_DIR

Python's messages are generated at test time, with Debian's protoc, from
the same proto/ files the C code is generated from (plus google/rpc/status
and error_details from libgoogle-common-protos-java's jar). For every case
of tests/grpc/pbjson_cases.json, in both directions:

  ours to-pb   -> Python parses the bytes -> the message ParseDict makes
  Python bytes -> ours from-pb            -> exactly what MessageToDict prints

and every "reject" case is refused by both (or only by ours, when marked
ours_only: what Python's parser lets through and C++'s refuses). Then the error codec: a
google.rpc.Status with an ErrorInfo packed by Python reads in ours as its
AIP-193 body, and the Status ours packs from an AIP-193 body reads in Python.
Exit 77 (skipped) when protoc or the protobuf module is missing.
"""
import base64
import importlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pbgen import generate  # noqa: E402

SKIP = 77
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL " + what)


def run(tool, args, data):
    p = subprocess.run([tool] + args, input=data, capture_output=True, timeout=60)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace").strip()


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tool, src = sys.argv[1], sys.argv[2]
    try:
        from google.protobuf import json_format, symbol_database  # noqa: F401
    except ImportError:
        print("SKIP: python3-protobuf is not installed")
        return SKIP
    if subprocess.run(["sh", "-c", "command -v protoc"], capture_output=True).returncode:
        print("SKIP: protoc is not installed")
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        generate(src, tmp)
        for m in ("a2a_pb2", "google.rpc.error_info_pb2", "google.rpc.status_pb2",
                  "google.rpc.error_details_pb2"):
            importlib.import_module(m)
        from google.protobuf import json_format, symbol_database
        from google.protobuf import timestamp_pb2, duration_pb2, struct_pb2  # noqa: F401
        db = symbol_database.Default()
        cases = json.load(open(os.path.join(src, "tests/grpc/pbjson_cases.json")))
        for case in cases["cases"]:
            name, cls = case["name"], db.GetSymbol(case["type"])
            want = json_format.MessageToDict(json_format.ParseDict(case["json"], cls()))
            rc, ours, err = run(tool, ["to-pb", case["type"]], json.dumps(case["json"]).encode())
            check(rc == 0, "%s: ours to-pb failed: %s" % (name, err))
            if rc == 0:
                m = cls()
                m.ParseFromString(ours)
                got = json_format.MessageToDict(m)
                check(got == want, "%s: our bytes read in Python as %s, not %s" % (name, got, want))
            theirs = json_format.ParseDict(case["json"], cls()).SerializeToString()
            rc, out, err = run(tool, ["from-pb", case["type"]], theirs)
            check(rc == 0, "%s: ours from-pb failed: %s" % (name, err))
            if rc == 0:
                got = json.loads(out)
                check(got == want, "%s: Python's bytes print in ours as\n  %s\nnot\n  %s"
                      % (name, json.dumps(got), json.dumps(want)))
        for case in cases["reject"]:
            name, cls = case["name"], db.GetSymbol(case["type"])
            try:
                json_format.ParseDict(case["json"], cls())
                py_ok = True
            except (json_format.ParseError, TypeError, ValueError):
                py_ok = False
            # "ours_only": protobuf's C++ and Java parsers refuse it too, Python's does not.
            check(not py_ok or case.get("ours_only"), "reject %s: Python accepts it" % name)
            rc, _, err = run(tool, ["to-pb", case["type"]], json.dumps(case["json"]).encode())
            check(rc != 0 and "rc=-3 " in err, "reject %s: ours says rc %d %s" % (name, rc, err))
            if case["path"]:
                check(("rc=-3 " + case["path"] + ":") in err,
                      "reject %s: error %r does not name %s" % (name, err, case["path"]))
        status_cases(tool, db)
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("ok: %d cases both ways, %d rejections, status codec" % (
        len(cases["cases"]), len(cases["reject"])))
    return 0


def status_cases(tool, db):
    from google.protobuf import any_pb2
    Status = db.GetSymbol("google.rpc.Status")
    ErrorInfo = db.GetSymbol("google.rpc.ErrorInfo")
    RetryInfo = db.GetSymbol("google.rpc.RetryInfo")
    # Python packs, ours reads.
    st = Status(code=9, message="Task t-1 is COMPLETED; it cannot be canceled \u2713")
    a = any_pb2.Any()
    a.Pack(ErrorInfo(reason="TASK_NOT_CANCELABLE", domain="a2a-protocol.org",
                     metadata={"taskId": "t-1", "state": "TASK_STATE_COMPLETED"}))
    st.details.append(a)
    u = any_pb2.Any(type_url="type.googleapis.com/com.example.Unknown", value=b"\x08\x01")
    st.details.append(u)
    r = any_pb2.Any()
    r.Pack(RetryInfo())
    r.value = b"\x0a\x02\x08\x03"
    st.details.append(r)
    rc, out, err = run(tool, ["status-to-aip193", "9"], st.SerializeToString())
    check(rc == 0, "status-to-aip193 failed: " + err)
    if rc == 0:
        body = json.loads(out)["error"]
        check(body["code"] == 409 and body["status"] == "FAILED_PRECONDITION",
              "status-to-aip193: %s" % body)
        check(body["message"] == st.message, "status-to-aip193 message: %r" % body["message"])
        check(body["details"] == [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_CANCELABLE",
             "domain": "a2a-protocol.org",
             "metadata": {"taskId": "t-1", "state": "TASK_STATE_COMPLETED"}},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}],
            "status-to-aip193 details: %s" % body["details"])
    # Ours packs (from the body onced's HTTP+JSON binding writes), Python reads.
    aip = {"error": {"code": 404, "status": "NOT_FOUND", "message": "Task t-9 was not found",
                     "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                  "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
                                  "metadata": {"taskId": "t-9"}},
                                 {"@type": "type.googleapis.com/com.example.Dropped", "x": 1},
                                 {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                  "reason": "SECOND", "domain": "example.com"}]}}
    rc, out, err = run(tool, ["status-from-aip193"], json.dumps(aip).encode())
    check(rc == 0, "status-from-aip193 failed: " + err)
    if rc == 0:
        res = json.loads(out)
        check(res["code"] == 5 and res["message"] == "Task t-9 was not found",
              "status-from-aip193: %s" % res)
        st = Status()
        st.ParseFromString(base64.b64decode(res["details"]))
        check(st.code == 5 and st.message == "Task t-9 was not found", "Status: %s" % st)
        infos = []
        for d in st.details:
            e = ErrorInfo()
            check(d.Unpack(e), "Status detail is not an ErrorInfo: " + d.type_url)
            infos.append((e.reason, e.domain, dict(e.metadata)))
        check(infos == [("TASK_NOT_FOUND", "a2a-protocol.org", {"taskId": "t-9"}),
                        ("SECOND", "example.com", {})], "ErrorInfos: %s" % infos)


if __name__ == "__main__":
    sys.exit(main())
