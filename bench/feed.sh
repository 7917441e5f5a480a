#!/usr/bin/env bash
# bench/feed.sh -- followers across replicas on PostgreSQL or Redis (issue
# 39, rows "store load independent of followers" and "latency"): two onced
# replicas A and B on one store; B holds N idle followers of tasks A holds.
#
#   BENCH_STORE_URL=postgres://... bash bench/feed.sh          # 10,000 streams
#   BENCH_MODE=waits BENCH_STORE_URL=redis://... bash bench/feed.sh
#
# BENCH_MODE=streams: A registers N input-required tasks ("ask:"); one
#   client opens a SubscribeToTask stream on B for each (raw sockets under
#   one selector, tests/e2e/test_sse_threads.py's Client) and waits for
#   every first event.
# BENCH_MODE=waits: A registers N tasks that stay queued (one turn worker
#   busy with "sleep:3600"; leases of an hour, so B takes none of them
#   over); the client sends each again, blocking, to B (the same task ID: a
#   replay), and waits until B's once_sends_waiting gauge counts N deferred
#   waits.
# Then, both modes: B's threads, VmRSS (before and with the followers),
# CPU and store calls (the once_store_operation_duration_seconds counts on
# its /metrics) over BENCH_SETTLE idle seconds; then BENCH_PROBES writes
# through A, one at a time (streams: the continuation that completes a
# task; waits: CancelTask of a queued one), each timed from the moment it
# was sent to A to the moment B's follower got it (the stream's completion
# event; the blocking send's answer): the cross-replica latency, p50 / p99
# / max, beside A's own answer time from the same moment, and B's store
# calls per second under that load. Prints one markdown row; logs in
# $B/bench-out/feed-<date>/.
#
# The open-file limit bounds N: each follower is one socket here and one
# in B (this machine's hard limit is 20,000, so 10,000 streams and 10,000
# waits are measured in two runs).
#
# Environment (all optional but the store):
#   BENCH_STORE_URL   postgres://... or redis://... (a fresh schema / key
#                     prefix is added), or sqlite: (a fresh file: the shared
#                     poller instead of a feed)
#   BENCH_MODE        streams | waits                       (streams)
#   BENCH_N           followers                             (10000)
#   BENCH_SETTLE      idle seconds measured                 (5)
#   BENCH_PROBES      writes through A timed to B           (200)
#   BENCH_FEED        off: both replicas run without the change feed
#                     (ONCE_TEST_FEED=off: followers poll, as before it)
#   BENCH_ONCED, BENCH_SKIP_BUILD, BENCH_BUILD: as in bench/lib.sh
TAG=feed
source "$(dirname "$0")/lib.sh"
URL="${BENCH_STORE_URL:?set BENCH_STORE_URL to a postgres:// or redis:// store}"
MODE="${BENCH_MODE:-streams}"
N="${BENCH_N:-10000}"
SETTLE="${BENCH_SETTLE:-5}"
PROBES="${BENCH_PROBES:-200}"
case "$MODE" in streams | waits) ;; *) die "BENCH_MODE is streams or waits" ;; esac

need=$((N + 1024))
ulimit -n "$need" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge "$need" ] || die "ulimit -n is $(ulimit -n); $need needed (raise the hard limit)"

ns="bench_$(date +%s)_$$"
case "$URL" in
  postgres*) key=schema ;;
  redis*) key=prefix ;;
  sqlite:) key= ;;   # a fresh file in the run's folder: the shared poller's store
  *) die "BENCH_STORE_URL must be postgres://, redis:// or sqlite:" ;;
esac
if [ -z "$key" ]; then
  STORE="sqlite:$OUT/$ns.db"
else
  sep='?'; case "$URL" in *\?*) sep='&' ;; esac
  STORE="$URL${sep}$key=$ns"
fi

