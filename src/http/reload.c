/*
 * reload.c -- SIGHUP's work (reload.h): the tokens, the TLS pair, the card
 * and the log level, each read into a new object, checked, then swapped in;
 * and the file loaders start-up and --check-config use too.
 *
 * Pieces are independent: a bad card does not hold back new tokens. The
 * reload as a whole counts as failed when any piece kept its old value, so
 * /metrics says whether what is on disk is what is served.
 */
#include <stdio.h>
#include <string.h>

#include "core/metrics.h"
#include "http/reload.h"

/* The files are small; these bound a wrong path (a log, a device). */
#define CARD_FILE_MAX ((size_t)1 << 20)
#define LEVEL_FILE_MAX ((size_t)4096)

int once__card_file_load(const char *path, json_t **members, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    *members = NULL;
    int rc = once__read_file(path, CARD_FILE_MAX, &text, &len, err, errlen);
    if (rc != ONCE_OK)
        return rc;
    char why[400] = "";
    rc = once__a2a_card_parse(text, len, members, why, sizeof why);
    if (rc != ONCE_OK)
        snprintf(err, errlen, "%s: %s", path, why[0] ? why : once_strerror(rc));
    once_free(text);
    return rc;
}

/* The level named by the one word of text[0..len) outside blanks and '#'
 * comment lines, or -1. */
static int level_word(const char *text, size_t len)
{
    char word[16] = "";
    int words = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && strchr(" \t\r\n", text[i]) != NULL)
            i++;
        if (i < len && text[i] == '#') {
            while (i < len && text[i] != '\n')
                i++;
            continue;
        }
        size_t j = i;
        while (j < len && strchr(" \t\r\n", text[j]) == NULL)
            j++;
        if (j > i && words++ == 0 && j - i < sizeof word)
            memcpy(word, text + i, j - i);
        i = j;
    }
    return words == 1 ? once__log_level_parse(word) : -1;
}

int once__log_level_file_load(const char *path, int *level, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int rc = once__read_file(path, LEVEL_FILE_MAX, &text, &len, err, errlen);
    *level = rc == ONCE_OK ? level_word(text, len) : -1;
    once_free(text);
    if (rc != ONCE_OK || *level >= 0)
        return rc;
    snprintf(err, errlen, "%s: expected one word, error, warn, info or debug", path);
    return ONCE_EINVAL;
}

/* The line of one piece: ok with its detail, or failed with why. */
static void log_piece(const char *what, const char *file, const char *detail_key,
                      const char *detail, const char *why)
{
    once__logline l;
    if (!once__log_begin(&l, why != NULL ? ONCE_LOG_ERROR : ONCE_LOG_INFO, "reload"))
        return;
    once__log_str(&l, "what", what);
    once__log_str(&l, "file", file);
    once__log_str(&l, "result", why != NULL ? "failed" : "ok");
    if (why != NULL)
        once__log_str(&l, "message", why);
    else
        once__log_str(&l, detail_key, detail);
    once__log_end(&l);
}

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int once__server_reload(once_server *s, const once__reload_files *f)
{
    int failed = 0;
    char err[512], detail[80];
    if (f->tokens != NULL && f->tokens_file != NULL) {
        once_tokens *fresh = NULL;
        err[0] = '\0';
        if (once__tokens_load(f->tokens_file, &fresh, err, sizeof err) == ONCE_OK) {
            snprintf(detail, sizeof detail, "%zu", once__tokens_count(fresh));
            once__tokens_swap(f->tokens, fresh);
            log_piece("tokens", f->tokens_file, "tokens", detail, NULL);
        } else {
            failed++;
            log_piece("tokens", f->tokens_file, NULL, NULL, err[0] ? err : "cannot read");
        }
    }
    if (f->tls) {
        const once_http_config *hc = once__server_http_cfg(s);
        char sha[2 * ONCE_SHA256_LEN + 1];
        err[0] = '\0';
        if (once__server_tls_reload(s, sha, err, sizeof err) == ONCE_OK) {
            log_piece("tls", hc->tls_cert_file, "sha256", sha, NULL);
        } else {
            failed++;
            log_piece("tls", hc->tls_cert_file, NULL, NULL, err[0] ? err : "cannot read");
        }
    }
    if (f->card_file != NULL) {
        json_t *members = NULL;
        err[0] = '\0';
        int rc = once__card_file_load(f->card_file, &members, err, sizeof err);
        if (rc == ONCE_OK && (rc = once__server_card_set(s, members)) < 0)
            snprintf(err, sizeof err, "%s", once_strerror(rc));
        json_decref(members);
        if (rc >= 0) {
            log_piece("card", f->card_file, "changed", rc == 1 ? "true" : "false", NULL);
        } else {
            failed++;
            log_piece("card", f->card_file, NULL, NULL, err[0] ? err : "cannot read");
        }
    }
    if (f->log_level_file != NULL) {
        int level = 0;
        err[0] = '\0';
        if (once__log_level_file_load(f->log_level_file, &level, err, sizeof err) == ONCE_OK) {
            /* The line goes out under whichever of the two levels is the
             * more verbose: a switch to "error" still says it happened. */
            int quieter = level < once__log_level();
            if (quieter)
                log_piece("log_level", f->log_level_file, "level", level_names[level], NULL);
            once__log_set_level(level);
            if (!quieter)
                log_piece("log_level", f->log_level_file, "level", level_names[level], NULL);
        } else {
            failed++;
            log_piece("log_level", f->log_level_file, NULL, NULL, err);
        }
    }
    once__metrics_reload(failed == 0);
    return failed;
}
