#!/usr/bin/env bash
# test-services.sh -- throwaway PostgreSQL 15 and Redis 7 servers and a
# dynalite (DynamoDB's API on LevelDB, npm, tests/dynamo) on loopback for the
# store tests (ctest fixtures in tests/storepg/tests.cmake) and for trying
# the shared backends by hand.
#
#   scripts/test-services.sh start [NAME...]
#                                     start them (no-op for one already running)
#   scripts/test-services.sh stop     stop them and remove their data
#   scripts/test-services.sh env      print the URLs (does not start anything)
#   scripts/test-services.sh status   exit 0 if all answer
#
# start with no NAME starts what it can: each one that cannot start (not
# installed, or it failed) is named on stderr with the reason, the others
# still start; it exits 0 when at least one runs, 1 when none does. With
# NAMEs (postgres, redis, dynamodb) it starts only those, and every one of
# them must run (else exit 1): the ctest fixture names what the build tests.
#
# start prints shell assignments for what runs, and env for all three, e.g.
# `eval "$(scripts/test-services.sh start)"`:
#   ONCE_TEST_PG_URL=postgres://postgres@127.0.0.1:25432/once
#   ONCE_TEST_REDIS_URL=redis://127.0.0.1:26379/0
#   ONCE_TEST_DYNAMO_URL=dynamodb://once?region=us-east-1&endpoint=http://127.0.0.1:27432&create=1
# (dynalite checks no signature: any AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY do.)
# Without node on PATH dynalite cannot start and the DynamoDB tests are not
# registered (tests/storepg/services.cmake).
#
# Settings (environment):
#   ONCE_PG_PORT      PostgreSQL TCP port (default 25432)
#   ONCE_REDIS_PORT   Redis TCP port (default 26379)
#   ONCE_DYNAMO_PORT  dynalite TCP port (default 27432)
#   ONCE_SVC_DIR      state directory (default /tmp/once-svc-<pg port>-<redis port>);
#                     PostgreSQL data, its unix socket, Redis' dir and both logs live here
#   ONCE_PG_BIN       PostgreSQL binaries (default /usr/lib/postgresql/15/bin, else the
#                     newest /usr/lib/postgresql/*/bin, else pg_ctl's directory on PATH)
#   ONCE_DYNALITE     dynalite's cli.js (default tests/dynamo/node_modules/dynalite/cli.js,
#                     which scripts/deps.sh installs)
#
# Both listen on 127.0.0.1 only. PostgreSQL trusts every local and loopback
# connection (initdb -A trust) and runs with fsync=off: a killed server
# process loses nothing acknowledged (WAL is written to the kernel at commit),
# only an OS crash could -- fine for tests, never for production. Redis keeps
# nothing on disk (--save '' --appendonly no). PostgreSQL refuses to run as
# root, so as root its directory belongs to, and it runs as, the `postgres`
# OS user.
set -euo pipefail

PG_PORT=${ONCE_PG_PORT:-25432}
REDIS_PORT=${ONCE_REDIS_PORT:-26379}
DYNAMO_PORT=${ONCE_DYNAMO_PORT:-27432}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DYNALITE=${ONCE_DYNALITE:-$ROOT/tests/dynamo/node_modules/dynalite/cli.js}
DIR=${ONCE_SVC_DIR:-/tmp/once-svc-$PG_PORT-$REDIS_PORT}
PG_BIN=${ONCE_PG_BIN:-/usr/lib/postgresql/15/bin}
if [ -z "${ONCE_PG_BIN:-}" ] && [ ! -x "$PG_BIN/pg_ctl" ]; then
  # Not Debian's 15: the newest installed major, else whatever is on PATH.
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$PG_BIN" ] || PG_BIN=$(dirname "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/pg_ctl)")
fi
PG_DB=once
PGDATA=$DIR/pg/data
REDIS_DIR=$DIR/redis
DYNAMO_DIR=$DIR/dynamo

die() { echo "test-services: $*" >&2; exit 1; }

pg_url() {
  echo "ONCE_TEST_PG_URL=postgres://postgres@127.0.0.1:$PG_PORT/$PG_DB"
}

redis_url() {
  echo "ONCE_TEST_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0"
}

dynamo_url() {
  echo "ONCE_TEST_DYNAMO_URL='dynamodb://once?region=us-east-1&endpoint=http://127.0.0.1:$DYNAMO_PORT&create=1'"
}

# Run a PostgreSQL binary as the user that owns the cluster.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    if command -v runuser >/dev/null 2>&1; then
      runuser -u postgres -- "$@"
    else
      su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
  else
    "$@"
  fi
}

