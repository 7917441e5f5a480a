# The gRPC binding's messages, generated at build time (nothing generated
# is committed): protoc-c compiles proto/a2a.proto and what it and the
# error codec import -- google/protobuf/{any,duration,empty,struct,timestamp}
# from libprotobuf-dev's /usr/include, google/rpc/{status,error_details}
# extracted from libgoogle-common-protos-java's jar at configure time,
# google/rpc/error_info.proto from proto/ --
# into ${ONCE_PROTO_GEN} (under the build tree's src/grpc/, so lint/layers
# counts the objects as the grpc layer's). The sources join libonce's
# objects, hidden like the rest of it (a2a.proto goes through
# proto3_optional.cmake first: Debian's protoc-c has no proto3 optional); code includes "a2a.pb-c.h",
# "google/rpc/status.pb-c.h" and so on.
#
# Sets ONCE_PROTO_SOURCES (the generated .c files), ONCE_PROTO_HEADERS (their
# .h files: listed among libonce's sources too, so that they exist before
# any object that includes them is compiled) and ONCE_PROTO_GEN (the include
# directory).
find_program(ONCE_PROTOC_C protoc-c REQUIRED)
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
find_path(ONCE_WKT_DIR google/protobuf/struct.proto PATHS /usr/include REQUIRED)
file(GLOB _once_common_protos_jar /usr/share/java/proto-google-common-protos*.jar)
if(NOT _once_common_protos_jar)
  message(FATAL_ERROR "google/rpc protos: /usr/share/java/proto-google-common-protos*.jar "
                      "not found (Debian package libgoogle-common-protos-java)")
endif()
list(GET _once_common_protos_jar 0 _once_common_protos_jar)

set(ONCE_PROTO_GEN ${CMAKE_BINARY_DIR}/src/grpc/proto)
set(_once_rpc_dir ${CMAKE_BINARY_DIR}/src/grpc/google-protos)
set(_once_rpc_protos google/rpc/status.proto google/rpc/error_details.proto)
file(MAKE_DIRECTORY ${ONCE_PROTO_GEN} ${_once_rpc_dir})
# Extracted again when the jar changes (CMake re-runs on its time stamp).
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_once_common_protos_jar})
execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf ${_once_common_protos_jar} ${_once_rpc_protos}
                WORKING_DIRECTORY ${_once_rpc_dir} RESULT_VARIABLE _once_rc)
if(NOT _once_rc EQUAL 0)
  message(FATAL_ERROR "could not extract ${_once_rpc_protos} from ${_once_common_protos_jar}")
endif()

# One protoc-c run per import root; each .proto gives NAME.pb-c.{c,h}.
set(ONCE_PROTO_SOURCES)
set(ONCE_PROTO_HEADERS)
function(once_protoc_c root)
  set(outs)
  set(ins)
  foreach(p ${ARGN})
    string(REGEX REPLACE "\\.proto$" "" stem ${p})
    list(APPEND outs ${ONCE_PROTO_GEN}/${stem}.pb-c.c ${ONCE_PROTO_GEN}/${stem}.pb-c.h)
    list(APPEND ins ${root}/${p})
    list(APPEND ONCE_PROTO_SOURCES ${ONCE_PROTO_GEN}/${stem}.pb-c.c)
    list(APPEND ONCE_PROTO_HEADERS ${ONCE_PROTO_GEN}/${stem}.pb-c.h)
  endforeach()
  add_custom_command(OUTPUT ${outs}
                     COMMAND ${ONCE_PROTOC_C} --c_out=${ONCE_PROTO_GEN} -I${root}
                             -I${_once_rpc_dir} -I${ONCE_WKT_DIR} ${ARGN}
                     WORKING_DIRECTORY ${root} DEPENDS ${ins}
                     COMMENT "protoc-c ${ARGN}" VERBATIM)
  set(ONCE_PROTO_SOURCES ${ONCE_PROTO_SOURCES} PARENT_SCOPE)
  set(ONCE_PROTO_HEADERS ${ONCE_PROTO_HEADERS} PARENT_SCOPE)
endfunction()
set(_once_a2a_dir ${CMAKE_BINARY_DIR}/src/grpc/a2a-proto)
add_custom_command(OUTPUT ${_once_a2a_dir}/a2a.proto
                   COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_SOURCE_DIR}/proto/a2a.proto
                           -DOUT=${_once_a2a_dir}/a2a.proto
                           -P ${CMAKE_SOURCE_DIR}/src/grpc/proto3_optional.cmake
                   DEPENDS ${CMAKE_SOURCE_DIR}/proto/a2a.proto
                           ${CMAKE_SOURCE_DIR}/src/grpc/proto3_optional.cmake
                   COMMENT "proto3 optional fields of a2a.proto as oneofs for protoc-c" VERBATIM)
file(MAKE_DIRECTORY ${_once_a2a_dir})
once_protoc_c(${_once_a2a_dir} a2a.proto)
once_protoc_c(${ONCE_WKT_DIR} google/protobuf/any.proto google/protobuf/duration.proto
              google/protobuf/empty.proto google/protobuf/struct.proto
              google/protobuf/timestamp.proto)
once_protoc_c(${_once_rpc_dir} ${_once_rpc_protos})
# google.rpc.ErrorInfo: Debian's error_details.proto is older than it
# (proto/google/rpc/error_info.proto says more).
once_protoc_c(${CMAKE_SOURCE_DIR}/proto google/rpc/error_info.proto)
