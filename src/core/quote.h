/*
 * quote.h -- text a peer supplied (an agent's output line, a member name in
 * its JSON), made safe to repeat inside an error message that is itself
 * served as JSON. Pure function.
 */
#ifndef ONCE_CORE_QUOTE_H
#define ONCE_CORE_QUOTE_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes available), 0 if
 * it is invalid, overlong, a surrogate or cut short. */
size_t once__utf8_seq(const unsigned char *s, size_t n);

/* Copy at most max bytes of s[0..n) into out (cap bytes) as printable,
 * valid UTF-8: control characters and invalid sequences become '?', a cut
 * never splits a character, and "..." marks truncation. */
void once__quote(const char *s, size_t n, size_t max, char *out, size_t cap);

#endif /* ONCE_CORE_QUOTE_H */
