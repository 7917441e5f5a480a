# The shared-server store backends (PostgreSQL, Redis) against real servers
# on loopback: scripts/test-services.sh starts a throwaway PostgreSQL 15 and
# Redis 7 (and the dynalite of tests/storedynamo) for this build directory
# (ctest fixture "once_services"), then
#   store/conformance/postgres, store/conformance/redis
#       the store conformance suite (tests/store/conformance.c, unchanged);
#       reset=1 makes every case start from an empty schema / key prefix
#   storepg/backend/postgres, storepg/backend/redis
#       what only a networked backend has: outage -> ONCE_ESTORE and
#       recovery, dropped connections, concurrent first opens, check() on
#       damaged data (tests/storepg/backend.c)
# Ports are derived from the build directory so that two build trees (e.g.
# build and build-asan, or several developers' trees) can test at once
# (services.cmake, shared with tests/replicas which requires the fixture too).
include(${CMAKE_CURRENT_LIST_DIR}/services.cmake)
if(NOT _once_pg_built AND NOT _once_redis_built AND NOT _once_dynamo_built)
  return()
endif()

# The fixture names what this build tests: each of those must start (the
# script, given no names, would start what it can and go on).
set(_once_svc_names)
if(_once_pg_built)
  list(APPEND _once_svc_names postgres)
endif()
if(_once_redis_built)
  list(APPEND _once_svc_names redis)
endif()
if(_once_dynamo_built)
  list(APPEND _once_svc_names dynamodb)
endif()
add_test(NAME storepg/services/start
         COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/test-services.sh start ${_once_svc_names})
add_test(NAME storepg/services/stop
         COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/test-services.sh stop)
set_tests_properties(storepg/services/start PROPERTIES FIXTURES_SETUP once_services
                     ENVIRONMENT "${_once_svc_env}" TIMEOUT 120 LABELS "store;storepg")
set_tests_properties(storepg/services/stop PROPERTIES FIXTURES_CLEANUP once_services
                     ENVIRONMENT "${_once_svc_env}" TIMEOUT 60 LABELS "store;storepg")

add_executable(storepg_backend ${CMAKE_CURRENT_LIST_DIR}/backend.c)
target_include_directories(storepg_backend PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(storepg_backend PRIVATE libonce PkgConfig::CMOCKA)
set_target_properties(storepg_backend PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

set(_once_storepg_tests)
if(_once_pg_built)
  add_test(NAME store/conformance/postgres
           COMMAND store_conformance "${_once_pg_url}?schema=conformance&reset=1")
  add_test(NAME storepg/backend/postgres COMMAND storepg_backend "${_once_pg_url}")
  list(APPEND _once_storepg_tests store/conformance/postgres storepg/backend/postgres)
endif()
if(_once_redis_built)
  add_test(NAME store/conformance/redis
           COMMAND store_conformance "${_once_redis_url}?prefix=conformance&reset=1")
  add_test(NAME storepg/backend/redis COMMAND storepg_backend "${_once_redis_url}")
  list(APPEND _once_storepg_tests store/conformance/redis storepg/backend/redis)
  # backend.c reads the Redis server's own client counts (INFO clients) to
  # see a batch form and share one connection: no other test may connect
  # to that server meanwhile.
  set_tests_properties(storepg/backend/redis PROPERTIES RUN_SERIAL ON)
endif()
set_tests_properties(${_once_storepg_tests} PROPERTIES FIXTURES_REQUIRED once_services
                     TIMEOUT 60 LABELS "store;storepg")

# The script itself: without PostgreSQL and dynalite, start starts Redis
# alone and says what it could not start (its own ports and folder).
find_program(PYTHON3 python3 REQUIRED)
add_test(NAME storepg/services/partial
         COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_services.py)
set_tests_properties(storepg/services/partial PROPERTIES TIMEOUT 120 LABELS "store;storepg"
                     SKIP_RETURN_CODE 77)
