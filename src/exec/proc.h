/*
 * proc.h -- one child process for the subprocess executor (not API):
 * spawned through /bin/sh -c in its own process group with three pipes, so
 * the whole tree it starts can be signalled at once, and always reaped.
 */
#ifndef ONCE_EXEC_PROC_H
#define ONCE_EXEC_PROC_H

#include <sys/types.h>

#include "once/once.h"

/* A running child. Owned by one executor turn (one thread); no locking.
 * pid is also the process group id. The fds are the parent's ends
 * (non-blocking, close-on-exec); each is -1 once closed. exited turns 1 when
 * the leader has exited; it stays an unreaped zombie until once__proc_reap so
 * that its pid, and with it the process group id, cannot be reused while we
 * may still signal the group. */
typedef struct once__proc {
    pid_t pid;
    int in_fd;
    int out_fd;
    int err_fd;
    int exit_fd;   /* pidfd (readable when the leader exits), or -1 */
    int exited;
    int reaped;
    int status;    /* wait status once reaped; -1 if it could not be read */
} once__proc;

/* Start `/bin/sh -c command` with the parent's environment plus env (an
 * array of "NAME=value" strings ending with NULL; they replace inherited
 * variables of the same name). Signal mask and the usual signals are reset
 * to defaults, every fd above 2 is closed in the child. On failure nothing
 * is left open and err says why. */
int once__proc_spawn(const char *command, char *const *env, once__proc *p, char *err,
                     size_t errlen);

/* 1 if the leader has exited (does not reap); updates p->exited. */
int once__proc_poll_exit(once__proc *p);

/* Send sig to the whole process group; no-op once reaped. */
void once__proc_signal(once__proc *p, int sig);

/* SIGKILL whatever is left in the group, wait for the leader, close every
 * fd. Blocks until the leader is gone. Safe to call twice. */
void once__proc_reap(once__proc *p);

/* write(2) that turns a vanished reader into EPIPE instead of SIGPIPE for
 * the whole process. */
ssize_t once__proc_write(int fd, const void *buf, size_t n);

/* Close *fd if open and set it to -1. */
void once__proc_close(int *fd);

#endif
