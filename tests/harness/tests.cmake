# Harness hygiene: every harness the project ships (the demo, make amplify,
# the test helpers, the two bench scripts, the soak) is stopped mid-run and
# must leave no process behind (tests/harness/test_cleanup.py; each case in
# its quick mode, stopped as soon as it is mid-way).
include_guard(GLOBAL)
include(${CMAKE_SOURCE_DIR}/tests/storepg/services.cmake)
find_program(PYTHON3 python3 REQUIRED)

set(_once_cleanup_env
    "ONCE_BUILD=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
foreach(case demo-int demo-kill amplify-term helpers-kill bench-run-kill bench-backends-term)
  add_test(NAME harness/cleanup/${case}
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_cleanup.py ${case})
  set_tests_properties(harness/cleanup/${case} PROPERTIES TIMEOUT 300 LABELS harness
                       ENVIRONMENT "${_once_cleanup_env}")
endforeach()
# The interop script is node's (tests/interop/tests.cmake: a missing node is
# a failure there).
find_program(NODE_EXECUTABLE NAMES node nodejs)
if(NODE_EXECUTABLE)
  add_test(NAME harness/cleanup/interop-kill
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_cleanup.py interop-kill)
  set_tests_properties(harness/cleanup/interop-kill PROPERTIES TIMEOUT 300 LABELS harness
                       ENVIRONMENT "${_once_cleanup_env};NODE=${NODE_EXECUTABLE}")
endif()
# The soak runs on the shared test PostgreSQL (fixture "once_services").
if(_once_pg_built)
  add_test(NAME harness/cleanup/soak-term
           COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_cleanup.py soak-term "${_once_pg_url}")
  set_tests_properties(harness/cleanup/soak-term PROPERTIES
                       FIXTURES_REQUIRED once_services TIMEOUT 300 LABELS "harness;storepg"
                       ENVIRONMENT "${_once_cleanup_env}")
endif()
