# The PostgreSQL expired-lease scan (src/store/pg/pg_read.c) against the
# throwaway server of tests/storepg (ctest fixture "once_services"): what the
# store contract says of it ("Claiming is the caller's CAS") and no more, so
# the scan reads and never locks.
include(${CMAKE_SOURCE_DIR}/tests/storepg/services.cmake)
if(NOT _once_pg_built)
  return()
endif()

add_executable(storepg_leases ${CMAKE_CURRENT_LIST_DIR}/expired_leases.c)
target_include_directories(storepg_leases PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(storepg_leases PRIVATE libonce PkgConfig::CMOCKA PkgConfig::LIBPQ)
set_target_properties(storepg_leases PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME storepg/leases/postgres COMMAND storepg_leases "${_once_pg_url}")
set_tests_properties(storepg/leases/postgres PROPERTIES FIXTURES_REQUIRED once_services
                     TIMEOUT 60 LABELS "store;storepg")
