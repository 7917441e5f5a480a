# Packaging: what `cmake --install` puts in a prefix is enough to build and
# run an in-process agent and a client (pkg-config and find_package), the
# systemd unit passes systemd-analyze verify, the sample settings agree
# with its defaults, and the alert rules and the Grafana dashboard load and
# name only metrics onced exports.
find_program(PYTHON3 python3 REQUIRED)
set(_once_pkg_env "ONCE_BUILD=${CMAKE_BINARY_DIR};ONCE_SOURCE=${CMAKE_SOURCE_DIR}")
if(ONCE_ASAN)
  # libonce.so carries the sanitizers: what links it must too.
  list(APPEND _once_pkg_env "ONCE_CONSUMER_CFLAGS=-fsanitize=address,undefined")
elseif(ONCE_TSAN)
  list(APPEND _once_pkg_env "ONCE_CONSUMER_CFLAGS=-fsanitize=thread")
endif()
add_test(NAME packaging/install COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_install.py)
set_tests_properties(packaging/install PROPERTIES TIMEOUT 300 LABELS packaging
                     ENVIRONMENT "${_once_pkg_env}")
add_test(NAME packaging/notify COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_notify.py)
set_tests_properties(packaging/notify PROPERTIES TIMEOUT 120 LABELS packaging
                     ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced")
add_test(NAME packaging/man COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_man.py)
set_tests_properties(packaging/man PROPERTIES TIMEOUT 60 LABELS packaging
                     ENVIRONMENT "${_once_pkg_env}")
add_test(NAME packaging/unit COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_unit.py)
set_tests_properties(packaging/unit PROPERTIES TIMEOUT 120 LABELS packaging SKIP_RETURN_CODE 77
                     ENVIRONMENT "${_once_pkg_env}")
add_test(NAME packaging/env COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_env.py)
set_tests_properties(packaging/env PROPERTIES TIMEOUT 60 LABELS packaging
                     ENVIRONMENT "${_once_pkg_env}")
# The Debian packages (debian/): built from a copy of the tree, checked with
# lintian, installed into this machine, onced started from the installed
# unit, purged. It installs packages and creates a system user, so nothing
# runs beside it (RUN_SERIAL); it builds the tree again (parallel=2), so its
# bound is long. Not in the sanitizer builds: it uses no build directory,
# and the normal build's run already covers it.
if(NOT ONCE_ASAN AND NOT ONCE_TSAN)
  add_test(NAME packaging/deb COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_deb.py)
  set_tests_properties(packaging/deb PROPERTIES TIMEOUT 1200 LABELS packaging RUN_SERIAL TRUE
                       SKIP_RETURN_CODE 77 ENVIRONMENT "${_once_pkg_env}")
endif()
# On the shared test servers (fixture "once_services", tests/storepg): a
# store with connection pools, for the pool gauges the rules name.
include(${CMAKE_SOURCE_DIR}/tests/storepg/services.cmake)
set(_once_mon_args)
set(_once_mon_props)
if(_once_pooled_backends)
  list(GET _once_pooled_backends 0 _once_mon_backend)
  set(_once_mon_args "${_once_url_${_once_mon_backend}}")
  set(_once_mon_props FIXTURES_REQUIRED once_services)
endif()
add_test(NAME packaging/monitoring
         COMMAND ${PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_monitoring.py ${_once_mon_args})
set_tests_properties(packaging/monitoring PROPERTIES TIMEOUT 120 LABELS packaging
                     SKIP_RETURN_CODE 77 ${_once_mon_props}
                     ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_BUILD=${CMAKE_BINARY_DIR}")
