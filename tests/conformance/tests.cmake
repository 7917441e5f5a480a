# The conformance kit of the idempotency extension (conformance/run.py,
# docs/extension.md) run against real servers by tests/conformance/run_onced.py:
#   conformance/onced/{memory,sqlite}              onced on its own store
#   conformance/onced/{postgres,redis,dynamodb}    onced on the shared test
#       servers (fixture "once_services", tests/storepg), a fresh schema /
#       key prefix / table per run
#   conformance/gateway    onced --upstream in front of the @a2a-js/sdk agent
#                          tests/interop/upstream_agent.mjs
#   conformance/negative   the kit against upstream_agent.mjs itself, which
#                          does not declare the extension: passes only when the
#                          kit fails it
# Each passes the kit's exit status through (the negative control inverts it).
include(${CMAKE_SOURCE_DIR}/tests/storepg/services.cmake)
find_program(PYTHON3 python3 REQUIRED)
find_program(NODE_EXECUTABLE NAMES node nodejs)

set(_once_conf_driver ${CMAKE_CURRENT_LIST_DIR}/run_onced.py)
set(_once_conf_env
    "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_TOOLS=${CMAKE_BINARY_DIR}/tools;ONCE_BUILD=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")

foreach(store memory sqlite)
  add_test(NAME conformance/onced/${store} COMMAND ${PYTHON3} ${_once_conf_driver} ${store})
  set_tests_properties(conformance/onced/${store} PROPERTIES TIMEOUT 180
                       LABELS conformance ENVIRONMENT "${_once_conf_env}")
endforeach()

set(_once_conf_backends)
set(_once_conf_shared_env ${_once_conf_env})
if(_once_pg_built)
  list(APPEND _once_conf_backends "postgres|${_once_pg_url}")
endif()
if(_once_redis_built)
  list(APPEND _once_conf_backends "redis|${_once_redis_url}")
endif()
if(_once_dynamo_built)
  list(APPEND _once_conf_backends "dynamodb|${_once_dynamo_url}")
  list(APPEND _once_conf_shared_env ${_once_dynamo_env})
endif()
foreach(entry ${_once_conf_backends})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 backend)
  list(GET parts 1 shared_url)
  add_test(NAME conformance/onced/${backend}
           COMMAND ${PYTHON3} ${_once_conf_driver} "${shared_url}")
  set_tests_properties(conformance/onced/${backend} PROPERTIES
                       FIXTURES_REQUIRED once_services TIMEOUT 180
                       LABELS "conformance;storepg" ENVIRONMENT "${_once_conf_shared_env}")
endforeach()

# The gateway and the negative control need Node.js and the SDK
# (tests/interop): without them they fail, never skip.
if(NODE_EXECUTABLE)
  foreach(mode gateway negative)
    add_test(NAME conformance/${mode} COMMAND ${PYTHON3} ${_once_conf_driver} ${mode})
    set_tests_properties(conformance/${mode} PROPERTIES TIMEOUT 180
                         LABELS conformance ENVIRONMENT "${_once_conf_env}")
  endforeach()
else()
  foreach(mode gateway negative)
    add_test(NAME conformance/${mode}
             COMMAND sh -c "echo 'conformance/${mode}: node (Node.js 20+) not found; run scripts/deps.sh' >&2; exit 1")
    set_tests_properties(conformance/${mode} PROPERTIES LABELS conformance)
  endforeach()
endif()
