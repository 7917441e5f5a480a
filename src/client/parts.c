/*
 * parts.c -- what an agent produced, part by part: every part of a Task's
 * artifacts or of a direct Message, by kind (text, file, data) and size,
 * and saving file and data parts into a folder.
 *
 * Invariants of saving: the name written is never a path the agent chose.
 * It is built from the part's filename (else the artifact's name) reduced
 * to [A-Za-z0-9._-] with no leading dot, so it has no '/', is never "." or
 * "..", and is not hidden; it is created with O_EXCL | O_NOFOLLOW relative
 * to the folder's descriptor, so an existing file (or a link planted there)
 * is never overwritten or followed. A url part is saved as the URL itself:
 * nothing is fetched from an address an agent named.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client_int.h"
#include "core/base64.h"
#include "core/jcs.h"

#define NAME_MAX_LEN 100

/* One part into a once_part, its bytes owned by *buf (once_free). */
static int describe(const json_t *part, const char *artifact, size_t index, once_part *p,
                    char **buf)
{
    memset(p, 0, sizeof *p);
    *buf = NULL;
    p->artifact = artifact;
    p->index = index;
    p->filename = json_string_value(json_object_get(part, "filename"));
    p->media_type = json_string_value(json_object_get(part, "mediaType"));
    const json_t *v;
    if ((v = json_object_get(part, "text")) != NULL && json_is_string(v)) {
        p->kind = ONCE_PART_TEXT;
        p->bytes = (const unsigned char *)json_string_value(v);
        p->size = json_string_length(v);
    } else if ((v = json_object_get(part, "raw")) != NULL && json_is_string(v)) {
        p->kind = ONCE_PART_FILE;
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        long len = once__base64_decode(s, n, NULL, 0);
        if (len < 0)
            return ONCE_EPARSE;
        *buf = once_malloc((size_t)len + 1);
        if (*buf == NULL)
            return ONCE_ENOMEM;
        once__base64_decode(s, n, (uint8_t *)*buf, (size_t)len + 1);
        p->bytes = (const unsigned char *)*buf;
        p->size = (size_t)len;
    } else if ((v = json_object_get(part, "url")) != NULL && json_is_string(v)) {
        p->kind = ONCE_PART_FILE;
        p->url = json_string_value(v);
    } else if ((v = json_object_get(part, "data")) != NULL) {
        p->kind = ONCE_PART_DATA;
        *buf = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        if (*buf == NULL)
            return ONCE_ENOMEM;
        p->bytes = (const unsigned char *)*buf;
        p->size = strlen(*buf);
    } else {
        return ONCE_EPARSE;
    }
    return ONCE_OK;
}

/* A part that cannot be read is skipped, so the others are still seen;
 * the walk then ends in ONCE_EPARSE. */
static int each_part(const json_t *parts, const char *artifact, once_part_fn fn, void *ctx,
                     int *unreadable)
{
    size_t i;
    const json_t *part;
    json_array_foreach(parts, i, part)
    {
        once_part p;
        char *buf;
        int rc = describe(part, artifact, i, &p, &buf);
        if (rc == ONCE_EPARSE) {
            *unreadable = 1;
            rc = ONCE_OK;
        } else if (rc == ONCE_OK && fn(ctx, &p) != 0) {
            rc = ONCE_ECANCELED;
        }
        once_free(buf);
        if (rc != ONCE_OK)
            return rc;
    }
    return ONCE_OK;
}

int once_parts_each(const char *json, once_part_fn fn, void *ctx)
{
    json_t *doc;
    int rc = once__json_object(json ? json : "", &doc);
    if (rc != ONCE_OK)
        return rc;
    int unreadable = 0;
    const json_t *arts = json_object_get(doc, "artifacts");
    const json_t *parts = json_object_get(doc, "parts");
    if (json_is_array(parts) && json_object_get(doc, "messageId") != NULL) {
        rc = each_part(parts, NULL, fn, ctx, &unreadable);   /* a Message */
    } else {
        size_t i;
        const json_t *a;
        json_array_foreach(arts, i, a)
        {
            const char *name = json_string_value(json_object_get(a, "name"));
            if (name == NULL || name[0] == '\0')
                name = json_string_value(json_object_get(a, "artifactId"));
            rc = each_part(json_object_get(a, "parts"), name ? name : "", fn, ctx, &unreadable);
            if (rc != ONCE_OK)
                break;
        }
    }
    json_decref(doc);
    if (rc == ONCE_OK && unreadable)
        return ONCE_EPARSE;
    return rc == ONCE_ECANCELED ? ONCE_OK : rc;
}

/* want reduced to a safe file name, with suffix added when it does not
 * end in it already. */
static void safe_name(const char *want, const char *suffix, char *out, size_t outlen)
{
    size_t n = 0, cap = outlen - strlen(suffix) - 1;
    if (cap > NAME_MAX_LEN)
        cap = NAME_MAX_LEN;
    for (const char *s = want ? want : ""; *s && n < cap; s++) {
        char c = *s;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (n == 0 && c == '.')
            continue;   /* no hidden file, no "." or ".." */
        out[n++] = ok ? c : '_';
    }
    if (n == 0) {
        snprintf(out, outlen, "part");
        n = 4;
    }
    out[n] = '\0';
    size_t sl = strlen(suffix);
    if (n < sl || strcmp(out + n - sl, suffix) != 0)
        snprintf(out + n, outlen - n, "%s", suffix);
}

int once_part_save(const char *dir, const once_part *p, char *name, size_t namelen, char *err,
                   size_t errlen)
{
    err[0] = '\0';
    if (namelen < NAME_MAX_LEN + 8) {
        snprintf(err, errlen, "name buffer too small");
        return ONCE_EINVAL;
    }
    if (p->kind == ONCE_PART_TEXT && p->filename == NULL)
        return ONCE_ENOTFOUND;   /* a message, not a file */
    const char *want = p->filename ? p->filename : p->artifact;
    safe_name(want, p->kind == ONCE_PART_DATA ? ".json" : p->url ? ".url" : "", name, namelen);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return ONCE_EIO;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return ONCE_EIO;
    }
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int rc = ONCE_OK;
    if (fd < 0) {
        rc = errno == EEXIST ? ONCE_EEXISTS : ONCE_EIO;
        snprintf(err, errlen, "%s/%s %s", dir, name,
                 errno == EEXIST ? "exists: not overwritten" : strerror(errno));
    } else {
        FILE *f = fdopen(fd, "wb");
        const void *bytes = p->url ? (const void *)p->url : (const void *)p->bytes;
        size_t n = p->url ? strlen(p->url) : p->size;
        int bad = f == NULL || (n > 0 && fwrite(bytes, 1, n, f) != n) ||
                  (p->url != NULL && fputc('\n', f) == EOF) || fflush(f) != 0 ||
                  fsync(fileno(f)) != 0;
        int e = errno;
        if (f == NULL)
            close(fd);
        else if (fclose(f) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
        if (bad) {
            /* Half a file is worse than none: the caller is told. */
            snprintf(err, errlen, "%s/%s: %s", dir, name, strerror(e));
            unlinkat(dfd, name, 0);
            rc = ONCE_EIO;
        }
    }
    close(dfd);
    return rc;
}
