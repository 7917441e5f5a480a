/*
 * pg_conn.c -- connections of the PostgreSQL backend: the pool, reconnect
 * with backoff, prepared statements, binary parameters and results, and
 * the retry loop every slot runs in.
 *
 * Pool: a caller takes an idle connection or opens a new one (up to
 * pool_max; beyond that it waits), uses it alone, and gives it back. An idle
 * connection the server has closed (restart, pg_terminate_backend) shows up
 * as readable/hung-up on its socket and is dropped at checkout, so a restart
 * costs no failed call. A failed connection attempt starts a backoff window
 * (50 ms doubling to 2 s) during which callers get ONCE_ESTORE at once
 * instead of piling connection attempts onto a server that is down.
 *
 * Failures: everything the server or the network refuses is ONCE_ESTORE
 * ("the store could not answer"), never a verdict such as ENOTFOUND. A slot
 * is retried on a fresh connection only when nothing can have been written:
 * the connection broke while no write was in flight, or the server rolled
 * the statement back for a deadlock / serialization failure.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg/pg_int.h"
#include "store/store_int.h"

/* ------------------------------------------------------------------------
 * Parameters (binary format; the SQL texts cast every $n, so the server
 * knows each type without a paramTypes array).
 */

void once__pg_p_init(pg_params *p)
{
    memset(p, 0, sizeof *p);
}

void once__pg_p_free(pg_params *p)
{
    if (!p)
        return;
    once_free(p->blob);
    p->blob = NULL;
}

static int slot(pg_params *p)
{
    if (p->n >= PG_MAXPARAM)
        abort(); /* a statement with more parameters than PG_MAXPARAM: a bug */
    return p->n++;
}

static void put_be(unsigned char *b, uint64_t u, int n)
{
    int i;

    for (i = 0; i < n; i++)
        b[i] = (unsigned char)(u >> (8 * (n - 1 - i)));
}

void once__pg_p_i64(pg_params *p, int64_t x)
{
    int i = slot(p);

    put_be(p->num[i], (uint64_t)x, 8);
    p->v[i] = (const char *)p->num[i];
    p->len[i] = 8;
    p->fmt[i] = 1;
}

void once__pg_p_i16(pg_params *p, int x)
{
    int i = slot(p);

    put_be(p->num[i], (uint64_t)(uint16_t)x, 2);
    p->v[i] = (const char *)p->num[i];
    p->len[i] = 2;
    p->fmt[i] = 1;
}

void once__pg_p_str(pg_params *p, const char *str)
{
    int i;

    if (!str) {
        once__pg_p_null(p);
        return;
    }
    i = slot(p);
    p->v[i] = str;
    p->len[i] = (int)strlen(str);
    p->fmt[i] = 1;
}

void once__pg_p_bytes(pg_params *p, const void *b, size_t n)
{
    int i = slot(p);

    p->v[i] = b;
    p->len[i] = (int)n;
    p->fmt[i] = 1;
}

void once__pg_p_null(pg_params *p)
{
    int i = slot(p);

    p->v[i] = NULL;
    p->len[i] = 0;
    p->fmt[i] = 1;
}

/* array_recv's format: ndim, has-nulls flag, element type, then per
 * dimension (size, lower bound), then per element (length, bytes). */
int once__pg_p_payloads(pg_params *p, const once_event *ev, size_t n)
{
    const uint32_t bytea_oid = 17;
    size_t total = 12 + (n ? 8 : 0), i, off;
    unsigned char *b;
    int k;

    for (i = 0; i < n; i++) {
        size_t l = strlen(ev[i].payload);
        if (l > INT_MAX - total - 4)
            return ONCE_ERANGE;
        total += 4 + l;
    }
    if (total > INT_MAX)
        return ONCE_ERANGE;
    b = once_malloc(total);
    if (!b)
        return ONCE_ENOMEM;
    put_be(b, n ? 1 : 0, 4);
    put_be(b + 4, 0, 4);
    put_be(b + 8, bytea_oid, 4);
    off = 12;
    if (n) {
        put_be(b + 12, n, 4);
        put_be(b + 16, 1, 4);
        off = 20;
    }
    for (i = 0; i < n; i++) {
        size_t l = strlen(ev[i].payload);
        put_be(b + off, l, 4);
        memcpy(b + off + 4, ev[i].payload, l);
        off += 4 + l;
    }
    once_free(p->blob);
    p->blob = (char *)b;
    k = slot(p);
    p->v[k] = p->blob;
    p->len[k] = (int)total;
    p->fmt[k] = 1;
    return ONCE_OK;
}

