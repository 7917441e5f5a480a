# Source checks that run with the suite.
add_test(NAME lint/checksrc COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/checksrc.sh)
set_tests_properties(lint/checksrc PROPERTIES LABELS lint TIMEOUT 60)
# Layers only import downward: every symbol an object of libonce takes from
# another src/ directory, and every header a file of src/ includes, must be
# one its line in docs/architecture.md's ```layers block allows; the store's
# backends (```siblings) take nothing from each other.
add_test(NAME lint/layers
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/lint/layers.py
                 ${CMAKE_SOURCE_DIR}/docs/architecture.md ${CMAKE_SOURCE_DIR}
                 $<TARGET_OBJECTS:once_objects>
         COMMAND_EXPAND_LISTS)
set_tests_properties(lint/layers PROPERTIES LABELS lint TIMEOUT 120)
# ... and can fail: a small tree with wrong includes of each kind.
add_test(NAME lint/layers_selftest
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/lint/layers_selftest.py)
set_tests_properties(lint/layers_selftest PROPERTIES LABELS lint TIMEOUT 60)
# include/once/ is the whole API: no private include, libonce.so exports
# exactly what it declares.
add_test(NAME lint/public
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/lint/public.py ${CMAKE_SOURCE_DIR}/include
                 ${CMAKE_SOURCE_DIR}/examples $<TARGET_FILE:libonce_shared>)
set_tests_properties(lint/public PROPERTIES LABELS lint TIMEOUT 60)
