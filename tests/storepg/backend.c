/*
 * backend.c -- what only a networked store backend (PostgreSQL, Redis) has
 * to get right, beyond the conformance suite. argv[1] is the server's base
 * URL without parameters (postgres://user@host:port/db or
 * redis://host:port/db); each case works in its own schema / key prefix.
 *
 *   open_errors              bad URL parameters are EINVAL; an unreachable
 *                            server is ESTORE with a message, nothing to close
 *   outage_is_estore         through a loopback proxy that is then cut: every
 *                            slot answers ONCE_ESTORE (never ENOTFOUND or any
 *                            other verdict), and after the cut heals the same
 *                            handle serves the data again
 *   dropped_connections      pooled connections the server side closed are
 *                            replaced without a failed call (reads and writes)
 *   concurrent_first_open    processes opening a fresh namespace at the same
 *                            moment all succeed (migrations are serialised)
 *   check_sees_damage        check() reports what was broken behind the
 *                            backend's back (so a clean report means something),
 *                            push delivery rows and their index included
 *   push_writes_race_acks    record updates of a task with push configs racing
 *                            two deliverers' claims and acks on its row (the
 *                            backends reshape rows from a read: PostgreSQL
 *                            under row locks, Redis by retrying when the rows
 *                            moved): no ack is lost or refused, delivered
 *                            ends at the generation, check() stays clean
 *   batch_outcomes           group commit: ten writes held back until they
 *                            share one batch (PostgreSQL: one transaction,
 *                            one xmin; Redis: one pipeline on one
 *                            connection) each get their own verdict: one of
 *                            four creates of an ID wins and the others get
 *                            the winner, one of two CAS updates of a version
 *                            wins, a stale CAS fails alone, the rest succeed
 *   batch_async              asynchronous creates (a new task's held write)
 *                            held back with a waiting writer until they share
 *                            one batch: each lands once, on another thread,
 *                            with its own verdict: new keys OK and stored,
 *                            one of three creates of an ID wins and the others
 *                            are ECONFLICT (nothing stored), a taken key is
 *                            ECONFLICT and untouched; PostgreSQL refuses to
 *                            start a record with delivery rows, and batch=0
 *                            starts none
 *   batch_async_mixed        800 creates from four threads, three in four
 *                            asynchronous, two batches in flight: each
 *                            asynchronous one lands exactly once, OK, stored
 *   batch_lost_commit        PostgreSQL group commit: a batch whose server
 *                            process dies before COMMIT ran answers
 *                            ONCE_ESTORE to every caller (none hears OK for
 *                            a write that was lost) and is not sent again
 *   keyed_plans              PostgreSQL: on a schema just created (no
 *                            statistics), every statement that names one
 *                            task by its key is planned, as the generic plan
 *                            a pooled connection caches, on a primary key,
 *                            never on the list index (whose scan for one key
 *                            walks every task of the principal)
 *   list_plans               PostgreSQL: every ListTasks statement (by filter,
 *                            with and without a cursor) is planned, as the
 *                            generic plan, as one scan of its filter's index
 *                            in page order (no sort, no filter, no sequential
 *                            scan), on a new schema and on 20,000 analysed
 *                            tasks
 *   change_feed              the feed (PostgreSQL LISTEN/NOTIFY, Redis pub/sub)
 *                            of a handle behind a proxy tells of another
 *                            handle's updates with events, by key, and of
 *                            nothing else (creates, updates without events);
 *                            when its connection is cut it answers
 *                            ONCE_ESTORE, then subscribes again and says
 *                            lost, and tells of updates again
 *   schema_step              the schema version (PostgreSQL: once_migrations,
 *                            Redis: the key <prefix>:schema): a store not
 *                            there is refused under ONCE_STORE_OPEN_NO_MIGRATE
 *                            and left untouched by a dry run; once__store_migrate
 *                            creates it at the backend's version, which then
 *                            opens under NO_MIGRATE; a newer version is refused
 *                            by open, migrate and a dry run
 *   backend_specific         PostgreSQL: a schema migrated by a newer once is
 *                            refused; Redis: scripts flushed from the server are
 *                            reloaded (NOSCRIPT) transparently; PostgreSQL: a
 *                            schema at version 4 (before the list indexes) is
 *                            refused under NO_MIGRATE, then migrated, its
 *                            tasks found by every filter; a schema at version
 *                            1 (before push delivery) is migrated at open,
 *                            its records kept, and push works; a schema at
 *                            version 5 (before packed) is refused under
 *                            NO_MIGRATE, then migrated, and its finished task
 *                            compacted and packed, read whole by a handle
 *                            opened before; a task compacted at version 6
 *                            (its last event a row) reads the same after
 *                            migration 7 and is trimmed by the next pass
 *   compaction               PostgreSQL, compact=0: the sweep leaves a
 *                            finished task no event row, its last one's
 *                            generation on the row (read back as that event,
 *                            emptied), its texts packed (read back whole)
 *                            and its first digest to derive (the tombstone
 *                            has it), batch after
 *                            batch; not a running task, not one a push
 *                            delivery is owed from, not a text deflate would
 *                            not shrink; a new handle's pass changes nothing;
 *                            the check counts them whole; an update writes
 *                            the task whole again; a damaged packed value
 *                            is ECORRUPT to a read; compact=off leaves all;
 *                            bad compact= values are refused; two handles
 *                            compacting 200 tasks at once compact each
 *   context_index            Redis: create puts a record's list member in its
 *                            context's index, an update that changes the
 *                            context moves it, sweep drops it; the check
 *                            counts a record missing from it; a store of
 *                            layout 1 (marker 1, or none) is refused under
 *                            NO_MIGRATE, then migrated at open: every record
 *                            and no tombstone indexed, every task listed
 *   repack                   Redis: a store of layout 2 (a record's values
 *                            in fields of their own) is refused under
 *                            NO_MIGRATE, then repacked at open (layout 3):
 *                            every record and its events read back as
 *                            before, tombstones stay, the check passes, and
 *                            update, renew and sweep work on the result; a
 *                            head a field short or a pair cut short is
 *                            ECORRUPT to a load and counted by the check
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#ifdef ONCE_HAVE_PG
#include <libpq-fe.h>
#endif
#ifdef ONCE_HAVE_REDIS
#include <hiredis/hiredis.h>
#endif

#include "store/store_info.h"
#include "store/util.h"
#include "timeout.h"
#ifdef ONCE_HAVE_PG
#include "store/pg/pg_int.h" /* the batch queue, to know when a batch has formed */
#define PG_VERSION_OR_0 PG_SCHEMA_VERSION
#else
#define PG_VERSION_OR_0 0
#endif
#ifdef ONCE_HAVE_REDIS
#include "store/redis/redis_int.h"
#define RD_VERSION_OR_0 RD_SCHEMA_VERSION
#else
#define RD_VERSION_OR_0 0
#endif

#define T0 INT64_C(1700000000000)

#include "store/push_race.h"

/* ------------------------------------------------------------------------
 * The server URL, split so a case can point it elsewhere (a proxy port).
 */

static const char *g_base;
static int g_pg;         /* 1 postgres, 0 redis */
static char g_head[256]; /* "scheme://[auth@]" */
static char g_host[128];
static int g_port;
static char g_tail[256]; /* "/db" */

static int split_url(const char *url)
{
    const char *p = strstr(url, "://"), *at, *slash, *colon;

    if (!p)
        return -1;
    p += 3;
    slash = p + strcspn(p, "/?");
    at = memchr(p, '@', (size_t)(slash - p));
    if (at)
        p = at + 1;
    snprintf(g_head, sizeof g_head, "%.*s", (int)(p - url), url);
    colon = memchr(p, ':', (size_t)(slash - p));
    if (!colon)
        return -1;
    snprintf(g_host, sizeof g_host, "%.*s", (int)(colon - p), p);
    g_port = (int)strtol(colon + 1, NULL, 10);
    snprintf(g_tail, sizeof g_tail, "%.*s", (int)strcspn(slash, "?"), slash);
    return g_port > 0 ? 0 : -1;
}

/* The URL of namespace ns (fresh when reset), through port (0 = the server). */
static void url_for(char *out, size_t n, int port, const char *ns, int reset)
{
    snprintf(out, n, "%s%s:%d%s?%s=%s%s", g_head, g_host, port ? port : g_port, g_tail,
             g_pg ? "schema" : "prefix", ns, reset ? "&reset=1" : "");
}

static once_store *open_ns(int port, const char *ns, int reset)
{
    char url[1024], err[256];
    once_store *s = NULL;
    int rc;

    url_for(url, sizeof url, port, ns, reset);
    rc = once_store_open(url, NULL, &s, err, sizeof err);
    if (rc != ONCE_OK)
        fail_msg("open %s: %s: %s", url, once_errname(rc), err);
    return s;
}

#define EXPECT_RC(s, got, want)                                                                    \
    do {                                                                                           \
        int got_ = (got);                                                                          \
        if (got_ != (want))                                                                        \
            fail_msg("%s = %s, want %s (%s)", #got, once_errname(got_), once_errname(want),        \
                     once_store_errmsg(s));                                                        \
    } while (0)

