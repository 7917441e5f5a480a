/*
 * fenced_write.c -- a worker's fenced write from outside onced
 * (build/tools/fenced_write): publish one artifact on a task, holding the
 * fence the worker was handed (ONCE_FENCE), through the engine's fenced
 * write (once__engine_external_artifact, src/engine/external.c) on the shared
 * store. The demo's background analysis uses it to write its half-result.
 *
 *   fenced_write --store URL --task ID --fence N --artifact JSON
 *                [--principal P] [--append] [--last-chunk]
 *
 * --task and --fence default to $ONCE_TASK_ID and $ONCE_FENCE. Prints one
 * JSON line: {"result":"written","generation":G,"fence":N} or
 * {"result":"refused","error":"ONCE_EFENCED","fence":N,"storedFence":M,
 * "state":"TASK_STATE_..."} (any other error likewise, with its name).
 * Exit status: 0 written, 3 refused with ONCE_EFENCED, 1 any other refusal
 * or failure, 2 bad command line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "once/store.h"

static int usage(const char *why)
{
    fprintf(
        stderr,
        "fenced_write: %s\nusage: fenced_write --store URL --task ID --fence N --artifact JSON\n"
        "                    [--principal P] [--append] [--last-chunk]\n",
        why);
    return 2;
}

int main(int argc, char **argv)
{
    const char *store_url = NULL, *artifact = NULL, *fence_s = getenv("ONCE_FENCE");
    once_external_write w;
    memset(&w, 0, sizeof w);
    w.task_id = getenv("ONCE_TASK_ID");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--append") == 0) {
            w.append = 1;
            continue;
        }
        if (strcmp(a, "--last-chunk") == 0) {
            w.last_chunk = 1;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (v == NULL)
            return usage("every option but --append and --last-chunk takes a value");
        if (strcmp(a, "--store") == 0)
            store_url = v;
        else if (strcmp(a, "--task") == 0)
            w.task_id = v;
        else if (strcmp(a, "--fence") == 0)
            fence_s = v;
        else if (strcmp(a, "--artifact") == 0)
            artifact = v;
        else if (strcmp(a, "--principal") == 0)
            w.principal = v;
        else
            return usage("unknown option");
    }
    if (store_url == NULL || artifact == NULL || w.task_id == NULL || fence_s == NULL)
        return usage("--store, --artifact, --task (or ONCE_TASK_ID) and --fence (or ONCE_FENCE) "
                     "are required");
    char *end;
    errno = 0;
    long long fence = strtoll(fence_s, &end, 10);
    if (errno != 0 || end == fence_s || *end != '\0' || fence < 1)
        return usage("--fence: a positive number");
    w.fence = fence;
    w.artifact_json = artifact;

    char err[256] = "";
    once_store *s = NULL;
    if (once_store_open(store_url, NULL, &s, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "fenced_write: cannot open %s: %s\n", store_url, err);
        return 1;
    }
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.store = s;
    cfg.executor = once_executor_echo();
    cfg.replica_id = "fenced-write";
    once__engine *e = NULL;
    if (once__engine_new(&cfg, &e, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "fenced_write: %s\n", err);
        once_store_close(s);
        return 1;
    }
    once_external_result r;
    int rc = once__engine_external_artifact(e, &w, &r);
    if (rc == ONCE_OK) {
        printf("{\"result\":\"written\",\"generation\":%lld,\"fence\":%lld}\n",
               (long long)r.generation, fence);
    } else {
        printf("{\"result\":\"refused\",\"error\":\"%s\",\"fence\":%lld,\"storedFence\":%lld,"
               "\"state\":\"%s\"}\n",
               once_errname(rc), fence, (long long)r.stored_fence,
               r.state != ONCE_STATE_UNKNOWN ? once_state_name(r.state) : "");
        fprintf(stderr, "fenced_write: %s: %s\n", w.task_id, once_strerror(rc));
    }
    fflush(stdout);
    once__engine_free(e);
    once_store_close(s);
    return rc == ONCE_OK ? 0 : rc == ONCE_EFENCED ? 3 : 1;
}