[ "${BENCH_FEED:-on}" = off ] && export ONCE_TEST_FEED=off
lim=$((2 * N + 64))
common=(--store "$STORE" --max-connections "$lim" --max-connections-per-ip "$lim"
        --max-streams "$lim" --max-streams-per-principal "$lim"
        --max-waits "$lim" --max-waits-per-principal "$lim" --max-wait 30m
        --max-queue "$lim" --sse-ping 1h --lease 1h)
start_onced a "${common[@]}" --replica-id a --turn-workers 1
PA=$PORT PIDA=$PID
start_onced b "${common[@]}" --replica-id b
PB=$PORT PIDB=$PID
log "A pid $PIDA port $PA, B pid $PIDB port $PB; $N $MODE on $STORE"

root="$root" python3 - "$MODE" "$PA" "$PB" "$PIDB" "$N" "$SETTLE" "$PROBES" "$URL" <<'EOF'
import json, os, selectors, socket, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.environ["root"], "tests", "e2e"))
from harness import EXT, new_id, user_message
from test_sse_threads import Client, threads_of

mode, pa, pb, pidb, n, settle, probes, url = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
    int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), sys.argv[8])

def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(l.split()[1] for l in f if l.startswith("VmRSS:")))

def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")

def body(method, params, rid=1):
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()

def rpc(port, method, params):
    req = urllib.request.Request("http://127.0.0.1:%d/" % port, body(method, params),
                                 {"Content-Type": "application/json", "A2A-Version": "1.0",
                                  "A2A-Extensions": EXT})
    return json.load(urllib.request.urlopen(req, timeout=120))

def metrics(port):
    return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60).read().decode()

def store_calls(port):
    """B's store calls so far, by operation."""
    n = {}
    for l in metrics(port).splitlines():
        if l.startswith("once_store_operation_duration_seconds_count"):
            op = l.split('operation="')[1].split('"')[0]
            n[op] = n.get(op, 0) + int(float(l.split()[-1]))
    return n

def calls_since(a, b):
    return {op: b[op] - a.get(op, 0) for op in b if b[op] != a.get(op, 0)}

def gauge(port, name):
    for l in metrics(port).splitlines():
        if l.startswith(name + " "):
            return float(l.split()[1])
    return None

