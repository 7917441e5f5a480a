# The sqlite backend's own tests (the conformance suite in tests/store runs
# against it too): URL/file/schema basics, the fault sweep over every
# wrapped sqlite3 call, group commit under 32 writer threads, the power-cut
# sweep through a VFS that drops every unsynced write, and group commit
# around a commit's fsync held (and failed) by that VFS's sync gate, and
# the engine's held write of a new task around that gate.
foreach(prog basics fault_sweep group_commit powerloss group_fsync held)
  set(exe sqlite_${prog})
  add_executable(${exe} ${CMAKE_CURRENT_LIST_DIR}/${prog}.c)
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(${exe} PRIVATE libonce PkgConfig::CMOCKA)
  target_compile_definitions(${exe} PRIVATE ONCE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  set_target_properties(${exe} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME sqlite/${prog} COMMAND ${exe})
  set_tests_properties(sqlite/${prog} PROPERTIES TIMEOUT 300 LABELS sqlite)
endforeach()
# The test VFS (vfs_shim.h).
target_sources(sqlite_powerloss PRIVATE ${CMAKE_CURRENT_LIST_DIR}/vfs_shim.c)
target_sources(sqlite_group_fsync PRIVATE ${CMAKE_CURRENT_LIST_DIR}/vfs_shim.c)
target_sources(sqlite_held PRIVATE ${CMAKE_CURRENT_LIST_DIR}/vfs_shim.c)
