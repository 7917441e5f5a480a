/*
 * tiny_client.c -- the smallest program on libonce's client API, built by
 * tests/packaging/test_install.py against an installed tree (public headers
 * and the installed library only).
 *
 *   tiny_client URL TEXT   sends TEXT as a new task through an in-memory
 *                          outbox, waits until the task is finished or asks
 *                          for input, and prints "<outcome> <state> <task id>"
 *
 * Exit status 0 when the agent answered, 1 otherwise.
 */
#include <stdio.h>

#include "once/client.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tiny_client URL TEXT\n");
        return 2;
    }
    char err[256] = "", parts[512];
    snprintf(parts, sizeof parts, "[{\"text\":\"%s\"}]", argv[2]);
    once_client_config cfg = {.outbox_path = NULL};   /* in memory */
    once_client *c = NULL;
    if (once_client_new(&cfg, &c, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "tiny_client: %s\n", err);
        return 1;
    }
    once_send_spec s = {.agent = argv[1], .parts_json = parts};
    once_call_result r = {0};
    int rc = once_client_send(c, &s, &r);
    if (rc == ONCE_OK && r.outcome == ONCE_OUTCOME_OK && !r.is_message) {
        char id[ONCE_ID_MAX + 1];
        snprintf(id, sizeof id, "%s", r.task_id);
        once_call_result_clear(&r);
        rc = once_client_wait(c, argv[1], id, 0, NULL, NULL, &r);
    }
    printf("%s %s %s\n", once_outcome_name(r.outcome), once_state_name(r.state), r.task_id);
    if (rc != ONCE_OK)
        fprintf(stderr, "tiny_client: %s\n", r.error ? r.error : once_strerror(rc));
    int status = rc == ONCE_OK && r.outcome == ONCE_OUTCOME_OK ? 0 : 1;
    once_call_result_clear(&r);
    once_client_free(c);
    return status;
}
