/*
 * Merging parts built with automatic buckets. Each part chose its bounds
 * from its own records, so the parts' bounds differ; the merged set gets
 * the bounds the whole build would have chosen (the same dynamic programme
 * over the length histogram of all the parts' records, which together are
 * the whole build's kept records), and every shard is rewritten under them:
 * its records keep their shard and their order within a bucket (old bucket
 * by old bucket), and are cut into blocks of block_records again.
 */
#include "pipeline/merge_buckets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* Counts the lengths of every record of the shard open as fd into *hist
 * (grown as needed; *hist_max is the longest length seen). */
int ps_merge_hist_add(int fd, const char *path, uint64_t **hist, size_t *hist_max,
                      ps_error *err)
{
    ps_shard *in = NULL;
    int own = dup(fd); /* the shard closes its own */
    int rc = own < 0 ? ps_error_set(err, PS_EIO, "%s: %s", path, strerror(errno))
                     : ps_shard_open_fd(&in, own, path, err);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    ps_buf scratch;
    ps_buf_init(&scratch);
    if (!rc && !dctx)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    uint32_t bucket, seq;
    const void *data;
    size_t len;
    while (!rc && (rc = ps_shard_next(in, &bucket, &seq, &data, &len, err)) == 1) {
        ps_block_view v;
        rc = ps_block_decode(data, len, dctx, &scratch, &v, err);
        for (uint32_t i = 0; !rc && i < v.n; i++) {
            size_t l = v.length[i];
            if (!*hist || l > *hist_max) {
                size_t old = *hist ? *hist_max + 1 : 0;
                uint64_t *h = realloc(*hist, (l + 1) * sizeof *h);
                if (!h) {
                    rc = ps_error_set(err, PS_ENOMEM, "out of memory");
                    break;
                }
                memset(h + old, 0, (l + 1 - old) * sizeof *h);
                *hist = h;
                *hist_max = l;
            }
            (*hist)[l]++;
        }
    }
    ps_buf_free(&scratch);
    ZSTD_freeDCtx(dctx);
    ps_shard_close(in);
    return rc < 0 ? rc : 0;
}

/* Records gathered for the block being made: copies, since each decoded
 * block's memory is reused by the next decode. */
typedef struct pending {
    ps_shard_record *recs;
    size_t n;
    ps_buf tokens, ids;           /* int32 ids and id bytes of the n records */
    size_t *tok_off, *id_off;     /* into tokens / ids, per record */
    uint32_t *lengths;            /* a block's lengths (version 2) */
    uint16_t *srcs;               /* the records' sources (spec->sources) */
} pending;

typedef struct rebucket_ctx {
    const ps_rebucket_spec *spec;
    ps_shard_writer *w;
    ps_shard_result *res;
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    ps_buf scratch, out;
    pending p;
} rebucket_ctx;

static int pending_add(rebucket_ctx *c, const ps_block_view *v, uint32_t i, uint16_t src,
                       ps_error *err)
{
    pending *p = &c->p;
    p->srcs[p->n] = src;
    const ps_rebucket_spec *s = c->spec;
    uint32_t label = v->label[i];
    if (label != PS_LABEL_NONE && label >= s->n_labels)
        return ps_error_set(err, PS_ECORRUPT, "%s: label id %u out of range", s->what, label);
    ps_shard_record *r = &p->recs[p->n];
    r->length = v->length[i];
    r->type_boundary = v->type_boundary[i];
    r->label = label == PS_LABEL_NONE ? label : s->remap[label];
    r->id_len = v->id_offset[i + 1] - v->id_offset[i];
    p->tok_off[p->n] = p->tokens.len;
    p->id_off[p->n] = p->ids.len;
    if (ps_buf_reserve(&p->tokens, p->tokens.len + (size_t)r->length * sizeof(int32_t)) ||
        ps_buf_append(&p->ids, v->ids + v->id_offset[i], r->id_len))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int32_t *t = (int32_t *)(p->tokens.data + p->tokens.len);
    for (uint64_t k = v->token_start[i]; k < v->token_start[i + 1]; k++)
        *t++ = (int32_t)ps_block_token(v, k);
    p->tokens.len += (size_t)r->length * sizeof(int32_t);
    p->n++;
    return 0;
}

