/*
 * util.h -- helpers shared by the store test programs (conformance, the
 * process race, the kill -9 test): temporary SQLite files, record and event
 * builders. Header-only so each test program stays one file; nothing here
 * asserts, so it is safe to call from threads and forked children.
 */
#ifndef ONCE_TESTS_STORE_UTIL_H
#define ONCE_TESTS_STORE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "once/store.h"

#define ST_UNUSED __attribute__((unused))

/* Whether an open of url under ONCE_STORE_OPEN_NO_MIGRATE is refused
 * (ONCE_EUNSUPPORTED, no handle) with a message holding want; the message
 * in err either way. */
ST_UNUSED static int st_no_migrate_refused(const char *url, const char *want, char *err, size_t n)
{
    once_store_options o;
    once_store *s = NULL;

    memset(&o, 0, sizeof o);
    o.flags = ONCE_STORE_OPEN_NO_MIGRATE;
    int rc = once_store_open(url, &o, &s, err, n);
    once_store_close(s);
    return rc == ONCE_EUNSUPPORTED && s == NULL && strstr(err, want) != NULL;
}

/* A digest line's hex part: 64 copies of c. */
ST_UNUSED static void st_hex(char out[ONCE_DIGEST_HEX + 1], char c)
{
    memset(out, c, ONCE_DIGEST_HEX);
    out[ONCE_DIGEST_HEX] = '\0';
}

/* A fresh empty file for a SQLite database (mkstemp in $TMPDIR or /tmp).
 * Returns 0 and the path in out, or -1. */
ST_UNUSED static int st_tmp_path(char *out, size_t n, const char *tag)
{
    const char *dir = getenv("TMPDIR");
    int fd;

    if (!dir || !dir[0])
        dir = "/tmp";
    if ((size_t)snprintf(out, n, "%s/once-%s-XXXXXX", dir, tag) >= n)
        return -1;
    fd = mkstemp(out);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* Remove a SQLite database and its side files. */
ST_UNUSED static void st_remove_db(const char *path)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    char p[4096];
    size_t i;

    for (i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
}

/* A storable record: version 1, generation 0, fence 1, one digest line
 * (hex of 'a', messageId "m1"), finished_at set iff the state is terminal.
 * Owns its strings (once_record_clear). Returns 0, or -1 on OOM. */
ST_UNUSED static int st_rec(once_record *r, const char *principal, const char *task_id,
                            once_state st, int64_t created_at, const char *task_json)
{
    char hex[ONCE_DIGEST_HEX + 1];
    char line[ONCE_DIGEST_HEX + 8];

    memset(r, 0, sizeof *r);
    snprintf(r->principal, sizeof r->principal, "%s", principal);
    snprintf(r->task_id, sizeof r->task_id, "%s", task_id);
    snprintf(r->context_id, sizeof r->context_id, "ctx-%s", "0");
    r->state = st;
    r->kind = ONCE_KIND_TASK;
    r->version = 1;
    r->fence = 1;
    r->created_at = created_at;
    r->updated_at = created_at;
    r->finished_at = once_state_terminal(st) ? created_at + 1 : 0;
    st_hex(hex, 'a');
    snprintf(line, sizeof line, "%s m1\n", hex);
    r->digests = once_strdup(line);
    r->task_json = once_strdup(task_json ? task_json : "{}");
    if (!r->digests || !r->task_json) {
        once_record_clear(r);
        return -1;
    }
    return 0;
}

/* Replace a record's task_json (owned). Returns 0 or -1. */
ST_UNUSED static int st_set_json(once_record *r, const char *json)
{
    char *j = once_strdup(json);

    if (!j)
        return -1;
    once_free(r->task_json);
    r->task_json = j;
    return 0;
}

/* Events numbered first, first+1, ... with payloads {"g":N,"tag":"<tag>"}. */
#define ST_EVMAX 64
typedef struct st_events {
    once_event ev[ST_EVMAX];
    char text[ST_EVMAX][96];
    size_t n;
} st_events;

ST_UNUSED static void st_mkev(st_events *b, int64_t first, size_t n, const char *tag)
{
    size_t i;

    if (n > ST_EVMAX)
        n = ST_EVMAX;
    for (i = 0; i < n; i++) {
        snprintf(b->text[i], sizeof b->text[i], "{\"g\":%lld,\"tag\":\"%s\"}",
                 (long long)(first + (int64_t)i), tag);
        b->ev[i].generation = first + (int64_t)i;
        b->ev[i].payload = b->text[i];
    }
    b->n = n;
}

/* 1 if a report shows no problem at all. */
ST_UNUSED static int st_clean(const once_check_report *r)
{
    return r->bad_generation == 0 && r->event_gaps == 0 && r->orphan_events == 0 &&
           r->bad_state == 0 && r->first_problem[0] == '\0';
}

#endif
