/* Write-behind for an outfile (see outfile.h, ps_outfile_write_behind):
 * the writer copies into buffers of BUF_BYTES; a full buffer goes to a
 * thread of the outfile's own, which write(2)s the buffers in the order
 * they were handed over and starts their writeback. At most N_BUFS
 * buffers exist, so a writer that outruns the disk waits for a free one.
 * The thread starts with the first full buffer: an output that never
 * fills one never starts it. */
#define _GNU_SOURCE /* sync_file_range */
#include "common/outfile_behind.h"
#include "common/ps_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_BYTES ((size_t)1 << 20)
#define N_BUFS 4
#define HUGE_ALIGN ((size_t)2 << 20)
#define KICK_BYTES ((uint64_t)4 << 20) /* as ps_outfile_write's, see outfile.c */

struct ps_write_behind {
    int fd;
    bool is_temp;          /* a temporary of ours: its writeback is started */
    pthread_mutex_t mu;
    pthread_cond_t cv;     /* a buffer handed over, one written, or stop */
    char *region;          /* the N_BUFS buffers, one after another */
    size_t len[N_BUFS];
    uint64_t head, tail;   /* [head, tail): handed over, written in order;
                            * the writer fills buffer tail % N_BUFS */
    bool started, stop;
    pthread_t thread;
    int err;               /* errno of the first failed write, under mu */
    uint64_t written, kicked; /* the thread's: bytes written, writeback started */
};

/* Writes one buffer (the thread, or the writer when there is none). */
static int flush_buffer(ps_write_behind *b, const char *p, size_t n)
{
    int e = ps_fd_write_all(b->fd, p, n);
    if (e)
        return e;
    b->written += n;
    if (b->is_temp && b->written - b->kicked >= KICK_BYTES) {
        (void)sync_file_range(b->fd, (off_t)b->kicked, (off_t)(b->written - b->kicked),
                              SYNC_FILE_RANGE_WRITE);
        b->kicked = b->written;
    }
    return 0;
}

static void *thread_main(void *arg)
{
    ps_write_behind *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (b->head == b->tail && !b->stop)
            pthread_cond_wait(&b->cv, &b->mu);
        if (b->head == b->tail)
            break;
        size_t k = b->head % N_BUFS;
        bool failed = b->err != 0; /* after a failure the rest is dropped */
        pthread_mutex_unlock(&b->mu);
        int e = failed ? 0 : flush_buffer(b, b->region + k * BUF_BYTES, b->len[k]);
        pthread_mutex_lock(&b->mu);
        if (e && !b->err)
            b->err = e;
        b->len[k] = 0;
        b->head++;
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int ps_write_behind_new(ps_write_behind **out, int fd, bool is_temp, uint64_t at,
                        uint64_t kicked)
{
    ps_write_behind *b = calloc(1, sizeof *b);
    if (!b)
        return PS_ENOMEM;
    b->fd = fd;
    b->is_temp = is_temp;
    b->written = at;
    b->kicked = kicked;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    *out = b;
    return 0;
}

/* Hands the buffer being filled to the thread (or writes it when there is
 * no thread) and waits until the next one is free. Returns an errno. */
static int hand_over(ps_write_behind *b)
{
    size_t k = b->tail % N_BUFS;
    if (!b->started && ps_thread_create(&b->thread, thread_main, b, "ps-write") == 0)
        b->started = true;
    if (!b->started) { /* no thread: write in place */
        int e = flush_buffer(b, b->region + k * BUF_BYTES, b->len[k]);
        b->len[k] = 0;
        return e;
    }
    pthread_mutex_lock(&b->mu);
    b->tail++;
    pthread_cond_broadcast(&b->cv);
    while (b->tail - b->head >= N_BUFS && !b->err)
        pthread_cond_wait(&b->cv, &b->mu);
    int e = b->err;
    pthread_mutex_unlock(&b->mu);
    return e;
}

int ps_write_behind_write(ps_write_behind *b, const void *p, size_t n)
{
    const char *s = p;
    /* one aligned region, so that it can be backed by two huge pages: a
     * 4 KiB page fault per page of it cost a quarter of the copying */
    if (!b->region && n > 0) {
        void *r;
        if (posix_memalign(&r, HUGE_ALIGN, (size_t)N_BUFS * BUF_BYTES))
            return ENOMEM;
        b->region = r;
        ps_mem_hint_huge(r, (size_t)N_BUFS * BUF_BYTES);
    }
    while (n > 0) {
        size_t k = b->tail % N_BUFS;
        size_t take = BUF_BYTES - b->len[k] < n ? BUF_BYTES - b->len[k] : n;
        memcpy(b->region + k * BUF_BYTES + b->len[k], s, take);
        b->len[k] += take;
        s += take;
        n -= take;
        if (b->len[k] == BUF_BYTES) {
            int e = hand_over(b);
            if (e)
                return e;
        }
    }
    return 0;
}

/* Stops the thread once it has written what was handed over. */
static void stop_thread(ps_write_behind *b)
{
    if (!b->started)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    b->started = false;
}

int ps_write_behind_finish(ps_write_behind *b)
{
    int e = 0;
    if (b->len[b->tail % N_BUFS] > 0)
        e = hand_over(b);
    stop_thread(b);
    return e ? e : b->err;
}

void ps_write_behind_free(ps_write_behind *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    if (!b->err)
        b->err = ECANCELED; /* what is still queued is not written */
    pthread_mutex_unlock(&b->mu);
    stop_thread(b);
    free(b->region);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
}
