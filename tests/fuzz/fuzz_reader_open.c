/*
 * The reader on a hostile manifest: the input is written as
 * DIR/manifest.json next to a real shard (copied from PS_FUZZ_SHARD, set
 * by run.sh), then the set is opened, a few batches are read and the
 * reader is closed. The reader plans an epoch from the manifest's counts
 * alone, so this is where a lying count would become a huge allocation,
 * an endless plan or a read outside a block; every delivered batch is
 * checked against its own shape.
 */
#include "pairshard/reader.h"
#include "tests/fuzz/fuzz_util.h"

static void copy_shard(void)
{
    const char *src = getenv("PS_FUZZ_SHARD");
    if (!src)
        return; /* without a shard, open fails at the first block: still a test */
    FILE *in = fopen(src, "rb");
    if (!in) {
        perror(src);
        abort();
    }
    char dst[4200];
    snprintf(dst, sizeof dst, "%s/shard-00000.mdb", fuzz_dir());
    FILE *out = fopen(dst, "wb");
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        copy_shard();
        ready = 1;
    }
    fuzz_write("manifest.json", data, size);
    ps_reader_options o;
    ps_reader_options_init(&o);
    o.rank = 0;
    o.world_size = 1 + (size & 1);
    o.threads = 1;
    o.prefetch = 2;
    o.batch_size = 8;
    o.skip_corrupt = (size & 2) != 0;
    ps_reader *r = NULL;
    ps_error err = {0};
    int rc = ps_reader_open(fuzz_dir(), &o, NULL, &r, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc < 0)
        return 0;
    for (int k = 0; k < 32; k++) {
        const ps_batch *b;
        rc = ps_reader_next(r, &b, &err);
        FUZZ_CHECK_ERROR(rc, err);
        if (rc == 0)
            break;
        if (rc < 0)
            continue; /* a damaged block: the reader goes on with the next batch */
        /* With skip_corrupt a batch whose records were all damaged comes
         * as B = 0, T = 0 (docs/READER.md), so that every rank still
         * takes the same number of steps. */
        int empty_ok = o.skip_corrupt && b->B == 0 && b->T == 0;
        if (!empty_ok && (b->B == 0 || b->B > o.batch_size || b->T == 0)) {
            fprintf(stderr, "bad batch: step %llu bucket %u B %u T %u\n",
                    (unsigned long long)b->step, b->bucket, b->B, b->T);
            abort();
        }
        const int64_t *len = b->lengths;
        for (uint32_t i = 0; i < b->B; i++) {
            if (len[i] < 0 || (uint64_t)len[i] > b->T || !b->ids[i])
                abort();
            (void)strlen(b->ids[i]);
        }
        ps_batch_release(r, b);
    }
    ps_reader_state st;
    ps_reader_get_state(r, &st);
    if (ps_reader_state_check(st.bytes, sizeof st.bytes, &err) != 0)
        abort(); /* a state the reader wrote must pass its own check */
    ps_reader_close(r);
    return 0;
}
