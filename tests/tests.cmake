# Test registration. Unit tests: every tests/unit/test_*.c is one cmocka
# program and one ctest. Other layers register themselves in their own
# tests/<layer>/tests.cmake so that each layer owns its file.

file(GLOB ONCE_UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/test_*.c)
foreach(src ${ONCE_UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests
                             ${ONCE_PROTO_GEN})
  # Files the tests share with other checkers (conformance/vectors/).
  target_compile_definitions(${name} PRIVATE ONCE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_link_libraries(${name} PRIVATE libonce PkgConfig::CMOCKA)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME unit/${name} COMMAND ${name})
  set_tests_properties(unit/${name} PROPERTIES TIMEOUT 120 LABELS unit)
endforeach()

# apps/cli/opt.c (the programs' option tables) is no part of libonce: its
# test builds it in.
target_sources(test_apps_opt PRIVATE ${CMAKE_SOURCE_DIR}/apps/cli/opt.c)
target_include_directories(test_apps_opt PRIVATE ${CMAKE_SOURCE_DIR}/apps)

file(GLOB ONCE_TEST_LAYERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/*/tests.cmake)
foreach(layer ${ONCE_TEST_LAYERS})
  include(${layer})
endforeach()

# Tests that need an optional part this build left out (-DONCE_TLS=OFF;
# the store backends' own tests are not registered at
# all, tests/storepg/services.cmake) are disabled, and configure says why:
# ctest lists them as "Not Run (Disabled)" and counts them neither passed
# nor failed. A test with only some such cases passes over those itself,
# saying so (harness.py's needs()).
set(ONCE_TEST_NEEDS "e2e/test_tls=tls")
foreach(entry ${ONCE_TEST_NEEDS})
  string(REPLACE "=" ";" entry "${entry}")
  list(GET entry 0 _once_t)
  list(GET entry 1 _once_part)
  if(TEST ${_once_t} AND NOT _once_part IN_LIST ONCE_BUILT)
    set_tests_properties(${_once_t} PROPERTIES DISABLED TRUE)
    message(STATUS "${_once_t}: disabled, it needs ${_once_part} (left out of this build)")
  endif()
endforeach()

# The minimal build's tests (scripts/run-tests.sh runs only these in a tree
# whose ONCE_TEST_LABELS says "minimal", as `make test`'s build-minimal
# does): the unit tests, the store conformance suite on the two stores every
# build has, SQLite's basics, the build-options smoke test
# (e2e/test_build_options: --help and the refusals match what was built)
# and packaging/notify (without libsystemd onced runs and tells nothing).
get_property(_once_all_tests DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTY TESTS)
foreach(t ${_once_all_tests})
  if(t MATCHES "^(unit/|store/conformance/(memory|sqlite)$|sqlite/basics$|e2e/test_build_options$|packaging/notify$)")
    set_property(TEST ${t} APPEND PROPERTY LABELS minimal)
  endif()
endforeach()
