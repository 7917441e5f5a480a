/*
 * pool.h -- a fixed pool of worker threads with a bounded FIFO job queue
 * (internal to src/http).
 */
#ifndef ONCE_HTTP_POOL_H
#define ONCE_HTTP_POOL_H

#include <stddef.h>

typedef struct once_pool once_pool;
typedef void (*once_pool_fn)(void *arg);

/* nthreads >= 1 workers, at most queue_cap jobs waiting. */
int once__http_pool_new(unsigned nthreads, size_t queue_cap, once_pool **out);
/* Queue fn(arg). ONCE_EBUSY when the queue is full, ONCE_ECLOSED after
 * shutdown began; fn is then not run. */
int once__http_pool_submit(once_pool *p, once_pool_fn fn, void *arg);
/* Run every job already queued, then join the workers and free. NULL ok. */
void once__http_pool_free(once_pool *p);

#endif /* ONCE_HTTP_POOL_H */
