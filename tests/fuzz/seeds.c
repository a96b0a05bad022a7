/*
 * Writes seed inputs for the block and reader-state targets from a real
 * shard set:
 *   seeds blocks SHARD.mdb FRAMES_DIR CONTENT_DIR MAX
 *     the first MAX stored blocks of the shard as they are (frames) and
 *     decompressed (block contents)
 *   seeds state SET_DIR OUT_DIR
 *     reader states taken at the start and a few batches in (only when
 *     the reader is built)
 */
#include "store/shards.h"
#include "pairshard/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static int save(const char *dir, const char *kind, unsigned k, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%04u", dir, kind, k);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

typedef struct ctx {
    const char *frames, *content;
    unsigned n, max;
} ctx;

static int one_block(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    (void)bucket;
    (void)seq;
    ctx *c = user;
    if (c->n >= c->max)
        return 1;
    unsigned long long sz = ZSTD_getFrameContentSize(data, len);
    if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN)
        return -1;
    void *raw = malloc(sz ? sz : 1);
    size_t got = ZSTD_decompress(raw, sz, data, len);
    int rc = ZSTD_isError(got) || save(c->frames, "frame", c->n, data, len) ||
             save(c->content, "content", c->n, raw, got);
    free(raw);
    c->n++;
    return rc ? -1 : 0;
}

int main(int argc, char **argv)
{
    ps_error err;
    if (argc == 6 && !strcmp(argv[1], "blocks")) {
        ps_shard *s;
        if (ps_shard_open(&s, argv[2], &err) != 0) {
            fprintf(stderr, "seeds: %s\n", err.message);
            return 1;
        }
        ctx c = {argv[3], argv[4], 0, (unsigned)atoi(argv[5])};
        int rc = ps_shard_foreach(s, one_block, &c, &err);
        ps_shard_close(s);
        if (rc < 0 || c.n == 0) {
            fprintf(stderr, "seeds: %s: no blocks written\n", argv[2]);
            return 1;
        }
        return 0;
    }
#if FUZZ_HAVE_READER
    if (argc == 4 && !strcmp(argv[1], "state")) {
        ps_reader_options o;
        ps_reader_options_init(&o);
        o.rank = 0;
        o.world_size = 1;
        o.batch_size = 8;
        ps_reader *r;
        if (ps_reader_open(argv[2], &o, NULL, &r, &err) != 0) {
            fprintf(stderr, "seeds: %s\n", err.message);
            return 1;
        }
        for (unsigned k = 0; k < 4; k++) {
            ps_reader_state st;
            ps_reader_get_state(r, &st);
            if (save(argv[3], "state", k, st.bytes, sizeof st.bytes))
                break;
            for (int i = 0; i < 3; i++) {
                const ps_batch *b;
                if (ps_reader_next(r, &b, &err) != 1)
                    break;
                ps_batch_release(r, b);
            }
        }
        ps_reader_close(r);
        return 0;
    }
#endif
    fprintf(stderr, "usage: seeds blocks SHARD.mdb FRAMES_DIR CONTENT_DIR MAX | state SET OUT\n");
    return 2;
}