pg_running() {
  [ -f "$PGDATA/PG_VERSION" ] && as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

pg_start() {
  [ -x "$PG_BIN/pg_ctl" ] || die "no PostgreSQL binaries in $PG_BIN (set ONCE_PG_BIN)"
  if pg_running; then
    return 0
  fi
  mkdir -p "$DIR/pg"
  chmod 755 "$DIR" "$DIR/pg"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root but there is no 'postgres' user"
    chown postgres: "$DIR/pg"
  fi
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    rm -rf "$PGDATA"
    as_pg "$PG_BIN/initdb" -D "$PGDATA" -U postgres -A trust -E UTF8 --no-locale --no-sync \
      >"$DIR/pg/initdb.log" 2>&1 || { cat "$DIR/pg/initdb.log" >&2; die "initdb failed"; }
  fi
  as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$DIR/pg/server.log" -w -t 60 start \
    -o "-c port=$PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$DIR/pg \
        -c fsync=off -c full_page_writes=off -c shared_buffers=32MB -c max_connections=200" \
    >/dev/null || { tail -20 "$DIR/pg/server.log" >&2 || true; die "PostgreSQL did not start on port $PG_PORT"; }
  local have
  have=$(as_pg "$PG_BIN/psql" -h "$DIR/pg" -p "$PG_PORT" -U postgres -d postgres -tAc \
         "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'") || die "psql failed"
  if [ "$have" != 1 ]; then
    as_pg "$PG_BIN/createdb" -h "$DIR/pg" -p "$PG_PORT" -U postgres "$PG_DB" || die "createdb failed"
  fi
}

pg_stop() {
  if pg_running; then
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m immediate -w -t 30 stop >/dev/null || true
  fi
}

# The live process whose pid file is $1 (prints its pid), else fail.
live_pid() {
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# Wait until the check $1 passes (10 s at most); else show the log $2 and die
# with $3.
await() {
  local i
  for i in $(seq 1 100); do
    if "$1"; then
      return 0
    fi
    sleep 0.1
  done
  tail -20 "$2" >&2 || true
  die "$3"
}

# SIGTERM the process whose pid file is $1; SIGKILL it after 5 s.
stop_pid() {
  local pid i
  pid=$(live_pid "$1") || return 0
  kill "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

redis_pid() {
  live_pid "$REDIS_DIR/redis.pid"
}

redis_running() {
  redis_pid >/dev/null && [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]
}

redis_start() {
  command -v redis-server >/dev/null 2>&1 || die "redis-server is not installed"
  if redis_running; then
    return 0
  fi
  mkdir -p "$REDIS_DIR"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$REDIS_DIR" --daemonize yes --pidfile "$REDIS_DIR/redis.pid" \
    --logfile "$REDIS_DIR/server.log" >/dev/null || die "redis-server failed to start"
  await redis_running "$REDIS_DIR/server.log" "Redis did not answer on port $REDIS_PORT"
}

redis_stop() {
  stop_pid "$REDIS_DIR/redis.pid"
}

dynamo_pid() {
  live_pid "$DYNAMO_DIR/dynalite.pid"
}

# Any answer from the port is dynalite's (an unsigned request gets a 400).
dynamo_running() {
  dynamo_pid >/dev/null &&
    curl -s -o /dev/null -m 2 -X POST "http://127.0.0.1:$DYNAMO_PORT/" 2>/dev/null
}

dynamo_start() {
  command -v node >/dev/null 2>&1 || die "node is not installed: no dynalite (DynamoDB tests skip)"
  [ -f "$DYNALITE" ] || die "no dynalite at $DYNALITE (scripts/deps.sh installs it)"
  if dynamo_running; then
    return 0
  fi
  mkdir -p "$DYNAMO_DIR"
  # In memory (no --path): the tests need no restart of this one. Tables are
  # ACTIVE at once instead of after dynalite's default 500 ms.
  nohup node "$DYNALITE" --host 127.0.0.1 --port "$DYNAMO_PORT" --createTableMs 0 \
    --deleteTableMs 0 --updateTableMs 0 >"$DYNAMO_DIR/server.log" 2>&1 &
  echo $! >"$DYNAMO_DIR/dynalite.pid"
  await dynamo_running "$DYNAMO_DIR/server.log" "dynalite did not answer on port $DYNAMO_PORT"
}

dynamo_stop() {
  stop_pid "$DYNAMO_DIR/dynalite.pid"
}

# start's NAMEs and their functions' prefix: postgres -> pg_start, pg_url.
svc_fn() {
  case "$1" in
    postgres) echo pg ;;
    redis) echo redis ;;
    dynamodb) echo dynamo ;;
    *) return 1 ;;
  esac
}

# Start each NAME in turn, in a subshell of its own, so that one that cannot
# start (die) leaves the others to try; print the URLs of those that run.
# $1 is 1 when every one must run.
start() {
  local all=$1 name fn rc started=() missing=()
  shift
  mkdir -p "$DIR"
  for name in "$@"; do
    fn=$(svc_fn "$name")
    set +e
    (set -e; "${fn}_start")
    rc=$?
    set -e
    if [ "$rc" = 0 ]; then
      started+=("$name")
    else
      missing+=("$name")
    fi
  done
  for name in "${started[@]}"; do
    "$(svc_fn "$name")_url"
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "test-services: not started: ${missing[*]} (the reason is above); running:" \
      "${started[*]:-none}" >&2
  fi
  if [ "${#started[@]}" = 0 ] || { [ "$all" = 1 ] && [ "${#missing[@]}" -gt 0 ]; }; then
    exit 1
  fi
}

case "${1:-}" in
  start)
    shift
    if [ "$#" = 0 ]; then
      start 0 postgres redis dynamodb
    else
      for name in "$@"; do
        svc_fn "$name" >/dev/null || { echo "usage: $0 start [postgres] [redis] [dynamodb]" >&2; exit 2; }
      done
      start 1 "$@"
    fi
    ;;
  stop)
    pg_stop
    redis_stop
    dynamo_stop
    case "$DIR" in
      /tmp/*) rm -rf "$DIR" ;;
      *) ;;   # a directory the user chose: leave it
    esac
    ;;
  env)
    pg_url
    redis_url
    dynamo_url
    ;;
  status)
    pg_running && redis_running && { ! command -v node >/dev/null 2>&1 || dynamo_running; }
    ;;
  *)
    echo "usage: $0 start [postgres] [redis] [dynamodb] | stop | env | status" >&2
    exit 2
    ;;
esac
