# libFuzzer targets, built with clang by tests/fuzz/run.sh and run for a
# bounded number of inputs over their committed seed corpus.
find_program(ONCE_CLANG clang)
if(ONCE_CLANG)
  # What the JSON reader and writer need of libonce.
  set(ONCE_FUZZ_JSON_SOURCES
      ${CMAKE_SOURCE_DIR}/src/core/jcs.c ${CMAKE_SOURCE_DIR}/src/core/jcs_num.c
      ${CMAKE_SOURCE_DIR}/src/core/alloc.c ${CMAKE_SOURCE_DIR}/src/core/hash.c
      ${CMAKE_SOURCE_DIR}/src/core/err.c)
  add_test(NAME fuzz/jcs
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run.sh jcs 200000 ${CMAKE_BINARY_DIR}/fuzz --
                   ${ONCE_FUZZ_JSON_SOURCES})
  set_tests_properties(fuzz/jcs PROPERTIES LABELS fuzz TIMEOUT 300)
  add_test(NAME fuzz/json_read
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run.sh json_read 200000
                   ${CMAKE_BINARY_DIR}/fuzz -- ${ONCE_FUZZ_JSON_SOURCES}
                   ${CMAKE_SOURCE_DIR}/src/core/json_read.c ${CMAKE_SOURCE_DIR}/src/core/quote.c)
  set_tests_properties(fuzz/json_read PROPERTIES LABELS fuzz TIMEOUT 300)
  # The gRPC message codec, with the generated messages it reads.
  file(GLOB _once_pbjson_sources ${CMAKE_SOURCE_DIR}/src/grpc/pbjson*.c)
  add_test(NAME fuzz/pbjson
           COMMAND env "FUZZ_EXTRA=-I${ONCE_PROTO_GEN} -lprotobuf-c"
                   bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run.sh pbjson 200000 ${CMAKE_BINARY_DIR}/fuzz --
                   ${ONCE_FUZZ_JSON_SOURCES} ${_once_pbjson_sources} ${ONCE_PROTO_SOURCES}
                   ${CMAKE_SOURCE_DIR}/src/core/base64.c ${CMAKE_SOURCE_DIR}/src/core/quote.c
                   ${CMAKE_SOURCE_DIR}/src/core/clock.c ${CMAKE_SOURCE_DIR}/src/core/decimal.c)
  set_tests_properties(fuzz/pbjson PROPERTIES LABELS fuzz TIMEOUT 300)
endif()
