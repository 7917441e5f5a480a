/*
 * endpoints.c -- an agent's endpoints: one logical agent, several URLs
 * (replicas addressed directly, no load balancer in front).
 *
 * An agent has one name in the outbox (intents.agent, the mode cache's and
 * the retry budget's key): the first URL it was named by. Its URLs live in
 * the endpoints table in the order they are tried; a URL belongs to one
 * agent. A send stores the URLs it is given (`--agent A,B`) as the agent's
 * first ones; every other call only uses what it is given, for itself.
 *
 * A call tries the URL in use; one that cannot be reached or says it is
 * unavailable (transport failure, timeout, 502/503/504) hands the next
 * attempt to the next URL. The attempts, backoff and budget are the retry
 * policy's, across all URLs together, so a failover is a retry like any
 * other: the same task ID and the same body, which replicas sharing one
 * store dedup. The URL that answered is remembered (answered_ms), and the
 * agent's next call starts there.
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "client/client_int.h"
#include "client/outbox_int.h"

/* A URL in a list is at most this long (what the card URL builder takes). */
#define URL_MAX 2048

void once__agent_close(once__agent *a)
{
    if (a == NULL)
        return;
    once_free(a->name);
    for (size_t i = 0; i < a->n; i++)
        once_free(a->urls[i]);
    memset(a, 0, sizeof *a);
}

const char *once__agent_url(const once__agent *a)
{
    return a->n > 0 ? a->urls[a->cur] : a->name;
}

void once__agent_next(once__agent *a)
{
    if (a->n > 0)
        a->cur = (a->cur + 1) % a->n;
}

/* Append url (len bytes) unless a has it; past ONCE__MAX_ENDPOINTS, the
 * rest are dropped (spec lists are checked against it before). */
static int add_url(once__agent *a, const char *url, size_t len)
{
    for (size_t i = 0; i < a->n; i++)
        if (strlen(a->urls[i]) == len && strncmp(a->urls[i], url, len) == 0)
            return ONCE_OK;
    if (a->n == ONCE__MAX_ENDPOINTS)
        return ONCE_OK;
    char *u = once_malloc(len + 1);
    if (u == NULL)
        return ONCE_ENOMEM;
    memcpy(u, url, len);
    u[len] = '\0';
    a->urls[a->n++] = u;
    return ONCE_OK;
}

/* The next element of a comma-separated list at *p: its start and length,
 * blanks around it left out; *p moves past it. 0 at the end of the list. */
static int next_elem(const char **p, const char **start, size_t *len)
{
    const char *s = *p;
    if (s == NULL)
        return 0;
    const char *comma = strchr(s, ',');
    const char *end = comma ? comma : s + strlen(s);
    *p = comma ? comma + 1 : NULL;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *start = s;
    *len = (size_t)(end - s);
    return 1;
}

int once__agent_spec_check(const char *spec, char *why, size_t whylen)
{
    const char *p = spec, *u;
    size_t len, n = 0;
    char url[URL_MAX];
    if (spec == NULL || spec[0] == '\0')
        return once__agent_url_check(spec, why, whylen);
    while (next_elem(&p, &u, &len)) {
        if (len == 0) {
            snprintf(why, whylen, "%.200s: an empty URL in the list (URLs are separated by "
                                  "commas: http://10.0.0.1:8080/,http://10.0.0.2:8080/)", spec);
            return ONCE_EINVAL;
        }
        if (len >= sizeof url) {
            snprintf(why, whylen, "a URL longer than %d bytes", URL_MAX - 1);
            return ONCE_EINVAL;
        }
        if (++n > ONCE__MAX_ENDPOINTS) {
            snprintf(why, whylen, "more than %d URLs for one agent", ONCE__MAX_ENDPOINTS);
            return ONCE_EINVAL;
        }
        memcpy(url, u, len);
        url[len] = '\0';
        int rc = once__agent_url_check(url, why, whylen);
        if (rc != ONCE_OK)
            return rc;
    }
    return ONCE_OK;
}

/* spec's URLs into a (a->name untouched). */
static int add_spec(once__agent *a, const char *spec)
{
    const char *p = spec, *u;
    size_t len;
    int rc = ONCE_OK;
    while (rc == ONCE_OK && next_elem(&p, &u, &len))
        rc = add_url(a, u, len);
    return rc;
}

/* The agent url names: the agent of that name, else the one url is an
 * endpoint of. ONCE_ENOTFOUND when the outbox knows neither. */
static int name_of(once__outbox *o, const char *url, char *out, size_t outlen)
{
    sqlite3_stmt *q;
    int rc = once__ob_one(o, &q,
                          "SELECT agent FROM endpoints WHERE agent=?1 OR url=?1"
                          " ORDER BY agent=?1 DESC LIMIT 1",
                          "s", url);
    if (rc == ONCE_OK)
        once__strlcpy(out, (const char *)sqlite3_column_text(q, 0), outlen);
    sqlite3_finalize(q);
    return rc;
}