static void put(once_store *s, const char *id, once_state st, int64_t lease_until, size_t nev)
{
    once_record r;
    st_events e;

    assert_int_equal(st_rec(&r, "p", id, st, T0, "{\"k\":1}"), 0);
    r.generation = (int64_t)nev;
    r.lease_until = lease_until;
    if (lease_until)
        snprintf(r.lease_owner, sizeof r.lease_owner, "replica-a");
    st_mkev(&e, 1, nev, id);
    EXPECT_RC(s, once_store_create(s, &r, e.ev, nev, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

/* A working task with nev events and push configs push_json. */
static void put_push(once_store *s, const char *id, size_t nev, const char *push_json)
{
    once_record r;
    st_events e;

    assert_int_equal(st_rec(&r, "p", id, ONCE_STATE_WORKING, T0, "{\"k\":1}"), 0);
    r.generation = (int64_t)nev;
    assert_non_null(r.push_json = once_strdup(push_json));
    st_mkev(&e, 1, nev, id);
    EXPECT_RC(s, once_store_create(s, &r, e.ev, nev, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------
 * A loopback TCP proxy in front of the server. cut: every relayed
 * connection is closed and new ones are accepted and closed at once (the
 * server looks down). drop: the relayed connections are closed once (the
 * server closed idle sessions), new ones work.
 */

#define PX_MAX 64

typedef struct proxy {
    int lfd, port;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int cut, drop, stop;      /* guarded by mu */
    unsigned asked, done;     /* guarded by mu: flag changes asked / applied */
    int a[PX_MAX], b[PX_MAX]; /* proxy thread only */
    int n;
} proxy;

static int tcp_listen(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

static int tcp_connect(const char *host, int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &sa.sin_addr) !=
            1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 1 while our FIN on fd has not been acknowledged by the peer's kernel. */
static int fin_unacked(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;

    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return 0;
    return ti.tcpi_state == TCP_FIN_WAIT1;
}

/* Close every relayed connection. The client side gets its FIN first and
 * is closed once the client's kernel acknowledged it: from then on the
 * client's socket reads EOF, which is what the cases after px_set rely on
 * (a condition, however late the kernel gets to it on a busy machine). */
static void px_close_all(proxy *px)
{
    int i;

    for (i = 0; i < px->n; i++) {
        shutdown(px->a[i], SHUT_WR);
        close(px->b[i]);
    }
    for (i = 0; i < px->n; i++) {
        int64_t until = once_monotonic_ms() + tt_ms(5000);
        while (fin_unacked(px->a[i]) && once_monotonic_ms() < until)
            usleep(200);
        close(px->a[i]);
    }
    px->n = 0;
}

static void *px_main(void *arg)
{
    proxy *px = arg;
    struct pollfd pf[1 + 2 * PX_MAX];
    char buf[16384];

    for (;;) {
        int cut, drop, stop, i, n;
        unsigned asked;

        pthread_mutex_lock(&px->mu);
        cut = px->cut;
        drop = px->drop;
        stop = px->stop;
        asked = px->asked;
        px->drop = 0;
        pthread_mutex_unlock(&px->mu);
        if (stop)
            break;
        if (cut || drop)
            px_close_all(px); /* the peers see EOF as soon as close returns */
        pthread_mutex_lock(&px->mu);
        px->done = asked;
        pthread_cond_broadcast(&px->cv);
        pthread_mutex_unlock(&px->mu);
        pf[0].fd = px->lfd;
        pf[0].events = POLLIN;
        for (i = 0; i < px->n; i++) {
            pf[1 + 2 * i].fd = px->a[i];
            pf[2 + 2 * i].fd = px->b[i];
            pf[1 + 2 * i].events = pf[2 + 2 * i].events = POLLIN;
        }
        n = poll(pf, (nfds_t)(1 + 2 * px->n), 20);
        if (n <= 0)
            continue;
        for (i = px->n - 1; i >= 0; i--) {
            int k, dead = 0;
            for (k = 0; k < 2 && !dead; k++) {
                struct pollfd *p = &pf[1 + 2 * i + k];
                int to = k ? px->a[i] : px->b[i];
                ssize_t r;
                if (!(p->revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                r = recv(p->fd, buf, sizeof buf, 0);
                if (r <= 0 || write_all(to, buf, (size_t)r) != 0)
                    dead = 1;
            }
            if (dead) {
                close(px->a[i]);
                close(px->b[i]);
                px->a[i] = px->a[px->n - 1];
                px->b[i] = px->b[px->n - 1];
                px->n--;
            }
        }
        if (pf[0].revents & POLLIN) {
            int c = accept4(px->lfd, NULL, NULL, SOCK_CLOEXEC), u;
            if (c < 0)
                continue;
            pthread_mutex_lock(&px->mu);
            cut = px->cut;
            pthread_mutex_unlock(&px->mu);
            if (cut || px->n == PX_MAX || (u = tcp_connect(g_host, g_port)) < 0) {
                close(c);
                continue;
            }
            px->a[px->n] = c;
            px->b[px->n] = u;
            px->n++;
        }
    }
    px_close_all(px);
    close(px->lfd);
    return NULL;
}

/* Static, not on a case's stack: a failed assertion longjmps out of the
 * case while the proxy thread still runs. */
static proxy g_px;

static void px_start(proxy *px)
{
    memset(px, 0, sizeof *px);
    px->lfd = tcp_listen(&px->port);
    assert_true(px->lfd >= 0);
    pthread_mutex_init(&px->mu, NULL);
    pthread_cond_init(&px->cv, NULL);
    assert_int_equal(pthread_create(&px->th, NULL, px_main, px), 0);
}

/* Change a flag and wait until the proxy thread has acted on it. */
static void px_set(proxy *px, int *field, int v)
{
    unsigned want;

    pthread_mutex_lock(&px->mu);
    *field = v;
    want = ++px->asked;
    while ((int)(px->done - want) < 0)
        pthread_cond_wait(&px->cv, &px->mu);
    pthread_mutex_unlock(&px->mu);
}

static void px_stop(proxy *px)
{
    pthread_mutex_lock(&px->mu);
    px->stop = 1;
    pthread_mutex_unlock(&px->mu);
    pthread_join(px->th, NULL);
    pthread_cond_destroy(&px->cv);
    pthread_mutex_destroy(&px->mu);
}

/* ------------------------------------------------------------------------
 * Admin access behind the backend's back (damage, flushes).
 */

#ifdef ONCE_HAVE_PG
static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void pg_admin(const char *fmt, ...)
{
    char sql[1024];
    PGconn *c = PQconnectdb(g_base);
    PGresult *r;
    va_list ap;

    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQsetNoticeProcessor(c, quiet, NULL);
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
}

static long pg_count(const char *sql)
{
    PGconn *c = PQconnectdb(g_base);
    PGresult *r;
    long n;

    assert_int_equal(PQstatus(c), CONNECTION_OK);
    r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return n;
}
#endif

#ifdef ONCE_HAVE_REDIS
/* A connection of the test's own to the URL's database. */
static redisContext *rd_connect(void)
{
    redisContext *c = redisConnect(g_host, g_port);
    redisReply *r;

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    r = redisCommand(c, "SELECT %s", g_tail[0] == '/' && g_tail[1] ? g_tail + 1 : "0");
    assert_non_null(r);
    freeReplyObject(r);
    return c;
}

static void rd_admin(int argc, const char **argv, const size_t *len)
{
    redisContext *c = rd_connect();
    redisReply *r = redisCommandArgv(c, argc, argv, len);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("redis admin %s: %s", argv[0], r->str);
    freeReplyObject(r);
    redisFree(c);
}

static void rd_admin3(const char *a, const char *b, const char *c3, size_t c3len)
{
    const char *argv[3] = {a, b, c3};
    size_t len[3] = {strlen(a), strlen(b), c3len};
    rd_admin(c3 ? 3 : 2, argv, len);
}

/* GET key into out ("" when absent). */
static void rd_get(const char *key, char *out, size_t n)
{
    redisContext *c = rd_connect();
    redisReply *r = redisCommand(c, "GET %s", key);
    assert_non_null(r);
    snprintf(out, n, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    redisFree(c);
}

/* The task IDs in a list or context index (members: 16 hex digits, then
 * the task ID), in index order, joined by ','. */
static void rd_index_ids(const char *key, char *out, size_t n)
{
    redisContext *c = rd_connect();
    redisReply *r = redisCommand(c, "ZRANGE %s 0 -1", key);
    size_t i, at = 0;

    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    out[0] = '\0';
    for (i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        assert_true(e->type == REDIS_REPLY_STRING && e->len > 16);
        at += (size_t)snprintf(out + at, at < n ? n - at : 0, "%s%.*s", i ? "," : "",
                               (int)(e->len - 16), e->str + 16);
    }
    assert_true(at < n);
    freeReplyObject(r);
    redisFree(c);
}

/* ZCARD key. */
static long long rd_zcard(const char *key)
{
    redisContext *c = rd_connect();
    redisReply *r = redisCommand(c, "ZCARD %s", key);
    long long v;

    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    v = r->integer;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* Run the script lua (KEYS[1]: the key) on every key matching pattern;
 * the sum of its integer answers. */
static long rd_each_key(const char *pattern, const char *lua)
{
    redisContext *c = rd_connect();
    char cursor[32] = "0";
    long n = 0;

    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        assert_non_null(r);
        assert_true(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            redisReply *d = redisCommand(c, "EVAL %s 1 %s", lua, r->element[1]->element[i]->str);
            assert_non_null(d);
            if (d->type != REDIS_REPLY_INTEGER)
                fail_msg("script on %s: %s", r->element[1]->element[i]->str,
                         d->type == REDIS_REPLY_ERROR ? d->str : "not an integer");
            n += d->integer;
            freeReplyObject(d);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    redisFree(c);
    return n;
}

/* DEL every key matching pattern. */
static void rd_del_matching(const char *pattern)
{
    rd_each_key(pattern, "return redis.call('DEL', KEYS[1])");
}

/* rd_each_key over the task hashes under prefix. */
static long rd_each_hash(const char *prefix, const char *lua)
{
    char pattern[128];

    snprintf(pattern, sizeof pattern, "%s:{*}", prefix);
    return rd_each_key(pattern, lua);
}
#endif

/* ------------------------------------------------------------------------
 * Cases.
 */

static void open_errors(void **state)
{
    char url[1024], err[256];
    once_store *s = (once_store *)1;
    int lfd, port;

    (void)state;
    if (g_pg) {
        url_for(url, sizeof url, 0, "bad-name", 0);
        assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
        assert_null(s);
        snprintf(url, sizeof url, "%s%s:%d%s?pool=0", g_head, g_host, g_port, g_tail);
        assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
    } else {
        url_for(url, sizeof url, 0, "a:b", 0);
        assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
        assert_null(s);
        snprintf(url, sizeof url, "%s%s:%d%s?nosuch=1", g_head, g_host, g_port, g_tail);
        assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
        assert_non_null(strstr(err, "nosuch"));
        assert_int_equal(once_store_open("redis://127.0.0.1:99999/0", NULL, &s, err, sizeof err),
                         ONCE_EINVAL);
    }
    assert_null(s);

    /* A port nobody listens on (just released by us). */
    lfd = tcp_listen(&port);
    assert_true(lfd >= 0);
    close(lfd);
    url_for(url, sizeof url, port, "x", 0);
    err[0] = '\0';
    assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_ESTORE);
    assert_null(s);
    assert_true(err[0] != '\0');
}

static void outage_is_estore(void **state)
{
    once_store *s;
    once_record r, got;
    once_event_list el;
    once_key_list kl;
    once_record_list rl;
    once_check_report rep;
    once_list_query q = {.principal = "p", .limit = 10};
    st_events e;
    char *v = NULL;
    size_t n;
    proxy *px = &g_px;
    int64_t deadline;
    int rc;

    (void)state;
    px_start(px);
    s = open_ns(px->port, "outage", 1);
    put(s, "t-live", ONCE_STATE_WORKING, T0 - 10, 2);
    EXPECT_RC(s, once_store_meta(s, "secret", "v1", &v), ONCE_OK);
    once_free(v);
    EXPECT_RC(s, once_store_load(s, "p", "t-live", &r, NULL), ONCE_OK);

    px_set(px, &px->cut, 1);
    /* Every slot, reads and writes: "could not answer", never a verdict. */
    EXPECT_RC(s, once_store_load(s, "p", "t-live", &got, NULL), ONCE_ESTORE);
    assert_true(once_store_errmsg(s)[0] != '\0');
    EXPECT_RC(s, once_store_load(s, "p", "t-missing", &got, NULL), ONCE_ESTORE);
    assert_int_equal(st_rec(&got, "p", "t-new", ONCE_STATE_SUBMITTED, T0, NULL), 0);
    EXPECT_RC(s, once_store_create(s, &got, NULL, 0, NULL, NULL), ONCE_ESTORE);
    once_record_clear(&got);
    r.version = 2;
    r.generation = 3;
    st_mkev(&e, 3, 1, "outage");
    EXPECT_RC(s, once_store_update(s, &r, 1, e.ev, 1), ONCE_ESTORE);
    EXPECT_RC(s, once_store_renew(s, "p", "t-live", "replica-a", 1, T0 + 5000), ONCE_ESTORE);
    EXPECT_RC(s, once_store_events(s, "p", "t-live", 0, 0, &el), ONCE_ESTORE);
    EXPECT_RC(s, once_store_expired_leases(s, T0, 10, &kl), ONCE_ESTORE);
    EXPECT_RC(s, once_store_sweep(s, T0, T0, 10, &n), ONCE_ESTORE);
    EXPECT_RC(s, once_store_purge(s, T0, 10, &n), ONCE_ESTORE);
    EXPECT_RC(s, once_store_list(s, &q, &rl), ONCE_ESTORE);
    EXPECT_RC(s, once_store_meta(s, "secret", "v2", &v), ONCE_ESTORE);
    assert_null(v);
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_ESTORE);

    /* Heal: the same handle reconnects by itself (backoff is at most 2 s). */
    px_set(px, &px->cut, 0);
    deadline = once_monotonic_ms() + tt_ms(8000);
    while ((rc = once_store_load(s, "p", "t-live", &got, NULL)) == ONCE_ESTORE &&
           once_monotonic_ms() < deadline)
        sleep_ms(50);
    EXPECT_RC(s, rc, ONCE_OK);
    assert_int_equal(got.version, 1); /* the failed update wrote nothing */
    assert_int_equal(got.lease_until, T0 - 10); /* nor the failed renewal */
    assert_string_equal(got.task_json, "{\"k\":1}");
    once_record_clear(&got);
    EXPECT_RC(s, once_store_renew(s, "p", "t-live", "replica-a", 1, T0 + 5000), ONCE_OK);
    EXPECT_RC(s, once_store_update(s, &r, 1, e.ev, 1), ONCE_OK);
    EXPECT_RC(s, once_store_events(s, "p", "t-live", 0, 0, &el), ONCE_OK);
    assert_int_equal(el.n, 3);
    once_event_list_clear(&el);
    EXPECT_RC(s, once_store_meta(s, "secret", "v2", &v), ONCE_OK);
    assert_string_equal(v, "v1");
    once_free(v);
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
    assert_true(st_clean(&rep));
    assert_int_equal(rep.records, 1);
    once_record_clear(&r);
    once_store_close(s);
    px_stop(px);
}

#define DROP_THREADS 8

static void *load_loop(void *arg)
{
    once_store *s = arg;
    once_record r;
    int i, bad = 0;

    for (i = 0; i < 20; i++) {
        if (once_store_load(s, "p", "t-1", &r, NULL) != ONCE_OK)
            bad++;
        once_record_clear(&r);
    }
    return (void *)(intptr_t)bad;
}

static void dropped_connections(void **state)
{
    pthread_t th[DROP_THREADS];
    once_store *s;
    once_record r;
    proxy *px = &g_px;
    int i, round;

    (void)state;
    px_start(px);
    s = open_ns(px->port, "dropped", 1);
    put(s, "t-1", ONCE_STATE_WORKING, 0, 1);
    for (round = 0; round < 3; round++) {
        void *bad;
        /* Fill the pool with several connections, then lose them all. */
        for (i = 0; i < DROP_THREADS; i++)
            assert_int_equal(pthread_create(&th[i], NULL, load_loop, s), 0);
        for (i = 0; i < DROP_THREADS; i++) {
            pthread_join(th[i], &bad);
            assert_int_equal((intptr_t)bad, 0);
        }
        px_set(px, &px->drop, 1);
        EXPECT_RC(s, once_store_load(s, "p", "t-1", &r, NULL), ONCE_OK);
        r.version++;
        r.fence++;
        EXPECT_RC(s, once_store_update(s, &r, r.version - 1, NULL, 0), ONCE_OK);
        once_record_clear(&r);
        px_set(px, &px->drop, 1);
        {
            char id[16];
            snprintf(id, sizeof id, "t-new-%d", round);
            put(s, id, ONCE_STATE_SUBMITTED, 0, 1); /* a write first, after the drop */
        }
    }
    once_store_close(s);
    px_stop(px);
}

/* An update of p/id by w with nev events (0: none). */
static void bump(once_store *w, const char *id, size_t nev)
{
    once_record r;
    st_events e;

    EXPECT_RC(w, once_store_load(w, "p", id, &r, NULL), ONCE_OK);
    st_mkev(&e, r.generation + 1, nev, id);
    r.version++;
    r.generation += (int64_t)nev;
    EXPECT_RC(w, once_store_update(w, &r, r.version - 1, nev ? e.ev : NULL, nev), ONCE_OK);
    once_record_clear(&r);
}

/* The next key f tells of (waiting up to the suite's bound), as "id". */
static void feed_expect(once_store *s, once_store_feed *f, const char *id)
{
    int64_t until = once_monotonic_ms() + tt_ms(10000);
    for (;;) {
        once_key_list l;
        int lost = 0;
        EXPECT_RC(s, once_store_feed_next(f, 200, &l, &lost), ONCE_OK);
        assert_int_equal(lost, 0);
        if (l.n > 0) {
            assert_string_equal(l.v[0].principal, "p");
            if (strcmp(l.v[0].task_id, id) != 0)
                fail_msg("the feed told of %s first, want %s", l.v[0].task_id, id);
            once_key_list_clear(&l);
            return;
        }
        if (once_monotonic_ms() > until)
            fail_msg("the feed told nothing of %s", id);
    }
}

static void change_feed(void **state)
{
    proxy *px = &g_px;
    once_store *w, *s;
    once_store_feed *f = NULL;
    once_key_list l;
    int lost = 0, rc;

    (void)state;
    w = open_ns(0, "feed", 1);
    px_start(px);
    s = open_ns(px->port, "feed", 0);
    assert_true(once_store_caps(s) & ONCE_STORE_FEED);
    assert_int_equal(once_store_feed_open(s, &f), ONCE_OK);
    /* The first answer subscribes and says lost: nothing before it is told. */
    EXPECT_RC(s, once_store_feed_next(f, 0, &l, &lost), ONCE_OK);
    assert_int_equal(lost, 1);
    assert_int_equal(l.n, 0);

    put(w, "t-1", ONCE_STATE_WORKING, 0, 1);   /* a create: not told */
    put(w, "t-2", ONCE_STATE_WORKING, 0, 1);
    bump(w, "t-1", 0);                         /* no events: not told */
    bump(w, "t-2", 2);                         /* the first thing told */
    feed_expect(s, f, "t-2");
    bump(w, "t-1", 1);
    feed_expect(s, f, "t-1");

    /* Cut: the feed says it is down, then subscribes again and says lost. */
    px_set(px, &px->drop, 1);
    rc = ONCE_OK;
    for (int i = 0; i < 50 && rc == ONCE_OK; i++) {
        rc = once_store_feed_next(f, 100, &l, &lost);
        once_key_list_clear(&l);
    }
    assert_int_equal(rc, ONCE_ESTORE);
    EXPECT_RC(s, once_store_feed_next(f, 0, &l, &lost), ONCE_OK);
    assert_int_equal(lost, 1);
    bump(w, "t-1", 1);
    feed_expect(s, f, "t-1");

    once_store_feed_close(f);
    once_store_close(s);
    once_store_close(w);
    px_stop(px);
}

#define OPENERS 6

static void concurrent_first_open(void **state)
{
    pid_t pid[OPENERS];
    char ns[32], url[1024];
    once_check_report rep;
    once_store *s;
    int go[2], i, status;

    (void)state;
    snprintf(ns, sizeof ns, "fresh_%d_%lld", (int)getpid(), (long long)once_monotonic_ms());
    url_for(url, sizeof url, 0, ns, 0);
    assert_int_equal(pipe(go), 0);
    for (i = 0; i < OPENERS; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            char err[256], id[16], c;
            once_record r;
            int rc;
            close(go[1]);
            if (read(go[0], &c, 1) < 0) /* EOF when the parent closes: all go at once */
                _exit(3);
            rc = once_store_open(url, NULL, &s, err, sizeof err);
            if (rc != ONCE_OK) {
                fprintf(stderr, "child %d open: %s: %s\n", i, once_errname(rc), err);
                _exit(1);
            }
            snprintf(id, sizeof id, "child-%d", i);
            if (st_rec(&r, "p", id, ONCE_STATE_SUBMITTED, T0, NULL) != 0)
                _exit(2);
            rc = once_store_create(s, &r, NULL, 0, NULL, NULL);
            if (rc != ONCE_OK)
                fprintf(stderr, "child %d create: %s: %s\n", i, once_errname(rc),
                        once_store_errmsg(s));
            once_record_clear(&r);
            once_store_close(s);
            _exit(rc == ONCE_OK ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]);
    for (i = 0; i < OPENERS; i++) {
        assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    s = open_ns(0, ns, 0);
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
    assert_true(st_clean(&rep));
    assert_int_equal(rep.records, OPENERS);
    once_store_close(s);
    once_store_close(open_ns(0, ns, 1)); /* reset=1: leave nothing behind */
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        char sql[160];
        long applied, newest;
        /* Every migration applied exactly once: versions 1..newest. */
        snprintf(sql, sizeof sql, "SELECT count(*) FROM \"%s\".once_migrations", ns);
        applied = pg_count(sql);
        snprintf(sql, sizeof sql, "SELECT max(version) FROM \"%s\".once_migrations", ns);
        newest = pg_count(sql);
        assert_true(newest >= 2);
        assert_int_equal(applied, newest);
        pg_admin("DROP SCHEMA \"%s\" CASCADE", ns);
    }
#endif
}

static void check_sees_damage(void **state)
{
    once_check_report rep;
    once_store *s;

    (void)state;
    s = open_ns(0, "damage", 1);
    put(s, "r", ONCE_STATE_WORKING, 0, 2);
    put(s, "leased", ONCE_STATE_WORKING, T0 + 5000, 1);
    put_push(s, "pushed", 1, "[{\"id\":\"c\",\"since\":0}]");
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
    assert_true(st_clean(&rep));
    assert_int_equal(rep.records, 3);
    assert_int_equal(rep.events, 4);

#ifdef ONCE_HAVE_PG
    if (g_pg) {
        /* An event whose key has nothing, and a generation ahead of the events. */
        pg_admin("INSERT INTO damage.once_events VALUES ('p'::bytea, 'ghost'::bytea, 1, "
                 "'{}'::bytea)");
        pg_admin("UPDATE damage.once_tasks SET generation = 3 WHERE task_id = 'r'::bytea");
        /* A config whose delivery row is gone; a row under a key without
         * push_json. */
        pg_admin("DELETE FROM damage.once_push WHERE task_id = 'pushed'::bytea");
        pg_admin("INSERT INTO damage.once_push VALUES ('p'::bytea, 'r'::bytea, 'c'::bytea, 0, 0, "
                 "2, 0, 0, ''::bytea, 0, false, ''::bytea, 0, 0, 0)");
        EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
        assert_false(st_clean(&rep));
        assert_int_equal(rep.orphan_events, 1);
        assert_int_equal(rep.bad_generation, 1);
        assert_int_equal(rep.bad_push, 2);
        assert_int_equal(rep.records, 3);
    }
#endif
#ifdef ONCE_HAVE_REDIS
    if (!g_pg) {
        static const char member[] = "p\0leased";
        /* An extra event, an orphan event list, a record missing from the
         * lease index (it would never be taken over). */
        rd_admin3("RPUSH", "damage:{1:p:r}:ev", "{}", 2);
        rd_admin3("RPUSH", "damage:{1:p:ghost}:ev", "{}", 2);
        rd_admin3("ZREM", "damage:leases", member, sizeof member - 1);
        /* A due delivery row missing from the due index (it would never be
         * delivered), and delivery rows under a key with no record. */
        {
            static const char due[] = "p\0pushed\0c";
            const char *argv[4] = {"HSET", "damage:{1:p:ghost}:push", "rev", "1"};
            const size_t len[4] = {4, strlen(argv[1]), 3, 1};
            rd_admin3("ZREM", "damage:pushq", due, sizeof due - 1);
            rd_admin(4, argv, len);
        }
        EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
        assert_false(st_clean(&rep));
        assert_int_equal(rep.bad_generation, 1);
        assert_int_equal(rep.orphan_events, 1);
        assert_int_equal(rep.bad_state, 1);
        assert_int_equal(rep.bad_push, 2);
        assert_non_null(strstr(rep.first_problem, "p/"));
    }
#endif
    once_store_close(s);
}

static void push_writes_race_acks(void **state)
{
    once_store *s;

    (void)state;
    s = open_ns(0, "pushrace", 1);
    st_push_race(s);
    once_store_close(s);
}

#ifdef ONCE_HAVE_PG
#define LIST_INDEXES "('once_tasks_list_ctx', 'once_tasks_list_state', 'once_tasks_list_ctx_state')"

/* How many of the list indexes (migration 5) schema "specific" has. */
static long list_indexes(void)
{
    return pg_count("SELECT count(*) FROM pg_indexes WHERE schemaname = 'specific' AND "
                    "indexname IN " LIST_INDEXES);
}

/* s finds "t-1" (WORKING, ctx-0) under every filter that names it. */
static void listed_by_filters(once_store *s)
{
    static const struct {
        const char *ctx;
        once_state st;
    } f[] = {{NULL, ONCE_STATE_UNKNOWN},
             {"ctx-0", ONCE_STATE_UNKNOWN},
             {NULL, ONCE_STATE_WORKING},
             {"ctx-0", ONCE_STATE_WORKING}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        once_list_query q = {.principal = "p", .context_id = f[i].ctx, .state = f[i].st,
                             .limit = 10};
        once_record_list l;
        EXPECT_RC(s, once_store_list(s, &q, &l), ONCE_OK);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.v[0].task_id, "t-1");
        once_record_list_clear(&l);
    }
}

/* Take schema "specific" back to version 4 (before the list indexes and
 * packed): an
 * open under NO_MIGRATE refuses it, a dry run leaves it so, and an open
 * builds the indexes from the tasks it holds, which the filters find. */
static void migrate_from_v4(once_store *s)
{
    char url[1024], err[256], want[96];
    int from = -1, to = -1;

    pg_admin("DROP INDEX specific.once_tasks_list_ctx, specific.once_tasks_list_state, "
             "specific.once_tasks_list_ctx_state; "
             "ALTER TABLE specific.once_tasks DROP COLUMN packed, DROP COLUMN trimmed; "
             "DELETE FROM specific.once_migrations WHERE version > 4");
    url_for(url, sizeof url, 0, "specific", 0);
    snprintf(want, sizeof want, "schema is at version 4, this once needs %d", PG_SCHEMA_VERSION);
    if (!st_no_migrate_refused(url, want, err, sizeof err))
        fail_msg("open of a version-4 schema under NO_MIGRATE: \"%s\"", err);
    assert_int_equal(once__store_migrate(url, 1, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 4);
    assert_int_equal(to, PG_SCHEMA_VERSION);
    assert_int_equal(list_indexes(), 0);
    once_store *s2 = open_ns(0, "specific", 0);
    assert_int_equal(pg_count("SELECT max(version) FROM specific.once_migrations"),
                     PG_SCHEMA_VERSION);
    assert_int_equal(list_indexes(), 3);
    listed_by_filters(s2);
    once_store_close(s2);
    listed_by_filters(s); /* opened before: its prepared statements still serve */
}

/* Take schema "specific" back to version 1 (what a once without push
 * delivery, journal, replica rows, list indexes and packed left), then
 * open it again: migrations 2 to 6 apply, under the same
 * advisory lock, keeping the records; push rows then work. s stays open
 * across it (its pooled connections must cope with the new column). */
static void migrate_from_v1(once_store *s)
{
    once_push_claim_list cl;
    once_push_row_list rows;
    once_record r;
    st_events e;
    once_store *s2;

    pg_admin("ALTER TABLE specific.once_tasks DROP COLUMN push_json, DROP COLUMN journal, "
             "DROP COLUMN packed, DROP COLUMN trimmed; "
             "DROP TABLE specific.once_push; DROP TABLE specific.once_replicas; "
             "DROP INDEX specific.once_tasks_list_ctx, specific.once_tasks_list_state, "
             "specific.once_tasks_list_ctx_state; "
             "DELETE FROM specific.once_migrations WHERE version > 1");
    s2 = open_ns(0, "specific", 0);
    assert_int_equal(pg_count("SELECT max(version) FROM specific.once_migrations"),
                     PG_SCHEMA_VERSION);
    assert_int_equal(list_indexes(), 3);
    EXPECT_RC(s2, once_store_load(s2, "p", "t-1", &r, NULL), ONCE_OK);
    assert_null(r.push_json);
    assert_null(r.journal);
    r.version = 2;
    r.generation = 2;
    r.push_json = once_strdup("[{\"id\":\"c\",\"since\":1}]");
    r.journal = once_strdup("{\"v\":1}");
    st_mkev(&e, 2, 1, "t-1");
    EXPECT_RC(s2, once_store_update(s2, &r, 1, e.ev, 1), ONCE_OK);
    once_record_clear(&r);
    EXPECT_RC(s2, once_store_push_rows(s2, "p", "t-1", &rows), ONCE_OK);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.v[0].delivered, 1);
    assert_int_equal(rows.v[0].target, 2);
    once_push_row_list_clear(&rows);
    EXPECT_RC(s2, once_store_push_claim(s2, "r1", T0, 1000, 4, &cl), ONCE_OK);
    assert_int_equal(cl.n, 1);
    assert_int_equal(cl.v[0].generation, 2);
    once_push_claim_list_clear(&cl);
    once_store_close(s2);
    /* The handle opened before the migration reads the new layout too. */
    EXPECT_RC(s, once_store_load(s, "p", "t-1", &r, NULL), ONCE_OK);
    assert_non_null(r.push_json);
    assert_string_equal(r.journal, "{\"v\":1}");
    once_record_clear(&r);
}

/* An echo task's texts as onced keeps them (bench/rest.sh's load): JSON
 * that deflate with the stores' dictionary makes smaller. */
#define PG_ECHO_TASK                                                                       \
    "{\"id\":\"done\",\"contextId\":\"8f1c2b7e-41d0-7a3e-9b62-5c0d8e4f1a27\",\"status\":"      \
    "{\"state\":\"TASK_STATE_COMPLETED\",\"timestamp\":\"2026-12-05T14:02:11.408Z\"},"          \
    "\"history\":[{\"messageId\":\"m-7\",\"taskId\":\"done\",\"role\":\"ROLE_USER\",\"parts\":"  \
    "[{\"text\":\"hi there\"}],\"contextId\":\"8f1c2b7e-41d0-7a3e-9b62-5c0d8e4f1a27\"}],"       \
    "\"artifacts\":[{\"artifactId\":\"echo\",\"name\":\"echo\",\"parts\":[{\"text\":\"hi there\"}]}]}"
#define PG_ECHO_JOURNAL                                                                    \
    "{\"v\":1,\"entries\":[{\"kind\":\"turn\",\"at\":1796479331408,\"replica\":\"pg-1\","      \
    "\"fence\":1,\"step\":0,\"resumed\":false,\"end\":1796479331409,"                         \
    "\"result\":\"TASK_STATE_COMPLETED\"}]}"

/* A task of n events: finished at T0 (push_json may be NULL) or working;
 * "done..." carries the echo task's texts, the others "{}" and no journal. */
static void put_n(once_store *s, const char *id, int done, size_t n, const char *push)
{
    int echo = strncmp(id, "done", 4) == 0;
    once_record r;
    st_events e;

    assert_int_equal(st_rec(&r, "p", id, done ? ONCE_STATE_COMPLETED : ONCE_STATE_WORKING,
                            T0 - 10, echo ? PG_ECHO_TASK : NULL),
                     0);
    if (echo)
        assert_non_null(r.journal = once_strdup(PG_ECHO_JOURNAL));
    if (done)
        r.finished_at = T0;
    r.generation = (int64_t)n;
    if (push)
        assert_non_null(r.push_json = once_strdup(push));
    st_mkev(&e, 1, n, id);
    EXPECT_RC(s, once_store_create(s, &r, e.ev, n, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

/* The events id has: how many, the last one's generation and whether its
 * payload is empty. */
static size_t events_of(once_store *s, const char *id, int64_t *last, int *empty)
{
    once_event_list l;
    size_t n;

    EXPECT_RC(s, once_store_events(s, "p", id, 0, 0, &l), ONCE_OK);
    n = l.n;
    *last = n ? l.v[n - 1].generation : 0;
    *empty = n && l.v[n - 1].payload[0] == '\0';
    once_event_list_clear(&l);
    return n;
}

/* Whether id's row in schema ns is packed (1) or not (0); either way its
 * texts load as they were written. */
static long packed_whole(once_store *s, const char *ns, const char *id, const char *task,
                         const char *journal)
{
    char sql[256];
    once_record r;

    EXPECT_RC(s, once_store_load(s, "p", id, &r, NULL), ONCE_OK);
    assert_string_equal(r.task_json, task);
    if (journal)
        assert_string_equal(r.journal, journal);
    else
        assert_null(r.journal);
    once_record_clear(&r);
    snprintf(sql, sizeof sql,
             "SELECT (packed IS NOT NULL)::int FROM %s.once_tasks WHERE task_id = '%s'::bytea", ns,
             id);
    return pg_count(sql);
}

/* Schema ns with URL parameters extra (after "&"). */
static once_store *open_with(const char *ns, int reset, const char *extra)
{
    char url[1024], err[256];
    once_store *s = NULL;
    size_t n;

    url_for(url, sizeof url, 0, ns, reset);
    n = strlen(url);
    snprintf(url + n, sizeof url - n, "&%s", extra);
    if (once_store_open(url, NULL, &s, err, sizeof err) != ONCE_OK)
        fail_msg("open %s: %s", url, err);
    return s;
}

/* What the sweep of a handle opened with compact=0 (off: compact=off) has
 * left of the tasks put_n made: "done" its last event, emptied, and its
 * texts packed; "owed" (a push delivery due) and "live" all their events;
 * "tiny" its last event, its "{}" not packed (no smaller deflated). */
static void compacted_as_asked(once_store *s, int off)
{
    int64_t last;
    int empty;

    assert_int_equal(events_of(s, "done", &last, &empty), off ? 3 : 1);
    assert_int_equal(last, 3);
    assert_int_equal(empty, !off);
    assert_int_equal(events_of(s, "owed", &last, &empty), 3);
    assert_false(empty);
    assert_int_equal(events_of(s, "live", &last, &empty), 2);
    assert_int_equal(events_of(s, "tiny", &last, &empty), off ? 2 : 1);
    assert_int_equal(last, 2);
    assert_int_equal(packed_whole(s, "compact", "done", PG_ECHO_TASK, PG_ECHO_JOURNAL), !off);
    assert_int_equal(packed_whole(s, "compact", "owed", "{}", NULL), 0);
    assert_int_equal(packed_whole(s, "compact", "tiny", "{}", NULL), 0);
    /* Trimmed: no event row left, the last event's generation on the row
     * (what events gave back above), first_digest left to the sweep. */
    assert_int_equal(pg_count("SELECT count(*) FROM compact.once_events "
                              "WHERE task_id IN ('done', 'tiny')"),
                     off ? 5 : 0);
    assert_int_equal(pg_count("SELECT count(*) FROM compact.once_tasks WHERE "
                              "task_id = 'done' AND trimmed = 3 AND first_digest = ''"),
                     !off);
    assert_int_equal(pg_count("SELECT count(*) FROM compact.once_tasks WHERE "
                              "task_id = 'tiny' AND trimmed = 2 AND first_digest = ''"),
                     !off);
    assert_int_equal(pg_count("SELECT count(*) FROM compact.once_tasks WHERE trimmed IS NOT NULL "
                              "AND task_id IN ('owed', 'live')"),
                     0);
}

/* The events of a trimmed task after g: its last one (3), emptied, for any
 * g below it, none from it on; a limit of 1 still finds it. */
static void trimmed_events(once_store *s)
{
    once_event_list l;

    for (int64_t g = 0; g <= 3; g++) {
        EXPECT_RC(s, once_store_events(s, "p", "done", g, g == 1 ? 1 : 0, &l), ONCE_OK);
        assert_int_equal(l.n, g < 3 ? 1 : 0);
        if (l.n) {
            assert_int_equal(l.v[0].generation, 3);
            assert_string_equal(l.v[0].payload, "");
        }
        once_event_list_clear(&l);
    }
}

/* Retention after compaction: the sweep's tombstone of a trimmed task has
 * the first digest its digest line gave (TASK_EXPIRED for the same
 * request, not a conflict), and no trimmed generation left. */
static void trimmed_entombed(once_store *s)
{
    char hex[ONCE_DIGEST_HEX + 1];
    once_tombstone t;
    once_record r;
    size_t n;

    st_hex(hex, 'a');
    EXPECT_RC(s, once_store_sweep(s, T0 + 1, T0 + 2, 100, &n), ONCE_OK);
    assert_int_equal(n, 3); /* done, owed, tiny */
    memset(&t, 0, sizeof t);
    assert_int_equal(once_store_load(s, "p", "tiny", &r, &t), ONCE_ETOMBSTONE);
    assert_string_equal(t.first_digest, hex);
    assert_int_equal(pg_count("SELECT count(*) FROM compact.once_tasks WHERE trimmed IS NOT NULL "
                              "OR (tomb AND first_digest = '')"),
                     0);
}

/* compact=0: the sweep, after retention, leaves a finished task its last
 * event alone, emptied, and its texts packed, batch after batch from its
 * mark (max 1: a batch per task); not a running task, not one a push
 * delivery is still owed from; a handle opened anew walks them again and
 * changes nothing; the check counts them whole; an update of a packed
 * task writes it whole again. compact=off leaves all; bad values refused. */
static void pg_compaction(once_store *s, int off)
{
    once_check_report rep;
    once_record r;
    size_t n;

    put_n(s, "done", 1, 3, NULL);
    put_n(s, "owed", 1, 3, "[{\"id\":\"c1\",\"since\":0}]");
    put_n(s, "live", 0, 2, NULL);
    put_n(s, "tiny", 1, 2, NULL);
    EXPECT_RC(s, once_store_sweep(s, 0, T0 + 1, 1, &n), ONCE_OK);
    assert_int_equal(n, 0); /* nothing entombed: retention is not due */
    compacted_as_asked(s, off);
    once_store *again = open_with("compact", 0, off ? "compact=off" : "compact=0");
    EXPECT_RC(again, once_store_sweep(again, 0, T0 + 1, 100, &n), ONCE_OK);
    compacted_as_asked(again, off);
    EXPECT_RC(again, once_store_check(again, &rep), ONCE_OK);
    assert_string_equal(rep.first_problem, "");
    assert_int_equal(rep.records, 4);
    assert_int_equal(rep.events, off ? 10 : 7);
    once_store_close(again);
    if (off)
        return;
    trimmed_events(s);
    /* A write after compaction (a replay's journal entry) keeps it whole. */
    EXPECT_RC(s, once_store_load(s, "p", "done", &r, NULL), ONCE_OK);
    once_free(r.journal);
    assert_non_null(r.journal = once_strdup("{\"v\":1,\"entries\":[]}"));
    r.version++;
    EXPECT_RC(s, once_store_update(s, &r, r.version - 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    assert_int_equal(packed_whole(s, "compact", "done", PG_ECHO_TASK, "{\"v\":1,\"entries\":[]}"),
                     0);
    /* A packed value that is not one (damage behind the store's back) is
     * ECORRUPT to a read, never a short or empty text. */
    pg_admin("UPDATE compact.once_tasks SET packed = '\\x01ff'::bytea WHERE task_id = 'tiny'");
    assert_int_equal(once_store_load(s, "p", "tiny", &r, NULL), ONCE_ECORRUPT);
    pg_admin("UPDATE compact.once_tasks SET packed = NULL WHERE task_id = 'tiny'");
    trimmed_entombed(s);
}

/* One replica's sweep on its own handle (no cmocka off the main thread):
 * what it returned. */
static void *sweep_main(void *arg)
{
    size_t n;
    return (void *)(intptr_t)once_store_sweep(arg, 0, T0 + 1, 16, &n);
}

/* Two replicas compacting the same tasks at once, each from its own mark:
 * a batch passes over the rows the other's holds (SKIP LOCKED) and takes
 * the next; between them every task is compacted, and whole to the check. */
static void pg_compaction_shared(void)
{
    enum { N = 200 };
    once_store *h[2] = {open_with("compact", 1, "compact=0"), open_with("compact", 0, "compact=0")};
    once_check_report rep;
    pthread_t th[2];
    char id[32];
    void *rc;

    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "done-%03d", i);
        put_n(h[i % 2], id, 1, 3, NULL);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, sweep_main, h[i]), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(th[i], &rc), 0);
        assert_int_equal((intptr_t)rc, ONCE_OK);
    }
    assert_int_equal(pg_count("SELECT count(*) FROM compact.once_tasks WHERE trimmed = 3"), N);
    assert_int_equal(pg_count("SELECT count(*) FROM compact.once_events"), 0);
    assert_int_equal(pg_count("SELECT count(*) FROM compact.once_tasks WHERE packed IS NOT NULL"),
                     N);
    assert_int_equal(packed_whole(h[1], "compact", "done-123", PG_ECHO_TASK, PG_ECHO_JOURNAL), 1);
    EXPECT_RC(h[0], once_store_check(h[0], &rep), ONCE_OK);
    assert_string_equal(rep.first_problem, "");
    assert_int_equal(rep.records, N);
    assert_int_equal(rep.events, N);
    once_store_close(h[0]);
    once_store_close(h[1]);
}

/* Take schema "specific" back to version 5 (before packed): an open under
 * NO_MIGRATE refuses it, an open migrates it, and its finished task is
 * then compacted and packed like any; s, open across it, reads it whole. */
static void migrate_from_v5(once_store *s)
{
    char url[1024], err[256], want[96];
    int64_t last;
    int empty;
    size_t n;

    put_n(s, "done", 1, 3, NULL);
    pg_admin("ALTER TABLE specific.once_tasks DROP COLUMN packed, DROP COLUMN trimmed; "
             "DELETE FROM specific.once_migrations WHERE version > 5");
    url_for(url, sizeof url, 0, "specific", 0);
    snprintf(want, sizeof want, "schema is at version 5, this once needs %d", PG_SCHEMA_VERSION);
    if (!st_no_migrate_refused(url, want, err, sizeof err))
        fail_msg("open of a version-5 schema under NO_MIGRATE: \"%s\"", err);
    once_store *s2 = open_with("specific", 0, "compact=0");
    assert_int_equal(pg_count("SELECT max(version) FROM specific.once_migrations"),
                     PG_SCHEMA_VERSION);
    EXPECT_RC(s2, once_store_sweep(s2, 0, T0 + 1, 100, &n), ONCE_OK);
    assert_int_equal(events_of(s2, "done", &last, &empty), 1);
    assert_true(empty);
    once_store_close(s2);
    assert_int_equal(packed_whole(s, "specific", "done", PG_ECHO_TASK, PG_ECHO_JOURNAL), 1);
}

/* Take schema "specific" back to version 6 with "done" compacted as
 * version 6 left a task (its last event kept as a row, emptied; its first
 * digest stored): the migration keeps it readable (one event, the check
 * counts it whole), and the next pass trims it (the row goes, trimmed
 * takes its generation) without losing the event a read gives. */
static void migrate_from_v6(once_store *s)
{
    once_check_report rep;
    int64_t last;
    int empty;
    size_t n;

    pg_admin("INSERT INTO specific.once_events(principal, task_id, generation, payload) "
             "SELECT principal, task_id, trimmed, ''::bytea FROM specific.once_tasks "
             "WHERE task_id = 'done'; "
             "UPDATE specific.once_tasks SET first_digest = substring(digests from 1 for 64) "
             "WHERE task_id = 'done'; "
             "ALTER TABLE specific.once_tasks DROP COLUMN trimmed; "
             "DELETE FROM specific.once_migrations WHERE version > 6");
    once_store *s2 = open_with("specific", 0, "compact=off");
    assert_int_equal(pg_count("SELECT max(version) FROM specific.once_migrations"),
                     PG_SCHEMA_VERSION);
    assert_int_equal(events_of(s2, "done", &last, &empty), 1);
    assert_true(empty);
    assert_int_equal(last, 3);
    EXPECT_RC(s2, once_store_check(s2, &rep), ONCE_OK);
    assert_string_equal(rep.first_problem, "");
    once_store_close(s2);
    s2 = open_with("specific", 0, "compact=0");
    EXPECT_RC(s2, once_store_sweep(s2, 0, T0 + 1, 100, &n), ONCE_OK);
    assert_int_equal(pg_count("SELECT count(*) FROM specific.once_events WHERE task_id = 'done'"),
                     0);
    assert_int_equal(pg_count("SELECT count(*) FROM specific.once_tasks WHERE task_id = 'done' "
                              "AND trimmed = 3 AND first_digest = ''"),
                     1);
    assert_int_equal(events_of(s, "done", &last, &empty), 1);
    assert_true(empty);
    assert_int_equal(last, 3);
    once_store_close(s2);
    assert_int_equal(packed_whole(s, "specific", "done", PG_ECHO_TASK, PG_ECHO_JOURNAL), 1);
}
#endif

/* ------------------------------------------------------------------------
 * Group commit. A write is held back on the server (PostgreSQL: a row lock
 * an admin transaction holds; Redis: CLIENT PAUSE WRITE); the writes that
 * come meanwhile queue behind it (the handle allows one batch in flight:
 * batch=1) and go out as one batch when it is let go. Every wait is for a
 * condition: a backend waiting on a lock or a paused client, the queue's
 * length.
 */

static void wait_for(int (*cond)(long), long arg, const char *what)
{
    int64_t until = once_monotonic_ms() + tt_ms(10000);

    while (!cond(arg)) {
        if (once_monotonic_ms() > until)
            fail_msg("timed out waiting for %s (%ld)", what, arg);
        sleep_ms(5);
    }
}

#ifdef ONCE_HAVE_PG
/* An admin connection inside a transaction that locks task_id's row. */
static PGconn *pg_lock_row(const char *schema, const char *task_id)
{
    char sql[256];
    PGconn *c = PQconnectdb(g_base);
    PGresult *r;

    assert_int_equal(PQstatus(c), CONNECTION_OK);
    snprintf(sql, sizeof sql,
             "BEGIN; SELECT 1 FROM %s.once_tasks WHERE task_id = '%s'::bytea FOR UPDATE", schema,
             task_id);
    r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(r), 1);
    PQclear(r);
    return c;
}

static void pg_unlock(PGconn *c)
{
    PQclear(PQexec(c, "ROLLBACK"));
    PQfinish(c);
}

#define LOCK_WAITERS                                                                               \
    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'once' "                      \
    "AND wait_event_type = 'Lock'"

static int lock_waiters_are(long n)
{
    return pg_count(LOCK_WAITERS) == n;
}
#endif

#ifdef ONCE_HAVE_REDIS
/* A number field of INFO clients ("blocked_clients", "connected_clients"). */
static long rd_info_clients(const char *field)
{
    redisContext *c = redisConnect(g_host, g_port);
    redisReply *r;
    const char *at;
    long n = -1;

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    r = redisCommand(c, "INFO clients");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    at = strstr(r->str, field);
    if (at)
        n = strtol(at + strlen(field) + 1, NULL, 10);
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* Paused clients are counted as blocked. */
static int paused_are(long n)
{
    return rd_info_clients("blocked_clients") == n;
}

static void rd_pause(int on)
{
    char ms[24];
    const char *argv[4] = {"CLIENT", on ? "PAUSE" : "UNPAUSE", ms, "WRITE"};
    size_t len[4];
    int i;

    snprintf(ms, sizeof ms, "%lld", (long long)tt_ms(60000));
    for (i = 0; i < 4; i++)
        len[i] = strlen(argv[i]);
    rd_admin(on ? 4 : 2, argv, len);
}
#endif

static once__batch *batch_of(once_store *s)
{
#ifdef ONCE_HAVE_PG
    if (g_pg)
        return &((pg_store *)s)->batch;
#endif
#ifdef ONCE_HAVE_REDIS
    if (!g_pg)
        return &((rd_store *)s)->batch;
#endif
    return NULL;
}

static once_store *g_bs; /* the handle whose queue queued_are() reads */

static int queued_are(long n)
{
    return once__batch_queued(batch_of(g_bs)) == (size_t)n;
}

/* One write on its own thread. */
typedef struct bwrite {
    once_store *s;
    pthread_t th;
    int create;     /* else an update from version expect to expect + 1 */
    int64_t expect;
    once_record rec;
    int rc;
    char winner_ctx[ONCE_ID_MAX + 1]; /* create's EEXISTS: the winner's context */
} bwrite;

static void *bwrite_main(void *arg)
{
    bwrite *w = arg;
    once_record win;

    memset(&win, 0, sizeof win);
    if (w->create) {
        w->rc = once_store_create(w->s, &w->rec, NULL, 0, &win, NULL);
        snprintf(w->winner_ctx, sizeof w->winner_ctx, "%s", win.context_id);
        once_record_clear(&win);
    } else {
        w->rc = once_store_update(w->s, &w->rec, w->expect, NULL, 0);
    }
    return NULL;
}

static void bwrite_start(bwrite *w, once_store *s, int create, const char *id, const char *ctx,
                         int64_t expect)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->create = create;
    w->expect = expect;
    assert_int_equal(st_rec(&w->rec, "p", id, ONCE_STATE_WORKING, T0, "{\"k\":1}"), 0);
    snprintf(w->rec.context_id, sizeof w->rec.context_id, "%s", ctx);
    if (!create)
        w->rec.version = expect + 1;
    assert_int_equal(pthread_create(&w->th, NULL, bwrite_main, w), 0);
}

static void bwrite_join(bwrite *w)
{
    pthread_join(w->th, NULL);
    once_record_clear(&w->rec);
}

/* A handle allowing one batch in flight, in a fresh namespace holding "r"
 * and "r2" (version 1, context "ctx-0", which their updates keep, as the
 * engine's do: on Redis an update that moves a task's context is sent
 * again alone, redis_write.c), with *lead's update of "r" sent and held on the
 * server: the writes that come next queue behind it. PostgreSQL's hold is
 * *lock (pg_unlock lets it go), Redis' a pause (rd_pause(0)). */
static once_store *batch_held(const char *ns, bwrite *lead, void **lock)
{
    char url[1024], err[256];
    once_store *s = NULL;
    int rc;

    url_for(url, sizeof url - 10, 0, ns, 1);
    snprintf(url + strlen(url), 10, "&batch=1");
    rc = once_store_open(url, NULL, &s, err, sizeof err);
    if (rc != ONCE_OK)
        fail_msg("open %s: %s: %s", url, once_errname(rc), err);
    put(s, "r", ONCE_STATE_WORKING, 0, 0);
    put(s, "r2", ONCE_STATE_WORKING, 0, 0);
    g_bs = s;
    *lock = NULL;
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        *lock = pg_lock_row(ns, "r");
        bwrite_start(lead, s, 0, "r", "ctx-0", 1);
        wait_for(lock_waiters_are, 1, "a once backend waiting on a lock");
    }
#endif
#ifdef ONCE_HAVE_REDIS
    if (!g_pg) {
        rd_pause(1);
        bwrite_start(lead, s, 0, "r", "ctx-0", 1);
        wait_for(paused_are, 1, "a paused client");
    }
#endif
    return s;
}

static void batch_release(void *lock)
{
#ifdef ONCE_HAVE_PG
    if (g_pg)
        pg_unlock(lock);
#endif
#ifdef ONCE_HAVE_REDIS
    (void)lock;
    if (!g_pg)
        rd_pause(0);
#endif
}

static void batch_outcomes(void **state)
{
    static const char *const uniq[] = {"u1", "u2", "u3"};
    bwrite lead, dup[4], cas[2], stale, u[3];
    int ok = 0, won = 0, i;
    once_store *s;
    void *lock;

    (void)state;
    s = batch_held("batchok", &lead, &lock);
    for (i = 0; i < 4; i++) {
        char ctx[8];
        snprintf(ctx, sizeof ctx, "c%d", i);
        bwrite_start(&dup[i], s, 1, "dup", ctx, 0);
    }
    bwrite_start(&cas[0], s, 0, "r2", "ctx-0", 1);
    bwrite_start(&cas[1], s, 0, "r2", "ctx-0", 1);
    bwrite_start(&stale, s, 0, "r2", "ctx-0", 5);
    for (i = 0; i < 3; i++)
        bwrite_start(&u[i], s, 1, uniq[i], "c", 0);
    wait_for(queued_are, 10, "ten writes in the batch queue");
    batch_release(lock);

    bwrite_join(&lead);
    assert_int_equal(lead.rc, ONCE_OK);
    for (i = 0; i < 4; i++)
        bwrite_join(&dup[i]);
    for (i = 0; i < 4; i++)
        if (dup[i].rc == ONCE_OK)
            won = i, ok++;
    assert_int_equal(ok, 1);
    for (i = 0; i < 4; i++) {
        char ctx[16];
        if (i == won)
            continue;
        assert_int_equal(dup[i].rc, ONCE_EEXISTS);
        snprintf(ctx, sizeof ctx, "c%d", won);
        assert_string_equal(dup[i].winner_ctx, ctx); /* the winner's record */
    }
    bwrite_join(&cas[0]);
    bwrite_join(&cas[1]);
    assert_int_equal((cas[0].rc == ONCE_OK) + (cas[1].rc == ONCE_OK), 1);
    assert_int_equal((cas[0].rc == ONCE_ECONFLICT) + (cas[1].rc == ONCE_ECONFLICT), 1);
    bwrite_join(&stale);
    assert_int_equal(stale.rc, ONCE_ECONFLICT);
    for (i = 0; i < 3; i++) {
        bwrite_join(&u[i]);
        assert_int_equal(u[i].rc, ONCE_OK);
    }
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        /* They were one transaction: every row they wrote has its xmin. */
        assert_int_equal(pg_count("SELECT count(DISTINCT xmin::text) FROM batchok.once_tasks "
                                  "WHERE task_id IN ('dup'::bytea, 'r2'::bytea, 'u1'::bytea, "
                                  "'u2'::bytea, 'u3'::bytea)"),
                         1);
    }
#endif
#ifdef ONCE_HAVE_REDIS
    if (!g_pg) /* one connection carried them all: with open's and this check's, three */
        assert_true(rd_info_clients("connected_clients") <= 3);
#endif
    once_store_close(s);
}

#ifdef ONCE_HAVE_PG
/* The highest $n in sql. */
static int sql_params(const char *sql)
{
    int n = 0;
    for (const char *p = strchr(sql, '$'); p != NULL; p = strchr(p + 1, '$')) {
        int k = (int)strtol(p + 1, NULL, 10);
        if (k > n)
            n = k;
    }
    return n;
}

/* The text of EXPLAIN's rows for sql, prepared on c with NULL arguments. */
static void pg_explain(PGconn *c, int id, const char *sql, char *out, size_t cap)
{
    char cmd[8192];
    PGresult *r;
    size_t len = 0;

    snprintf(cmd, sizeof cmd, "PREPARE k%d AS %s", id, sql);
    r = PQexec(c, cmd);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s: %s", cmd, PQresultErrorMessage(r));
    PQclear(r);
    len = (size_t)snprintf(cmd, sizeof cmd, "EXPLAIN EXECUTE k%d(", id);
    for (int i = 0, n = sql_params(sql); i < n && len < sizeof cmd - 8; i++)
        len += (size_t)snprintf(cmd + len, sizeof cmd - len, "%sNULL", i ? ", " : "");
    snprintf(cmd + len, sizeof cmd - len, ")");
    r = PQexec(c, cmd);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", cmd, PQresultErrorMessage(r));
    out[0] = '\0';
    len = 0;
    for (int i = 0; i < PQntuples(r) && len < cap - 1; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s\n", PQgetvalue(r, i, 0));
    PQclear(r);
}
#endif

static void keyed_plans(void **state)
{
    (void)state;
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        static const char key[] = "principal = $1::bytea AND task_id = $2::bytea";
        char plan[8192];
        PGresult *r;
        int checked = 0;

        pg_admin("DROP SCHEMA IF EXISTS plans CASCADE");
        once_store *s = open_ns(0, "plans", 0); /* its migrations make the tables */
        PGconn *c = PQconnectdb(g_base);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        r = PQexec(c, "SET search_path = plans; SET plan_cache_mode = force_generic_plan");
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        for (int id = 0; id < PG_NSTMT; id++) {
            if (strstr(once__pg_sql[id], key) == NULL)
                continue;
            pg_explain(c, id, once__pg_sql[id], plan, sizeof plan);
            if (strstr(plan, "once_tasks_list") != NULL || strstr(plan, "_pkey") == NULL)
                fail_msg("statement %d is not planned on a primary key:\n%s\n%s", id,
                         once__pg_sql[id], plan);
            checked++;
        }
        assert_true(checked >= 6); /* load, head, update, renew, events, push rows... */
        PQfinish(c);
        once_store_close(s);
        return;
    }
#endif
    skip(); /* a PostgreSQL planner's case */
}

#ifdef ONCE_HAVE_PG
/* Every list statement's generic plan is one scan of its filter's index:
 * the index named, no sort (the index gives the page order), no filter
 * on rows after the index (its conditions are all in the Index Cond), no
 * sequential scan. when says which state of the table it is. */
static void check_list_plans(PGconn *c, const char *when)
{
    static const char *const want[] = {
        [PG_LIST - PG_LIST] = "once_tasks_list",
        [PG_LIST_AFTER - PG_LIST] = "once_tasks_list",
        [PG_LIST_CTX - PG_LIST] = "once_tasks_list_ctx",
        [PG_LIST_CTX_AFTER - PG_LIST] = "once_tasks_list_ctx",
        [PG_LIST_STATE - PG_LIST] = "once_tasks_list_state",
        [PG_LIST_STATE_AFTER - PG_LIST] = "once_tasks_list_state",
        [PG_LIST_CTX_STATE - PG_LIST] = "once_tasks_list_ctx_state",
        [PG_LIST_CTX_STATE_AFTER - PG_LIST] = "once_tasks_list_ctx_state",
    };
    char plan[8192], scan[96];

    assert_int_equal(PG_LIST_CTX_STATE_AFTER - PG_LIST + 1, sizeof want / sizeof want[0]);
    for (int id = PG_LIST; id <= PG_LIST_CTX_STATE_AFTER; id++) {
        PGresult *r = PQexec(c, "DEALLOCATE ALL");
        PQclear(r);
        pg_explain(c, id, once__pg_sql[id], plan, sizeof plan);
        snprintf(scan, sizeof scan, "Scan using %s on once_tasks", want[id - PG_LIST]);
        if (strstr(plan, scan) == NULL || strstr(plan, "Sort") != NULL ||
            strstr(plan, "Filter:") != NULL || strstr(plan, "Seq Scan") != NULL)
            fail_msg("%s: list statement %d is not one scan of %s:\n%s\n%s", when, id,
                     want[id - PG_LIST], once__pg_sql[id], plan);
    }
}
#endif

/* The list statements seek on their filter's index (migration 5), as the
 * generic plans pooled connections cache: on a schema just created (no
 * statistics), and on one holding 20,000 tasks of one principal over 2,000
 * contexts, nine in ten finished, analysed. */
static void list_plans(void **state)
{
    (void)state;
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        pg_admin("DROP SCHEMA IF EXISTS listplans CASCADE");
        once_store *s = open_ns(0, "listplans", 0);
        PGconn *c = PQconnectdb(g_base);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        PGresult *r = PQexec(c, "SET search_path = listplans; "
                                "SET plan_cache_mode = force_generic_plan");
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        check_list_plans(c, "no statistics");
        pg_admin("INSERT INTO listplans.once_tasks(principal, task_id, context_id, state, kind, "
                 "version, generation, fence, step, lease_owner, lease_until, created_at, "
                 "updated_at, finished_at, digests, task_json, first_digest, tomb, expired_at) "
                 "SELECT 'p'::bytea, convert_to('t-' || i, 'UTF8'), "
                 "convert_to('c-' || (i %% 2000), 'UTF8'), CASE WHEN i %% 10 = 0 THEN 2 "
                 "ELSE 5 END, 1, 1, 4, 1, 0, ''::bytea, 0, i, i, "
                 "CASE WHEN i %% 10 = 0 THEN 0 ELSE i + 1 END, ''::bytea, '{}'::bytea, "
                 "''::bytea, false, 0 FROM generate_series(1, 20000) AS i; "
                 "ANALYZE listplans.once_tasks");
        check_list_plans(c, "20,000 tasks, analysed");
        PQfinish(c);
        once_store_close(s);
        pg_admin("DROP SCHEMA listplans CASCADE");
        return;
    }
#endif
    skip(); /* a PostgreSQL planner's case */
}

/* An asynchronous create (once_store_create_start): its outcome as its
 * callback told it, how often and on which thread. */
typedef struct acreate {
    once_record rec;
    st_events ev;
    int rc;
    int landed; /* landings, atomic */
    pthread_t by;
} acreate;

static acreate *g_ac;
static int g_nac;

static void acreate_done(void *arg, int rc)
{
    acreate *a = arg;

    a->rc = rc;
    a->by = pthread_self();
    __atomic_add_fetch(&a->landed, 1, __ATOMIC_ACQ_REL);
}

static int landed_are(long n)
{
    long k = 0;
    int i;

    for (i = 0; i < g_nac; i++)
        k += __atomic_load_n(&g_ac[i].landed, __ATOMIC_ACQUIRE) > 0;
    return k == n;
}

/* Start a's create of a finished task id (two events); what start said. */
static int acreate_begin(once_store *s, acreate *a, const char *id, const char *ctx)
{
    memset(a, 0, sizeof *a);
    if (st_rec(&a->rec, "p", id, ONCE_STATE_COMPLETED, T0, "{\"k\":2}") != 0)
        return ONCE_ENOMEM;
    snprintf(a->rec.context_id, sizeof a->rec.context_id, "%s", ctx);
    st_mkev(&a->ev, 1, 2, id);
    a->rec.generation = 2;
    return once_store_create_start(s, &a->rec, a->ev.ev, 2, acreate_done, a);
}

static void acreate_start(once_store *s, acreate *a, const char *id, const char *ctx)
{
    assert_int_equal(acreate_begin(s, a, id, ctx), ONCE_OK);
}

static void batch_async(void **state)
{
    static const char *const uniq[] = {"a1", "a2", "a3"};
    acreate ac[7];
    bwrite lead, w;
    int ok = 0, won = -1, i;
    once_event_list el;
    once_record r;
    once_store *s;
    void *lock;
    char url[1024], err[256];

    (void)state;
    s = batch_held("batchasync", &lead, &lock);
    assert_true(once_store_can_start(s, NULL));
    g_ac = ac;
    g_nac = 7;
    for (i = 0; i < 3; i++)
        acreate_start(s, &ac[i], uniq[i], "c");
    for (i = 3; i < 6; i++) {
        char ctx[16];
        snprintf(ctx, sizeof ctx, "c%d", i);
        acreate_start(s, &ac[i], "adup", ctx);
    }
    acreate_start(s, &ac[6], "r2", "other"); /* a key that holds a record */
    bwrite_start(&w, s, 1, "s1", "c", 0);    /* a waiting writer among them */
    wait_for(queued_are, 8, "eight writes in the batch queue");
    assert_true(landed_are(0)); /* queued behind the held batch: none has landed */
    batch_release(lock);

    bwrite_join(&lead);
    assert_int_equal(lead.rc, ONCE_OK);
    bwrite_join(&w);
    assert_int_equal(w.rc, ONCE_OK);
    wait_for(landed_are, 7, "seven asynchronous creates landed");
    for (i = 0; i < 7; i++)
        assert_false(pthread_equal(ac[i].by, pthread_self()));
    for (i = 0; i < 3; i++) {
        assert_int_equal(ac[i].rc, ONCE_OK);
        EXPECT_RC(s, once_store_load(s, "p", uniq[i], &r, NULL), ONCE_OK);
        assert_int_equal(r.state, ONCE_STATE_COMPLETED);
        assert_int_equal(r.generation, 2);
        once_record_clear(&r);
        EXPECT_RC(s, once_store_events(s, "p", uniq[i], 0, 10, &el), ONCE_OK);
        assert_int_equal(el.n, 2);
        once_event_list_clear(&el);
    }
    for (i = 3; i < 6; i++) {
        if (ac[i].rc == ONCE_OK)
            won = i, ok++;
        else
            assert_int_equal(ac[i].rc, ONCE_ECONFLICT); /* nothing stored; decide again */
    }
    assert_int_equal(ok, 1);
    EXPECT_RC(s, once_store_load(s, "p", "adup", &r, NULL), ONCE_OK);
    {
        char ctx[16];
        snprintf(ctx, sizeof ctx, "c%d", won);
        assert_string_equal(r.context_id, ctx); /* the winner's record, no other's */
    }
    once_record_clear(&r);
    assert_int_equal(ac[6].rc, ONCE_ECONFLICT);
    EXPECT_RC(s, once_store_load(s, "p", "r2", &r, NULL), ONCE_OK);
    assert_int_equal(r.version, 1); /* untouched */
    assert_string_not_equal(r.context_id, "other");
    once_record_clear(&r);
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        /* One batch: one transaction for the held-back writes. */
        assert_int_equal(pg_count("SELECT count(DISTINCT xmin::text) FROM batchasync.once_tasks "
                                  "WHERE task_id IN ('a1'::bytea, 'a2'::bytea, 'a3'::bytea, "
                                  "'adup'::bytea, 's1'::bytea)"),
                         1);
        /* A record with delivery rows is not started: its rows need a
         * transaction of their own. Nothing is queued for it. */
        acreate p;
        memset(&p, 0, sizeof p);
        assert_int_equal(st_rec(&p.rec, "p", "withpush", ONCE_STATE_COMPLETED, T0, "{}"), 0);
        p.rec.push_json = once_strdup("[{\"id\":\"c1\",\"url\":\"http://127.0.0.1:1/\"}]");
        assert_false(once_store_can_start(s, &p.rec));
        assert_int_equal(once_store_create_start(s, &p.rec, NULL, 0, acreate_done, &p),
                         ONCE_EUNSUPPORTED);
        assert_int_equal(p.landed, 0);
        once_record_clear(&p.rec);
    }
#endif
    once_store_close(s); /* its drivers stopped: no landing can follow */
    for (i = 0; i < 7; i++) {
        assert_int_equal(ac[i].landed, 1);
        once_record_clear(&ac[i].rec);
    }
    /* Without group commit there is no create to start. */
    url_for(url, sizeof url - 10, 0, "batchasync", 0);
    snprintf(url + strlen(url), 10, "&batch=0");
    assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_OK);
    assert_false(once_store_can_start(s, NULL));
    once_store_close(s);
}

/* Asynchronous and waiting creates from several threads at once, with two
 * batches in flight: every asynchronous one lands exactly once, OK, and is
 * stored. */
#define AM_THREADS 4
#define AM_EACH 200

typedef struct amix {
    once_store *s;
    int t;
    acreate *ac; /* AM_EACH */
} amix;

static void *amix_main(void *arg)
{
    amix *m = arg;
    int i;

    for (i = 0; i < AM_EACH; i++) {
        char id[32];
        snprintf(id, sizeof id, "m%d-%d", m->t, i);
        if (i % 4 == 3) { /* every fourth waits for its own commit */
            acreate *a = &m->ac[i];
            memset(a, 0, sizeof *a);
            a->rc = st_rec(&a->rec, "p", id, ONCE_STATE_WORKING, T0, "{}") == 0
                        ? once_store_create(m->s, &a->rec, NULL, 0, NULL, NULL)
                        : ONCE_ENOMEM;
            __atomic_store_n(&a->landed, 1, __ATOMIC_RELEASE);
        } else {
            int rc = acreate_begin(m->s, &m->ac[i], id, "c");
            if (rc != ONCE_OK) { /* never landed: seen as a failed create */
                m->ac[i].rc = rc;
                __atomic_store_n(&m->ac[i].landed, 1, __ATOMIC_RELEASE);
            }
        }
    }
    return NULL;
}

static void batch_async_mixed(void **state)
{
    static acreate ac[AM_THREADS * AM_EACH];
    amix m[AM_THREADS];
    pthread_t th[AM_THREADS];
    char url[1024], err[256];
    once_store *s = NULL;
    int i;

    (void)state;
    url_for(url, sizeof url - 10, 0, "batchmixed", 1);
    snprintf(url + strlen(url), 10, "&batch=2");
    assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_OK);
    g_ac = ac;
    g_nac = AM_THREADS * AM_EACH;
    for (i = 0; i < AM_THREADS; i++) {
        m[i].s = s;
        m[i].t = i;
        m[i].ac = ac + i * AM_EACH;
        assert_int_equal(pthread_create(&th[i], NULL, amix_main, &m[i]), 0);
    }
    for (i = 0; i < AM_THREADS; i++)
        pthread_join(th[i], NULL);
    wait_for(landed_are, AM_THREADS * AM_EACH, "every create landed");
    once_store_close(s);
    s = open_ns(0, "batchmixed", 0);
    for (i = 0; i < AM_THREADS * AM_EACH; i++) {
        once_record r;
        char id[32];
        assert_int_equal(ac[i].landed, 1);
        assert_int_equal(ac[i].rc, ONCE_OK);
        snprintf(id, sizeof id, "m%d-%d", i / AM_EACH, i % AM_EACH);
        EXPECT_RC(s, once_store_load(s, "p", id, &r, NULL), ONCE_OK);
        once_record_clear(&r);
        once_record_clear(&ac[i].rec);
    }
    once_store_close(s);
}

static void batch_lost_commit(void **state)
{
    (void)state;
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        static const char *const ids[] = {"k1", "k2", "k3"};
        bwrite lead, k[3], upd;
        PGconn *lock_r2;
        void *lock_r;
        once_record r;
        int i;
        once_store *s = batch_held("batchlost", &lead, &lock_r);

        lock_r2 = pg_lock_row("batchlost", "r2");
        for (i = 0; i < 3; i++)
            bwrite_start(&k[i], s, 1, ids[i], "c", 0);
        bwrite_start(&upd, s, 0, "r2", "ctx-0", 1);
        wait_for(queued_are, 4, "four writes in the batch queue");
        pg_unlock(lock_r);
        bwrite_join(&lead);
        assert_int_equal(lead.rc, ONCE_OK);
        /* The batch went out (BEGIN, k1..k3, r2, COMMIT): its r2 waits on
         * the lock with the three inserts done and COMMIT not yet run.
         * Its server process dies there. */
        wait_for(lock_waiters_are, 1, "the batch waiting on a lock");
        assert_int_equal(pg_count("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                  "WHERE application_name = 'once' AND wait_event_type = 'Lock'"),
                         1);
        for (i = 0; i < 3; i++) {
            bwrite_join(&k[i]);
            assert_int_equal(k[i].rc, ONCE_ESTORE);
        }
        bwrite_join(&upd);
        assert_int_equal(upd.rc, ONCE_ESTORE);
        pg_unlock(lock_r2);
        /* Lost, as every caller was told it may be: nothing was resent. */
        for (i = 0; i < 3; i++)
            EXPECT_RC(s, once_store_load(s, "p", ids[i], &r, NULL), ONCE_ENOTFOUND);
        EXPECT_RC(s, once_store_load(s, "p", "r2", &r, NULL), ONCE_OK);
        assert_int_equal(r.version, 1);
        once_record_clear(&r);
        put(s, "k4", ONCE_STATE_WORKING, 0, 0); /* the handle goes on */
        once_store_close(s);
        return;
    }
#endif
    skip(); /* a PostgreSQL transaction's case */
}

/* What the schema of namespace "schema_step" holds: its version as the
 * backend keeps it (PostgreSQL: once_migrations, Redis: the marker key),
 * -1 when there is no trace of it. */
static int step_version(void)
{
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        if (pg_count("SELECT count(*) FROM pg_namespace WHERE nspname = 'schema_step'") == 0)
            return -1;
        return (int)pg_count("SELECT coalesce(max(version), 0) FROM schema_step.once_migrations");
    }
#endif
#ifdef ONCE_HAVE_REDIS
    if (!g_pg) {
        char v[32];
        rd_get("schema_step:schema", v, sizeof v);
        return v[0] ? (int)strtol(v, NULL, 10) : -1;
    }
#endif
    return -2;
}

static void step_forget(void)
{
#ifdef ONCE_HAVE_PG
    if (g_pg)
        pg_admin("DROP SCHEMA IF EXISTS schema_step CASCADE");
#endif
#ifdef ONCE_HAVE_REDIS
    if (!g_pg)
        rd_admin3("DEL", "schema_step:schema", NULL, 0);
#endif
}

/* open under ONCE_STORE_OPEN_NO_MIGRATE: refused, the message holding want. */
static void refused_with(const char *url, const char *want)
{
    char err[512] = "";

    if (!st_no_migrate_refused(url, want, err, sizeof err))
        fail_msg("open of %s under NO_MIGRATE: \"%s\", not refused with \"%s\"", url, err, want);
}

static void schema_step(void **state)
{
    const int target = g_pg ? PG_VERSION_OR_0 : RD_VERSION_OR_0;
    once_store_options keep = {.flags = ONCE_STORE_OPEN_NO_MIGRATE};
    char url[1024], err[256], want[128];
    once_store *s = NULL;
    int from = -1, to = -1;

    (void)state;
    step_forget();
    url_for(url, sizeof url, 0, "schema_step", 0);

    /* Nothing there: refused without migrating, a dry run writes nothing. */
    snprintf(want, sizeof want, "schema is at version 0, this once needs %d: run onced migrate",
             target);
    refused_with(url, want);
    assert_int_equal(step_version(), -1);
    assert_int_equal(once__store_migrate(url, 1, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 0);
    assert_int_equal(to, target);
    assert_int_equal(step_version(), -1);

    /* The migration, then a store that opens under NO_MIGRATE and says its
     * version (the start-up line's schema_version). */
    assert_int_equal(once__store_migrate(url, 0, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 0);
    assert_int_equal(to, target);
    assert_int_equal(step_version(), target);
    assert_int_equal(once_store_open(url, &keep, &s, err, sizeof err), ONCE_OK);
    assert_int_equal(once__store_schema_version(s), target);
    once_store_close(s);
    assert_int_equal(once__store_migrate(url, 0, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, target);

    /* A newer once's schema: refused by open, migrate and a dry run alike. */
#ifdef ONCE_HAVE_PG
    if (g_pg)
        pg_admin("INSERT INTO schema_step.once_migrations(version) VALUES (%d)", target + 1);
#endif
#ifdef ONCE_HAVE_REDIS
    if (!g_pg) {
        char v[16];
        snprintf(v, sizeof v, "%d", target + 1);
        rd_admin3("SET", "schema_step:schema", v, strlen(v));
    }
#endif
    snprintf(want, sizeof want, "schema is at version %d, this once knows up to %d: upgrade once",
             target + 1, target);
    refused_with(url, want);
    s = (once_store *)1;
    assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EUNSUPPORTED);
    assert_null(s);
    for (int dry = 0; dry <= 1; dry++) {
        assert_int_equal(once__store_migrate(url, dry, &from, &to, err, sizeof err),
                         ONCE_EUNSUPPORTED);
        assert_non_null(strstr(err, want));
    }
    assert_int_equal(step_version(), target + 1);
    step_forget();
}

#ifdef ONCE_HAVE_REDIS
/* How many of principal p's tasks a list by context ctx finds, page after
 * page (following a ONCE_KIND_RESUME record too). */
static size_t rd_listed(once_store *s, const char *ctx)
{
    char after[ONCE_ID_MAX + 1];
    once_list_query q = {.principal = "p", .context_id = ctx, .limit = 1000};
    size_t total = 0;
    once_record_list l;

    do {
        EXPECT_RC(s, once_store_list(s, &q, &l), ONCE_OK);
        for (size_t i = 0; i < l.n; i++) {
            if (l.v[i].kind != ONCE_KIND_RESUME) {
                assert_string_equal(l.v[i].context_id, ctx);
                total++;
            }
        }
        if (l.n > 0) {
            snprintf(after, sizeof after, "%s", l.v[l.n - 1].task_id);
            q.after_created_at = l.v[l.n - 1].created_at;
            q.after_task_id = after;
        }
        once_record_list_clear(&l);
    } while (l.n > 0);
    return total;
}

/* Take every record hash under prefix back to the layout before version 3:
 * one hash field per value, under the names the "h" and "r" fields of
 * layout 3 hold them by (redis_keys.c), and "u". This is the inverse of
 * the repacking step, written apart from it, so a record that round-trips
 * through both reads back as it was. Returns the records unpacked. */
static long rd_unpack(const char *prefix)
{
    static const char lua[] =
        "local h = redis.call('HGET', KEYS[1], 'h')\n"
        "if not h then return 0 end\n"
        "local r, u = redis.call('HGET', KEYS[1], 'r'), redis.call('HGET', KEYS[1], 'u')\n"
        "local names = {'s', 'v', 'g', 'f', 'o', 'fa', 'c', 'lm', 'fd'}\n"
        "local a, i = {}, 1\n"
        "for x in string.gmatch(h, '([^%z]*)%z') do\n"
        "  a[#a + 1] = names[i]; a[#a + 1] = x; i = i + 1\n"
        "end\n"
        "for n, x in string.gmatch(r, '([^%z]*)%z([^%z]*)%z') do\n"
        "  a[#a + 1] = n; a[#a + 1] = x\n"
        "end\n"
        "a[#a + 1] = 'u'; a[#a + 1] = u\n"
        "redis.call('DEL', KEYS[1])\n"
        "redis.call('HSET', KEYS[1], unpack(a))\n"
        "return 1\n";
    return rd_each_hash(prefix, lua);
}

/* How many hashes under prefix hold field f. */
static long rd_with_field(const char *prefix, const char *f)
{
    char lua[128];

    snprintf(lua, sizeof lua, "return redis.call('HEXISTS', KEYS[1], '%s')", f);
    return rd_each_hash(prefix, lua);
}

/* A store of layout version 1 (before the context indexes) with 1,500 tasks
 * in three contexts, 15 of them tombstones: written by this once, then its
 * records unpacked (rd_unpack), its context indexes deleted and its marker
 * set back (or removed: a store from before the marker), which is exactly
 * what an older once left. */
#define RD_OLD_N 1500
static void rd_write_v1(int marker)
{
    once_store *s = open_ns(0, "ctxidx", 1);
    size_t n;

    for (int i = 0; i < RD_OLD_N; i++) {
        once_record r;
        char id[16];
        snprintf(id, sizeof id, "m-%04d", i);
        assert_int_equal(st_rec(&r, "p", id, i % 100 ? ONCE_STATE_WORKING : ONCE_STATE_COMPLETED,
                                T0 + i, NULL), 0);
        snprintf(r.context_id, sizeof r.context_id, "ctx-%d", i % 3);
        EXPECT_RC(s, once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
        once_record_clear(&r);
    }
    EXPECT_RC(s, once_store_sweep(s, T0 + RD_OLD_N + 10, T0 + 1, 100, &n), ONCE_OK);
    assert_int_equal(n, RD_OLD_N / 100);
    once_store_close(s);
    assert_int_equal(rd_unpack("ctxidx"), RD_OLD_N - RD_OLD_N / 100);
    rd_del_matching("ctxidx:c:*");
    if (marker)
        rd_admin3("SET", "ctxidx:schema", "1", 1);
    else
        rd_admin3("DEL", "ctxidx:schema", NULL, 0);
}

/* Open the store rd_write_v1 left: the migration indexes every record in
 * its context and no tombstone; lists by context find every task. */
static void rd_open_v1(void)
{
    once_check_report rep;
    char v[32];
    once_store *s = open_ns(0, "ctxidx", 0);

    rd_get("ctxidx:schema", v, sizeof v);
    assert_int_equal(strtol(v, NULL, 10), RD_SCHEMA_VERSION);
    for (int c = 0; c < 3; c++) {
        char ctx[16], key[64];
        snprintf(ctx, sizeof ctx, "ctx-%d", c);
        snprintf(key, sizeof key, "ctxidx:c:1:p:%s", ctx);
        assert_int_equal(rd_listed(s, ctx), (RD_OLD_N - RD_OLD_N / 100) / 3);
        assert_int_equal(rd_zcard(key), (RD_OLD_N - RD_OLD_N / 100) / 3);
    }
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
    assert_true(st_clean(&rep));
    once_store_close(s);
}

/* Every field of r as one line, so two reads of a record compare as text. */
static void rd_rec_text(const once_record *r, char *out, size_t n)
{
    snprintf(out, n, "%s|%s|%s|%d|%d|v%lld|g%lld|f%lld|n%lld|%s|u%lld|%lld|%lld|%lld|%s|%s|%s|%s|%s",
             r->principal, r->task_id, r->context_id, (int)r->state, (int)r->kind,
             (long long)r->version, (long long)r->generation, (long long)r->fence,
             (long long)r->step, r->lease_owner, (long long)r->lease_until,
             (long long)r->created_at, (long long)r->updated_at, (long long)r->finished_at,
             r->digests, r->task_json, r->checkpoint ? r->checkpoint : "(null)",
             r->push_json ? r->push_json : "(null)", r->journal ? r->journal : "(null)");
}

/* A task's record (or "tombstone") and its events, as text. */
static void rd_task_text(once_store *s, const char *id, char *out, size_t n)
{
    once_event_list l;
    once_record r;
    size_t at;
    int rc = once_store_load(s, "p", id, &r, NULL);

    if (rc == ONCE_ETOMBSTONE) {
        snprintf(out, n, "tombstone");
        return;
    }
    EXPECT_RC(s, rc, ONCE_OK);
    rd_rec_text(&r, out, n);
    once_record_clear(&r);
    EXPECT_RC(s, once_store_events(s, "p", id, 0, 0, &l), ONCE_OK);
    for (size_t i = 0; i < l.n; i++) {
        at = strlen(out);
        snprintf(out + at, n - at, "|%lld:%s", (long long)l.v[i].generation, l.v[i].payload);
    }
    once_event_list_clear(&l);
}

/* Write a store of layout 3 with every kind of record: states with and
 * without a lease, terminal ones, tombstones, checkpoints, journals, push
 * configs and events; unpacked (rd_unpack) and marked 2, it is exactly what
 * the once before layout 3 left. */
#define RD_RP_N 40
static void rd_write_v2(char text[RD_RP_N][1024])
{
    static const once_state st[] = {ONCE_STATE_WORKING, ONCE_STATE_COMPLETED,
                                    ONCE_STATE_INPUT_REQUIRED, ONCE_STATE_SUBMITTED};
    once_store *s = open_ns(0, "repack", 1);
    size_t n;

    for (int i = 0; i < RD_RP_N; i++) {
        char id[16];
        once_record r;
        st_events e;
        snprintf(id, sizeof id, "r-%02d", i);
        assert_int_equal(st_rec(&r, "p", id, st[i % 4], T0 + i, "{\"k\":\"a:b\\u0000\"}"), 0);
        snprintf(r.context_id, sizeof r.context_id, "ctx-%d", i % 3);
        r.generation = i % 5;
        r.step = i;
        if (st[i % 4] == ONCE_STATE_WORKING) {
            r.lease_until = T0 + 100000 + i;
            snprintf(r.lease_owner, sizeof r.lease_owner, "replica-%d", i);
        }
        if (i % 5 == 1)
            assert_non_null(r.checkpoint = once_strdup("{\"cp\":1}"));
        if (i % 7 == 2)
            assert_non_null(r.journal = once_strdup("j1\nj2\n"));
        if (i % 6 == 3)
            assert_non_null(r.push_json = once_strdup("[{\"id\":\"c\",\"since\":0}]"));
        st_mkev(&e, 1, (size_t)r.generation, id);
        EXPECT_RC(s, once_store_create(s, &r, e.ev, e.n, NULL, NULL), ONCE_OK);
        once_record_clear(&r);
    }
    EXPECT_RC(s, once_store_sweep(s, T0 + 11, T0 + 20, 100, &n), ONCE_OK);
    assert_int_equal(n, 3); /* r-01, r-05, r-09: finished at T0 + i + 1 */
    for (int i = 0; i < RD_RP_N; i++) {
        char id[16];
        snprintf(id, sizeof id, "r-%02d", i);
        rd_task_text(s, id, text[i], 1024);
    }
    once_store_close(s);
    assert_int_equal(rd_unpack("repack"), RD_RP_N - 3);
    rd_admin3("SET", "repack:schema", "2", 1);
}
#endif

static void repack(void **state)
{
    (void)state;
    if (g_pg)
        skip(); /* Redis' own layout */
#ifdef ONCE_HAVE_REDIS
    static char before[RD_RP_N][1024], after[1024];
    char url[1024], want[128], v[32];
    once_check_report rep;
    once_record r;
    once_store *s;

    rd_write_v2(before);
    assert_int_equal(rd_with_field("repack", "h"), 0);
    url_for(url, sizeof url, 0, "repack", 0);
    snprintf(want, sizeof want, "schema is at version 2, this once needs %d", RD_SCHEMA_VERSION);
    refused_with(url, want);

    /* The open repacks every record (the tombstones stay as they are). */
    s = open_ns(0, "repack", 0);
    rd_get("repack:schema", v, sizeof v);
    assert_int_equal(strtol(v, NULL, 10), RD_SCHEMA_VERSION);
    assert_int_equal(rd_with_field("repack", "h"), RD_RP_N - 3);
    assert_int_equal(rd_with_field("repack", "v"), 0);
    assert_int_equal(rd_with_field("repack", "T"), 3);
    for (int i = 0; i < RD_RP_N; i++) {
        char id[16];
        snprintf(id, sizeof id, "r-%02d", i);
        rd_task_text(s, id, after, sizeof after);
        assert_string_equal(after, before[i]);
    }
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check after repacking: %s", rep.first_problem);

    /* The scripts read the repacked head: a stale version is refused, the
     * right one writes; a renewal checks owner and fence; a sweep
     * entombs. */
    EXPECT_RC(s, once_store_load(s, "p", "r-00", &r, NULL), ONCE_OK);
    r.version = 8;
    EXPECT_RC(s, once_store_update(s, &r, 7, NULL, 0), ONCE_ECONFLICT);
    r.version = 2;
    EXPECT_RC(s, once_store_update(s, &r, 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    EXPECT_RC(s, once_store_renew(s, "p", "r-04", "replica-4", 1, T0 + 200000), ONCE_OK);
    EXPECT_RC(s, once_store_renew(s, "p", "r-04", "replica-9", 1, T0 + 200000), ONCE_EFENCED);
    EXPECT_RC(s, once_store_load(s, "p", "r-04", &r, NULL), ONCE_OK);
    assert_int_equal(r.lease_until, T0 + 200000);
    once_record_clear(&r);
    {
        size_t n;
        EXPECT_RC(s, once_store_sweep(s, T0 + 100, T0 + 200, 100, &n), ONCE_OK);
        assert_int_equal(n, (RD_RP_N / 4) - 3);
    }
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check after writes: %s", rep.first_problem);

    /* A head with a field too few, or a pair cut short, is no record. */
    {
        static const struct {
            const char *id, *key, *field, *value;
            size_t len;
        } bad[] = {
#define BAD(id, f, v) {id, "repack:{1:p:" id "}", f, v, sizeof v - 1}
            BAD("r-02", "h", "0\0001\0000\0001\0\0000\0ctx-2\0lm\0"), /* no fd */
            BAD("r-06", "r", "p\0p\0i"), /* a name, no value */
#undef BAD
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            const char *argv[4] = {"HSET", bad[i].key, bad[i].field, bad[i].value};
            size_t len[4] = {4, strlen(bad[i].key), 1, bad[i].len};
            rd_admin(4, argv, len);
            EXPECT_RC(s, once_store_load(s, "p", bad[i].id, &r, NULL), ONCE_ECORRUPT);
            EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
            assert_int_equal(rep.bad_state, i + 1);
        }
    }
    once_store_close(s);
    once_store_close(open_ns(0, "repack", 1)); /* reset=1: leave nothing behind */
#endif
}

static void context_index(void **state)
{
    (void)state;
    if (g_pg)
        skip(); /* Redis' own index; PostgreSQL's are list_plans' */
#ifdef ONCE_HAVE_REDIS
    char ids[256], url[1024];
    once_check_report rep;
    once_record r;
    size_t n;
    once_store *s = open_ns(0, "ctxidx", 1);

    /* create indexes each record under its context. */
    put(s, "t-1", ONCE_STATE_WORKING, T0 + 5000, 1);
    put(s, "t-2", ONCE_STATE_COMPLETED, 0, 1);
    rd_index_ids("ctxidx:c:1:p:ctx-0", ids, sizeof ids);
    assert_string_equal(ids, "t-1,t-2");

    /* An update that moves a record to another context moves its entry:
     * the script names the stored context, the update is sent again. */
    EXPECT_RC(s, once_store_load(s, "p", "t-1", &r, NULL), ONCE_OK);
    snprintf(r.context_id, sizeof r.context_id, "ctx-9");
    r.version = 2;
    EXPECT_RC(s, once_store_update(s, &r, 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    rd_index_ids("ctxidx:c:1:p:ctx-0", ids, sizeof ids);
    assert_string_equal(ids, "t-2");
    rd_index_ids("ctxidx:c:1:p:ctx-9", ids, sizeof ids);
    assert_string_equal(ids, "t-1");

    /* sweep drops the entry with the record; purge has none left to drop. */
    EXPECT_RC(s, once_store_sweep(s, T0 + 10, T0 + 20, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rd_zcard("ctxidx:c:1:p:ctx-0"), 0);
    EXPECT_RC(s, once_store_purge(s, T0 + 30, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);
    rd_index_ids("ctxidx:c:1:p:ctx-9", ids, sizeof ids);
    assert_string_equal(ids, "t-1");
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
    assert_true(st_clean(&rep));

    /* A record missing from its context index would never be listed by
     * it: the check counts it. */
    {
        char m[RD_LMEMBER_MAX];
        rd_admin3("ZREM", "ctxidx:c:1:p:ctx-9", m, once__rd_list_member(m, T0, "t-1"));
    }
    EXPECT_RC(s, once_store_check(s, &rep), ONCE_OK);
    assert_int_equal(rep.bad_state, 1);
    assert_non_null(strstr(rep.first_problem, "context index"));
    once_store_close(s);

    /* A store of layout 1 is refused under NO_MIGRATE, then migrated by an
     * open; one from before the marker too. */
    rd_write_v1(1);
    url_for(url, sizeof url, 0, "ctxidx", 0);
    snprintf(ids, sizeof ids, "schema is at version 1, this once needs %d", RD_SCHEMA_VERSION);
    refused_with(url, ids);
    rd_open_v1();
    rd_write_v1(0);
    rd_open_v1();
    once_store_close(open_ns(0, "ctxidx", 1)); /* reset=1: leave nothing behind */
#endif
}

static void compaction(void **state)
{
    (void)state;
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        static const char *const bad[] = {"compact=soon", "compact=-1", "compact=0&compact=off"};
        char url[1024], err[256];
        once_store *s;

        for (int off = 0; off < 2; off++) {
            s = open_with("compact", 1, off ? "compact=off" : "compact=0");
            pg_compaction(s, off);
            once_store_close(s);
        }
        pg_compaction_shared();
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            s = NULL;
            url_for(url, sizeof url, 0, "compact", 0);
            snprintf(url + strlen(url), sizeof url - strlen(url), "&%s", bad[i]);
            assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
            assert_null(s);
            assert_non_null(strstr(err, "compact"));
        }
        return;
    }
#endif
    skip(); /* PostgreSQL's compaction (SQLite's: sqlite/basics) */
}

static void backend_specific(void **state)
{
    once_store *s;
    once_record r;

    (void)state;
    s = open_ns(0, "specific", 1);
    put(s, "t-1", ONCE_STATE_WORKING, 0, 1);
#ifdef ONCE_HAVE_PG
    if (g_pg) {
        char url[1024], err[256];
        once_store *s2 = (once_store *)1;
        pg_admin("INSERT INTO specific.once_migrations(version) VALUES (999)");
        url_for(url, sizeof url, 0, "specific", 0);
        assert_int_equal(once_store_open(url, NULL, &s2, err, sizeof err), ONCE_EUNSUPPORTED);
        assert_null(s2);
        assert_non_null(strstr(err, "upgrade"));
        pg_admin("DELETE FROM specific.once_migrations WHERE version = 999");
        migrate_from_v4(s);
        migrate_from_v1(s);
        migrate_from_v5(s);
        migrate_from_v6(s);
    }
#endif
#ifdef ONCE_HAVE_REDIS
    if (!g_pg) {
        rd_admin3("SCRIPT", "FLUSH", NULL, 0);
        put(s, "t-2", ONCE_STATE_SUBMITTED, 0, 0);
        EXPECT_RC(s, once_store_load(s, "p", "t-1", &r, NULL), ONCE_OK);
        r.version = 2;
        r.generation = 2;
        {
            st_events e;
            st_mkev(&e, 2, 1, "after-flush");
            rd_admin3("SCRIPT", "FLUSH", NULL, 0);
            EXPECT_RC(s, once_store_update(s, &r, 1, e.ev, 1), ONCE_OK);
        }
        once_record_clear(&r);
    }
#endif
    EXPECT_RC(s, once_store_load(s, "p", "t-1", &r, NULL), ONCE_OK);
    once_record_clear(&r);
    once_store_close(s);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_errors),         cmocka_unit_test(outage_is_estore),
        cmocka_unit_test(dropped_connections), cmocka_unit_test(concurrent_first_open),
        cmocka_unit_test(check_sees_damage),   cmocka_unit_test(push_writes_race_acks),
        cmocka_unit_test(batch_outcomes),      cmocka_unit_test(batch_lost_commit),
        cmocka_unit_test(batch_async),         cmocka_unit_test(batch_async_mixed),
        cmocka_unit_test(keyed_plans),         cmocka_unit_test(change_feed),
        cmocka_unit_test(backend_specific),    cmocka_unit_test(schema_step),
        cmocka_unit_test(list_plans),          cmocka_unit_test(context_index),
        cmocka_unit_test(repack),
        cmocka_unit_test(compaction),
    };

    if (argc < 2 || split_url(argv[1]) != 0) {
        fprintf(stderr, "usage: %s postgres://user@host:port/db | redis://host:port/db\n", argv[0]);
        return 2;
    }
    g_base = argv[1];
    g_pg = strncmp(argv[1], "postgres", 8) == 0;
#ifndef ONCE_HAVE_PG
    if (g_pg) {
        fprintf(stderr, "postgres backend not built\n");
        return 2;
    }
#endif
#ifndef ONCE_HAVE_REDIS
    if (!g_pg) {
        fprintf(stderr, "redis backend not built\n");
        return 2;
    }
#endif
    /* ONCE_TEST_FILTER=NAME runs the matching cases only (cmocka's
     * pattern: '*' and '?'): the Redis cases that pause the server's
     * writes or count its clients disturb anyone else using it. */
    if (getenv("ONCE_TEST_FILTER"))
        cmocka_set_test_filter(getenv("ONCE_TEST_FILTER"));
    return cmocka_run_group_tests_name(argv[1], tests, NULL, NULL);
}
