/* pairshard bench-read: how fast the reader delivers batches, against the
 * fastest anything could deliver the same bytes (a plain memcpy of them),
 * with the padding the length buckets save over random batching. */
#include "cli/commands.h"
#include "cli/args.h"
#include "cli/opt_error.h"
#include "cli/read_args.h"
#include "pairshard/reader.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char USAGE[] =
    "usage: pairshard bench-read DIR... [options]\n"
    "\n"
    "Reads --epochs epochs of this rank's batches of the shard set in DIR with the\n"
    "reader trainers use, touching nothing but the batch headers, and reports:\n"
    "  - batches, records, tokens (B*T, padding included) and real tokens (the\n"
    "    records' lengths) per second of wall time, and per second of CPU time of\n"
    "    the whole process (every thread; 'per core');\n"
    "  - the padding waste, 1 - real/padded tokens, and what it would be with\n"
    "    random batching: the delivered lengths of the first epoch shuffled (fixed\n"
    "    seed) and cut into batches of the same sizes, each padded to its longest;\n"
    "  - the time the consumer waited in ps_reader_next for a batch not yet ready;\n"
    "  - start-up: ps_reader_open alone, and from calling it to the first batch;\n"
    "  - a memcpy bound, measured in the same run after the reader is closed:\n"
    "    each batch's bytes (input_ids, attention_mask, token_type_ids: B*T each;\n"
    "    lengths: B; times the element size; labels: B int64) copied with memcpy\n"
    "    from a batch-sized source (warm in cache, as decoded blocks are) into a\n"
    "    ring of --prefetch destination buffers (as the reader's slots), batch after\n"
    "    batch in the same sizes; and the reader's bytes per second as a share of it;\n"
    "    for context, the same copies streamed through buffers as large as all the\n"
    "    batches (up to 256 MiB: on a large set, no copy finds its memory in cache).\n"
    "\n"
    "%s"
    "Benchmark:\n"
    "  --epochs N             epochs to read (default 1), epochs E, E+1, ...\n"
    "  --json                 print one JSON object instead of text\n"
    "  -h, --help             this help\n"
    "\n"
    "Exit status: 0 done, 1 a read error (the message names the shard, bucket and\n"
    "block), 2 usage error or a set that cannot be read.\n";

enum { O_EPOCHS = 300, O_JSON };

static const struct option OWN_OPTS[] = {
    {"epochs", required_argument, NULL, O_EPOCHS},
    {"json", no_argument, NULL, O_JSON},
    {"help", no_argument, NULL, 'h'},
};
#define N_OWN (sizeof OWN_OPTS / sizeof OWN_OPTS[0])

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return 0;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

/* What the benchmark keeps per batch: its shape, for the memcpy replay and
 * the random-batching figure. */
typedef struct shape {
    uint32_t B, T;
} shape;

typedef struct growing {
    void *p;
    size_t n, cap, size;
} growing;

static void *grow(growing *g)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 1024;
        void *np = realloc(g->p, cap * g->size);
        if (!np)
            return NULL;
        g->p = np;
        g->cap = cap;
    }
    return (char *)g->p + g->n++ * g->size;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t round_up(uint64_t x, uint64_t m)
{
    return m > 1 ? (x + m - 1) / m * m : x;
}

/* Padded tokens of the first epoch's records batched at random: lengths
 * shuffled (Fisher-Yates, fixed seed), cut into batches of the delivered
 * sizes in delivered order, each padded to its longest (rounded up to the
 * pad multiple). */
static uint64_t random_padded(uint32_t *len, size_t n, const shape *sh, size_t nb,
                              uint32_t multiple)
{
    uint64_t s = 0x5eed;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(splitmix64(&s) % i);
        uint32_t t = len[i - 1];
        len[i - 1] = len[j];
        len[j] = t;
    }
    uint64_t padded = 0;
    size_t at = 0;
    for (size_t b = 0; b < nb && at < n; b++) {
        uint32_t mx = 0;
        size_t end = at + sh[b].B < n ? at + sh[b].B : n;
        for (size_t i = at; i < end; i++)
            mx = len[i] > mx ? len[i] : mx;
        padded += (uint64_t)(end - at) * round_up(mx, multiple);
        at = end;
    }
    return padded;
}

static uint64_t batch_bytes(const shape *s, size_t elem)
{
    return ((uint64_t)s->B * s->T * 3 + (uint64_t)s->B) * elem + (uint64_t)s->B * 8;
}

