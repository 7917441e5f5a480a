# The task inspector in a real browser: Debian's headless Chromium driven by
# puppeteer-core (tests/browser/package.json) against onced --inspect: the
# demo story's task and a takeover between two replicas. Exit 77
# (skipped) where Node, puppeteer-core or Chromium is absent; scripts/deps.sh
# installs all three. ONCE_SCREENSHOT=PATH in the environment saves the story
# task's page there (demo/inspector.png).
find_program(NODE_EXECUTABLE NAMES node nodejs)
if(NODE_EXECUTABLE)
  add_test(NAME browser/inspector
           COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/browser/inspector.mjs
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/browser)
else()
  add_test(NAME browser/inspector
           COMMAND sh -c "echo 'browser/inspector: node not found; run scripts/deps.sh' >&2; exit 77")
endif()
set_tests_properties(browser/inspector PROPERTIES TIMEOUT 180 LABELS browser SKIP_RETURN_CODE 77
  ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced")
