# The sqlite backend's own tests (the conformance suite in tests/store runs
# against it too): URL/file/schema basics, the fault sweep over every
# wrapped sqlite3 call, group commit under 32 writer threads, and the
# power-cut sweep through a VFS that drops every unsynced write.
foreach(prog basics fault_sweep group_commit powerloss)
  set(exe sqlite_${prog})
  add_executable(${exe} ${CMAKE_CURRENT_LIST_DIR}/${prog}.c)
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(${exe} PRIVATE libonce PkgConfig::CMOCKA)
  set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME sqlite/${prog} COMMAND ${exe})
  set_tests_properties(sqlite/${prog} PROPERTIES TIMEOUT 300 LABELS sqlite)
endforeach()
