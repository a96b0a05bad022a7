/*
 * reader/exec.c — a set's execution fingerprints (pairshard/reader.h,
 * ps_exec_iter_*): every record's id with the fingerprints the build
 * stored in its shard's "exec" database (docs/FORMAT.md), in storage
 * order. A block without its fingerprints, or with another count of them,
 * is corruption, named by shard and block.
 */
#include "pairshard/reader.h"
#include "store/inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

struct ps_exec_iter {
    char *dir;
    ps_manifest *m;
    size_t shard;       /* the next shard to open, once s is done */
    ps_shard *s;
    ZSTD_DCtx *dctx;
    ps_buf scratch;
    ps_block_view bv;   /* the current block */
    uint32_t bucket, seq, next; /* its key and the next record */
    const unsigned char *fps;
};

void ps_exec_iter_close(ps_exec_iter *it)
{
    if (!it)
        return;
    ps_shard_close(it->s);
    ps_manifest_free(it->m);
    ZSTD_freeDCtx(it->dctx);
    ps_buf_free(&it->scratch);
    free(it->dir);
    free(it);
}

/* Opens shard it->shard; 0 or a negative code. */
static int open_shard(ps_exec_iter *it, ps_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", it->dir, it->m->shards[it->shard].file);
    int rc = ps_shard_open(&it->s, path, err);
    if (rc)
        return rc;
    if (!ps_shard_has_exec_db(it->s))
        return ps_error_set(err, PS_ENOENT, "%s: no execution fingerprints (the set was built "
                            "without --execute)", path);
    it->shard++;
    return 0;
}

int ps_exec_iter_open(const char *dir, ps_exec_iter **out, ps_error *err)
{
    *out = NULL;
    ps_exec_iter *it = calloc(1, sizeof *it);
    if (!it || !(it->dir = strdup(dir)) || !(it->dctx = ZSTD_createDCtx())) {
        ps_exec_iter_close(it);
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory", dir);
    }
    ps_buf_init(&it->scratch);
    int rc = ps_manifest_read(dir, &it->m, err);
    if (!rc && it->m->n_shards)
        rc = open_shard(it, err);
    if (rc) {
        ps_exec_iter_close(it);
        return rc;
    }
    *out = it;
    return 0;
}

/* The next block with records, its fingerprints beside it: 1, 0 past the
 * last shard, or a negative code. */
static int next_block(ps_exec_iter *it, ps_error *err)
{
    for (;;) {
        const void *data;
        size_t len;
        int rc = it->s ? ps_shard_next(it->s, &it->bucket, &it->seq, &data, &len, err) : 0;
        if (rc < 0)
            return rc;
        if (rc == 0) {
            ps_shard_close(it->s);
            it->s = NULL;
            if (it->shard >= it->m->n_shards)
                return 0;
            if ((rc = open_shard(it, err)))
                return rc;
            continue;
        }
        if ((rc = ps_block_decode(data, len, it->dctx, &it->scratch, &it->bv, err)))
            return rc;
        size_t n = 0;
        rc = ps_shard_get_exec(it->s, it->bucket, it->seq, &it->fps, &n, err);
        if (rc < 0)
            return rc;
        if (rc == 0 || n != it->bv.n)
            return ps_error_set(err, PS_ECORRUPT,
                                "%s/%s: bucket %u block %u: %zu fingerprints for %u records",
                                it->dir, it->m->shards[it->shard - 1].file, it->bucket, it->seq,
                                rc ? n : 0, it->bv.n);
        it->next = 0;
        if (it->bv.n)
            return 1;
    }
}

int ps_exec_iter_next(ps_exec_iter *it, const char **id, size_t *id_len,
                      ps_exec_fingerprint *fp, ps_error *err)
{
    if (it->next >= it->bv.n) {
        int rc = next_block(it, err);
        if (rc <= 0)
            return rc;
    }
    uint32_t i = it->next++;
    const unsigned char *e = it->fps + (size_t)i * PS_EXEC_ENTRY_BYTES;
    *id = it->bv.ids + it->bv.id_offset[i];
    *id_len = it->bv.id_offset[i + 1] - it->bv.id_offset[i];
    fp->status_before = e[0];
    fp->status_after = e[1];
    fp->flags = (uint16_t)(e[2] | e[3] << 8);
    fp->reserved = ps_get_le32(e + 4);
    fp->rows_before = ps_get_le64(e + 8);
    fp->hash_before = ps_get_le64(e + 16);
    fp->rows_after = ps_get_le64(e + 24);
    fp->hash_after = ps_get_le64(e + 32);
    return 1;
}