/* The largest batch's bytes and all batches' bytes. */
static void batch_totals(const shape *sh, size_t nb, size_t elem, uint64_t *max, uint64_t *total)
{
    *max = *total = 0;
    for (size_t b = 0; b < nb; b++) {
        uint64_t x = batch_bytes(&sh[b], elem);
        *max = x > *max ? x : *max;
        *total += x;
    }
}

/* The memcpy bound: copies every batch's bytes, in order, from a warm
 * batch-sized source into a ring of `slots` destinations, repeating the
 * whole sequence until at least 0.2 s have gone by. Returns bytes/s, or a
 * negative value when memory ran out. */
static double memcpy_bound(const shape *sh, size_t nb, size_t elem, uint32_t slots,
                           uint64_t *bytes_out, double *seconds_out)
{
    uint64_t max, total;
    batch_totals(sh, nb, elem, &max, &total);
    *bytes_out = 0;
    *seconds_out = 0;
    if (!nb || !max)
        return 0;
    if (slots < 2)
        slots = 2;
    unsigned char *src = malloc(max);
    unsigned char **dst = calloc(slots, sizeof *dst);
    int ok = src && dst;
    for (uint32_t k = 0; ok && k < slots; k++) {
        dst[k] = malloc(max);
        ok = dst[k] != NULL;
        if (ok)
            memset(dst[k], 0, max); /* fault the pages in before timing */
    }
    double rate = -1;
    if (ok) {
        for (uint64_t i = 0; i < max; i++)
            src[i] = (unsigned char)(i * 131u + 7u);
        uint64_t copied = 0, t0 = now_ns(), t1;
        do {
            for (size_t b = 0; b < nb; b++)
                memcpy(dst[b % slots], src, batch_bytes(&sh[b], elem));
            copied += total;
            t1 = now_ns();
        } while (t1 - t0 < 200000000u);
        volatile unsigned char sink = 0;
        for (uint32_t k = 0; k < slots; k++)
            sink ^= dst[k][max - 1];
        (void)sink;
        *bytes_out = copied;
        *seconds_out = (double)(t1 - t0) / 1e9;
        rate = (double)copied / *seconds_out;
    }
    for (uint32_t k = 0; dst && k < slots; k++)
        free(dst[k]);
    free(dst);
    free(src);
    return rate;
}

/* The same copies streamed through memory instead: source and destination
 * as large as all the batches' bytes (at most 256 MiB each, wrapping), so
 * each copy reads and writes memory the previous ones did not touch. For
 * context only: the reader's slots are reused, and stay warm. Returns
 * bytes/s, or a negative value when memory ran out. */
static double memcpy_stream(const shape *sh, size_t nb, size_t elem)
{
    uint64_t max, total;
    batch_totals(sh, nb, elem, &max, &total);
    if (!nb || !max)
        return 0;
    uint64_t size = total < (256u << 20) ? total : (256u << 20);
    size = size < max ? max : size;
    unsigned char *src = malloc(size), *dst = malloc(size);
    double rate = -1;
    if (src && dst) {
        memset(src, 1, size);
        memset(dst, 0, size);
        uint64_t at = 0, copied = 0, t0 = now_ns(), t1;
        do {
            for (size_t b = 0; b < nb; b++) {
                uint64_t x = batch_bytes(&sh[b], elem);
                if (at + x > size)
                    at = 0;
                memcpy(dst + at, src + at, x);
                at += x;
            }
            copied += total;
            t1 = now_ns();
        } while (t1 - t0 < 200000000u);
        volatile unsigned char sink = dst[size - 1];
        (void)sink;
        rate = (double)copied / ((double)(t1 - t0) / 1e9);
    }
    free(src);
    free(dst);
    return rate;
}

/* What the command line asked for. */
typedef struct bench_args {
    ps_reader_options o;
    uint64_t epochs;
    int as_json;
    const char *dir;
    const char *const *dirs; /* several: read as one mixture */
    size_t n_dirs;
} bench_args;

/* Parses the command line into a; returns -1 to go on, else the exit status
 * (--help, or a usage error already reported). */
static int bench_parse(int argc, char **argv, bench_args *a)
{
    ps_reader_options_init(&a->o);
    a->epochs = 1;
    a->as_json = 0;

    ps_read_parser rp;
    ps_read_parser_init(&rp, "bench-read", OWN_OPTS, N_OWN, &a->o);
    int c;
    while ((c = ps_read_getopt(&rp, argc, argv)) != -1) {
        switch (c) {
        case PS_READ_BAD_OPTION:
            return PS_EXIT_USAGE;
        case O_EPOCHS:
            if (ps_args_u64("bench-read", "epochs", optarg, 1, 1000000, &a->epochs))
                return PS_EXIT_USAGE;
            break;
        case O_JSON:
            a->as_json = 1;
            break;
        default:
            return ps_read_help_or_bad("bench-read", c, argv, rp.longopts, USAGE);
        }
    }
    if (ps_read_finish(&rp, argc, argv, &a->dir))
        return PS_EXIT_USAGE;
    a->dirs = rp.dirs;
    a->n_dirs = rp.n_dirs;
    return -1;
}

