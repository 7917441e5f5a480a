/*
 * dy_http.c -- one DynamoDB API call: a POST of a JSON body with the
 * operation in X-Amz-Target, signed by libcurl's own SigV4
 * (CURLOPT_AWS_SIGV4), over a curl easy handle taken from the store's pool
 * (store/pool.h; a handle keeps its connection alive between calls).
 *
 * Retries. DynamoDB answers a request it did not apply because of load
 * with ProvisionedThroughputExceededException, ThrottlingException or
 * RequestLimitExceeded; those are retried up to DY_ATTEMPTS times with
 * full-jitter exponential backoff (core/backoff.h) and then reported as
 * ONCE_EBUSY, which onced answers with STORE_UNAVAILABLE + Retry-After. A
 * refused connection is retried the same way (nothing was sent). Any other
 * failure of a write is reported at once, not retried: a conditional write
 * whose reply was lost may have applied, and sending it again would turn
 * its success into "condition failed" -- a false verdict. Reads are
 * retried on every transient failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/grow.h"
#include "core/str.h"
#include "core/backoff.h"
#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

/* One pooled handle; owned by one thread between acquire and release. */
typedef struct dy_conn {
    once__pool_item item; /* first: the pool links idle handles through it */
    CURL *h;
} dy_conn;

/* The reply body, bounded by DY_REPLY_MAX. */
typedef struct dy_buf {
    char *p;
    size_t n, cap;
    int over;
} dy_buf;

static int conn_open(void *owner, once__pool_item **out, char *errbuf, size_t errlen)
{
    (void)errbuf; /* no connection is opened at open: the table check reports */
    (void)errlen;
    dy_store *s = owner;
    dy_conn *c = once_calloc(1, sizeof *c);

    *out = NULL;
    if (!c || !(c->h = curl_easy_init())) {
        once_free(c);
        once__store_seterr(&s->base, "dynamodb: cannot create a curl handle");
        return ONCE_ENOMEM;
    }
    *out = &c->item;
    return ONCE_OK;
}

static int conn_stale(once__pool_item *it)
{
    (void)it;
    return 0; /* curl reconnects by itself when a kept connection died */
}

static void conn_close(once__pool_item *it)
{
    dy_conn *c = (dy_conn *)it;

    curl_easy_cleanup(c->h);
    once_free(c);
}

const once__pool_ops once__dy_pool_ops = {"dynamodb", conn_open, conn_stale, conn_close, NULL};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    dy_buf *b = arg;
    size_t n = size * nmemb;

    if (b->n + n + 1 > DY_REPLY_MAX) {
        b->over = 1;
        return 0;
    }
    if (once__text_append(&b->p, &b->n, &b->cap, 4096, data, n) != ONCE_OK)
        return 0;
    return n;
}

/* The outcome of one attempt, before classification. */
typedef struct attempt {
    CURLcode cc;
    long status;
    dy_buf body;
} attempt;

/* l with header h appended; after a failed append *oom is set and later
 * appends do nothing (the caller frees the list). */
static struct curl_slist *add_header(struct curl_slist *l, int *oom, const char *h)
{
    struct curl_slist *n = *oom ? NULL : curl_slist_append(l, h);

    if (!n)
        *oom = 1;
    return n ? n : l;
}

static int send_once(dy_store *s, dy_conn *c, const char *op, const char *text, attempt *a)
{
    char target[80];
    struct curl_slist *hdrs;
    CURL *h = c->h;
    int oom = 0;

    snprintf(target, sizeof target, "X-Amz-Target: DynamoDB_20120810.%s", op);
    hdrs = add_header(NULL, &oom, "Content-Type: application/x-amz-json-1.0");
    /* Every header given here is signed (curl's SigV4 signs them all), so
     * none may be one curl drops from the request, such as "Expect:". */
    hdrs = add_header(hdrs, &oom, target);
    if (s->cred.token)
        hdrs = add_header(hdrs, &oom, s->cred.token);
    if (oom) {
        curl_slist_free_all(hdrs);
        return ONCE_ENOMEM;
    }
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, s->endpoint);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
    curl_easy_setopt(h, CURLOPT_USERPWD, s->cred.userpwd);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)s->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)DY_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &a->body);
    a->cc = curl_easy_perform(h);
    a->status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
    curl_slist_free_all(hdrs);
    return ONCE_OK;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && memcmp(s + n - m, tail, m) == 0;
}

