# The store layer: one conformance suite run against every backend, plus
# process-level tests on the embedded SQLite store (several processes on one
# file; a writer killed with SIGKILL at random moments).
set(ONCE_STORE_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

foreach(prog conformance race_procs kill9)
  set(exe store_${prog})
  add_executable(${exe} ${ONCE_STORE_TEST_DIR}/${prog}.c)
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(${exe} PRIVATE libonce PkgConfig::CMOCKA)
  set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
endforeach()

# argv[1] is the store URL; "sqlite:" = a fresh temporary file per case.
add_test(NAME store/conformance/memory COMMAND store_conformance memory:)
add_test(NAME store/conformance/sqlite COMMAND store_conformance sqlite:)
add_test(NAME store/race_procs COMMAND store_race_procs)
add_test(NAME store/kill9 COMMAND store_kill9)
set_tests_properties(store/conformance/memory store/conformance/sqlite store/race_procs store/kill9
                     PROPERTIES TIMEOUT 120 LABELS store)
