/*
 * redis_conn.c -- connections of the Redis backend: the pool, reconnect
 * with backoff, commands and scripts, and the retry loop every slot runs in.
 *
 * Pool: as the PostgreSQL backend's (pg_conn.c): one connection per caller
 * at a time, up to pool_max; an idle connection whose socket shows data or a
 * hang-up (the server restarted or closed it: Redis never speaks first on a
 * connection without subscriptions) is dropped at checkout; a failed connect
 * opens a backoff window (50 ms doubling to 2 s) in which callers get
 * ONCE_ESTORE at once.
 *
 * SIGPIPE: hiredis writes with write(2), which raises SIGPIPE on a socket
 * the server closed and would kill a process that has not ignored it. Every
 * call that may write blocks SIGPIPE in the calling thread and consumes a
 * SIGPIPE it caused before restoring the mask (libpq's technique), so the
 * library stays safe whatever the application does with signals.
 *
 * Failures are ONCE_ESTORE. A slot is retried on a fresh connection only
 * when the connection broke while nothing that writes was in flight; a
 * broken write (a script whose reply never came) is reported, because it
 * may or may not have run.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

/* ------------------------------------------------------------------------
 * SIGPIPE guard.
 */

typedef struct sigpipe_guard {
    sigset_t old;
    int was_pending;
} sigpipe_guard;

static void sp_block(sigpipe_guard *g)
{
    sigset_t set, pend;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
    sigemptyset(&pend);
    sigpending(&pend);
    g->was_pending = sigismember(&pend, SIGPIPE);
}