/* The name of the agent the URLs of l name: the first one the outbox
 * knows (*known = 1), else the first URL. */
static int name_of_list(once_client *c, const once__agent *l, char *out, size_t outlen,
                        int *known)
{
    *known = 1;
    for (size_t i = 0; i < l->n; i++) {
        int rc = name_of(c->outbox, l->urls[i], out, outlen);
        if (rc != ONCE_ENOTFOUND)
            return rc;
    }
    *known = 0;
    once__strlcpy(out, l->n > 0 ? l->urls[0] : "", outlen);
    return ONCE_OK;
}

/* l's URLs become the first endpoints of agent name (taken from any other
 * agent that had them); its other endpoints follow, in their order. */
static int store(once_client *c, const once__agent *l, const char *name)
{
    once__outbox *o = c->outbox;
    int rc = once__ob_begin(o);
    if (rc == ONCE_OK)
        rc = once__ob_run(o, "UPDATE endpoints SET pos=pos+? WHERE agent=?", "is", (int64_t)l->n,
                          name);
    for (size_t i = 0; rc == ONCE_OK && i < l->n; i++)
        rc = once__ob_run(o,
                          "INSERT INTO endpoints(url,agent,pos) VALUES(?,?,?) ON CONFLICT(url)"
                          " DO UPDATE SET agent=excluded.agent, pos=excluded.pos",
                          "ssi", l->urls[i], name, (int64_t)i);
    return once__ob_end(o, rc);
}

/* The stored endpoints of a->name, appended to a; *best is the index in a
 * of the one that answered last (unchanged when none did). */
static int add_stored(once_client *c, once__agent *a, size_t *best)
{
    sqlite3_stmt *q;
    int rc = once__ob_prepare(c->outbox, &q,
                              "SELECT url, answered_ms FROM endpoints WHERE agent=? ORDER BY pos",
                              "s", a->name);
    if (rc != ONCE_OK)
        return rc;
    int64_t best_ms = 0;
    int src;
    while (rc == ONCE_OK && (src = sqlite3_step(q)) == SQLITE_ROW) {
        const char *url = (const char *)sqlite3_column_text(q, 0);
        int64_t ms = sqlite3_column_int64(q, 1);
        size_t len = strlen(url), i;
        if ((rc = add_url(a, url, len)) != ONCE_OK)
            break;
        for (i = 0; i < a->n && strcmp(a->urls[i], url) != 0; i++)
            ;
        if (i < a->n && ms > best_ms) {
            best_ms = ms;
            *best = i;
        }
    }
    if (rc == ONCE_OK && src != SQLITE_DONE)
        rc = once__ob_fail(c->outbox, src, "endpoints");
    sqlite3_finalize(q);
    return rc;
}

/* spec's URLs into l (zeroed by the caller), checked first: ONCE_EINVAL
 * with the reason in c's errmsg. */
static int parse_spec(once_client *c, const char *spec, once__agent *l)
{
    char why[600];
    if (once__agent_spec_check(spec, why, sizeof why) != ONCE_OK) {
        once__client_seterr(c, "%s", why);
        return ONCE_EINVAL;
    }
    return add_spec(l, spec);
}

int once__agent_open(once_client *c, const char *spec, int store_spec, once__agent *a)
{
    memset(a, 0, sizeof *a);
    once__agent l = {0};
    char name[URL_MAX];
    int known = 0;
    int rc = parse_spec(c, spec, &l);
    if (rc == ONCE_OK)
        rc = name_of_list(c, &l, name, sizeof name, &known);
    if (rc == ONCE_OK && (a->name = once_strdup(name)) == NULL)
        rc = ONCE_ENOMEM;
    /* A known agent named by its name alone (a continuation of a task the
     * outbox knows) keeps its endpoints as they are. */
    int by_name = known && l.n == 1 && strcmp(l.urls[0], name) == 0;
    if (rc == ONCE_OK && store_spec && !by_name)
        rc = store(c, &l, name);
    int preferred = c->prefer.name != NULL && strcmp(c->prefer.name, name) == 0;
    for (size_t i = 0; rc == ONCE_OK && preferred && i < c->prefer.n; i++)
        rc = add_url(a, c->prefer.urls[i], strlen(c->prefer.urls[i]));
    for (size_t i = 0; rc == ONCE_OK && i < l.n; i++)
        rc = add_url(a, l.urls[i], strlen(l.urls[i]));
    size_t best = 0;
    if (rc == ONCE_OK)
        rc = add_stored(c, a, &best);
    once__agent_close(&l);
    if (rc != ONCE_OK) {
        if (rc != ONCE_ENOMEM)
            once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
        once__agent_close(a);
        return rc;
    }
    /* URLs the user put first for this run are tried first; else the
     * call starts where the agent last answered. */
    a->cur = preferred ? 0 : best;
    return ONCE_OK;
}