/* What a run measured. */
typedef struct bench_result {
    ps_reader_info info;
    ps_reader_stats st;
    uint64_t batches, records, tokens, real;
    uint64_t bytes;         /* the batches' bytes, as the memcpy bound copies them */
    int elem_size;
    double secs, cpu;       /* wall and CPU seconds of the reading */
    double open_ms, first_ms;
    double waste, rwaste;   /* padding waste, and with random batching */
    double rate;            /* the reader's bytes per second */
    uint64_t mc_bytes;
    double mc_seconds, mc_rate, stream_rate, share;
} bench_result;

/* Records one batch's shape (every epoch) and its lengths (the first
 * epoch only); 0, or -1 when out of memory. */
static int note_batch(const ps_batch *b, bool first_epoch, growing *shapes, growing *lens)
{
    shape *s = grow(shapes);
    if (!s)
        return -1;
    s->B = b->B;
    s->T = b->T;
    for (uint32_t i = 0; first_epoch && i < b->B; i++) {
        uint32_t *l = grow(lens);
        if (!l)
            return -1;
        *l = b->dtype == PS_DTYPE_INT32 ? (uint32_t)((const int32_t *)b->lengths)[i]
                                        : (uint32_t)((const int64_t *)b->lengths)[i];
    }
    return 0;
}

/* Reads the epochs, noting each batch; the reader stays open for its stats.
 * Returns PS_EXIT_OK or PS_EXIT_FAIL (reported). */
static int bench_read_epochs(ps_reader *r, const bench_args *a, bench_result *res,
                             uint64_t *t_first, growing *shapes, growing *lens)
{
    ps_error err;
    ps_error_clear(&err);
    for (uint64_t e = 0; e < a->epochs; e++) {
        int rc;
        if (e && (rc = ps_reader_set_epoch(r, a->o.epoch + e, &err)) < 0) {
            fprintf(stderr, "pairshard bench-read: %s\n", err.code ? err.message : ps_strerror(rc));
            return PS_EXIT_FAIL;
        }
        for (;;) {
            const ps_batch *b;
            rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                fprintf(stderr, "pairshard bench-read: %s\n",
                        err.code ? err.message : ps_strerror(rc));
                return PS_EXIT_FAIL;
            }
            if (!*t_first)
                *t_first = now_ns();
            res->batches++;
            res->records += b->layout == PS_LAYOUT_PAIR ? b->B : b->n_segments;
            res->tokens += (uint64_t)b->B * b->T;
            res->real += b->real_tokens;
            res->elem_size = b->dtype == PS_DTYPE_INT32 ? 4 : 8;
            int oom = note_batch(b, e == 0, shapes, lens);
            ps_batch_release(r, b);
            if (oom) {
                fputs("pairshard bench-read: out of memory\n", stderr);
                return PS_EXIT_FAIL;
            }
        }
    }
    return PS_EXIT_OK;
}

/* The padding of random batching and the memcpy bounds, from the shapes and
 * lengths read; PS_EXIT_OK or PS_EXIT_FAIL (out of memory, reported). */
static int bench_bounds(const bench_args *a, bench_result *res, const growing *shapes,
                        const growing *lens, size_t epoch0_batches)
{
    uint64_t random_pad = random_padded(lens->p, lens->n, shapes->p, epoch0_batches,
                                        a->o.pad_multiple ? a->o.pad_multiple : 1);
    uint64_t epoch0_real = 0;
    for (size_t i = 0; i < lens->n; i++)
        epoch0_real += ((uint32_t *)lens->p)[i];
    res->mc_rate = memcpy_bound(shapes->p, shapes->n, (size_t)res->elem_size, res->info.slots,
                                &res->mc_bytes, &res->mc_seconds);
    res->stream_rate =
        res->mc_rate < 0 ? -1 : memcpy_stream(shapes->p, shapes->n, (size_t)res->elem_size);
    for (size_t b = 0; b < shapes->n; b++)
        res->bytes += batch_bytes(&((shape *)shapes->p)[b], (size_t)res->elem_size);
    if (res->mc_rate < 0 || res->stream_rate < 0) {
        fputs("pairshard bench-read: out of memory\n", stderr);
        return PS_EXIT_FAIL;
    }
    res->rwaste = random_pad ? 1.0 - (double)epoch0_real / (double)random_pad : 0;
    return PS_EXIT_OK;
}

