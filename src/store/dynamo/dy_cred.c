/*
 * dy_cred.c -- the credentials the DynamoDB backend signs with, found where
 * the AWS CLI and SDKs look, in their order: the environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) first, then
 * the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
 * ~/.aws/credentials), section AWS_PROFILE else [default]. They are read
 * once, at open: credentials that expire (SSO, assumed roles, instance
 * metadata) are not refreshed, which docs/production.md says.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

#define LINE_MAX_ 1024

static int set_cred(dy_cred *c, const char *id, const char *secret, const char *token)
{
    size_t n = strlen(id) + strlen(secret) + 2;

    c->userpwd = once_malloc(n);
    if (!c->userpwd)
        return ONCE_ENOMEM;
    snprintf(c->userpwd, n, "%s:%s", id, secret);
    if (token && token[0]) {
        static const char h[] = "X-Amz-Security-Token: ";
        n = sizeof h + strlen(token);
        c->token = once_malloc(n);
        if (!c->token) {
            once__dy_cred_free(c);
            return ONCE_ENOMEM;
        }
        snprintf(c->token, n, "%s%s", h, token);
    }
    return ONCE_OK;
}

/* s without surrounding blanks (in place). */
static char *trim(char *s)
{
    size_t n;

    while (isspace((unsigned char)*s))
        s++;
    n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* The three values of [profile] in an INI file, copied into the buffers.
 * 1 if the section was found. */
static int read_profile(FILE *f, const char *profile, char *id, char *secret, char *token,
                        size_t cap)
{
    char line[LINE_MAX_];
    int in = 0, found = 0;

    while (fgets(line, sizeof line, f)) {
        char *l = trim(line), *eq;
        if (l[0] == '#' || l[0] == ';' || !l[0])
            continue;
        if (l[0] == '[') {
            char *end = strchr(l, ']');
            if (end)
                *end = '\0';
            in = strcmp(trim(l + 1), profile) == 0;
            found |= in;
            continue;
        }
        if (!in || !(eq = strchr(l, '=')))
            continue;
        *eq = '\0';
        char *k = trim(l), *v = trim(eq + 1);
        if (strcmp(k, "aws_access_key_id") == 0)
            snprintf(id, cap, "%s", v);
        else if (strcmp(k, "aws_secret_access_key") == 0)
            snprintf(secret, cap, "%s", v);
        else if (strcmp(k, "aws_session_token") == 0)
            snprintf(token, cap, "%s", v);
    }
    return found;
}

int once__dy_cred_load(dy_cred *c, char *errbuf, size_t errlen)
{
    const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    const char *profile = getenv("AWS_PROFILE"), *file = getenv("AWS_SHARED_CREDENTIALS_FILE");
    char path[1024], fid[LINE_MAX_] = "", fsecret[LINE_MAX_] = "", ftoken[LINE_MAX_] = "";
    FILE *f;
    int found;

    memset(c, 0, sizeof *c);
    if (id && id[0] && secret && secret[0]) {
        snprintf(c->source, sizeof c->source, "the environment (AWS_ACCESS_KEY_ID)");
        return set_cred(c, id, secret, getenv("AWS_SESSION_TOKEN"));
    }
    if (!profile || !profile[0])
        profile = "default";
    if (file && file[0]) {
        once__strlcpy(path, file, sizeof path);
    } else {
        const char *home = getenv("HOME");
        snprintf(path, sizeof path, "%s/.aws/credentials", home && home[0] ? home : ".");
    }
    f = fopen(path, "r");
    if (!f) {
        once__store_errbuf(errbuf, errlen,
                           "dynamodb: no credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY "
                           "are not set and %s cannot be read",
                           path);
        return ONCE_EINVAL;
    }
    found = read_profile(f, profile, fid, fsecret, ftoken, sizeof fid);
    fclose(f);
    if (!found || !fid[0] || !fsecret[0]) {
        once__store_errbuf(
            errbuf, errlen,
            "dynamodb: no credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY "
            "are not set and %s has %s [%s]",
            path, found ? "no aws_access_key_id/aws_secret_access_key in" : "no profile", profile);
        return ONCE_EINVAL;
    }
    snprintf(c->source, sizeof c->source, "%.80s [%.40s]", path, profile);
    found = set_cred(c, fid, fsecret, ftoken);
    memset(fsecret, 0, sizeof fsecret);
    memset(ftoken, 0, sizeof ftoken);
    return found;
}

void once__dy_cred_free(dy_cred *c)
{
    if (c->userpwd)
        memset(c->userpwd, 0, strlen(c->userpwd));
    if (c->token)
        memset(c->token, 0, strlen(c->token));
    once_free(c->userpwd);
    once_free(c->token);
    c->userpwd = c->token = NULL;
}