class Call(Client):
    """One JSON-RPC call on a raw socket (a blocking SendMessage: a wait):
    `events` holds its answer's head once that came (the stream Client's
    reading, without the event stream)."""
    def __init__(self, port, method, params, rid):
        b = body(method, params, rid)
        head = ("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
                "A2A-Extensions: %s\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % (EXT, len(b))).encode()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(head + b)
        self.sock.setblocking(False)
        self.raw, self.head, self.text, self.events, self.eof = b"", None, b"", [], False
    def dechunk(self):
        pass
    def frames(self):
        self.events = [self.head] if self.head is not None else []

def pump(sel, cond, limit, what):
    end = time.time() + limit
    while not cond():
        if time.time() > end:
            sys.exit("feed: not %s in %d s" % (what, limit))
        for key, _ in sel.select(timeout=0.05):
            key.data.feed()
            if key.data.eof:
                sel.unregister(key.fileobj)

if os.environ.get("ONCE_TEST_FEED") != "off":
    end = time.time() + 30
    while gauge(pb, "once_store_feed_up") != 1 and time.time() < end:
        time.sleep(0.1)
feed_up = gauge(pb, "once_store_feed_up")

tids, msgs = [], []
if mode == "waits":
    # The one turn worker of A runs this for the whole run: every other task
    # stays queued (submitted, not settled).
    rpc(pa, "SendMessage", {"message": user_message("sleep:3600", task_id=new_id()),
                            "configuration": {"returnImmediately": True}})
for i in range(n):
    if mode == "streams":
        m = user_message("ask:contract %d?" % i, task_id=new_id())
        st = rpc(pa, "SendMessage", {"message": m})["result"]["task"]["status"]["state"]
        assert st == "TASK_STATE_INPUT_REQUIRED", st
    else:
        m = user_message("sleep:1", task_id=new_id())
        rpc(pa, "SendMessage", {"message": m, "configuration": {"returnImmediately": True}})
    tids.append(m["taskId"])
    msgs.append(m)
time.sleep(1)
t0, r0 = threads_of(pidb), rss_kb(pidb)

sel = selectors.DefaultSelector()
clients = []
start = time.time()
for i, tid in enumerate(tids):
    c = (Client(pb, tid, i + 1) if mode == "streams"
         else Call(pb, "SendMessage", {"message": msgs[i]}, i + 1))
    clients.append(c)
    sel.register(c.sock, selectors.EVENT_READ, c)
if mode == "streams":
    pump(sel, lambda: all(c.events or c.eof for c in clients), 600, "every stream open")
    ok = sum(1 for c in clients if c.events and not c.eof)
else:
    end = time.time() + 600
    while gauge(pb, "once_sends_waiting") != n:
        if time.time() > end:
            sys.exit("feed: B never counted %d waits (%s)" % (n, gauge(pb, "once_sends_waiting")))
        time.sleep(0.2)
    ok = int(gauge(pb, "once_sends_waiting"))
opened = time.time() - start

time.sleep(1)
c0, s0, w0 = cpu_s(pidb), store_calls(pb), time.time()
time.sleep(settle)
c1, s1, w1 = cpu_s(pidb), store_calls(pb), time.time()
t1, r1 = threads_of(pidb), rss_kb(pidb)
idle_by_op = calls_since(s0, s1)
idle_calls = sum(idle_by_op.values()) / (w1 - w0)
print("B's store calls idle, by operation: %r" % idle_by_op, file=sys.stderr)
idle_cpu = 100 * (c1 - c0) / (w1 - w0)

lat, lat_a = [], []
p0, q0 = store_calls(pb), time.time()
if os.environ.get("BENCH_PAUSE"):
    print("paused: B pid %d" % pidb, file=sys.stderr)
    time.sleep(float(os.environ["BENCH_PAUSE"]))
for i in range(min(probes, n)):
    c = clients[i]
    sent = time.time()
    w = (Call(pa, "SendMessage", {"message": user_message("ACME", task_id=tids[i])}, 1)
         if mode == "streams" else Call(pa, "CancelTask", {"id": tids[i]}, 1))
    sel.register(w.sock, selectors.EVENT_READ, w)
    seen = {}
    def arrived():
        now = time.time()
        if "a" not in seen and w.events:
            seen["a"] = now
        done = (c.eof or len(c.events) >= 3) if mode == "streams" else bool(c.events)
        if "b" not in seen and done:
            seen["b"] = now
        return len(seen) == 2
    pump(sel, arrived, 60, "probe %d at A and B" % i)
    if w.sock in sel.get_map():
        sel.unregister(w.sock)
    w.close()
    lat.append(1000 * (seen["b"] - sent))
    lat_a.append(1000 * (seen["a"] - sent))
q1 = time.time()
load_calls = sum(calls_since(p0, store_calls(pb)).values()) / (q1 - q0)
lat.sort()
lat_a.sort()
pct = lambda p, v=lat: v[min(len(v) - 1, int(p * len(v)))]
print("| store | mode | followers (held) | feed up | open (s) | B threads before / with | "
      "B RSS per follower (KB) | B store calls/s idle | B CPU idle (%) | writes via A: B store "
      "calls/s | A's own answer p50 / p99 (ms) | write via A -> B's follower p50 / p99 / max (ms) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
print("| %s | %s | %d (%d) | %s | %.1f | %d / %d | %.1f | %.1f | %.1f | %.1f (%d writes, %.1f/s) "
      "| %.1f / %.1f | %.1f / %.1f / %.1f |" % (
    url.split(":")[0], mode, n, ok, feed_up, opened, t0, t1, (r1 - r0) / max(ok, 1), idle_calls,
    idle_cpu, load_calls, len(lat), len(lat) / (q1 - q0), pct(0.5, lat_a), pct(0.99, lat_a),
    pct(0.5), pct(0.99), lat[-1]))
for c in clients:
    c.close()
EOF
rc=$?
stop "$PIDB" b
stop "$PIDA" a
exit $rc
