# The gRPC binding's message layer, checked against protobuf's own tools:
# proto/a2a.proto against the specification's normative a2a.proto (wire
# facts), and the ProtoJSON and status codecs against protobuf's Python
# runtime. Both need protoc and a python3 with Debian's python3-protobuf,
# and exit 77 (skipped) without them.
find_program(PYTHON3 python3 REQUIRED)
set(ONCE_A2A_SPEC_PROTO "${CMAKE_SOURCE_DIR}/../shared/a2a-tck/specification/a2a.proto"
    CACHE FILEPATH "The normative a2a.proto grpc/proto_matches compares proto/a2a.proto with")
# The first python3 that can import google.protobuf (a pyenv shim ahead of
# /usr/bin on PATH may not).
set(_once_pb_python ${PYTHON3})
foreach(py ${PYTHON3} /usr/bin/python3)
  execute_process(COMMAND ${py} -c "import google.protobuf" RESULT_VARIABLE _once_rc
                  OUTPUT_QUIET ERROR_QUIET)
  if(_once_rc EQUAL 0)
    set(_once_pb_python ${py})
    break()
  endif()
endforeach()
add_test(NAME grpc/proto_matches
         COMMAND ${_once_pb_python} ${CMAKE_CURRENT_LIST_DIR}/proto_matches.py
                 ${CMAKE_SOURCE_DIR}/proto/a2a.proto ${ONCE_A2A_SPEC_PROTO})
set_tests_properties(grpc/proto_matches PROPERTIES LABELS grpc TIMEOUT 120 SKIP_RETURN_CODE 77)
add_test(NAME grpc/pbjson_vs_python
         COMMAND ${_once_pb_python} ${CMAKE_CURRENT_LIST_DIR}/pbjson_vs_python.py
                 $<TARGET_FILE:pbjson_tool> ${CMAKE_SOURCE_DIR})
set_tests_properties(grpc/pbjson_vs_python PROPERTIES LABELS grpc TIMEOUT 300 SKIP_RETURN_CODE 77)

# The gRPC transport (src/grpc/h2*.c) and the binding (test_a2a_grpc: onced
# --grpc-listen) against real peers: grpcio (Debian's
# python3-grpcio) for calls, hyper-h2 (python3-h2) for raw frames and the
# abuse cases, each against tests/tools/grpc_echo. These need a python3
# that imports both: the one on PATH, else Debian's own /usr/bin/python3
# (a python3 from pyenv or a venv does not see Debian's packages). Without
# one the tests exit 77 (skipped) naming scripts/deps.sh.
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
    ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_TOOLS=${CMAKE_BINARY_DIR}/tools;ONCE_BUILD=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
endforeach()
