/* validate/stat_threads.c — the terms of the exact one-sided Kolmogorov
 * sum (ps_sm_bt_term) computed over threads. A term does not depend on the
 * others, so each thread fills its own contiguous range of the array with
 * the very function one thread would call; stat_math.c then sums them in
 * order. The p-value keeps its bits whatever the thread count. */
#include "validate/stat_math.h"
#include "common/ps_internal.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* Below this many terms a thread costs more than it saves. */
#define MIN_TERMS_PER_THREAD 4096u
#define MAX_THREADS 256u

typedef struct range {
    long double lgn1, N, X;
    uint64_t j0, j1; /* [j0, j1) */
    long double *out;
} range;

static void fill(const range *r)
{
    for (uint64_t j = r->j0; j < r->j1; j++)
        r->out[j] = ps_sm_bt_term(r->lgn1, r->N, r->X, j);
}

static void *fill_main(void *arg)
{
    fill(arg);
    return NULL;
}

long double *ps_sm_bt_terms_threads(long double lgn1, long double N, long double X,
                                     uint64_t jmax, size_t threads)
{
    uint64_t n = jmax + 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > n / MIN_TERMS_PER_THREAD)
        threads = (size_t)(n / MIN_TERMS_PER_THREAD);
    if (threads <= 1)
        return NULL;
    long double *out = malloc(n * sizeof *out);
    range r[MAX_THREADS];
    pthread_t t[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    if (!out)
        return NULL;
    for (size_t i = 0; i < threads; i++)
        r[i] = (range){lgn1, N, X, n * i / threads, n * (i + 1) / threads, out};
    /* threads - 1 beside the calling thread, which fills the first range
     * and any whose thread did not start */
    for (size_t i = 1; i < threads; i++)
        started[i] = ps_thread_create(&t[i], fill_main, &r[i], "ps-ks") == 0;
    for (size_t i = 0; i < threads; i++)
        if (!started[i])
            fill(&r[i]);
    for (size_t i = 1; i < threads; i++)
        if (started[i])
            pthread_join(t[i], NULL);
    return out;
}