/* ------------------------------------------------------------------------
 * Results (binary format).
 */

int64_t once__pg_i64(const PGresult *r, int row, int col)
{
    const unsigned char *b;
    uint64_t u = 0;
    int len, i;

    if (PQgetisnull(r, row, col))
        return 0;
    b = (const unsigned char *)PQgetvalue(r, row, col);
    len = PQgetlength(r, row, col);
    if (len != 1 && len != 2 && len != 4 && len != 8)
        return 0;
    for (i = 0; i < len; i++)
        u = (u << 8) | b[i];
    if (len == 2)
        return (int16_t)u;
    if (len == 4)
        return (int32_t)u;
    return (int64_t)u;
}

int once__pg_fixed(const PGresult *r, int row, int col, char *dst, size_t cap)
{
    const char *v = PQgetvalue(r, row, col);
    size_t len = (size_t)PQgetlength(r, row, col);

    dst[0] = '\0';
    if (PQgetisnull(r, row, col))
        return ONCE_OK;
    if (len >= cap || memchr(v, '\0', len))
        return ONCE_ECORRUPT;
    memcpy(dst, v, len);
    dst[len] = '\0';
    return ONCE_OK;
}

int once__pg_dup(const PGresult *r, int row, int col, char **out)
{
    size_t len;

    *out = NULL;
    if (PQgetisnull(r, row, col))
        return ONCE_OK;
    len = (size_t)PQgetlength(r, row, col);
    *out = once_strndup(PQgetvalue(r, row, col), len);
    if (!*out)
        return ONCE_ENOMEM;
    if (strlen(*out) != len) {
        once_free(*out);
        *out = NULL;
        return ONCE_ECORRUPT;
    }
    return ONCE_OK;
}

int once__pg_row_record(const PGresult *r, int row, int col0, once_record *out)
{
    int rc, i;

    memset(out, 0, sizeof *out);
    if ((rc = once__pg_fixed(r, row, col0, out->principal, sizeof out->principal)) != ONCE_OK ||
        (rc = once__pg_fixed(r, row, col0 + 1, out->task_id, sizeof out->task_id)) != ONCE_OK ||
        (rc = once__pg_fixed(r, row, col0 + 2, out->context_id, sizeof out->context_id)) !=
            ONCE_OK ||
        (rc = once__pg_fixed(r, row, col0 + 9, out->lease_owner, sizeof out->lease_owner)) !=
            ONCE_OK)
        return rc;
    for (i = 0; i < ONCE__RECORD_NINT; i++) {
        const once__int_field *f = &once__record_ints[i];
        once__field_set(out, f, once__pg_i64(r, row, col0 + f->col));
    }
    if ((rc = once__pg_dup(r, row, col0 + 14, &out->digests)) != ONCE_OK ||
        (rc = once__pg_dup(r, row, col0 + 15, &out->task_json)) != ONCE_OK ||
        (rc = once__pg_dup(r, row, col0 + 16, &out->checkpoint)) != ONCE_OK ||
        (rc = once__pg_dup(r, row, col0 + 17, &out->push_json)) != ONCE_OK ||
        (rc = once__pg_dup(r, row, col0 + 18, &out->journal)) != ONCE_OK) {
        once_record_clear(out);
        return rc;
    }
    if (!out->digests || !out->task_json) {
        once_record_clear(out);
        return ONCE_ECORRUPT;
    }
    /* A compacted task (pg_compact.c): its texts from packed. */
    if (!PQgetisnull(r, row, col0 + PG_TASK_PACKED_COL) &&
        (rc = once__unpack_texts(
             (const unsigned char *)PQgetvalue(r, row, col0 + PG_TASK_PACKED_COL),
             (size_t)PQgetlength(r, row, col0 + PG_TASK_PACKED_COL), out)) != ONCE_OK) {
        once_record_clear(out);
        return rc;
    }
    return ONCE_OK;
}

int once__pg_rows(pg_store *s, pg_conn *c, pg_stmt_id id, const pg_params *p, size_t size,
                  pg_row_fn fn, void *arg, void **v, size_t *n)
{
    PGresult *r;
    unsigned char *a = NULL;
    int rc, i, rows;

    *v = NULL;
    *n = 0;
    rc = once__pg_exec(s, c, id, p, &r);
    if (rc != ONCE_OK)
        return rc;
    rows = PQntuples(r);
    if (rows > 0 && !(a = once_calloc((size_t)rows, size)))
        rc = ONCE_ENOMEM;
    *v = a;
    for (i = 0; rc == ONCE_OK && i < rows; i++) {
        rc = fn(r, i, a + (size_t)i * size, arg);
        *n = (size_t)i + 1;
    }
    PQclear(r);
    return rc;
}

