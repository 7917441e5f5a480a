/*
 * version.c -- once_version(): the version the library was built as, so a
 * program can tell which libonce it runs against (its own headers say
 * which one it was compiled with).
 */
#include "once/once.h"

const char *once_version(void)
{
    return ONCE_VERSION_STRING;
}
