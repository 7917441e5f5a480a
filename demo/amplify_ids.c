/*
 * amplify_ids.c -- once_child_id() for the shell agents of the
 * amplification experiment (demo/amplify_agent.sh), which cannot call C.
 *
 *   amplify_ids PARENT STEP [STEP...]
 *
 * prints once_child_id(PARENT, STEP) for each STEP, space-separated, on one
 * line. The derivation is deterministic, so a parent turn that runs again
 * (a takeover, a crash) names the same children and they deduplicate.
 * Built by demo/amplify.sh against the build's libonce.a; not installed.
 * Exit status 0, or 2 for a bad argument.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "once/once.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fputs("usage: amplify_ids PARENT STEP [STEP...]\n", stderr);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        char *end;
        errno = 0;
        unsigned long long step = strtoull(argv[i], &end, 10);
        char id[ONCE_ID_MAX + 1];
        if (errno != 0 || end == argv[i] || *end != '\0' ||
            once_child_id(argv[1], step, id) != ONCE_OK) {
            fprintf(stderr, "amplify_ids: bad parent ID or step: %s %s\n", argv[1], argv[i]);
            return 2;
        }
        printf("%s%s", i > 2 ? " " : "", id);
    }
    putchar('\n');
    return 0;
}
