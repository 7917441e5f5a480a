#!/usr/bin/env bash
# Keep banned C functions out of the tree (curl's checksrc habit): strcpy,
# strcat, sprintf, vsprintf, gets, atoi, atol, strtok. Exits 1 listing each hit.
# npm packages the tests install (node_modules) are not ours and not checked.
# Also parses (bash -n) the shell scripts of bench/, scripts/ and demo/: the
# benchmarks run nowhere in the suite, so a syntax slip would wait for the
# next `make bench`.
set -uo pipefail
cd "$(dirname "$0")/.."
hits=$(grep -rnE '(^|[^A-Za-z0-9_])(strcpy|strcat|sprintf|vsprintf|gets|atoi|atol|atoll|strtok)[[:space:]]*\(' \
        --include='*.c' --include='*.h' --exclude-dir=node_modules \
        src apps include tests examples demo bench 2>/dev/null \
      | grep -vE '(snprintf|vsnprintf)[[:space:]]*\(' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(\*|//)')
if [ -n "$hits" ]; then
  echo "banned functions used:"
  echo "$hits"
  exit 1
fi
bad=0 nsh=0
for f in bench/*.sh scripts/*.sh demo/*.sh; do
  bash -n "$f" || bad=1
  nsh=$((nsh + 1))
done
[ "$bad" -eq 0 ] || { echo "shell scripts that do not parse (above)"; exit 1; }
n=$(find src apps include -name '*.[ch]' 2>/dev/null | wc -l)
echo "checksrc: $n files clean; $nsh shell scripts parse"