static void sp_restore(sigpipe_guard *g)
{
    sigset_t set, pend;

    if (!g->was_pending) {
        sigemptyset(&pend);
        sigpending(&pend);
        if (sigismember(&pend, SIGPIPE)) {
            struct timespec zero = {0, 0};
            sigemptyset(&set);
            sigaddset(&set, SIGPIPE);
            while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
                ;
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* ------------------------------------------------------------------------
 * Commands.
 */

void once__rd_cmd_init(rd_cmd *c)
{
    memset(c, 0, sizeof *c);
}

void once__rd_cmd_free(rd_cmd *c)
{
    if (!c)
        return;
    once_free(c->argv);
    once_free(c->len);
    c->argv = NULL;
    c->len = NULL;
    c->argc = c->cap = 0;
}

void once__rd_arg(rd_cmd *c, const void *p, size_t n)
{
    if (c->oom)
        return;
    if (c->argc == c->cap) {
        int nc = c->cap ? c->cap * 2 : 32;
        const char **av = once_realloc(c->argv, (size_t)nc * sizeof *av);
        size_t *lv;
        if (!av) {
            c->oom = 1;
            return;
        }
        c->argv = av;
        lv = once_realloc(c->len, (size_t)nc * sizeof *lv);
        if (!lv) {
            c->oom = 1;
            return;
        }
        c->len = lv;
        c->cap = nc;
    }
    c->argv[c->argc] = p;
    c->len[c->argc] = n;
    c->argc++;
}

void once__rd_str(rd_cmd *c, const char *s)
{
    once__rd_arg(c, s, strlen(s));
}

void once__rd_i64(rd_cmd *c, int64_t v)
{
    if (c->nnum >= RD_NUMS)
        abort(); /* more numbers than any command here has: a bug */
    snprintf(c->num[c->nnum], sizeof c->num[0], "%lld", (long long)v);
    once__rd_str(c, c->num[c->nnum]);
    c->nnum++;
}

void once__rd_cmd_evalsha(rd_cmd *c, const rd_store *s, rd_script_id id, int nkeys)
{
    once__rd_str(c, "EVALSHA");
    once__rd_str(c, s->sha[id]);
    once__rd_i64(c, nkeys);
}

static void seterr_reply(rd_store *s, const rd_cmd *cmd, const char *msg, size_t n)
{
    const char *name = cmd->argc ? cmd->argv[0] : "?";
    int nlen = cmd->argc ? (int)(cmd->len[0] > 16 ? 16 : cmd->len[0]) : 1;

    once__store_seterr(&s->base, "redis %.*s: %.*s", nlen, name, (int)(n > 200 ? 200 : n), msg);
}

/* The reply, error replies included; NULL when the connection failed. */
static redisReply *call_raw(rd_store *s, rd_conn *c, const rd_cmd *cmd, int writes)
{
    sigpipe_guard g;
    redisReply *r;

    c->item.unsure = writes;
    sp_block(&g);
    r = redisCommandArgv(c->rc, cmd->argc, cmd->argv, cmd->len);
    sp_restore(&g);
    if (!r) {
        c->item.broken = 1;
        once__store_seterr(&s->base, "redis: %s", c->rc->errstr[0] ? c->rc->errstr : "I/O error");
        return NULL;
    }
    c->item.unsure = 0; /* the server answered: whatever it did is known */
    return r;
}

static int check_reply(rd_store *s, const rd_cmd *cmd, redisReply *r, redisReply **out)
{
    if (r->type == REDIS_REPLY_ERROR) {
        seterr_reply(s, cmd, r->str, r->len);
        freeReplyObject(r);
        return ONCE_ESTORE;
    }
    *out = r;
    return ONCE_OK;
}

int once__rd_call(rd_store *s, rd_conn *c, const rd_cmd *cmd, int writes, redisReply **out)
{
    redisReply *r;

    *out = NULL;
    if (cmd->oom)
        return ONCE_ENOMEM;
    r = call_raw(s, c, cmd, writes);
    if (!r)
        return ONCE_ESTORE;
    return check_reply(s, cmd, r, out);
}

int once__rd_call_array(rd_store *s, rd_conn *c, const rd_cmd *cmd, redisReply **out)
{
    int rc = once__rd_call(s, c, cmd, 0, out);

    if (rc == ONCE_OK && (*out)->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(*out);
        *out = NULL;
        rc = ONCE_ECORRUPT;
    }
    return rc;
}

int once__rd_call_done(rd_store *s, rd_conn *c, rd_cmd *cmd, int writes)
{
    redisReply *r;
    int rc = once__rd_call(s, c, cmd, writes, &r);

    once__rd_cmd_free(cmd);
    if (rc == ONCE_OK)
        freeReplyObject(r);
    return rc;
}

int once__rd_call_key(rd_store *s, rd_conn *c, const char *verb, const char *key,
                      redisReply **out)
{
    rd_cmd cmd;
    int rc;

    once__rd_cmd_init(&cmd);
    if (!key) {
        cmd.oom = 1;
    } else {
        once__rd_str(&cmd, verb);
        once__rd_str(&cmd, key);
    }
    rc = once__rd_call(s, c, &cmd, 0, out);
    once__rd_cmd_free(&cmd);
    return rc;
}

int once__rd_due(rd_store *s, rd_conn *c, const char *index, int64_t max, int below, int64_t count,
                 redisReply **out)
{
    char bound[32];
    rd_cmd cmd;
    int rc;

    snprintf(bound, sizeof bound, "%s%lld", below ? "(" : "", (long long)max);
    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "ZRANGEBYSCORE");
    once__rd_str(&cmd, index);
    once__rd_str(&cmd, "-inf");
    once__rd_str(&cmd, bound);
    once__rd_str(&cmd, "LIMIT");
    once__rd_i64(&cmd, 0);
    once__rd_i64(&cmd, count);
    rc = once__rd_call(s, c, &cmd, 0, out);
    once__rd_cmd_free(&cmd);
    return rc;
}

int once__rd_walk_due(rd_store *s, rd_conn *c, const rd_walk *w)
{
    int rounds, rc = ONCE_OK;

    for (rounds = 0; rc == ONCE_OK && *w->done < w->want && rounds < w->rounds; rounds++) {
        size_t want = w->want - *w->done, i;
        redisReply *r;

        if (want > w->batch)
            want = w->batch;
        rc = once__rd_due(s, c, w->index, w->max, w->below, (int64_t)want, &r);
        if (rc != ONCE_OK)
            break;
        if (r->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            rc = ONCE_ECORRUPT;
            break;
        }
        for (i = 0; rc == ONCE_OK && i < r->elements && *w->done < w->want; i++)
            rc = w->fn(s, c, r->element[i], w->arg);
        i = r->elements;
        freeReplyObject(r);
        if (i < want)
            break; /* the due range is exhausted */
    }
    return rc;
}

static int load_one(rd_store *s, rd_conn *c, rd_script_id id)
{
    rd_cmd cmd;
    redisReply *r;
    int rc;

    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "SCRIPT");
    once__rd_str(&cmd, "LOAD");
    once__rd_str(&cmd, once__rd_lua[id]);
    rc = once__rd_call(s, c, &cmd, 0, &r);
    once__rd_cmd_free(&cmd);
    if (rc != ONCE_OK)
        return rc;
    if (r->type != REDIS_REPLY_STRING || r->len != 40) {
        once__store_seterr(&s->base, "redis SCRIPT LOAD: unexpected reply");
        rc = ONCE_ESTORE;
    } else {
        memcpy(s->sha[id], r->str, 40);
        s->sha[id][40] = '\0';
    }
    freeReplyObject(r);
    return rc;
}

int once__rd_load_scripts(rd_store *s, rd_conn *c)
{
    int i, rc;

    for (i = 0; i < RD_NSCRIPT; i++)
        if ((rc = load_one(s, c, (rd_script_id)i)) != ONCE_OK)
            return rc;
    return ONCE_OK;
}

/* 1 if the server had lost the script (restart, SCRIPT FLUSH): it did not
 * run, and its SHA1 is unchanged once loaded again. */
static int noscript(const redisReply *r)
{
    static const char word[] = "NOSCRIPT";

    return r->type == REDIS_REPLY_ERROR && r->len >= sizeof word - 1 &&
           memcmp(r->str, word, sizeof word - 1) == 0;
}

int once__rd_eval(rd_store *s, rd_conn *c, rd_script_id id, const rd_cmd *cmd, int writes,
                  redisReply **out)
{
    redisReply *r;
    int rc;

    *out = NULL;
    if (cmd->oom)
        return ONCE_ENOMEM;
    r = call_raw(s, c, cmd, writes);
    if (!r)
        return ONCE_ESTORE;
    if (noscript(r)) {
        /* The server lost its script cache (restart, SCRIPT FLUSH): the
         * script did not run; load it and go again. Its SHA1 is unchanged. */
        freeReplyObject(r);
        rc = load_one(s, c, id);
        if (rc != ONCE_OK)
            return rc;
        r = call_raw(s, c, cmd, writes);
        if (!r)
            return ONCE_ESTORE;
    }
    return check_reply(s, cmd, r, out);
}

int once__rd_append(rd_store *s, rd_conn *c, const rd_cmd *cmd)
{
    if (cmd->oom)
        return ONCE_ENOMEM;
    if (redisAppendCommandArgv(c->rc, cmd->argc, cmd->argv, cmd->len) != REDIS_OK) {
        c->item.broken = 1;
        once__store_seterr(&s->base, "redis: %s", c->rc->errstr[0] ? c->rc->errstr : "append");
        return ONCE_ESTORE;
    }
    return ONCE_OK;
}

/* The next pipelined reply, error replies included; NULL (c->item.broken) when
 * the connection failed. */
static redisReply *reply_raw(rd_store *s, rd_conn *c)
{
    sigpipe_guard g;
    void *r = NULL;
    int ok;

    sp_block(&g);
    ok = redisGetReply(c->rc, &r);
    sp_restore(&g);
    if (ok != REDIS_OK || !r) {
        c->item.broken = 1;
        once__store_seterr(&s->base, "redis: %s", c->rc->errstr[0] ? c->rc->errstr : "I/O error");
        return NULL;
    }
    return r;
}

int once__rd_script_reply(rd_store *s, rd_conn *c, const rd_cmd *cmd, redisReply **out)
{
    redisReply *r = reply_raw(s, c);

    *out = NULL;
    if (!r)
        return ONCE_ESTORE;
    if (noscript(r)) {
        freeReplyObject(r);
        return RD_ALONE;
    }
    return check_reply(s, cmd, r, out);
}

int once__rd_reply(rd_store *s, rd_conn *c, redisReply **out)
{
    *out = reply_raw(s, c);
    if (!*out)
        return ONCE_ESTORE;
    if ((*out)->type == REDIS_REPLY_ERROR) {
        once__store_seterr(&s->base, "redis: %.*s", (int)((*out)->len > 200 ? 200 : (*out)->len),
                           (*out)->str);
        freeReplyObject(*out);
        *out = NULL;
        return ONCE_ESTORE;
    }
    return ONCE_OK;
}

/* ------------------------------------------------------------------------
 * Connections.
 */

/* The pool's close (NULL is a no-op). */
static void pool_close(once__pool_item *it)
{
    rd_conn *c = (rd_conn *)it;

    if (!c)
        return;
    if (c->rc) {
        sigpipe_guard g;
        sp_block(&g);
        redisFree(c->rc);
        sp_restore(&g);
    }
    once_free(c);
}

static struct timeval tv_ms(int ms)
{
    struct timeval tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

static int hello(rd_store *s, rd_conn *c)
{
    rd_cmd cmd;
    int rc = ONCE_OK;

    if (s->password) {
        once__rd_cmd_init(&cmd);
        once__rd_str(&cmd, "AUTH");
        if (s->user)
            once__rd_str(&cmd, s->user);
        once__rd_str(&cmd, s->password);
        rc = once__rd_call_done(s, c, &cmd, 0);
    }
    if (rc == ONCE_OK && s->db) {
        once__rd_cmd_init(&cmd);
        once__rd_str(&cmd, "SELECT");
        once__rd_i64(&cmd, s->db);
        rc = once__rd_call_done(s, c, &cmd, 0);
    }
    return rc;
}

/* The pool's connect: a connection of owner (the rd_store), signed in and
 * on its database. */
static int pool_connect(void *owner, once__pool_item **out, char *errbuf, size_t errlen)
{
    rd_store *s = owner;
    sigpipe_guard g;
    rd_conn *c;
    int rc;

    *out = NULL;
    c = once_calloc(1, sizeof *c);
    if (!c)
        return ONCE_ENOMEM;
    sp_block(&g);
    c->rc = redisConnectWithTimeout(s->host, s->port, tv_ms(RD_CONNECT_TIMEOUT_MS));
    sp_restore(&g);
    if (!c->rc) {
        once_free(c);
        return ONCE_ENOMEM;
    }
    if (c->rc->err) {
        once__store_seterr(&s->base, "redis connect %s:%d: %s", s->host, s->port, c->rc->errstr);
        once__store_errbuf(errbuf, errlen, "redis connect %s:%d: %s", s->host, s->port,
                           c->rc->errstr);
        pool_close(&c->item);
        return ONCE_ESTORE;
    }
    redisSetTimeout(c->rc, tv_ms(s->timeout_ms));
    redisEnableKeepAlive(c->rc);
    rc = hello(s, c);
    if (rc != ONCE_OK) {
        once__store_errbuf(errbuf, errlen, "%s", s->base.errmsg);
        pool_close(&c->item);
        return rc;
    }
    *out = &c->item;
    return ONCE_OK;
}

/* 1 if an idle connection can no longer be used. */
static int pool_stale(once__pool_item *it)
{
    rd_conn *c = (rd_conn *)it;
    struct pollfd p;

    if (c->rc->err || c->rc->fd < 0)
        return 1;
    p.fd = c->rc->fd;
    p.events = POLLIN | POLLRDHUP;
    p.revents = 0;
    return poll(&p, 1, 0) > 0;
}

static void pool_tidy(once__pool_item *it)
{
    if (((rd_conn *)it)->rc->err)
        it->broken = 1;
}

const once__pool_ops once__rd_pool_ops = {"redis", pool_connect, pool_stale, pool_close,
                                          pool_tidy};

ONCE__POOL_RUN_DEFINE(once__rd_run, rd_store, rd_conn, rd_fn, RD_ATTEMPTS)