/* Encodes the pending records as block `seq` of new bucket `b`. */
static int pending_flush(rebucket_ctx *c, uint32_t b, uint32_t seq, ps_error *err)
{
    pending *p = &c->p;
    uint64_t tokens = 0;
    for (size_t i = 0; i < p->n; i++) {
        p->recs[i].ids = (const int32_t *)(p->tokens.data + p->tok_off[i]);
        p->recs[i].id = p->ids.data + p->id_off[i];
        tokens += p->recs[i].length;
    }
    int rc = ps_block_encode(p->recs, p->n, c->spec->id_width, c->spec->level, c->cctx, &c->out,
                             err);
    if (!rc)
        rc = ps_shard_writer_put(c->w, b, seq, c->out.data, c->out.len, err);
    for (size_t i = 0; !rc && c->spec->lengths && i < p->n; i++)
        p->lengths[i] = p->recs[i].length;
    if (!rc && c->spec->lengths)
        rc = ps_shard_writer_put_lengths(c->w, b, seq, p->lengths, p->n, err);
    if (!rc && c->spec->sources)
        rc = ps_shard_writer_put_sources(c->w, b, seq, p->srcs, (uint32_t)p->n, err);
    if (rc)
        return rc;
    unsigned long long raw = ZSTD_getFrameContentSize(c->out.data, c->out.len);
    ps_bucket_count *bc = &c->res->buckets[b];
    bc->records += p->n, bc->tokens += tokens, bc->blocks++;
    c->res->records += p->n, c->res->tokens += tokens, c->res->blocks++;
    c->res->uncompressed += raw == ZSTD_CONTENTSIZE_UNKNOWN || raw == ZSTD_CONTENTSIZE_ERROR
                                ? 0 : (uint64_t)raw;
    p->n = 0;
    ps_buf_reset(&p->tokens);
    ps_buf_reset(&p->ids);
    return 0;
}

/* Moves the records of old bucket `ob` whose lengths lie in (lo, hi] into
 * new bucket `b`, flushing full blocks; *seq is b's next block. */
static int gather(rebucket_ctx *c, ps_shard *in, uint32_t ob, uint32_t lo, uint32_t hi,
                  uint32_t b, uint32_t *seq, ps_error *err)
{
    int rc = ps_shard_seek(in, ob, 0, err);
    uint32_t bucket, s;
    const void *data;
    size_t len;
    while (!rc && (rc = ps_shard_next(in, &bucket, &s, &data, &len, err)) == 1 && bucket == ob) {
        ps_block_view v;
        ps_error why;
        ps_error_clear(&why);
        rc = ps_block_decode(data, len, c->dctx, &c->scratch, &v, &why);
        if (rc)
            return ps_error_set(err, rc, "%s: bucket %u block %u: %s", c->spec->what, bucket, s,
                                why.message);
        const uint16_t *src = NULL;
        size_t ns = 0;
        if (c->spec->sources && ps_shard_has_sources_db(in)) {
            int got = ps_shard_get_sources(in, bucket, s, &src, &ns, err);
            if (got < 0)
                return got;
            if (got == 0 || ns != v.n)
                return ps_error_set(err, PS_ECORRUPT, "%s: bucket %u block %u: its sources "
                                    "do not match its %u records", c->spec->what, bucket, s,
                                    v.n);
        }
        for (uint32_t i = 0; !rc && i < v.n; i++) {
            if (v.length[i] <= lo || v.length[i] > hi)
                continue;
            rc = pending_add(c, &v, i, (uint16_t)(c->spec->source_offset + (src ? src[i] : 0)),
                             err);
            if (!rc && c->p.n == c->spec->block_records)
                rc = pending_flush(c, b, (*seq)++, err);
        }
    }
    return rc < 0 ? rc : 0;
}

int ps_merge_rebucket(ps_shard *in, const ps_rebucket_spec *spec, ps_shard_writer *w,
                      ps_shard_result *res, ps_error *err)
{
    rebucket_ctx c;
    memset(&c, 0, sizeof c);
    c.spec = spec;
    c.w = w;
    c.res = res;
    c.cctx = ZSTD_createCCtx();
    c.dctx = ZSTD_createDCtx();
    size_t cap = spec->block_records;
    c.p.recs = malloc(cap * sizeof *c.p.recs);
    c.p.tok_off = malloc(cap * sizeof *c.p.tok_off);
    c.p.id_off = malloc(cap * sizeof *c.p.id_off);
    c.p.lengths = malloc(cap * sizeof *c.p.lengths);
    c.p.srcs = malloc(cap * sizeof *c.p.srcs);
    int rc = 0;
    if (!c.cctx || !c.dctx || !c.p.recs || !c.p.tok_off || !c.p.id_off || !c.p.lengths ||
        !c.p.srcs)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    for (size_t b = 0; !rc && b < spec->n_new; b++) {
        uint32_t lo = b ? spec->new_bounds[b - 1] : 0, hi = spec->new_bounds[b], seq = 0;
        /* every old bucket whose range (olo, ohi] meets (lo, hi], in order */
        for (size_t ob = 0; !rc && ob < spec->n_old; ob++) {
            uint32_t olo = ob ? spec->old_bounds[ob - 1] : 0, ohi = spec->old_bounds[ob];
            if (ohi > lo && olo < hi)
                rc = gather(&c, in, (uint32_t)ob, lo, hi, (uint32_t)b, &seq, err);
        }
        if (!rc && c.p.n)
            rc = pending_flush(&c, (uint32_t)b, seq, err);
    }
    ZSTD_freeCCtx(c.cctx);
    ZSTD_freeDCtx(c.dctx);
    ps_buf_free(&c.scratch);
    ps_buf_free(&c.out);
    ps_buf_free(&c.p.tokens);
    ps_buf_free(&c.p.ids);
    free(c.p.recs);
    free(c.p.tok_off);
    free(c.p.id_off);
    free(c.p.lengths);
    free(c.p.srcs);
    return rc;
}
