/*
 * fuzz_json_read.c -- libFuzzer target for the plain JSON reader
 * (src/core/json_read.c), against jansson.
 *
 * For any input: once__json_read_plain either declines
 * (ONCE_EUNSUPPORTED), runs out of memory, or builds a tree, and then
 * jansson reads the text too, to an equal value written with the same
 * bytes (member order).
 * The input is copied to a block of its exact size, so a read past its
 * end is caught. Seeds: tests/fuzz/corpus/json_read/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jcs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_json_read: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size ? size : 1);
    check(in != NULL, "no memory for the input");
    memcpy(in, data, size);

    json_t *got = NULL;
    int rc = once__json_read_plain(in, size, &got);
    check(rc == ONCE_OK || rc == ONCE_EUNSUPPORTED || rc == ONCE_ENOMEM,
          "undocumented result");
    if (rc != ONCE_OK) {
        check(got == NULL, "a tree with a failure");
        free(in);
        return 0;
    }
    json_t *want = NULL;
    check(once__json_loadb(in, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &want, NULL) ==
              ONCE_OK,
          "read a text jansson refuses");
    check(json_equal(got, want), "a value jansson reads otherwise");
    char *a = NULL, *b = NULL;
    check(once__json_write(got, &a, NULL) == ONCE_OK && once__json_write(want, &b, NULL) == ONCE_OK,
          "a tree the writer refuses");
    check(strcmp(a, b) == 0, "members in another order");
    once_free(a);
    once_free(b);
    json_decref(got);
    json_decref(want);
    free(in);
    return 0;
}
