# The DynamoDB store backend against dynalite (DynamoDB's API on LevelDB,
# npm, tests/dynamo), which scripts/test-services.sh starts with the
# PostgreSQL and Redis test servers (ctest fixture "once_services",
# tests/storepg/tests.cmake):
#   store/conformance/dynamodb   the store conformance suite, unchanged
#                                (tests/store/conformance.c); reset=1 empties
#                                the table before every case
#   storedynamo/backend          what only this backend has: the missing
#                                table / index messages, the 400 KB item
#                                limit, a tombstone past its TTL still
#                                present, the commit rule, the credentials
#                                order, the metrics row, record writes racing
#                                push claims and acks, throttling and adding
#                                an index (against a fake endpoint: dynalite
#                                never throttles nor adds an index), the
#                                upgrade of a layout-1 table's records
#                                (tests/storedynamo/backend.c)
# The restart of dynalite under load, two and three replicas on one table
# and push delivery across replicas are in tests/replicas. Not registered
# without node (services.cmake says so).
include(${CMAKE_SOURCE_DIR}/tests/storepg/services.cmake)
if(NOT _once_dynamo_built)
  return()
endif()

add_executable(storedynamo_backend ${CMAKE_CURRENT_LIST_DIR}/backend.c)
target_include_directories(storedynamo_backend PRIVATE ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(storedynamo_backend PRIVATE libonce PkgConfig::CMOCKA)
set_target_properties(storedynamo_backend PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                      ${CMAKE_BINARY_DIR}/tests)

string(REPLACE "dynamodb://once?" "dynamodb://conformance?" _once_dynamo_conf_url
       "${_once_dynamo_url}&reset=1")
add_test(NAME store/conformance/dynamodb COMMAND store_conformance "${_once_dynamo_conf_url}")
add_test(NAME storedynamo/backend COMMAND storedynamo_backend "${_once_dynamo_url}")
set_tests_properties(store/conformance/dynamodb storedynamo/backend PROPERTIES
                     FIXTURES_REQUIRED once_services ENVIRONMENT "${_once_dynamo_env}"
                     TIMEOUT 120 LABELS "store;storepg;storedynamo")