/* ------------------------------------------------------------------------
 * Errors.
 */

/* libpq messages end in a newline and may span lines: keep the first. */
static void first_line(const char *msg, char *out, size_t cap)
{
    size_t n = msg ? strcspn(msg, "\n") : 0;

    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(out, msg, n);
    out[n] = '\0';
}

int once__pg_fail(pg_store *s, pg_conn *c, PGresult *r, const char *what)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorMessage(r) : NULL;
    char line[200];

    if (!msg || !msg[0])
        msg = PQerrorMessage(c->pg);
    first_line(msg, line, sizeof line);
    if (PQstatus(c->pg) != CONNECTION_OK ||
        (state && (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0)))
        c->item.broken = 1;
    /* An error the server sent on a connection that survives means the
     * statement was rolled back. When the connection is gone the outcome of
     * a write is unknown, even with an SQLSTATE: a FATAL (e.g. 57P01 on
     * shutdown) can follow a commit whose acknowledgement was never sent. */
    if (!c->item.broken)
        c->item.unsure = 0;
    if (state && (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0))
        c->item.again = 1;
    once__store_seterr(&s->base, "postgres %s: %s%s%s", what, state ? state : "", state ? " " : "",
                       line[0] ? line : "failed");
    PQclear(r);
    return ONCE_ESTORE;
}

/* ------------------------------------------------------------------------
 * Connections.
 */

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* CREATE ... IF NOT EXISTS notices and the like */
}

/* The pool's close (NULL is a no-op). */
static void pool_close(once__pool_item *it)
{
    pg_conn *c = (pg_conn *)it;

    if (!c)
        return;
    PQfinish(c->pg);
    once_free(c);
}

