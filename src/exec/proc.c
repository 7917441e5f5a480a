/*
 * proc.c -- spawn, signal and reap one child for the subprocess executor.
 *
 * Invariants: the child runs in its own process group (pgid == pid), so a
 * signal reaches everything it started unless that escaped with setsid(2);
 * the child inherits exactly fds 0, 1, 2 (our pipes) and nothing else of
 * onced's (listening sockets, database files); the group is only signalled
 * while the leader is unreaped, because until then its pid, and so the group
 * id, cannot be handed to an unrelated process. posix_spawn (vfork-style in
 * glibc) is used rather than fork so that a multi-threaded onced with a
 * large heap forks cheaply and runs no code between fork and exec.
 */
#include "exec/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

void once__proc_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Keep pipe ends off 0..2 (onced may run with a closed stdin), so the
 * child's dup2 onto 0..2 never meets an fd that is its own target. */
static int lift(int fd)
{
    int n;
    if (fd < 0 || fd > 2)
        return fd;
    n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return n;
}

static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0) {
        fds[0] = fds[1] = -1;
        return -1;
    }
    fds[0] = lift(fds[0]);
    fds[1] = lift(fds[1]);
    if (fds[0] < 0 || fds[1] < 0) {
        once__proc_close(&fds[0]);
        once__proc_close(&fds[1]);
        return -1;
    }
    return 0;
}

static void nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static size_t name_len(const char *kv)
{
    const char *eq = strchr(kv, '=');
    return eq ? (size_t)(eq - kv) : strlen(kv);
}

static int overridden(const char *kv, char *const *env)
{
    size_t n = name_len(kv);
    for (size_t i = 0; env[i]; i++)
        if (name_len(env[i]) == n && memcmp(env[i], kv, n) == 0)
            return 1;
    return 0;
}

/* environ minus the names in env, plus env. Points into both; frees with
 * once_free only the array. */
static char **build_env(char *const *env)
{
    size_t ne = 0, nx = 0, k = 0;
    char **out;

    while (environ && environ[ne])
        ne++;
    while (env[nx])
        nx++;
    out = once_calloc(ne + nx + 1, sizeof *out);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < ne; i++)
        if (!overridden(environ[i], env))
            out[k++] = environ[i];
    for (size_t i = 0; i < nx; i++)
        out[k++] = env[i];
    out[k] = NULL;
    return out;
}

/* Signals a command must see at their defaults even when onced ignores or
 * handles them (an ignored SIGPIPE would survive exec). */
static const int default_signals[] = {SIGPIPE, SIGCHLD, SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                      SIGUSR1, SIGUSR2, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU,
                                      SIGXFSZ};

static int spawn_child(const char *command, char *const *envp, int in, int out, int err,
                       pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, defs;
    char sh[] = "sh", dash_c[] = "-c";
    char *argv[] = {sh, dash_c, (char *)command, NULL};
    int rc;

    if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
        return rc;
    if ((rc = posix_spawnattr_init(&at)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    sigemptyset(&none);
    sigemptyset(&defs);
    for (size_t i = 0; i < sizeof default_signals / sizeof default_signals[0]; i++)
        sigaddset(&defs, default_signals[i]);
    if ((rc = posix_spawn_file_actions_adddup2(&fa, in, 0)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&fa, out, 1)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&fa, err, 2)) == 0 &&
        (rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3)) == 0 &&
        (rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                POSIX_SPAWN_SETSIGDEF)) == 0 &&
        (rc = posix_spawnattr_setpgroup(&at, 0)) == 0 &&
        (rc = posix_spawnattr_setsigmask(&at, &none)) == 0 &&
        (rc = posix_spawnattr_setsigdefault(&at, &defs)) == 0)
        rc = posix_spawn(pid, "/bin/sh", &fa, &at, argv, envp);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

int once__proc_spawn(const char *command, char *const *env, once__proc *p, char *err,
                     size_t errlen)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
    char **envp = NULL;
    char ebuf[128];
    int rc;

    memset(p, 0, sizeof *p);
    p->pid = -1;
    p->in_fd = p->out_fd = p->err_fd = p->exit_fd = -1;
    p->status = -1;
    if (make_pipe(in) < 0 || make_pipe(out) < 0 || make_pipe(er) < 0) {
        rc = errno;
        snprintf(err, errlen, "cannot create pipes: %s", strerror_r(rc, ebuf, sizeof ebuf));
        rc = ONCE_EIO;
        goto out;
    }
    if ((envp = build_env(env)) == NULL) {
        snprintf(err, errlen, "out of memory");
        rc = ONCE_ENOMEM;
        goto out;
    }
    rc = spawn_child(command, envp, in[0], out[1], er[1], &p->pid);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start /bin/sh: %s", strerror_r(rc, ebuf, sizeof ebuf));
        p->pid = -1;
        rc = ONCE_EIO;
        goto out;
    }
    p->in_fd = in[1];
    p->out_fd = out[0];
    p->err_fd = er[0];
    in[1] = out[0] = er[0] = -1;
    nonblock(p->in_fd);
    nonblock(p->out_fd);
    nonblock(p->err_fd);
#ifdef SYS_pidfd_open
    p->exit_fd = (int)syscall(SYS_pidfd_open, p->pid, 0);   /* close-on-exec by default */
    if (p->exit_fd < 0)
        p->exit_fd = -1;   /* older kernel: exit is found by polling waitid */
#endif
    rc = ONCE_OK;
out:
    once_free(envp);
    for (int i = 0; i < 2; i++) {
        once__proc_close(&in[i]);
        once__proc_close(&out[i]);
        once__proc_close(&er[i]);
    }
    return rc;
}

int once__proc_poll_exit(once__proc *p)
{
    siginfo_t si;

    if (p->exited || p->reaped || p->pid <= 0)
        return 1;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
        if (errno == EINTR)
            return 0;
        /* ECHILD: reaped behind our back (SIGCHLD ignored in onced). */
        p->exited = p->reaped = 1;
        p->status = -1;
        return 1;
    }
    if (si.si_pid == p->pid)
        p->exited = 1;
    return p->exited;
}

void once__proc_signal(once__proc *p, int sig)
{
    if (p->pid > 0 && !p->reaped)
        (void)kill(-p->pid, sig);
}

void once__proc_reap(once__proc *p)
{
    if (p->pid > 0 && !p->reaped) {
        int st = 0;
        pid_t r;
        (void)kill(-p->pid, SIGKILL);
        do
            r = waitpid(p->pid, &st, 0);
        while (r < 0 && errno == EINTR);
        p->status = r == p->pid ? st : -1;
        p->reaped = p->exited = 1;
    }
    once__proc_close(&p->in_fd);
    once__proc_close(&p->out_fd);
    once__proc_close(&p->err_fd);
    once__proc_close(&p->exit_fd);
}

ssize_t once__proc_write(int fd, const void *buf, size_t n)
{
    sigset_t pipe_set, old, pending;
    int was_pending, e;
    ssize_t r;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    r = write(fd, buf, n);
    e = errno;
    if (r < 0 && e == EPIPE && !was_pending) {
        /* Consume the SIGPIPE this write raised before unblocking it. */
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return r;
}
