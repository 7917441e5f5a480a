# The task inspector in a real browser: Debian's headless Chromium driven by
# puppeteer-core (tests/browser/package.json) against onced --inspect: the
# demo story's task and a takeover between two replicas. Exit 77
# (skipped) where Node, puppeteer-core or Chromium is absent; scripts/deps.sh
# installs all three. The pictures in docs/img are made by
# scripts/inspector-screenshots.sh (tests/browser/screenshots.mjs), not here.
#
# browser/csrf: a page of another loopback origin tries every request a page
# can send to onced without a preflight (tests/browser/csrf.mjs); nothing is
# registered; with --cors-origin the page's JSON calls are answered.
find_program(NODE_EXECUTABLE NAMES node nodejs)
foreach(t inspector csrf)
  if(NODE_EXECUTABLE)
    add_test(NAME browser/${t}
             COMMAND ${NODE_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/browser/${t}.mjs
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/browser)
  else()
    add_test(NAME browser/${t}
             COMMAND sh -c "echo 'browser/${t}: node not found; run scripts/deps.sh' >&2; exit 77")
  endif()
  set_tests_properties(browser/${t} PROPERTIES TIMEOUT 180 LABELS browser SKIP_RETURN_CODE 77
    ENVIRONMENT "ONCED=${CMAKE_BINARY_DIR}/onced")
endforeach()
