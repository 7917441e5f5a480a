/*
 * condwait.h -- a bounded wait on a condition variable, measured on the
 * monotonic clock (the engine's threads and the SSE writers).
 */
#ifndef ONCE_CORE_CONDWAIT_H
#define ONCE_CORE_CONDWAIT_H

#include <pthread.h>
#include <stdint.h>

/* Initialise cv to time its waits on CLOCK_MONOTONIC: ONCE_OK or
 * ONCE_ENOMEM. */
int once__cond_init(pthread_cond_t *cv);

/* A mutex and its monotonic condition variable together: ONCE_OK, or
 * ONCE_ENOMEM with neither initialised. */
int once__lock_init(pthread_mutex_t *mu, pthread_cond_t *cv);

/* Wait on cv (bound to mu, which the caller holds) for at most ms; ms <= 0
 * returns at once. The caller re-checks its condition: a wake-up may be
 * early or spurious. Needs cv created with CLOCK_MONOTONIC
 * (pthread_condattr_setclock). */
void once__cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms);

/* Set *flag under mu and wake every waiter on cv: how a worker thread that
 * sleeps on cv is told to stop (it re-checks *flag under mu). */
void once__cond_raise(pthread_mutex_t *mu, pthread_cond_t *cv, int *flag);

#endif /* ONCE_CORE_CONDWAIT_H */
