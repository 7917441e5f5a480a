# Process-level tests: every tests/e2e/test_*.py starts real onced processes
# (tests/e2e/harness.py) and talks A2A 1.0 JSON-RPC to them over loopback.
find_program(PYTHON3 python3 REQUIRED)
file(GLOB ONCE_E2E_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/e2e/test_*.py)
foreach(src ${ONCE_E2E_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME e2e/${name} COMMAND ${PYTHON3} ${src})
  set_tests_properties(e2e/${name} PROPERTIES TIMEOUT 300 LABELS e2e
    ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_TOOLS=${CMAKE_BINARY_DIR}/tools;ONCE_BUILD=${CMAKE_BINARY_DIR}")
endforeach()

# test_metrics once more per networked store, on the shared test servers
# (fixture "once_services", tests/storepg): the connection pools' gauges.
include(${CMAKE_SOURCE_DIR}/tests/storepg/services.cmake)
foreach(backend ${_once_pooled_backends})
  add_test(NAME e2e/test_metrics/${backend}
           COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/e2e/test_metrics.py "${_once_url_${backend}}")
  set_tests_properties(e2e/test_metrics/${backend} PROPERTIES TIMEOUT 120
    LABELS "e2e;storepg" FIXTURES_REQUIRED once_services
    ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_TOOLS=${CMAKE_BINARY_DIR}/tools;ONCE_BUILD=${CMAKE_BINARY_DIR}")
endforeach()
