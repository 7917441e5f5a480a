# The throwaway PostgreSQL and Redis servers and the dynalite the store and
# replica tests share (scripts/test-services.sh, ctest fixture
# "once_services"): which backends are built (-DONCE_POSTGRES, -DONCE_REDIS,
# -DONCE_DYNAMODB; a backend left out has no test; DynamoDB's tests need node
# for dynalite: without it they are not registered, and configure says so),
# the ports (derived from the build directory so that
# two build trees can test at once), the environment for the script and the
# URLs. Included by every layer that uses the servers (tests/storepg,
# tests/replicas), whatever the order of inclusion; the fixture tests
# themselves are registered once, in tests/storepg/tests.cmake.
include_guard(GLOBAL)

set(_once_pg_built ${ONCE_POSTGRES})
set(_once_redis_built ${ONCE_REDIS})
set(_once_dynamo_built OFF)
if(ONCE_DYNAMODB)
  find_program(ONCE_NODE node)
  if(ONCE_NODE)
    set(_once_dynamo_built ON)
  else()
    message(STATUS "node not found: the DynamoDB store tests (dynalite) are skipped")
  endif()
endif()

# Below Linux's ephemeral range (32768-60999), so an outgoing connection can
# never hold the port a test server needs.
string(MD5 _once_svc_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${_once_svc_hash}" 0 4 _once_svc_hex)
math(EXPR _once_svc_off "0x${_once_svc_hex} % 200")
math(EXPR _once_pg_port "25432 + ${_once_svc_off}")
math(EXPR _once_redis_port "26379 + ${_once_svc_off}")
math(EXPR _once_dynamo_port "27432 + ${_once_svc_off}")
set(ONCE_TEST_PG_PORT ${_once_pg_port} CACHE STRING "PostgreSQL port for the store tests")
set(ONCE_TEST_REDIS_PORT ${_once_redis_port} CACHE STRING "Redis port for the store tests")
set(ONCE_TEST_DYNAMO_PORT ${_once_dynamo_port} CACHE STRING "dynalite port for the store tests")
set(_once_svc_env "ONCE_PG_PORT=${ONCE_TEST_PG_PORT};ONCE_REDIS_PORT=${ONCE_TEST_REDIS_PORT};ONCE_DYNAMO_PORT=${ONCE_TEST_DYNAMO_PORT}")
set(_once_pg_url "postgres://postgres@127.0.0.1:${ONCE_TEST_PG_PORT}/once")
set(_once_redis_url "redis://127.0.0.1:${ONCE_TEST_REDIS_PORT}/0")
# dynalite checks no signature, so any key signs; the table is per test
# (the URL's table name is replaced, tests/replicas/fleet.py).
set(_once_dynamo_url
    "dynamodb://once?region=us-east-1&endpoint=http://127.0.0.1:${ONCE_TEST_DYNAMO_PORT}&create=1")
set(_once_dynamo_env "AWS_ACCESS_KEY_ID=once-test;AWS_SECRET_ACCESS_KEY=once-test")
# The built backends with connection pools (store/pool.h), by name, and
# each one's URL as _once_url_<name>.
set(_once_pooled_backends)
if(_once_pg_built)
  list(APPEND _once_pooled_backends postgres)
endif()
if(_once_redis_built)
  list(APPEND _once_pooled_backends redis)
endif()
set(_once_url_postgres "${_once_pg_url}")
set(_once_url_redis "${_once_redis_url}")
