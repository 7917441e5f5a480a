/*
 * base64.h -- base64 for the whole library (not API): the raw parts of A2A
 * messages (ProtoJSON accepts standard and URL-safe, padded or not), webhook
 * signatures and keys, and ListTasks page tokens.
 */
#ifndef ONCE_CORE_BASE64_H
#define ONCE_CORE_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Length of the encoding of n bytes, without the NUL. url: the URL-safe
 * alphabet without padding; otherwise the standard alphabet, padded. */
size_t once__base64_len(size_t n, int url);

/* Encode in[0..n) into out, which holds once__base64_len(n, url) + 1 bytes;
 * NUL-terminates and returns the length. */
size_t once__base64_encode(const uint8_t *in, size_t n, char *out, int url);

/* Decode s[0..n): standard or URL-safe alphabet, padding optional but only
 * at the end and only to complete the last quantum. Returns the number of
 * bytes, or -1 if s is malformed or decodes to more than cap bytes. out may
 * be NULL (cap is then ignored) to validate and measure only. */
long once__base64_decode(const char *s, size_t n, uint8_t *out, size_t cap);

/* 1 if s[0..n) is well-formed base64 by the rules above. */
int once__base64_valid(const char *s, size_t n);

#endif
