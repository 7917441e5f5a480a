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
