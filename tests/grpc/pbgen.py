"""Python messages for the gRPC tests, generated at test time by Debian's
protoc from proto/a2a.proto (and google/rpc/error_info.proto), plus
google.rpc's status and error_details from libgoogle-common-protos-java's
jar: the same sources the C code is generated from. generate() puts them on
sys.path; without the jar it exits 77 (skipped)."""
import glob
import os
import subprocess
import sys
import zipfile

SKIP = 77


def generate(src, tmp):
    jars = sorted(glob.glob("/usr/share/java/proto-google-common-protos*.jar"))
    if not jars:
        print("SKIP: libgoogle-common-protos-java is not installed")
        sys.exit(SKIP)
    rpc = os.path.join(tmp, "protos")
    with zipfile.ZipFile(jars[0]) as z:
        for n in ("google/rpc/status.proto", "google/rpc/error_details.proto"):
            z.extract(n, rpc)
    out = os.path.join(tmp, "py")
    os.makedirs(out)
    proto = os.path.join(src, "proto")
    subprocess.run(["protoc", "-I" + proto, "-I/usr/include", "--python_out=" + out,
                    "a2a.proto", "google/rpc/error_info.proto"], check=True)
    subprocess.run(["protoc", "-I" + rpc, "-I/usr/include", "--python_out=" + out,
                    "google/rpc/status.proto", "google/rpc/error_details.proto"], check=True)
    sys.path.insert(0, out)
