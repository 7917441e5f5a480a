# The chaos soak, short (tests/soak/README.md): one ctest per shared backend,
#   soak/postgres, soak/redis   tests/soak/soak.py --seconds 30 --clients 3
#       three onced replicas on the shared test server (fixture
#       "once_services", a fresh schema / key prefix per run), each behind a
#       response-losing proxy, killed with SIGKILL and restarted every few
#       seconds; once clients killed mid-send and recovered; one side effect
#       per task at a counting service. Every intent final, one task and one
#       applied effect per intent, no acknowledged task lost.
#   soak/gateway_postgres       the same, --gateway: the replicas are
#       `onced --upstream` in front of tests/interop/upstream_agent.mjs
#       (@a2a-js/sdk 1.3.0, answers held 300 ms) behind a proxy that loses
#       answers too: one upstream task and one applied side effect per intent.
#       Node and the SDK missing is a failure, never a skip (as interop/*).
# `make soak` runs the long version (SOAK_SECONDS, on servers of its own).
include_guard(GLOBAL)
include(${CMAKE_SOURCE_DIR}/tests/storepg/services.cmake)
find_program(PYTHON3 python3 REQUIRED)

set(_once_soak_env
    "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_TOOLS=${CMAKE_BINARY_DIR}/tools;ONCE_BUILD=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
set(_once_soak_backends)
if(_once_pg_built)
  list(APPEND _once_soak_backends "postgres|${_once_pg_url}")
endif()
if(_once_redis_built)
  list(APPEND _once_soak_backends "redis|${_once_redis_url}")
endif()

foreach(entry ${_once_soak_backends})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 backend)
  list(GET parts 1 shared_url)
  add_test(NAME soak/${backend}
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/soak.py --seconds 30 --clients 3
                   "${shared_url}")
  # 30 s of chaos, then the drain: usually a few seconds, bounded by
  # scaled timeouts (a sanitizer build's factor makes them longer).
  set_tests_properties(soak/${backend} PROPERTIES
                       FIXTURES_REQUIRED once_services TIMEOUT 480
                       LABELS "soak;storepg" ENVIRONMENT "${_once_soak_env}")
endforeach()

if(_once_pg_built)
  add_test(NAME soak/gateway_postgres
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/soak.py --seconds 30 --clients 3 --gateway
                   "${_once_pg_url}")
  set_tests_properties(soak/gateway_postgres PROPERTIES
                       FIXTURES_REQUIRED once_services TIMEOUT 480
                       LABELS "soak;storepg" ENVIRONMENT "${_once_soak_env}")
endif()
