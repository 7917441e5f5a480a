#!/usr/bin/env bash
# bench/streams.sh -- what idle SSE streams cost one onced (issue 39, row
# "threads independent of streams"): N SubscribeToTask streams on
# input-required tasks, each held open and idle.
#
#   bash bench/streams.sh            # 10,000 streams
#   BENCH_STREAMS=1000 bash bench/streams.sh
#
# A fresh onced (--store BENCH_STORE_URL, stream and connection limits
# raised to fit) gets N input-required tasks; then one client process opens
# a SubscribeToTask stream on each (tests/e2e/test_sse_threads.py's Client:
# raw sockets under one selector) and waits until every stream has its
# first event. onced's threads (/proc/PID/task) and VmRSS are sampled after
# the tasks and again with every stream open and idle for BENCH_SETTLE
# seconds; onced's CPU over that idle window shows what the streams' store
# polls cost. Prints one markdown row; logs in $B/bench-out/streams-<date>/.
#
# Environment (all optional):
#   BENCH_STREAMS     streams to open                     (10000)
#   BENCH_STORE_URL   the store                           (memory:)
#   BENCH_SETTLE      idle seconds before the second sample (5)
#   BENCH_ONCED, BENCH_SKIP_BUILD: as in bench/lib.sh
TAG=streams
source "$(dirname "$0")/lib.sh"
N="${BENCH_STREAMS:-10000}"
STORE_URL="${BENCH_STORE_URL:-memory:}"
SETTLE="${BENCH_SETTLE:-5}"

# Each stream is one socket here and one in onced, plus slack.
need=$((N + 1024))
ulimit -n "$need" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge "$need" ] || die "ulimit -n is $(ulimit -n); $need needed (raise the hard limit)"

lim=$((2 * N + 64))
start_onced onced --store "$STORE_URL" --max-streams "$lim" --max-streams-per-principal "$lim" \
  --max-connections "$lim" --max-connections-per-ip "$lim"
log "onced pid $PID on port $PORT; $N streams on $STORE_URL"

root="$root" python3 - "$PORT" "$PID" "$N" "$SETTLE" "$STORE_URL" <<'EOF'
import json, os, selectors, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.environ.get("root", "."), "tests", "e2e"))
from test_sse_threads import Client, threads_of

port, pid, n, settle, store = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), \
    float(sys.argv[4]), sys.argv[5]

def rss_kb():
    with open("/proc/%d/status" % pid) as f:
        return int(next(l.split()[1] for l in f if l.startswith("VmRSS:")))

def cpu_s():
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")

def rpc(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/" % port, body,
                                 {"Content-Type": "application/json", "A2A-Version": "1.0"})
    return json.load(urllib.request.urlopen(req, timeout=60))

tids = []
for i in range(n):
    msg = {"role": "ROLE_USER", "messageId": "b-%d-%d" % (os.getpid(), i),
           "parts": [{"text": "ask:contract %d?" % i}]}
    tids.append(rpc("SendMessage", {"message": msg})["result"]["task"]["id"])
time.sleep(1)
t0, r0 = threads_of(pid), rss_kb()

sel = selectors.DefaultSelector()
clients = []
start = time.time()
for i, tid in enumerate(tids):
    c = Client(port, tid, i + 1)
    clients.append(c)
    sel.register(c.sock, selectors.EVENT_READ, c)
while not all(c.events or c.eof for c in clients):
    if time.time() - start > 600:
        sys.exit("streams: not every stream got its first event in 600 s")
    for key, _ in sel.select(timeout=0.1):
        key.data.feed()
        if key.data.eof:
            sel.unregister(key.fileobj)
opened = time.time() - start
ok = sum(1 for c in clients if c.events and not c.eof)
c0 = cpu_s()
time.sleep(settle)
c1 = cpu_s()
t1, r1 = threads_of(pid), rss_kb()
print("| streams | store | open (s) | threads before / with streams | RSS before / with (MB) "
      "| RSS per stream (KB) | onced CPU idle (%) |")
print("|---|---|---|---|---|---|---|")
print("| %d (%d open) | %s | %.1f | %d / %d | %.1f / %.1f | %.1f | %.0f |" % (
    n, ok, store, opened, t0, t1, r0 / 1024, r1 / 1024, (r1 - r0) / max(ok, 1),
    100 * (c1 - c0) / settle))
for c in clients:
    c.close()
EOF
rc=$?
stop "$PID" onced
exit $rc
