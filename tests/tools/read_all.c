/* read_all: streams epochs of a shard set through the reader for the
 * concurrency, soak and ThreadSanitizer tests.
 *
 *   read_all DIR [--rank R] [--world-size W] [--threads T] [--prefetch P]
 *            [--batch-size N] [--seed S] [--epochs E] [--first-epoch E0]
 *            [--shuffle-window K] [--sort-pool K]
 *            [--sleep-ms MS] [--ids FILE] [--check-epochs] [--rss]
 *            [--pause-after N --paused-file P --resume-file F]
 *
 * Every epoch e in E0 .. E0+E-1 is read to its end (ps_reader_set_epoch
 * between epochs, one reader for the whole run). With --ids, each delivered
 * record is written as "EPOCH ID" to FILE. With --check-epochs (world size 1
 * only) every epoch must deliver each of the set's records exactly once
 * (compared as 64-bit hashes of the ids, in memory allocated once, so the
 * check itself does not grow the process). With --rss, VmRSS is sampled
 * after epoch 5 (or the last, if fewer) and at the end. With --pause-after,
 * after N batches of the first epoch it creates P and waits (up to 60 s)
 * until F exists, so that a test can change the world at a known point of
 * the epoch. Prints one JSON
 * summary line on stdout; exits 0 only when no call failed and every check
 * held, 1 otherwise, 2 on bad usage. */
#include "pairshard/reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t hash_id(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    /* a final mix so that similar ids spread */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Announces the pause by creating `paused`, then waits for `resume`. */
static int wait_for_go(const char *paused, const char *resume)
{
    FILE *f = fopen(paused, "w");
    if (!f || fclose(f) != 0) {
        fprintf(stderr, "read_all: %s: cannot create\n", paused);
        return -1;
    }
    for (int i = 0; i < 6000; i++) {
        if (access(resume, F_OK) == 0)
            return 0;
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "read_all: %s never appeared\n", resume);
    return -1;
}

static int num(const char *flag, const char *v, long long lo, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < lo) {
        fprintf(stderr, "read_all: %s needs a whole number >= %lld, got '%s'\n", flag, lo, v);
        return -1;
    }
    *out = n;
    return 0;
}