void once__agent_answered(once_client *c, const once__agent *a)
{
    /* Only an ordering hint: a failure to write it costs a failover later,
     * never a wrong answer, so it is not the call's failure. */
    (void)once__ob_run(c->outbox, "UPDATE endpoints SET answered_ms=? WHERE url=? AND agent=?",
                       "iss", once__client_now(c), once__agent_url(a), a->name);
}

/* The one agent with pending or acknowledged intents: ONCE_ENOTFOUND when
 * there is none, ONCE_EEXISTS when there are several. */
static int only_open_agent(once__outbox *o, char *out, size_t outlen)
{
    sqlite3_stmt *q;
    int rc = once__ob_prepare(o, &q,
                              "SELECT DISTINCT agent FROM intents"
                              " WHERE state IN ('pending','acknowledged') LIMIT 2",
                              "");
    if (rc != ONCE_OK)
        return rc;
    int n = 0, src;
    while ((src = sqlite3_step(q)) == SQLITE_ROW)
        if (n++ == 0)
            once__strlcpy(out, (const char *)sqlite3_column_text(q, 0), outlen);
    if (src != SQLITE_DONE)
        rc = once__ob_fail(o, src, "intents");
    sqlite3_finalize(q);
    return rc != ONCE_OK ? rc : n == 0 ? ONCE_ENOTFOUND : n > 1 ? ONCE_EEXISTS : ONCE_OK;
}

/* note: which of l's URLs the agent's stored endpoints lack; "" if none. */
static int prefer_note(once_client *c, const once__agent *l, char *note, size_t notelen)
{
    char fresh[1024] = "", stored[1024] = "";
    size_t fl = 0, sl = 0;
    for (size_t i = 0; i < l->n; i++) {
        sqlite3_stmt *q;
        int rc = once__ob_one(c->outbox, &q, "SELECT 1 FROM endpoints WHERE url=? AND agent=?",
                              "ss", l->urls[i], l->name);
        sqlite3_finalize(q);
        if (rc == ONCE_ENOTFOUND && fl < sizeof fresh)
            fl += (size_t)snprintf(fresh + fl, sizeof fresh - fl, "%s%s", fl ? ", " : "",
                                   l->urls[i]);
        else if (rc != ONCE_OK && rc != ONCE_ENOTFOUND)
            return rc;
    }
    once__agent s = {.name = l->name};
    size_t best = 0;
    int rc = add_stored(c, &s, &best);
    for (size_t i = 0; rc == ONCE_OK && i < s.n && sl < sizeof stored; i++)
        sl += (size_t)snprintf(stored + sl, sizeof stored - sl, "%s%s", sl ? ", " : "", s.urls[i]);
    s.name = NULL;   /* l's */
    once__agent_close(&s);
    if (rc != ONCE_OK)
        return rc;
    if (fl > 0)
        snprintf(note, notelen,
                 "agent %s is tried at %s first for this run (not stored), then at its stored "
                 "endpoints: %s",
                 l->name, fresh, sl ? stored : "none");
    return ONCE_OK;
}

int once_client_prefer(once_client *c, const char *urls, const char *agent, char *note,
                       size_t notelen)
{
    if (note != NULL && notelen > 0)
        note[0] = '\0';
    once__agent l = {0};
    char name[URL_MAX];
    int known = agent != NULL;
    int rc = parse_spec(c, urls, &l);
    if (rc == ONCE_OK && agent != NULL)
        once__strlcpy(name, agent, sizeof name);
    else if (rc == ONCE_OK)
        rc = name_of_list(c, &l, name, sizeof name, &known);
    if (rc == ONCE_OK && !known) {
        rc = only_open_agent(c->outbox, name, sizeof name);
        if (rc == ONCE_ENOTFOUND) {
            rc = ONCE_OK;   /* a new agent: its first URL names it */
        } else if (rc == ONCE_EEXISTS) {
            once__client_seterr(c, "the outbox has open intents of several agents and knows "
                                   "none at %.300s: list one of the agent's known URLs with "
                                   "the new ones (OLD,NEW)", urls);
            rc = ONCE_EINVAL;
        }
    }
    if (rc == ONCE_OK && (l.name = once_strdup(name)) == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK && note != NULL && notelen > 0)
        rc = prefer_note(c, &l, note, notelen);
    if (rc == ONCE_OK) {
        once__agent_close(&c->prefer);
        c->prefer = l;
        return ONCE_OK;
    }
    if (rc != ONCE_EINVAL && rc != ONCE_ENOMEM)
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
    once__agent_close(&l);
    return rc;
}