/* Opens the reader, reads the epochs, closes it and measures the memcpy
 * bounds; PS_EXIT_OK or the failure's status (reported). */
static int bench_run(const bench_args *a, bench_result *res)
{
    ps_error err;
    ps_error_clear(&err);
    ps_reader *r = NULL;
    uint64_t cpu0 = cpu_ns(), t0 = now_ns();
    int rc = ps_reader_open_sets(a->dirs, a->n_dirs, &a->o, NULL, &r, &err);
    uint64_t t_open = now_ns();
    if (rc < 0) {
        fprintf(stderr, "pairshard bench-read: %s\n", err.code ? err.message : ps_strerror(rc));
        return ps_read_open_status(rc);
    }
    ps_reader_get_info(r, &res->info);

    growing shapes = {.size = sizeof(shape)}, lens = {.size = sizeof(uint32_t)};
    uint64_t t_first = 0;
    res->elem_size = a->o.dtype == PS_DTYPE_INT32 ? 4 : 8;
    int status = bench_read_epochs(r, a, res, &t_first, &shapes, &lens);
    uint64_t t_end = now_ns(), cpu_end = cpu_ns();
    ps_reader_get_stats(r, &res->st);
    size_t epoch0_batches = 0;
    {
        /* The first epoch's batches are the first ones with its records. */
        uint64_t n = 0;
        const shape *sh = shapes.p;
        while (epoch0_batches < shapes.n && n < lens.n)
            n += sh[epoch0_batches++].B;
    }
    ps_reader_close(r);
    if (status == PS_EXIT_OK)
        status = bench_bounds(a, res, &shapes, &lens, epoch0_batches);
    free(shapes.p);
    free(lens.p);
    if (status != PS_EXIT_OK)
        return status;

    res->secs = (double)(t_end - t0) / 1e9;
    res->cpu = (double)(cpu_end - cpu0) / 1e9;
    if (res->secs <= 0)
        res->secs = 1e-9;
    if (res->cpu <= 0)
        res->cpu = 1e-9;
    res->open_ms = (double)(t_open - t0) / 1e6;
    res->first_ms = t_first ? (double)(t_first - t0) / 1e6 : 0;
    res->waste = res->tokens ? 1.0 - (double)res->real / (double)res->tokens : 0;
    res->rate = (double)res->bytes / res->secs;
    res->share = res->mc_rate > 0 ? res->rate / res->mc_rate : 0;
    return PS_EXIT_OK;
}

/* --json: one object; PS_EXIT_OK or PS_EXIT_FAIL (out of memory). */
static int bench_report_json(const bench_args *a, const bench_result *res)
{
    const ps_reader_info *info = &res->info;
    const ps_reader_stats *st = &res->st;
    double secs = res->secs, cpu = res->cpu;
    json_t *j = json_pack(
        "{ss sI sI sI si si sI si si si"
        " sI sI sI sI sI sf sf"
        " sf sf sf sf sf sf sf sf"
        " sf sf sI sI sf sf"
        " sI sf sf sf sI sI sI}",
        "dir", a->dir, "epochs", (json_int_t)a->epochs, "rank", (json_int_t)info->rank,
        "world_size", (json_int_t)info->world_size, "threads", info->threads, "prefetch",
        (int)info->slots, "batch_size", (json_int_t)a->o.batch_size, "dtype_bytes",
        res->elem_size, "device", info->device, "pinned", info->pinned,
        "batches", (json_int_t)res->batches, "records", (json_int_t)res->records, "tokens",
        (json_int_t)res->tokens, "real_tokens", (json_int_t)res->real, "bytes",
        (json_int_t)res->bytes, "seconds", secs, "cpu_seconds", cpu,
        "batches_per_s", res->batches / secs, "records_per_s", res->records / secs,
        "tokens_per_s", res->tokens / secs, "real_tokens_per_s", res->real / secs,
        "tokens_per_cpu_s", res->tokens / cpu, "real_tokens_per_cpu_s", res->real / cpu,
        "bytes_per_s", res->rate, "cpu_cores_busy", cpu / secs,
        "padding_waste", res->waste, "random_padding_waste", res->rwaste, "wait_ns",
        (json_int_t)st->wait_ns, "waits", (json_int_t)st->waits, "open_ms", res->open_ms,
        "first_batch_ms", res->first_ms,
        "memcpy_bytes", (json_int_t)res->mc_bytes, "memcpy_seconds", res->mc_seconds,
        "memcpy_bytes_per_s", res->mc_rate, "reader_vs_memcpy", res->share, "blocks_decoded",
        (json_int_t)st->blocks_decoded, "skipped_batches", (json_int_t)st->skipped_batches,
        "skipped_records", (json_int_t)st->skipped_records);
    if (j) {
        json_t *plan = json_pack("{sfsfsIsIsIsIsIsI}", "memcpy_stream_bytes_per_s", res->stream_rate,
                                 "reader_vs_memcpy_stream",
                                 res->stream_rate > 0 ? res->rate / res->stream_rate : 0.0,
                                 "h2d_bytes", (json_int_t)st->h2d_bytes,
                                 "records_total", (json_int_t)info->records_total,
                                 "records_per_epoch", (json_int_t)info->records_per_epoch,
                                 "batches_per_epoch", (json_int_t)info->batches_per_epoch,
                                 "records_dropped", (json_int_t)info->records_dropped,
                                 "buckets", (json_int_t)info->n_buckets);
        if (!plan || json_object_update(j, plan)) {
            json_decref(j);
            j = NULL;
        }
        json_decref(plan);
    }
    char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!text) {
        fputs("pairshard bench-read: out of memory\n", stderr);
        return PS_EXIT_FAIL;
    }
    printf("%s\n", text);
    free(text);
    return PS_EXIT_OK;
}