/* The pool's connect: a connection of owner (the pg_store) on its schema. */
static int pool_connect(void *owner, once__pool_item **out, char *errbuf, size_t errlen)
{
    /* Later keywords win: the URL (dbname, expanded) overrides these
     * defaults. Keepalives and tcp_user_timeout bound how long a call can
     * hang on a peer that vanished without closing (a partition), which
     * would otherwise take the OS's two hours. */
    static const char *const kw[] = {
        "connect_timeout",  "fallback_application_name", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout",          "dbname",          NULL};
    pg_store *s = owner;
    const char *val[] = {"5", "once", "30", "10", "3", "30000", s->conninfo, NULL};
    char sql[PG_SCHEMA_MAX + 40], line[200];
    PGresult *r;
    pg_conn *c;
    int rc;

    *out = NULL;
    c = once_calloc(1, sizeof *c);
    if (!c)
        return ONCE_ENOMEM;
    c->pg = PQconnectdbParams(kw, val, 1);
    if (!c->pg) {
        once_free(c);
        return ONCE_ENOMEM;
    }
    if (PQstatus(c->pg) != CONNECTION_OK) {
        first_line(PQerrorMessage(c->pg), line, sizeof line);
        once__store_seterr(&s->base, "postgres connect: %s", line);
        once__store_errbuf(errbuf, errlen, "postgres connect: %s", line);
        pool_close(&c->item);
        return ONCE_ESTORE;
    }
    PQsetNoticeProcessor(c->pg, quiet, NULL);
    snprintf(sql, sizeof sql, "SET search_path TO \"%s\"", s->schema);
    rc = once__pg_simple(s, c, sql, &r);
    if (rc != ONCE_OK) {
        once__store_errbuf(errbuf, errlen, "%s", s->base.errmsg);
        pool_close(&c->item);
        return rc;
    }
    PQclear(r);
    *out = &c->item;
    return ONCE_OK;
}

/* 1 if an idle connection can no longer be used: the server closed it, or
 * sent something other than a notice/notification while it sat idle. */
static int pool_stale(once__pool_item *it)
{
    pg_conn *c = (pg_conn *)it;
    struct pollfd p;
    PGnotify *nf;
    int n;

    if (PQstatus(c->pg) != CONNECTION_OK || PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        return 1;
    p.fd = PQsocket(c->pg);
    p.events = POLLIN | POLLRDHUP;
    p.revents = 0;
    if (p.fd < 0)
        return 1;
    n = poll(&p, 1, 0);
    if (n <= 0)
        return 0;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
        return 1;
    if (!PQconsumeInput(c->pg) || PQstatus(c->pg) != CONNECTION_OK)
        return 1;
    while ((nf = PQnotifies(c->pg)) != NULL)
        PQfreemem(nf);
    return 0;
}

/* A call that returned with its transaction open (an error path) leaves
 * it rolled back; a connection that cannot say so is not pooled. */
static void pool_tidy(once__pool_item *it)
{
    pg_conn *c = (pg_conn *)it;

    if (!it->broken && PQstatus(c->pg) == CONNECTION_OK &&
        PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
        PQclear(PQexec(c->pg, "ROLLBACK"));
        if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
            it->broken = 1;
    }
    if (PQstatus(c->pg) != CONNECTION_OK)
        it->broken = 1;
    c->in_tx = 0;
}

const once__pool_ops once__pg_pool_ops = {"postgres", pool_connect, pool_stale, pool_close,
                                          pool_tidy};

/* ------------------------------------------------------------------------
 * Statements.
 */

int once__pg_prepare(pg_store *s, pg_conn *c, pg_stmt_id id)
{
    char name[16];
    PGresult *r;

    if (c->prepared & (1u << id))
        return ONCE_OK;
    snprintf(name, sizeof name, "once_%d", (int)id);
    r = PQprepare(c->pg, name, once__pg_sql[id], 0, NULL);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
        return once__pg_fail(s, c, r, "prepare");
    PQclear(r);
    c->prepared |= 1u << id;
    return ONCE_OK;
}

int once__pg_exec(pg_store *s, pg_conn *c, pg_stmt_id id, const pg_params *p, PGresult **out)
{
    char name[16];
    PGresult *r;
    ExecStatusType st;
    int rc;

    *out = NULL;
    if ((rc = once__pg_prepare(s, c, id)) != ONCE_OK)
        return rc;
    snprintf(name, sizeof name, "once_%d", (int)id);
    c->item.unsure = once__pg_writes[id] && !c->in_tx;
    r = PQexecPrepared(c->pg, name, p ? p->n : 0, p ? p->v : NULL, p ? p->len : NULL,
                       p ? p->fmt : NULL, 1);
    st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
        c->item.unsure = 0;
        *out = r;
        return ONCE_OK;
    }
    return once__pg_fail(s, c, r, name);
}

int once__pg_simple(pg_store *s, pg_conn *c, const char *sql, PGresult **out)
{
    PGresult *r;
    ExecStatusType st;

    *out = NULL;
    r = PQexecParams(c->pg, sql, 0, NULL, NULL, NULL, NULL, 1);
    st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
        *out = r;
        return ONCE_OK;
    }
    return once__pg_fail(s, c, r, "query");
}

int once__pg_exec_done(pg_store *s, pg_conn *c, pg_stmt_id id, const pg_params *p)
{
    PGresult *r;
    int rc = once__pg_exec(s, c, id, p, &r);

    if (rc == ONCE_OK)
        PQclear(r);
    return rc;
}

int once__pg_simple_done(pg_store *s, pg_conn *c, const char *sql)
{
    PGresult *r;
    int rc = once__pg_simple(s, c, sql, &r);

    if (rc == ONCE_OK)
        PQclear(r);
    return rc;
}

int once__pg_begin(pg_store *s, pg_conn *c)
{
    int rc = once__pg_simple_done(s, c, "BEGIN");

    if (rc == ONCE_OK)
        c->in_tx = 1;
    return rc;
}

int once__pg_commit(pg_store *s, pg_conn *c)
{
    PGresult *r;
    int rc;

    c->item.unsure = 1; /* from here until the reply, the outcome is the server's */
    rc = once__pg_simple(s, c, "COMMIT", &r);
    c->in_tx = 0;
    if (rc != ONCE_OK)
        return rc;
    c->item.unsure = 0;
    /* COMMIT of a transaction an error aborted "succeeds" as ROLLBACK. */
    if (strcmp(PQcmdStatus(r), "COMMIT") != 0) {
        once__store_seterr(&s->base, "postgres: transaction rolled back at COMMIT");
        rc = ONCE_ESTORE;
    }
    PQclear(r);
    return rc;
}

void once__pg_rollback(pg_conn *c)
{
    if (PQstatus(c->pg) == CONNECTION_OK && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        PQclear(PQexec(c->pg, "ROLLBACK"));
    c->in_tx = 0;
}

ONCE__POOL_RUN_DEFINE(once__pg_run, pg_store, pg_conn, pg_fn, PG_ATTEMPTS)
