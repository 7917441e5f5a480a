/*
 * sqlite_fault.h -- test hooks of the sqlite backend (internal; not API).
 *
 * Every sqlite3_* call of the backend that can fail (open, prepare, bind,
 * step, reset, exec, busy_timeout) goes through a wrapper in sqlite_call.c
 * that counts it and can be told to fail it, so fault sweeps can fail the
 * i-th call for i = 1, 2, ... (SQLite's own test_malloc.c idea, one layer up).
 * The counters are process-wide and atomic: any thread may call these.
 */
#ifndef ONCE_STORE_SQLITE_FAULT_H
#define ONCE_STORE_SQLITE_FAULT_H

#include "once/store.h"

/* Make the n-th wrapped call from now (n >= 1) fail, once; n <= 0 (e.g. -1)
 * disarms. The failing call does not reach SQLite (except reset, which still
 * resets, as a real sqlite3_reset always does) and returns the fault code. */
void once__sqlite_fault_at(long n);
/* The SQLite result code injected faults return (default SQLITE_IOERR;
 * SQLITE_BUSY exercises the busy paths). */
void once__sqlite_fault_code(int sqlite_rc);
/* Wrapped calls made so far by this process. */
long once__sqlite_calls(void);
/* Faults injected so far (a sweep stops when a run adds none). */
long once__sqlite_faults(void);
/* Successful COMMITs of write batches so far (group commit evidence). */
long once__sqlite_commits(void);
/* Ops (creates, updates, ...) carried by those commits. */
long once__sqlite_committed_ops(void);
/* Batches run a second time, each op in its own savepoint, because an op
 * failed after changing a row (sqlite_commit.c). */
long once__sqlite_reruns(void);

/* Writes queued behind the batch in flight (not yet taken by a leader):
 * lets a test know its threads are waiting before it lets a commit end. */
size_t once__sqlite_queued(once_store *s);

/* The writer connection's PRAGMA synchronous (0..3), for tests that check
 * the option is honoured. ONCE_ESTORE if it cannot be read. */
int once__sqlite_synchronous(once_store *s, int *out);

#endif
