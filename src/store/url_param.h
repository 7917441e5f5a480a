/*
 * url_param.h -- the settings tail of a store URL, "?key=value&key=value",
 * read one parameter at a time. Written once so that every backend that
 * takes its settings from the URL splits, compares and range-checks them
 * the same way; the backend keeps the table of what its keys mean and
 * refuses a key it does not know.
 *
 * Values are raw text (no percent-decoding): the settings read through it
 * are names and numbers.
 */
#ifndef ONCE_STORE_URL_PARAM_H
#define ONCE_STORE_URL_PARAM_H

#include <stddef.h>

/* One parameter: pointers into the URL, not NUL-terminated. A parameter
 * without '=' has an empty value. */
typedef struct once__url_param {
    const char *key;
    size_t klen;
    const char *val;
    size_t vlen;
} once__url_param;

/* The next parameter of *q (the text after '?', or NULL), advancing *q
 * past it; empty ones ("a=1&&b=2") are skipped. 1 if one was read, 0 at
 * the end. */
int once__url_param_next(const char **q, once__url_param *p);

/* 1 if p's key is exactly name. */
int once__url_param_is(const once__url_param *p, const char *name);

/* 1 if p's value is word, ignoring ASCII case (values are keywords such
 * as full / FULL). */
int once__url_param_val_is(const once__url_param *p, const char *word);

/* p's value, digits only (no sign, no blanks), as a number in lo..hi: 0
 * and *out, or -1. */
int once__url_param_num(const once__url_param *p, long long lo, long long hi, long long *out);

/* p's value as a NUL-terminated string in buf[0..len): 0, or -1 when it is
 * empty or does not fit. */
int once__url_param_copy(const once__url_param *p, char *buf, size_t len);

/* A numeric setting of a store URL, as data: its key, its range and where
 * its value goes (dst points at an object of the width type names). */
typedef enum once__url_num_type {
    ONCE__URL_INT,  /* int */
    ONCE__URL_SIZE, /* size_t */
    ONCE__URL_I64   /* int64_t */
} once__url_num_type;

typedef struct once__url_num {
    const char *key;
    long long lo, hi;
    once__url_num_type type;
    void *dst;
} once__url_num;

/* If p's key is one of nums[0..n): 0 with its value stored, or ONCE_EINVAL
 * with "WHO URL: KEY must be LO..HI" in errbuf[0..errlen) when the value is
 * not a number in range. 1 when p is none of them (the caller goes on). */
int once__url_param_setting(const once__url_param *p, const once__url_num *nums, size_t n,
                            const char *who, char *errbuf, size_t errlen);

/* 1 if v[0..n) is a name a backend may put in its keys or SQL: min..max
 * bytes, each an ASCII letter, a digit or one of punct. */
int once__url_name_ok(const char *v, size_t n, size_t min, size_t max, const char *punct);

#endif
