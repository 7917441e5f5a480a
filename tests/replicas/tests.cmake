# Several onced processes on one shared store (issue 6), each program run
# once per backend (DynamoDB on dynalite, tests/storedynamo):
#   replicas/replicas/{postgres,redis,dynamodb}  tests/replicas/test_replicas.py
#       3 replicas on the shared test servers (fixture "once_services",
#       tests/storepg), a fresh schema / key prefix per run: duplicate retries
#       spread over the replicas make one task each; kill -9 of a replica
#       under load: its leased tasks are taken over and complete once
#   replicas/push/{postgres,redis,dynamodb}      tests/replicas/test_push_replicas.py
#       2 replicas delivering webhooks into tests/tools/webhook_sink: kill -9
#       of the delivering replica mid-delivery, the other one completes it
#       after the lease; many tasks on both replicas: every event handled
#       once, in order
#   replicas/feed/{postgres,redis,dynamodb,sqlite} tests/replicas/test_feed.py
#       2 replicas: a thousand idle streams on one cost the store ~nothing
#       (the change feed, or the shared poller, tells of the other's
#       writes); a feed session killed by the server loses no event
#   replicas/outage/{postgres,redis,dynamodb}    tests/replicas/test_outage.py
#       restart of the store under load, on a server of the test's own
#       (restarting the shared one would break the tests using it): no
#       acknowledged task lost, none executed twice, 503 + Retry-After
#       during the outage, retries converge
# The programs import tests/e2e/harness.py and take the store URL in argv[1].
include(${CMAKE_SOURCE_DIR}/tests/storepg/services.cmake)
find_program(PYTHON3 python3 REQUIRED)

set(_once_replica_env
    "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_TOOLS=${CMAKE_BINARY_DIR}/tools;ONCE_BUILD=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
set(_once_replica_backends)
if(_once_pg_built)
  list(APPEND _once_replica_backends "postgres|${_once_pg_url}")
endif()
if(_once_redis_built)
  list(APPEND _once_replica_backends "redis|${_once_redis_url}")
endif()
if(_once_dynamo_built)
  list(APPEND _once_replica_backends "dynamodb|${_once_dynamo_url}")
  list(APPEND _once_replica_env ${_once_dynamo_env}
       "ONCE_DYNALITE=${CMAKE_SOURCE_DIR}/tests/dynamo/node_modules/dynalite/cli.js")
endif()

foreach(entry ${_once_replica_backends})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 backend)
  list(GET parts 1 shared_url)
  add_test(NAME replicas/replicas/${backend}
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_replicas.py "${shared_url}")
  set_tests_properties(replicas/replicas/${backend} PROPERTIES
                       FIXTURES_REQUIRED once_services TIMEOUT 120
                       LABELS "replicas;storepg" ENVIRONMENT "${_once_replica_env}")
  add_test(NAME replicas/push/${backend}
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_push_replicas.py "${shared_url}")
  set_tests_properties(replicas/push/${backend} PROPERTIES
                       FIXTURES_REQUIRED once_services TIMEOUT 60
                       LABELS "replicas;storepg" ENVIRONMENT "${_once_replica_env}")
  # DynamoDB (dynalite, an emulator) with fewer streams: each task costs it
  # milliseconds to register.
  set(_once_feed_env ${_once_replica_env})
  if(backend STREQUAL "dynamodb")
    list(APPEND _once_feed_env "ONCE_FEED_STREAMS=200")
  endif()
  add_test(NAME replicas/feed/${backend}
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_feed.py "${shared_url}")
  set_tests_properties(replicas/feed/${backend} PROPERTIES
                       FIXTURES_REQUIRED once_services TIMEOUT 180
                       LABELS "replicas;storepg" ENVIRONMENT "${_once_feed_env}")
  # The outage test starts (and restarts) its own server: argv[1] only names
  # the backend.
  add_test(NAME replicas/outage/${backend}
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_outage.py ${backend})
  set_tests_properties(replicas/outage/${backend} PROPERTIES TIMEOUT 120
                       LABELS "replicas;storepg" ENVIRONMENT "${_once_replica_env}")
endforeach()

# The shared poller on SQLite: two replicas on one file (no server needed).
add_test(NAME replicas/feed/sqlite
         COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_feed.py "sqlite:")
set_tests_properties(replicas/feed/sqlite PROPERTIES TIMEOUT 180
                     LABELS "replicas" ENVIRONMENT "${_once_replica_env}")

