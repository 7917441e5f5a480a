/*
 * parts.c -- what an agent produced, part by part: every part of a Task's
 * artifacts or of a direct Message, by kind (text, file, data) and size,
 * and saving every part into a folder.
 *
 * Invariants of saving: the name written is never a path the agent chose.
 * It is built from the part's filename (else the artifact's name) reduced
 * to [A-Za-z0-9._-] with no leading dot, so it has no '/', is never "." or
 * "..", and is not hidden; it is created with O_EXCL | O_NOFOLLOW relative
 * to the folder's descriptor, so an existing file (or a link planted there)
 * is never overwritten or followed. A url part is saved as the URL itself:
 * nothing is fetched from an address an agent named.
 *
 * Saving the same answer twice into one folder is a no-op: a file that
 * already holds exactly the part's bytes is the part, saved. A name taken
 * by anything else gets "-2", "-3", ... before its extension, so nothing a
 * user edited (or another task saved) is lost.
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

/* What a part's file holds: its bytes, and a newline after a URL. */
typedef struct content {
    const unsigned char *bytes;
    size_t n;
    int newline;
} content;

/* dir and name joined with one '/' (dir may end in one). */
static void joined(char *out, size_t outlen, const char *dir, const char *name)
{
    size_t d = strlen(dir);
    snprintf(out, outlen, "%s%s%s", dir, d > 0 && dir[d - 1] == '/' ? "" : "/", name);
}

/* 1 when name in dfd is a regular file holding exactly c (never a link:
 * O_NOFOLLOW; never blocks on a FIFO planted there: O_NONBLOCK). */
static int holds(int dfd, const char *name, const content *c)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
               (uint64_t)st.st_size == (uint64_t)c->n + (c->newline ? 1 : 0);
    unsigned char buf[4096];
    size_t off = 0;
    while (same && off < c->n) {
        size_t want = c->n - off < sizeof buf ? c->n - off : sizeof buf;
        ssize_t got = read(fd, buf, want);
        same = got == (ssize_t)want && memcmp(buf, c->bytes + off, want) == 0;
        off += want;
    }
    if (same && c->newline)
        same = read(fd, buf, 1) == 1 && buf[0] == '\n';
    close(fd);
    return same;
}

/* name with "-k" before its extension (the last '.' not at the start),
 * into out. */
static void numbered(const char *name, unsigned k, char *out, size_t outlen)
{
    const char *dot = strrchr(name, '.');
    size_t stem = dot != NULL && dot != name ? (size_t)(dot - name) : strlen(name);
    snprintf(out, outlen, "%.*s-%u%s", (int)stem, name, k, name + stem);
}

/* Create name in dfd (O_EXCL) and write c into it; errno-style result:
 * 0, EEXIST when the name is taken, else why it failed (nothing is left
 * behind: half a file is worse than none). */
static int create(int dfd, const char *name, const content *c)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    FILE *f = fdopen(fd, "wb");
    int bad = f == NULL || (c->n > 0 && fwrite(c->bytes, 1, c->n, f) != c->n) ||
              (c->newline && fputc('\n', f) == EOF) || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int e = errno;
    if (f == NULL)
        close(fd);
    else if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad)
        return 0;
    unlinkat(dfd, name, 0);
    return e != 0 && e != EEXIST ? e : EIO;
}

#define MAX_NUMBERED 99

int once_part_save(const char *dir, const once_part *p, char *name, size_t namelen, char *err,
                   size_t errlen)
{
    err[0] = '\0';
    if (namelen < NAME_MAX_LEN + 12) {
        snprintf(err, errlen, "name buffer too small");
        return ONCE_EINVAL;
    }
    char first[NAME_MAX_LEN + 8], path[4096];
    const char *want = p->filename ? p->filename : p->artifact;
    const char *suffix = p->kind == ONCE_PART_DATA ? ".json"
                         : p->url != NULL          ? ".url"
                         : p->kind == ONCE_PART_TEXT && p->filename == NULL ? ".txt"
                                                                            : "";
    safe_name(want != NULL && want[0] != '\0' ? want : p->kind == ONCE_PART_TEXT ? "message"
                                                                                 : NULL,
              suffix, first, sizeof first);
    content c = {.bytes = p->url != NULL ? (const unsigned char *)p->url : p->bytes,
                 .n = p->url != NULL ? strlen(p->url) : p->size,
                 .newline = p->url != NULL};
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return ONCE_EIO;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return ONCE_EIO;
    }
    int rc = ONCE_EIO, e = EEXIST;
    for (unsigned k = 1; k <= MAX_NUMBERED && e == EEXIST; k++) {
        if (k == 1)
            snprintf(name, namelen, "%s", first);
        else
            numbered(first, k, name, namelen);
        if (holds(dfd, name, &c)) {
            rc = ONCE_EEXISTS;   /* saved before: nothing to write */
            e = 0;
        } else if ((e = create(dfd, name, &c)) == 0) {
            rc = ONCE_OK;
        }
    }
    if (rc == ONCE_OK && strcmp(name, first) != 0) {
        joined(path, sizeof path, dir, first);
        snprintf(err, errlen, "%s holds something else: not overwritten", path);
    } else if (rc == ONCE_EIO && e == EEXIST) {
        joined(path, sizeof path, dir, first);
        snprintf(err, errlen, "%s and %u numbered names are taken: not saved", path,
                 MAX_NUMBERED - 1);
    } else if (rc == ONCE_EIO) {
        joined(path, sizeof path, dir, name);
        snprintf(err, errlen, "%s: %s", path, strerror(e));
    }
    close(dfd);
    return rc;
}
