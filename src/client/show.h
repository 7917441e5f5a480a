/*
 * show.h -- text a peer chose (an agent's status texts, artifact and file
 * names, media types, URLs, text parts, a server's error messages) printed
 * by the `once` CLI (internal API for apps/once.c and src/client).
 *
 * Every control character (C0 including newline and tab, DEL, C1) is shown
 * as \u001b-style text and every byte that is not UTF-8 as \xNN
 * (once__visible_seq), on a terminal and on a pipe alike: no escape
 * sequence an agent sends (ESC[2J, an OSC title, an 8-bit CSI) reaches
 * the user's terminal, and one part stays one line. --json output is not
 * shown through here: it carries the agent's bytes exactly, JSON-escaped.
 */
#ifndef ONCE_CLIENT_SHOW_H
#define ONCE_CLIENT_SHOW_H

#include <stddef.h>
#include <stdio.h>

/* s[0..n) on f, control characters visible. */
void once__show(FILE *f, const char *s, size_t n);
/* s, NUL-terminated, the same way; NULL is shown as "-". */
void once__shows(FILE *f, const char *s);
/* The visible form of s (NULL: "") in out (cap >= 4 bytes), cut after a
 * whole character with "..." when it does not fit: for a message printed
 * with printf. Returns out. */
const char *once__showbuf(const char *s, char *out, size_t cap);

#endif /* ONCE_CLIENT_SHOW_H */
