#!/usr/bin/env python3
"""proto/a2a.proto carries the same wire facts as the specification's
normative a2a.proto: every message, field (name, number, type, label,
type_name, oneof, json_name), enum value and service method. Layout,
comments and non-wire options may differ.

  proto_matches.py OURS.proto NORMATIVE.proto

Both files are compiled with protoc into descriptor sets and compared.
The normative file imports google/api/*.proto, which are taken from
Debian's libgoogle-common-protos-java jar. Exit 77 (skipped) when the
normative file, protoc or the protobuf module is not there.
"""
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

SKIP = 77


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def descriptor_set(proto, includes, out):
    cmd = ["protoc", "-I" + os.path.dirname(os.path.abspath(proto))]
    cmd += ["-I" + i for i in includes]
    cmd += ["--descriptor_set_out=" + out, os.path.basename(proto)]
    subprocess.run(cmd, check=True)
    from google.protobuf import descriptor_pb2
    fds = descriptor_pb2.FileDescriptorSet()
    with open(out, "rb") as f:
        fds.ParseFromString(f.read())
    return fds.file[0]


def field_facts(m, f):
    oneof = m.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None
    index = f.oneof_index if f.HasField("oneof_index") else None
    return {
        "number": f.number, "type": f.type, "label": f.label,
        "type_name": f.type_name, "oneof": oneof, "oneof_index": index, "json_name": f.json_name,
        "proto3_optional": f.proto3_optional,
    }


def messages(prefix, msgs, out):
    for m in msgs:
        name = prefix + "." + m.name
        out[name] = {
            "fields": {f.name: field_facts(m, f) for f in m.field},
            "map_entry": m.options.map_entry,
        }
        messages(name, m.nested_type, out)
        enums(name, m.enum_type, out)


def enums(prefix, es, out):
    for e in es:
        out[prefix + "." + e.name] = {"values": {v.name: v.number for v in e.value}}


def facts(fd):
    out = {"package": fd.package, "syntax": fd.syntax}
    types = {}
    messages("." + fd.package, fd.message_type, types)
    enums("." + fd.package, fd.enum_type, types)
    out["types"] = types
    out["services"] = {
        s.name: {
            m.name: (m.input_type, m.output_type, m.client_streaming, m.server_streaming)
            for m in s.method
        }
        for s in fd.service
    }
    return out


def diff(path, ours, theirs, problems):
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for k in sorted(set(ours) | set(theirs), key=str):
            p = path + "/" + str(k)
            if k not in ours:
                problems.append(p + ": missing in ours")
            elif k not in theirs:
                problems.append(p + ": not in the normative file")
            else:
                diff(p, ours[k], theirs[k], problems)
    elif ours != theirs:
        problems.append("%s: ours %r, normative %r" % (path, ours, theirs))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    ours, normative = sys.argv[1], sys.argv[2]
    if not os.path.isfile(normative):
        skip("no normative a2a.proto at " + normative)
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        skip("python3-protobuf is not installed")
    if subprocess.run(["sh", "-c", "command -v protoc"], capture_output=True).returncode:
        skip("protoc is not installed")
    jars = sorted(glob.glob("/usr/share/java/proto-google-common-protos*.jar"))
    if not jars:
        skip("libgoogle-common-protos-java is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        apis = os.path.join(tmp, "protos")
        with zipfile.ZipFile(jars[0]) as z:
            for n in z.namelist():
                if n.endswith(".proto") and n.startswith(("google/api/", "google/rpc/")):
                    z.extract(n, apis)
        a = facts(descriptor_set(ours, ["/usr/include"], os.path.join(tmp, "ours.pb")))
        b = facts(descriptor_set(normative, [apis, "/usr/include"], os.path.join(tmp, "norm.pb")))
    problems = []
    diff("", a, b, problems)
    for p in problems:
        print("DIFF " + p)
    if problems:
        print("%d wire facts differ" % len(problems))
        return 1
    print("ok: %d types, %d methods match" % (len(a["types"]),
          sum(len(s) for s in a["services"].values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
