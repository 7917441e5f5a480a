/*
 * webhook_exec.c -- the ready-made receiver handler that runs a shell
 * command per event (`once listen --exec CMD`): the event body on stdin,
 * ONCE_TASK_ID / ONCE_GENERATION / ONCE_WEBHOOK_ID / ONCE_SUBSCRIPTION in
 * the environment,
 * exit status 0 = handled.
 *
 * The body goes through a memfd rather than a pipe, so a command that does
 * not read its stdin can neither block us nor raise SIGPIPE. Everything the
 * child needs (argv, envp) is built before fork: between fork and exec the
 * child only calls async-signal-safe functions.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "once/webhook.h"

extern char **environ;

#define NVARS 4
#define VAR_MAX (ONCE_WEBHOOK_ID_MAX + 32)

/* environ minus our names, plus them with this event's values. */
static char **build_env(const once_webhook_event *ev, char vars[NVARS][VAR_MAX])
{
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **env = once_calloc(n + NVARS + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "ONCE_TASK_ID=", 13) == 0 ||
            strncmp(environ[i], "ONCE_GENERATION=", 16) == 0 ||
            strncmp(environ[i], "ONCE_WEBHOOK_ID=", 16) == 0 ||
            strncmp(environ[i], "ONCE_SUBSCRIPTION=", 18) == 0)
            continue;
        env[k++] = environ[i];
    }
    snprintf(vars[0], sizeof vars[0], "ONCE_TASK_ID=%s", ev->task_id);
    snprintf(vars[1], sizeof vars[1], "ONCE_GENERATION=%lld", (long long)ev->generation);
    snprintf(vars[2], sizeof vars[2], "ONCE_WEBHOOK_ID=%s", ev->id);
    snprintf(vars[3], sizeof vars[3], "ONCE_SUBSCRIPTION=%s",
             ev->subscription != NULL ? ev->subscription : "");
    for (int i = 0; i < NVARS; i++)
        env[k++] = vars[i];
    env[k] = NULL;
    return env;
}

int once_webhook_exec_handler(void *cmd, const once_webhook_event *ev)
{
    if (cmd == NULL || ev == NULL)
        return ONCE_EINVAL;
    int fd = memfd_create("once-webhook-event", MFD_CLOEXEC);
    if (fd < 0)
        return ONCE_EIO;
    size_t off = 0;
    while (off < ev->len) {
        ssize_t w = write(fd, ev->body + off, ev->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return ONCE_EIO;
        }
        off += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return ONCE_EIO;
    }
    char vars[NVARS][VAR_MAX];
    char **env = build_env(ev, vars);
    if (env == NULL) {
        close(fd);
        return ONCE_ENOMEM;
    }
    char *argv[] = {"sh", "-c", cmd, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        if (dup2(fd, 0) < 0)
            _exit(127);
        execve("/bin/sh", argv, env);
        _exit(127);
    }
    once_free(env);
    close(fd);
    if (pid < 0)
        return ONCE_EIO;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return ONCE_EIO;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ONCE_OK : ONCE_EIO;
}
