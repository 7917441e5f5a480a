/*
 * vfs_shim.h -- a test-only SQLite VFS, SHIM_VFS, over the default one.
 * Name it in a store URL: sqlite:PATH?vfs=once-powerloss.
 *
 * The power cut (powerloss.c has the model): until an xSync of a file, what
 * was written to it is remembered as undo entries; shim_arm(k) cuts the
 * power just before the k-th xWrite or xSync of the run (that call and
 * every later write, sync, truncate or delete fails), and
 * shim_power_cycle() rolls every file back to what its last xSync made
 * durable. Every handle through the shim must be closed first.
 *
 * The sync gate: while shim_hold_syncs(1) is on, every xSync of a -wal file
 * (with synchronous=full, the fsync of a COMMIT) stops in the gate until
 * the test calls shim_release(fail): then it returns SQLITE_IOERR_FSYNC
 * (fail) or goes on as usual. One sync waits in the gate at a time (the
 * store has one writer connection).
 */
#ifndef ONCE_TESTS_SQLITE_VFS_SHIM_H
#define ONCE_TESTS_SQLITE_VFS_SHIM_H

#include <stdint.h>

#define SHIM_VFS "once-powerloss"

/* Register the VFS (not as the default); once per process is enough. */
void shim_register(void);
/* A new run: nothing written yet, power on, cut before event cut_at (0:
 * never). */
void shim_arm(long cut_at);
/* The reboot: every file back to what its last xSync made durable. */
void shim_power_cycle(void);
/* Writes and syncs made this run, and whether the cut happened. */
void shim_counts(long *events, int *dead);
int shim_dead(void);
long shim_cut_at(void);

void shim_hold_syncs(int on);
/* 1 once a sync waits in the gate, 0 if none did within tt_ms(timeout_ms). */
int shim_wait_held(int64_t timeout_ms);
/* Let the waiting sync go, failed or not; returns once it has its verdict. */
void shim_release(int fail);

#endif
