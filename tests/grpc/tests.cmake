# The gRPC transport (src/grpc/h2*.c) against real peers: grpcio (Debian's
# python3-grpcio) for calls, hyper-h2 (python3-h2) for raw frames and the
# abuse cases, each against tests/tools/grpc_echo. These need a python3
# that imports both: the one on PATH, else Debian's own /usr/bin/python3
# (a python3 from pyenv or a venv does not see Debian's packages). Without
# one the tests exit 77 (skipped) naming scripts/deps.sh.
find_program(PYTHON3 python3 REQUIRED)
set(_once_grpc_py "")
foreach(py ${PYTHON3} /usr/bin/python3)
  if(NOT _once_grpc_py AND EXISTS ${py})
    execute_process(COMMAND ${py} -c "import grpc, h2" RESULT_VARIABLE _once_grpc_rc
                    OUTPUT_QUIET ERROR_QUIET)
    if(_once_grpc_rc EQUAL 0)
      set(_once_grpc_py ${py})
    endif()
  endif()
endforeach()
file(GLOB ONCE_GRPC_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/grpc/test_*.py)
foreach(src ${ONCE_GRPC_TESTS})
  get_filename_component(name ${src} NAME_WE)
  if(_once_grpc_py)
    add_test(NAME grpc/${name} COMMAND ${_once_grpc_py} ${src})
  else()
    add_test(NAME grpc/${name}
             COMMAND sh -c "echo 'grpc/${name}: no python3 with grpc and h2; run scripts/deps.sh' >&2; exit 77")
  endif()
  set_tests_properties(grpc/${name} PROPERTIES TIMEOUT 300 LABELS grpc SKIP_RETURN_CODE 77
    ENVIRONMENT "ONCE_TOOLS=${CMAKE_BINARY_DIR}/tools;ONCE_BUILD=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
endforeach()
