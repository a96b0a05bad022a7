/*
 * The reader's options: defaults, ps_reader_options_init_size, and the
 * resolution of what the caller passed (sizes of older callers, RANK and
 * WORLD_SIZE from the environment, ranges).
 */
#include "common/options.h"
#include "common/parse_num.h"
#include "reader/reader_internal.h"

#include <string.h>

#define DEFAULT_BATCH 32
#define DEFAULT_THREADS 2
#define DEFAULT_PREFETCH 4
#define DEFAULT_WINDOW 16
#define DEFAULT_PACK_WINDOW 128 /* 16,384 records at the default 128 a block */
#define DEFAULT_SORT_POOL 8

/* The sizes ps_reader_options has had in published versions, oldest
 * first (common/options.h): when a field is appended, append its new
 * sizeof. */
static const size_t READER_OPTIONS_SIZES[] = {
    offsetof(ps_reader_options, pack), /* 0.1: up to sort_pool */
    offsetof(ps_reader_options, n_weights), /* 0.2: pack, skip_long, decoder_start_id */
    sizeof(ps_reader_options),         /* after 0.2.0: n_weights, weight_names, weights */
};
#define N_READER_OPTIONS_SIZES (sizeof READER_OPTIONS_SIZES / sizeof READER_OPTIONS_SIZES[0])

static void reader_defaults(ps_reader_options *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->batch_size = DEFAULT_BATCH;
    o->pad_mode = PS_PAD_LONGEST;
    o->pad_multiple = 1;
    o->shuffle = 1;
    o->rank = PS_FROM_ENV;
    o->world_size = PS_FROM_ENV;
    o->dtype = PS_DTYPE_INT64;
    o->device = PS_DEVICE_HOST;
    o->decoder_start_id = -1;
}

int ps_reader_options_init_size(ps_reader_options *o, size_t struct_size)
{
    ps_reader_options d;
    reader_defaults(&d);
    return ps_options_init_copy(o, struct_size, &d, READER_OPTIONS_SIZES, N_READER_OPTIONS_SIZES,
                                "ps_reader_options");
}

/* RANK / WORLD_SIZE as torchrun sets them: unset means the default; set,
 * it must be a plain whole number (an empty or junk value is a launcher
 * mistake, not rank 0). */
static int env_int(const char *name, long dflt, long *out, int *was_set, ps_error *err)
{
    int64_t v;
    int rc = ps_env_i64("reader", name, 0, 1000000, dflt, &v, was_set, err);
    if (rc == PS_OK)
        *out = (long)v;
    return rc;
}

int rd_resolve_options(const ps_reader_options *in, ps_reader_options *o, ps_error *err)
{
    reader_defaults(o);
    int rc = ps_options_adopt(o, sizeof *o, in, READER_OPTIONS_SIZES, N_READER_OPTIONS_SIZES,
                              "ps_reader_options", err);
    if (rc)
        return rc;
    long rank = o->rank, world = o->world_size;
    int rank_set = 0, world_set = 0;
    if (o->rank == PS_FROM_ENV && (rc = env_int("RANK", 0, &rank, &rank_set, err)))
        return rc;
    if (o->world_size == PS_FROM_ENV && (rc = env_int("WORLD_SIZE", 1, &world, &world_set, err)))
        return rc;
    /* Several processes that all default to rank 0 would each read rank
     * 0's share: a world from the environment needs its rank too. */
    if (o->rank == PS_FROM_ENV && o->world_size == PS_FROM_ENV && world > 1 &&
        !rank_set)
        return ps_error_set(err, PS_EUSAGE,
                            "reader: WORLD_SIZE is %ld but RANK is not set", world);
    if (world < 1 || rank < 0 || rank >= world)
        return ps_error_set(err, PS_EUSAGE, "reader: rank %ld is not in 0..world_size-1 (%ld)",
                            rank, world);
    o->rank = (int)rank;
    o->world_size = (int)world;
    if (o->threads == 0)
        o->threads = DEFAULT_THREADS;
    if (o->prefetch == 0)
        o->prefetch = DEFAULT_PREFETCH;
    if (o->shuffle_window == 0) /* packing fills rows better from more records */
        o->shuffle_window = o->pack ? DEFAULT_PACK_WINDOW : DEFAULT_WINDOW;
    if (o->pad_multiple == 0)
        o->pad_multiple = 1;
    if (o->sort_pool == 0)
        o->sort_pool = DEFAULT_SORT_POOL;
    if (o->threads < 1 || o->threads > 256)
        return ps_error_set(err, PS_EUSAGE, "reader: threads %d is not in 1..256", o->threads);
    if (o->prefetch < 2 || o->prefetch > 4096)
        return ps_error_set(err, PS_EUSAGE, "reader: prefetch %d is not in 2..4096",
                            o->prefetch);
    if (o->pad_mode != PS_PAD_LONGEST && o->pad_mode != PS_PAD_BUCKET)
        return ps_error_set(err, PS_EUSAGE, "reader: unknown pad_mode %d", o->pad_mode);
    if (o->dtype != PS_DTYPE_INT32 && o->dtype != PS_DTYPE_INT64)
        return ps_error_set(err, PS_EUSAGE, "reader: unknown dtype %d", o->dtype);
    if (o->device < PS_DEVICE_HOST)
        return ps_error_set(err, PS_EUSAGE, "reader: device %d is not valid", o->device);
    return PS_OK;
}

