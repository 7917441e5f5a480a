# Interop: the real A2A peer, @a2a-js/sdk 1.3.0 (tests/interop/package.json),
# drives a real onced over loopback. The script starts its own onced from
# $ONCED. Missing Node or a missing SDK is a failure, never a skip: the
# interop claim must not pass silently on a machine that cannot check it.
find_program(NODE_EXECUTABLE NAMES node nodejs)
if(NODE_EXECUTABLE)
  add_test(NAME interop/js_client
           COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/interop/client_vs_onced.mjs
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/interop)
  add_test(NAME interop/js_client_server_ids
           COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/interop/client_vs_onced.mjs
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/interop)
  add_test(NAME interop/js_v03_client
           COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/interop/v03_client_vs_onced.mjs
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/interop)
  add_test(NAME interop/js_v03_rest
           COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/interop/v03_rest_vs_onced.mjs
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/interop)
  add_test(NAME interop/js_grpc_client
           COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/interop/grpc_client_vs_onced.mjs
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/interop)
  add_test(NAME interop/js_server
           COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/interop/server_vs_once.mjs
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/interop)
  add_test(NAME interop/upstream_agent
           COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/interop/upstream_agent_check.mjs
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/interop)
else()
  add_test(NAME interop/js_client
           COMMAND sh -c "echo 'interop/js_client: node (Node.js 20+) not found; run scripts/deps.sh' >&2; echo '0 passed, 1 failed'; exit 1")
  add_test(NAME interop/js_client_server_ids
           COMMAND sh -c "echo 'interop/js_client_server_ids: node (Node.js 20+) not found; run scripts/deps.sh' >&2; echo '0 passed, 1 failed'; exit 1")
  add_test(NAME interop/js_v03_client
           COMMAND sh -c "echo 'interop/js_v03_client: node (Node.js 20+) not found; run scripts/deps.sh' >&2; echo '0 passed, 1 failed'; exit 1")
  add_test(NAME interop/js_v03_rest
           COMMAND sh -c "echo 'interop/js_v03_rest: node (Node.js 20+) not found; run scripts/deps.sh' >&2; echo '0 passed, 1 failed'; exit 1")
  add_test(NAME interop/js_grpc_client
           COMMAND sh -c "echo 'interop/js_grpc_client: node (Node.js 20+) not found; run scripts/deps.sh' >&2; echo '0 passed, 1 failed'; exit 1")
  add_test(NAME interop/js_server
           COMMAND sh -c "echo 'interop/js_server: node (Node.js 20+) not found; run scripts/deps.sh' >&2; echo '0 passed, 1 failed'; exit 1")
  add_test(NAME interop/upstream_agent
           COMMAND sh -c "echo 'interop/upstream_agent: node (Node.js 20+) not found; run scripts/deps.sh' >&2; echo '0 passed, 1 failed'; exit 1")
endif()
set_tests_properties(interop/js_client PROPERTIES TIMEOUT 150 LABELS interop
  ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced")
# The same scenarios against onced --plain-ids server: a plain resend is a new task.
set_tests_properties(interop/js_client_server_ids PROPERTIES TIMEOUT 150 LABELS interop
  ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced;ONCE_PLAIN_IDS=server")
# The SDK's A2A 0.3 client transport (LegacyJsonRpcTransport) against onced's
# dual-stack JSON-RPC endpoint: the 0.3 methods and shapes on the 1.0 URL.
set_tests_properties(interop/js_v03_client PROPERTIES TIMEOUT 150 LABELS interop
  ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced")
# The SDK's A2A 0.3 REST transport (LegacyRestTransport) against onced's 0.3
# HTTP+JSON routes (/v1/...): 0.3's proto JSON shapes below the 1.0 URL.
set_tests_properties(interop/js_v03_rest PROPERTIES TIMEOUT 150 LABELS interop
  ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced")
# The SDK's gRPC client transport (GrpcTransport, @grpc/grpc-js) against
# onced --grpc-listen: A2A 1.0 section 10, lf.a2a.v1.A2AService, on memory:.
set_tests_properties(interop/js_grpc_client PROPERTIES TIMEOUT 150 LABELS interop
  ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced")
# The once client against an A2A 1.0 server built with the SDK (plain mode:
# the SDK's card does not declare the idempotency extension).
set_tests_properties(interop/js_server PROPERTIES TIMEOUT 90 LABELS interop
  ENVIRONMENT "ONCE_BUILD=${CMAKE_BINARY_DIR}")
# The upstream A2A peer the gateway (onced --upstream) is tested against,
# upstream_agent.mjs, checked on its own with the SDK's client: no onced needed.
set_tests_properties(interop/upstream_agent PROPERTIES TIMEOUT 150 LABELS interop)
