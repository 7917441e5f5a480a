/*
 * effect_call.c -- how an agent makes a side effect safe to repeat: an HTTP
 * call that carries `Idempotency-Key: <task_id>:step-<n>`.
 *
 *   effect_call TASK_ID STEP URL [JSON_BODY]
 *
 * The key comes from once_effect_key(task_id, step). An --exec agent gets
 * both from onced (ONCE_TASK_ID, ONCE_STEP; docs/protocol.md), and the step
 * counter is persisted with the task, so a turn re-run after a crash or a
 * takeover presents the same key for the same step and the downstream
 * service (payments, signing, email) performs the effect once. Retries of
 * this one call carry the same key too: transport errors, 429 and 5xx are
 * retried up to 5 times with full-jitter backoff.
 *
 * Exit status: 0 on a 2xx answer, 1 otherwise, 2 for a bad command line.
 * The answer's body goes to stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "once/once.h"

#define ATTEMPTS 5
#define BASE_MS 100
#define CAP_MS 2000

static size_t to_stdout(char *p, size_t size, size_t n, void *ud)
{
    return fwrite(p, size, n, stdout);
}

/* One POST; the HTTP status, or 0 when no answer arrived. */
static long post(const char *url, const char *key, const char *body)
{
    CURL *h = curl_easy_init();
    if (h == NULL)
        return 0;
    char hdr[ONCE_EFFECT_KEY_MAX + 32];
    snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", key);
    struct curl_slist *hd = curl_slist_append(NULL, hdr);
    struct curl_slist *t = hd ? curl_slist_append(hd, "Content-Type: application/json") : NULL;
    long status = 0;
    if (t != NULL) {
        hd = t;
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_stdout);
        CURLcode cc = curl_easy_perform(h);
        if (cc == CURLE_OK)
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        else
            fprintf(stderr, "effect_call: %s\n", curl_easy_strerror(cc));
    }
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fputs("usage: effect_call TASK_ID STEP URL [JSON_BODY]\n", stderr);
        return 2;
    }
    char *end;
    errno = 0;
    unsigned long long step = strtoull(argv[2], &end, 10);
    char key[ONCE_EFFECT_KEY_MAX + 1];
    if (errno != 0 || end == argv[2] || *end != '\0' ||
        once_effect_key(argv[1], step, key) != ONCE_OK) {
        fputs("effect_call: TASK_ID must be a valid task ID and STEP a number\n", stderr);
        return 2;
    }
    const char *body = argc == 5 ? argv[4] : "{}";
    curl_global_init(CURL_GLOBAL_DEFAULT);
    long status = 0;
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        if (attempt > 0) {
            /* Full jitter: U[0, min(cap, base * 2^(attempt-1))]. */
            uint64_t ceil = (uint64_t)BASE_MS << (attempt - 1), ms = 0;
            if (ceil > CAP_MS)
                ceil = CAP_MS;
            once_rng_uniform(once_rng_system(), ceil + 1, &ms);
            struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        status = post(argv[3], key, body);
        fprintf(stderr, "effect_call: attempt %d, Idempotency-Key %s: %s%ld\n", attempt + 1, key,
                status ? "HTTP " : "no answer ", status);
        if (status != 0 && status != 429 && status < 500)
            break;
    }
    curl_global_cleanup();
    return status >= 200 && status < 300 ? 0 : 1;
}
