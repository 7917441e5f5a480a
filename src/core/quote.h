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

/* Peer text shown to a human (a log line, a terminal): how the sequence at
 * s (n >= 1 bytes) is written. Sets *take to the bytes it covers and
 * returns 0 when they may be written as they are (printable ASCII, or a
 * valid UTF-8 character that is not C1), else writes its visible form to
 * esc and returns its length: a control character (C0, DEL, C1) as
 * "\u001b" (JSON's spelling, so a log's text and JSON forms agree), a byte
 * that is not valid UTF-8 as "\xNN". The one style for onced's text log
 * and the once CLI; nothing it returns reaches a terminal as a control. */
#define ONCE_VISIBLE_ESC 8
size_t once__visible_seq(const unsigned char *s, size_t n, size_t *take,
                         char esc[ONCE_VISIBLE_ESC]);

/* 1 if s holds a C0 control character or DEL (a request path must not:
 * see the HTTP layer's once__url_unescape), else 0. */
int once__has_control(const char *s);

#endif /* ONCE_CORE_QUOTE_H */
