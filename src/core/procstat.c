/*
 * procstat.c -- the standard process_* metric families (metrics.h), with
 * the names and meanings every Prometheus client library gives them, so
 * that dashboards and alerts written for any process work on onced.
 *
 * Everything is read at scrape time from /proc/self and getrlimit: nothing
 * is kept between scrapes, and the request path never pays for it. A file
 * that cannot be read (no /proc: another kernel, a sandbox) leaves out the
 * families it feeds rather than showing a zero that would look like a
 * measurement.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/metrics.h"

/* What /proc/self/stat says, in its own units (clock ticks, pages). */
typedef struct proc_stat {
    unsigned long long utime, stime; /* fields 14, 15 */
    unsigned long long starttime;    /* field 22: ticks after boot */
    unsigned long long vsize;        /* field 23: bytes */
    unsigned long long rss;          /* field 24: pages */
} proc_stat;

/* The fields of proc(5)'s stat line counted from 1; the second (the
 * command, in parentheses) may hold spaces and parentheses itself, so the
 * count restarts after its last ')', which is field 2's end. */
#define STAT_AFTER_COMM 3

static int read_file(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = '\0';
    return got > 0 ? 0 : -1;
}

static int read_stat(proc_stat *ps)
{
    char buf[1024];
    if (read_file("/proc/self/stat", buf, sizeof buf) != 0)
        return -1;
    const char *p = strrchr(buf, ')');
    if (p == NULL)
        return -1;
    p++;
    memset(ps, 0, sizeof *ps);
    int field = STAT_AFTER_COMM;
    while (*p != '\0' && field <= 24) {
        while (*p == ' ')
            p++;
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p) { /* field 3, the state letter, is not a number */
            end = strchr(p, ' ');
            if (end == NULL)
                break;
        }
        switch (field) {
        case 14: ps->utime = v; break;
        case 15: ps->stime = v; break;
        case 22: ps->starttime = v; break;
        case 23: ps->vsize = v; break;
        case 24: ps->rss = v; break;
        default: break;
        }
        p = end;
        field++;
    }
    return field > 24 ? 0 : -1;
}

/* The boot time in seconds since the epoch (/proc/stat's btime): the
 * origin of the stat line's starttime. 0 if it cannot be read. */
static unsigned long long boot_time(void)
{
    char buf[8192];
    if (read_file("/proc/stat", buf, sizeof buf) != 0)
        return 0;
    const char *p = strstr(buf, "\nbtime ");
    return p != NULL ? strtoull(p + 7, NULL, 10) : 0;
}

/* Descriptors open now, not counting the one that lists them. -1 if the
 * list cannot be read. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    long n = 0;
    int own = dirfd(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        if (end != de->d_name && *end == '\0' && fd != own)
            n++;
    }
    closedir(d);
    return n;
}

static void one(once__mtext *t, const char *name, const char *type, const char *help,
                  double v)
{
    once__mtext_family(t, name, type, help);
    once__mtext_sample_f(t, name, NULL, v);
}

void once__metrics_write_os(once__mtext *t)
{
    long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    proc_stat ps;
    if (ticks > 0 && page > 0 && read_stat(&ps) == 0) {
        one(t, "process_cpu_seconds_total", "counter",
              "CPU time this process has used, user and system, in seconds. Process-local: "
              "starts at 0 when the process starts.",
              (double)(ps.utime + ps.stime) / (double)ticks);
        one(t, "process_resident_memory_bytes", "gauge",
              "Memory of this process resident in RAM now (its RSS), in bytes.",
              (double)ps.rss * (double)page);
        one(t, "process_virtual_memory_bytes", "gauge",
              "Size of this process's virtual address space now, in bytes.", (double)ps.vsize);
        unsigned long long boot = boot_time();
        if (boot > 0)
            one(t, "process_start_time_seconds", "gauge",
                  "When this process started, in seconds since the Unix epoch.",
                  (double)boot + (double)ps.starttime / (double)ticks);
    }
    long fds = open_fds();
    if (fds >= 0)
        one(t, "process_open_fds", "gauge", "File descriptors this process has open now.",
              (double)fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        one(t, "process_max_fds", "gauge",
              "The most file descriptors this process may have open (its RLIMIT_NOFILE soft "
              "limit).",
              (double)rl.rlim_cur);
}
