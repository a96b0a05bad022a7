/*
 * read_batches — a trainer's smallest use of libpairshard: open a shard set,
 * read one epoch of batches, print what was read. Uses only the installed
 * headers and pkg-config, and needs only the reader library (zstd and
 * jansson; CUDA, where used, is loaded at run time):
 *
 *   cc read_batches.c -o read_batches $(pkg-config --cflags --libs pairshard-reader)
 *   ./read_batches SET_DIR [BATCH_SIZE]
 *
 * It builds against the full library (pkg-config pairshard) the same way.
 *
 * Prints one line per batch ("batch STEP: B x T, REAL real tokens") and a
 * last line "epoch: N batches, R records, T real tokens"; exits 1 with the
 * library's message when the set cannot be read, or when what was delivered
 * disagrees with what ps_reader_get_info promised for the epoch.
 * tests/cli/install.sh builds and runs it against an installed copy of each
 * library, tests/cli/reader_lib.sh against the build tree's reader library.
 */
#include <pairshard/reader.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, const ps_error *err)
{
    fprintf(stderr, "read_batches: %s: %s\n", what, err->message);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: read_batches SET_DIR [BATCH_SIZE]\n");
        return 2;
    }
    ps_error err;
    ps_error_clear(&err);
    ps_reader_options opt;
    ps_reader_options_init(&opt); /* the defaults, and opt.struct_size */
    opt.shuffle = 0;              /* a run prints the same lines every time */
    opt.rank = 0;                 /* one process: not from RANK/WORLD_SIZE */
    opt.world_size = 1;
    if (argc == 3)
        opt.batch_size = (uint32_t)strtoul(argv[2], NULL, 10);

    ps_reader *r;
    if (ps_reader_open(argv[1], &opt, NULL, &r, &err) < 0)
        return fail(argv[1], &err);
    ps_reader_info info;
    if (ps_reader_get_info(r, &info) < 0) { /* passes sizeof info */
        ps_reader_close(r);
        fprintf(stderr, "read_batches: ps_reader_get_info failed\n");
        return 1;
    }

    uint64_t batches = 0, records = 0, tokens = 0;
    const ps_batch *b;
    int rc;
    while ((rc = ps_reader_next(r, &b, &err)) == 1) {
        printf("batch %" PRIu64 ": %" PRIu32 " x %" PRIu32 ", %" PRIu64 " real tokens\n",
               b->step, b->B, b->T, b->real_tokens);
        batches++;
        /* the pair layout leaves n_segments 0: one record a row */
        records += b->layout == PS_LAYOUT_PAIR ? b->B : b->n_segments;
        tokens += b->real_tokens;
        ps_batch_release(r, b);
    }
    ps_reader_close(r);
    if (rc < 0)
        return fail("reading", &err);
    printf("epoch: %" PRIu64 " batches, %" PRIu64 " records, %" PRIu64 " real tokens\n",
           batches, records, tokens);
    if (batches != info.batches_per_epoch || records != info.records_per_epoch) {
        fprintf(stderr,
                "read_batches: delivered %" PRIu64 " batches and %" PRIu64 " records; the "
                "reader's info promised %" PRIu64 " and %" PRIu64 "\n",
                batches, records, info.batches_per_epoch, info.records_per_epoch);
        return 1;
    }
    return 0;
}