static void bench_report_text(const bench_args *a, const bench_result *res)
{
    const ps_reader_info *info = &res->info;
    const ps_reader_stats *st = &res->st;
    double secs = res->secs, cpu = res->cpu, rate = res->rate;
    printf("bench-read %s: %llu epoch(s), rank %d of %d, %d thread(s), %u slots, %s, "
           "device %d%s\n",
           a->dir, (unsigned long long)a->epochs, info->rank, info->world_size, info->threads,
           info->slots, res->elem_size == 4 ? "int32" : "int64", info->device,
           info->pinned ? " (pinned)" : "");
    printf("  %llu batches, %llu records, %llu tokens (padded), %llu real tokens in %.3f s"
           " (%.3f s CPU, %.2f cores busy)\n",
           (unsigned long long)res->batches, (unsigned long long)res->records,
           (unsigned long long)res->tokens, (unsigned long long)res->real, secs, cpu, cpu / secs);
    printf("  %.0f batches/s  %.0f records/s  %.0f tokens/s  %.0f real tokens/s\n",
           res->batches / secs, res->records / secs, res->tokens / secs, res->real / secs);
    printf("  per CPU second: %.0f tokens, %.0f real tokens\n", res->tokens / cpu,
           res->real / cpu);
    printf("  padding waste %.2f%% (random batching of the same records: %.2f%%)\n",
           100 * res->waste, 100 * res->rwaste);
    printf("  consumer waited %.3f ms in %llu of %llu calls\n", st->wait_ns / 1e6,
           (unsigned long long)st->waits, (unsigned long long)res->batches);
    printf("  start-up: open %.3f ms, open to first batch %.3f ms\n", res->open_ms, res->first_ms);
    if (st->skipped_batches)
        printf("  skipped %llu batch(es), %llu record(s), that needed damaged blocks\n",
               (unsigned long long)st->skipped_batches, (unsigned long long)st->skipped_records);
    if (st->h2d_bytes)
        printf("  copied %.1f MB to device %d\n", st->h2d_bytes / 1e6, info->device);
    printf("  memcpy bound %.2f GB/s; reader %.2f GB/s = %.1f%% of it\n", res->mc_rate / 1e9,
           rate / 1e9, 100 * res->share);
    printf("  (the same copies streamed through buffers as large as all the batches, up to\n"
           "  256 MiB: %.2f GB/s; reader = %.1f%%)\n",
           res->stream_rate / 1e9, res->stream_rate > 0 ? 100 * rate / res->stream_rate : 0.0);
}

int ps_cmd_bench_read(int argc, char **argv)
{
    bench_args a;
    int status = bench_parse(argc, argv, &a);
    if (status >= 0)
        return status;
    bench_result res = {0};
    if ((status = bench_run(&a, &res)) != PS_EXIT_OK)
        return status;
    if (a.as_json) {
        if ((status = bench_report_json(&a, &res)) != PS_EXIT_OK)
            return status;
    } else {
        bench_report_text(&a, &res);
    }
    if (fflush(stdout)) {
        fputs("pairshard bench-read: write error\n", stderr);
        return PS_EXIT_USAGE;
    }
    return PS_EXIT_OK;
}
