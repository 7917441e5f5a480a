# Source checks that run with the suite.
add_test(NAME lint/checksrc COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/checksrc.sh)
set_tests_properties(lint/checksrc PROPERTIES LABELS lint TIMEOUT 60)
