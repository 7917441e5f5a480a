# The A2A 1.0 conformance suite (../shared/a2a-tck beside the source tree) against
# onced with the suite's scenario agent: tests/tck/run_tck.py. Exit 77 (skipped)
# where the suite is absent. ONCE_TCK_TRANSPORTS lists the bindings it checks
# (the environment variable of the same name wins when the test runs).
set(ONCE_TCK_TRANSPORTS "jsonrpc" CACHE STRING
    "A2A bindings the conformance suite test checks (comma list: jsonrpc,http_json)")
find_program(PYTHON3 python3 REQUIRED)
add_test(NAME tck/must COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/tck/run_tck.py)
set_tests_properties(tck/must PROPERTIES TIMEOUT 1200 LABELS tck SKIP_RETURN_CODE 77
  ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_TCK_SCRIPT=${CMAKE_SOURCE_DIR}/../shared/a2a-tck.sh;ONCE_TCK_DEFAULT_TRANSPORTS=${ONCE_TCK_TRANSPORTS};ONCE_TCK_HOME=${CMAKE_BINARY_DIR}/tck-home")