int main(int argc, char **argv)
{
    ps_reader_options o;
    ps_reader_options_init(&o);
    const char *dir = NULL, *ids_path = NULL, *paused_file = NULL, *resume_file = NULL;
    long long epochs = 1, first = 0, sleep_ms = 0, pause_after = -1;
    int check = 0, want_rss = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long v = 0;
        if (strcmp(a, "--check-epochs") == 0) {
            check = 1;
            continue;
        }
        if (strcmp(a, "--rss") == 0) {
            want_rss = 1;
            continue;
        }
        if (a[0] != '-') {
            dir = a;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "read_all: %s needs a value\n", a);
            return 2;
        }
        const char *val = argv[++i];
        if (strcmp(a, "--ids") == 0) {
            ids_path = val;
            continue;
        }
        if (strcmp(a, "--paused-file") == 0) {
            paused_file = val;
            continue;
        }
        if (strcmp(a, "--resume-file") == 0) {
            resume_file = val;
            continue;
        }
        if (num(a, val, 0, &v))
            return 2;
        if (strcmp(a, "--rank") == 0)
            o.rank = (int)v;
        else if (strcmp(a, "--world-size") == 0)
            o.world_size = (int)v;
        else if (strcmp(a, "--threads") == 0)
            o.threads = (int)v;
        else if (strcmp(a, "--prefetch") == 0)
            o.prefetch = (int)v;
        else if (strcmp(a, "--batch-size") == 0)
            o.batch_size = (uint32_t)v;
        else if (strcmp(a, "--sort-pool") == 0)
            o.sort_pool = (uint32_t)v;
        else if (strcmp(a, "--shuffle-window") == 0)
            o.shuffle_window = (uint32_t)v;
        else if (strcmp(a, "--seed") == 0)
            o.seed = (uint64_t)v;
        else if (strcmp(a, "--epochs") == 0)
            epochs = v;
        else if (strcmp(a, "--first-epoch") == 0)
            first = v;
        else if (strcmp(a, "--sleep-ms") == 0)
            sleep_ms = v;
        else if (strcmp(a, "--pause-after") == 0)
            pause_after = v;
        else {
            fprintf(stderr, "read_all: unknown option %s\n", a);
            return 2;
        }
    }
    if (!dir || epochs < 1 || (pause_after >= 0 && (!paused_file || !resume_file))) {
        fputs("usage: read_all DIR [options] (see the source)\n", stderr);
        return 2;
    }
    o.epoch = (uint64_t)first;
    FILE *ids = NULL;
    if (ids_path && !(ids = fopen(ids_path, "w"))) {
        fprintf(stderr, "read_all: %s: %s\n", ids_path, strerror(errno));
        return 1;
    }
    ps_error err;
    ps_error_clear(&err);
    ps_reader *r = NULL;
    int rc = ps_reader_open(dir, &o, NULL, &r, &err);
    if (rc) {
        fprintf(stderr, "read_all: %s\n", err.message);
        return 1;
    }
    ps_reader_info in;
    ps_reader_get_info(r, &in);
    if (check && in.world_size != 1) {
        fputs("read_all: --check-epochs needs world size 1\n", stderr);
        return 2;
    }
    size_t n = (size_t)in.records_per_epoch;
    /* Everything the checks need, allocated once before the first batch. */
    uint64_t *want = check ? calloc(n ? n : 1, sizeof *want) : NULL;
    uint64_t *got = check ? calloc(n ? n : 1, sizeof *got) : NULL;
    if (check && (!want || !got)) {
        fputs("read_all: out of memory\n", stderr);
        return 1;
    }
    int failed = 0;
    long rss_early = -1, rss_end = -1;
    uint64_t records = 0, batches = 0, bad_epochs = 0;
    double t0 = now_s();
    for (long long e = 0; e < epochs && !failed; e++) {
        if (e && ps_reader_set_epoch(r, (uint64_t)(first + e), &err) < 0) {
            fprintf(stderr, "read_all: set_epoch: %s\n", err.message);
            failed = 1;
            break;
        }
        size_t k = 0, over = 0;
        for (;;) {
            const ps_batch *b = NULL;
            rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                fprintf(stderr, "read_all: epoch %lld: %s\n", first + e, err.message);
                failed = 1;
                break;
            }
            if (b->epoch != (uint64_t)(first + e)) {
                fprintf(stderr, "read_all: a batch of epoch %llu in epoch %lld\n",
                        (unsigned long long)b->epoch, first + e);
                failed = 1;
            }
            for (uint32_t i = 0; i < b->B; i++) {
                if (ids)
                    fprintf(ids, "%lld %s\n", first + e, b->ids[i]);
                if (check) {
                    if (k < n)
                        got[k++] = hash_id(b->ids[i]);
                    else
                        over++;
                }
            }
            records += b->B;
            batches++;
            ps_batch_release(r, b);
            if (e == 0 && (long long)batches == pause_after && wait_for_go(paused_file, resume_file))
                failed = 1;
            if (sleep_ms) {
                struct timespec ts = {(time_t)(sleep_ms / 1000), (long)(sleep_ms % 1000) * 1000000L};
                nanosleep(&ts, NULL);
            }
        }
        if (check && !failed) {
            qsort(got, k, sizeof *got, cmp_u64);
            int ok = k == n && over == 0;
            if (e == 0) {
                for (size_t i = 1; ok && i < k; i++)
                    ok = got[i] != got[i - 1];
                memcpy(want, got, k * sizeof *got);
            } else if (ok) {
                ok = memcmp(want, got, n * sizeof *got) == 0;
            }
            if (!ok) {
                fprintf(stderr,
                        "read_all: epoch %lld: %zu records (+%zu), expected each of %zu once\n",
                        first + e, k, over, n);
                bad_epochs++;
            }
        }
        if (want_rss && (e == 5 || (e < 5 && e == epochs - 1)))
            rss_early = rss_kb();
    }
    double secs = now_s() - t0;
    if (want_rss)
        rss_end = rss_kb();
    ps_reader_stats st;
    ps_reader_get_stats(r, &st);
    ps_reader_close(r);
    if (ids && fclose(ids) != 0) {
        fprintf(stderr, "read_all: %s: write failed\n", ids_path);
        failed = 1;
    }
    printf("{\"rank\":%d,\"world_size\":%d,\"epochs\":%lld,\"batches\":%llu,\"records\":%llu,"
           "\"records_per_epoch\":%llu,\"records_total\":%llu,\"bad_epochs\":%llu,"
           "\"rss_kb_after_epoch5\":%ld,\"rss_kb_end\":%ld,\"seconds\":%.3f,"
           "\"wait_ns\":%llu,\"blocks_decoded\":%llu,\"failed\":%s}\n",
           in.rank, in.world_size, epochs, (unsigned long long)batches,
           (unsigned long long)records, (unsigned long long)in.records_per_epoch,
           (unsigned long long)in.records_total, (unsigned long long)bad_epochs, rss_early,
           rss_end, secs, (unsigned long long)st.wait_ns, (unsigned long long)st.blocks_decoded,
           failed ? "true" : "false");
    free(want);
    free(got);
    return failed || bad_epochs ? 1 : 0;
}