/* What an attempt means. *retry: worth another attempt. */
static int classify(const attempt *a, int writes, json_t **reply, dy_fail *f, int *retry)
{
    json_t *j;
    const char *type, *msg, *hash;

    *retry = 0;
    if (a->cc != CURLE_OK) {
        snprintf(f->type, sizeof f->type, "curl");
        once__strlcpy(f->msg, curl_easy_strerror(a->cc), sizeof f->msg);
        /* Nothing was sent when the connection was refused. */
        *retry = a->cc == CURLE_COULDNT_CONNECT || a->cc == CURLE_COULDNT_RESOLVE_HOST || !writes;
        return ONCE_ESTORE;
    }
    j = a->body.p ? json_loads(a->body.p, 0, NULL) : NULL;
    if (a->status == 200 && json_is_object(j)) {
        *reply = j;
        return ONCE_OK;
    }
    type = json_string_value(json_object_get(j, "__type"));
    msg = json_string_value(json_object_get(j, "message"));
    if (!msg)
        msg = json_string_value(json_object_get(j, "Message"));
    hash = type ? strrchr(type, '#') : NULL;
    snprintf(f->type, sizeof f->type, "%s",
             hash               ? hash + 1
             : type             ? type
             : a->status == 200 ? "bad reply"
                                : "HTTP error");
    snprintf(f->msg, sizeof f->msg, "HTTP %ld%s%.180s", a->status, msg ? ": " : "", msg ? msg : "");
    json_decref(j);
    if (ends_with(f->type, "ConditionalCheckFailedException"))
        return ONCE_ECONFLICT;
    if (ends_with(f->type, "ResourceNotFoundException"))
        return ONCE_ENOTFOUND;
    if (ends_with(f->type, "ProvisionedThroughputExceededException") ||
        ends_with(f->type, "ThrottlingException") || ends_with(f->type, "RequestLimitExceeded")) {
        *retry = 1;
        return ONCE_EBUSY;
    }
    if (ends_with(f->type, "ValidationException") && strstr(f->msg, "tem size"))
        return ONCE_ERANGE;
    *retry = a->status >= 500 && !writes;
    return ONCE_ESTORE;
}

void once__dy_pause_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Map every "#name" of one expression. */
static int names_of(json_t *names, const char *expr)
{
    const char *p = expr;

    while (p && (p = strchr(p, '#')) != NULL) {
        char key[40];
        size_t n = 1;
        while (n < sizeof key - 1 && (p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') ||
                                      (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9')))
            n++;
        memcpy(key, p, n);
        key[n] = '\0';
        if (json_object_set_new(names, key, json_string(key + 1)) != 0)
            return ONCE_ENOMEM;
        p += n;
    }
    return ONCE_OK;
}

/* Add ExpressionAttributeNames for every "#name" in the request's
 * expressions, spelled as themselves ("#v" is "v"), so that no attribute
 * name ever collides with one of DynamoDB's reserved words. */
static int add_names(json_t *req)
{
    static const char *const fields[] = {"KeyConditionExpression", "FilterExpression",
                                         "ConditionExpression", "UpdateExpression",
                                         "ProjectionExpression"};
    json_t *names = json_object();
    size_t i;

    if (!names)
        return ONCE_ENOMEM;
    for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (names_of(names, json_string_value(json_object_get(req, fields[i]))) != ONCE_OK) {
            json_decref(names);
            return ONCE_ENOMEM;
        }
    }
    if (json_object_size(names) == 0) {
        json_decref(names);
        return ONCE_OK;
    }
    return json_object_set_new(req, "ExpressionAttributeNames", names) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

int once__dy_call(dy_store *s, const char *op, json_t *req, int mode, json_t **out, dy_fail *fail)
{
    once__pool_item *it;
    dy_fail local;
    char *text;
    int rc = ONCE_ESTORE, retry = 0;
    uint64_t i;

    if (out)
        *out = NULL;
    if (!fail)
        fail = &local;
    memset(fail, 0, sizeof *fail);
    text = add_names(req) == ONCE_OK ? json_dumps(req, JSON_COMPACT) : NULL;
    if (!text)
        return ONCE_ENOMEM;
    for (i = 0; i < DY_ATTEMPTS; i++) {
        attempt a;
        json_t *reply = NULL;
        int64_t wait;

        if (i > 0 && once__backoff_jitter_ms(DY_BACKOFF_BASE_MS, i, DY_BACKOFF_CAP_MS,
                                             once_rng_system(), &wait) == ONCE_OK)
            once__dy_pause_ms(wait);
        rc = once__pool_acquire(&s->pool, &it);
        if (rc != ONCE_OK)
            break;
        memset(&a, 0, sizeof a);
        rc = send_once(s, (dy_conn *)it, op, text, &a);
        once__pool_release(&s->pool, it, rc == ONCE_OK && a.cc != CURLE_OK);
        if (rc == ONCE_OK)
            rc = a.body.over ? ONCE_ESTORE
                             : classify(&a, mode == DY_CONDITIONAL, &reply, fail, &retry);
        once_free(a.body.p);
        if (rc == ONCE_OK) {
            if (out)
                *out = reply;
            else
                json_decref(reply);
            break;
        }
        if (!retry)
            break;
    }
    once_free(text); /* json_dumps allocates through once_malloc */
    if (rc == ONCE_EBUSY)
        once__store_seterr(&s->base, "dynamodb %s: still throttled after %d tries (%s)", op,
                           DY_ATTEMPTS, fail->type);
    else if (rc != ONCE_OK && rc != ONCE_ECONFLICT && fail->type[0])
        once__store_seterr(&s->base, "dynamodb %s on %s: %s: %s", op, s->table, fail->type,
                           fail->msg);
    return rc;
}
