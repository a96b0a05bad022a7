/*
 * pairshard merge: publishes the partial sets of a `--part K/N` build as
 * one set. The parts must come from the same build options (tokenizer,
 * buckets, block size, cleaning) and together be parts 0..N-1. Shards are
 * renumbered in part order; the label vocabularies are united (sorted) and
 * blocks whose label ids change are re-encoded; the accounting is summed.
 * Automatic buckets differ per part: the merged set gets the whole build's
 * (merge_buckets.c).
 */
#include "common/json_where.h"
#include "pipeline/build_internal.h"
#include "pipeline/preprocess_int.h"
#include "pipeline/merge_buckets.h"
#include "pipeline/merge_snapshot.h"
#include "report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "pipeline/merge_join.h"

typedef struct part {
    const char *dir;
    ps_part_snap snap; /* its files, open: merge reads only through them */
    json_t *m;
    uint32_t *remap; /* part label id -> merged id */
    size_t n_labels;
    bool identity;
    uint32_t bounds[PS_BUILD_MAX_BUCKETS]; /* its bucket bounds */
    size_t n_bounds;
    int layout;      /* ps_layout: its manifest's "layout", pair when absent */
    uint32_t src_offset; /* joining: its first source's id in the joined set */
} part;

/* True when the parts' buckets were chosen automatically (each part
 * chose its own bounds from its own records). */
static bool auto_buckets(const part *p)
{
    json_t *sh = json_object_get(json_object_get(p->m, "config"), "shards");
    const char *b = json_string_value(json_object_get(sh, "buckets"));
    return b && strcmp(b, "auto") == 0;
}

/* The part's manifest, as its snapshot read it. */
static json_t *load_manifest(part *p, ps_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", p->dir);
    json_error_t je;
    json_t *m = json_loadb(p->snap.manifest, p->snap.manifest_len, JSON_REJECT_DUPLICATES, &je);
    if (!m) {
        char why[PS_ERROR_MESSAGE_MAX];
        ps_error_set(err, PS_EFORMAT, "%s", ps_json_where(why, sizeof why, path, &je));
        return NULL;
    }
    json_t *v = json_object_get(m, "format_version");
    if (!json_is_integer(v) || json_integer_value(v) > PS_SHARD_FORMAT_VERSION ||
        json_integer_value(v) < 1) {
        ps_error_set(err, PS_EVERSION, "%s: format version %lld is not supported (this pairshard "
                     "reads up to %d)", path, (long long)json_integer_value(v),
                     PS_SHARD_FORMAT_VERSION);
        json_decref(m);
        return NULL;
    }
    return m;
}

/* A part's layout; PS_EFORMAT for one this pairshard does not know or that
 * its format version cannot hold. */
static int part_layout(part *p, ps_error *err)
{
    json_t *l = json_object_get(p->m, "layout");
    json_int_t v = json_integer_value(json_object_get(p->m, "format_version"));
    p->layout = l ? ps_layout_parse(json_string_value(l)) : PS_LAYOUT_PAIR;
    if (p->layout < 0 || ps_set_format_version(p->layout) != v)
        return ps_error_set(err, PS_EFORMAT,
                            "%s: manifest.json: layout %s with format version %lld",
                            p->dir, l ? (json_string_value(l) ? json_string_value(l) : "?")
                                      : "pair (none)", (long long)v);
    return 0;
}

/* Each part's bucket bounds, from its manifest. */
static int read_bounds(part *ps, size_t n, ps_error *err)
{
    for (size_t i = 0; i < n; i++) {
        json_t *b = json_object_get(ps[i].m, "buckets");
        ps[i].n_bounds = json_array_size(b);
        if (ps[i].n_bounds == 0 || ps[i].n_bounds > PS_BUILD_MAX_BUCKETS)
            return ps_error_set(err, PS_EFORMAT, "%s: manifest.json: %zu buckets", ps[i].dir,
                                ps[i].n_bounds);
        for (size_t k = 0; k < ps[i].n_bounds; k++)
            ps[i].bounds[k] = (uint32_t)json_integer_value(json_array_get(b, k));
    }
    return 0;
}

/* Independent sets: one tokenizer, layout and block size (merge_join.c). */
static int check_join(part *ps, size_t n, ps_error *err)
{
    json_t **ms = calloc(n, sizeof *ms);
    const char **dirs = calloc(n, sizeof *dirs);
    int rc = ms && dirs ? 0 : ps_error_set(err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        ms[i] = ps[i].m;
        dirs[i] = ps[i].dir;
        rc = part_layout(&ps[i], err);
    }
    if (!rc)
        rc = ps_merge_join_check(ms, dirs, n, err);
    free(ms);
    free(dirs);
    return rc ? rc : read_bounds(ps, n, err);
}

/* The keys that must agree between parts. */
static int check_same(part *ps, size_t n, bool join, ps_error *err)
{
    static const char *const keys[] = {"tokenizer", "buckets", "block_records", "zstd_level",
                                       "text_to_sql"};
    if (join)
        return check_join(ps, n, err);
    for (size_t i = 0; i < n; i++) {
        json_t *pt = json_object_get(ps[i].m, "part");
        if (!json_is_object(pt))
            return ps_error_set(err, PS_EUSAGE, "%s: not a partial set (built without --part)",
                                ps[i].dir);
        int rc = part_layout(&ps[i], err);
        if (rc)
            return rc;
        if (ps[i].layout != ps[0].layout) /* a record's boundary means another thing */
            return ps_error_set(err, PS_EUSAGE,
                                "%s is a %s set and %s a %s set: parts of one set have one "
                                "layout",
                                ps[0].dir, ps_layout_name(ps[0].layout), ps[i].dir,
                                ps_layout_name(ps[i].layout));
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            json_t *a = json_object_get(ps[0].m, keys[k]), *b = json_object_get(ps[i].m, keys[k]);
            if ((k == 1 && auto_buckets(&ps[i])) || (!a && !b))
                continue; /* auto buckets differ per part; text_to_sql may be absent */
            if (!json_equal(a, b))
                return ps_error_set(err, PS_EUSAGE,
                                    "%s and %s differ in \"%s\": parts must come from one build",
                                    ps[0].dir, ps[i].dir, keys[k]);
        }
        if (!json_equal(json_object_get(ps[0].m, "config"), json_object_get(ps[i].m, "config")))
            return ps_error_set(err, PS_EUSAGE, "%s and %s were built with different options",
                                ps[0].dir, ps[i].dir);
    }
    int brc = read_bounds(ps, n, err);
    if (brc)
        return brc;
    size_t count = (size_t)json_integer_value(
        json_object_get(json_object_get(ps[0].m, "part"), "count"));
    if (count != n)
        return ps_error_set(err, PS_EUSAGE, "the parts say there are %zu of them, %zu given",
                            count, n);
    for (size_t i = 0; i < n; i++) {
        size_t idx = (size_t)json_integer_value(
            json_object_get(json_object_get(ps[i].m, "part"), "index"));
        if (idx != i)
            return ps_error_set(err, PS_EUSAGE,
                                "%s is part %zu; give the parts in order 0..%zu, each once",
                                ps[i].dir, idx, n - 1);
        if ((size_t)json_integer_value(
                json_object_get(json_object_get(ps[i].m, "part"), "count")) != count)
            return ps_error_set(err, PS_EUSAGE, "%s belongs to a build of another part count",
                                ps[i].dir);
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Unites the labels; fills each part's remap. Returns the merged array. */
static json_t *unite_labels(part *ps, size_t n, ps_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += json_array_size(json_object_get(ps[i].m, "labels"));
    const char **all = malloc((total + 1) * sizeof *all);
    if (!all) {
        ps_error_set(err, PS_ENOMEM, "out of memory");
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j;
        json_t *l;
        json_array_foreach(json_object_get(ps[i].m, "labels"), j, l)
        {
            all[k++] = json_string_value(l) ? json_string_value(l) : "";
        }
    }
    qsort(all, k, sizeof *all, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || strcmp(all[u - 1], all[i]) != 0)
            all[u++] = all[i];
    json_t *out = json_array();
    for (size_t i = 0; i < u; i++)
        json_array_append_new(out, json_string(all[i]));
    for (size_t i = 0; i < n; i++) {
        json_t *labels = json_object_get(ps[i].m, "labels");
        ps[i].n_labels = json_array_size(labels);
        ps[i].remap = malloc((ps[i].n_labels + 1) * sizeof *ps[i].remap);
        ps[i].identity = true;
        for (size_t j = 0; ps[i].remap && j < ps[i].n_labels; j++) {
            const char *name = json_string_value(json_array_get(labels, j));
            const char **hit = bsearch(&name, all, u, sizeof *all, cmp_str);
            ps[i].remap[j] = (uint32_t)(hit - all);
            ps[i].identity &= ps[i].remap[j] == j;
        }
    }
    free(all);
    return out;
}

typedef struct copy_ctx {
    ps_shard_writer *w;
    const part *p;
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    ps_buf scratch, out;
    ps_shard_record *recs;
    size_t recs_cap;
    int id_width, level;
    int lengths; /* a version 2 set: the lengths database too */
    int sources; /* joining sets: the sources database too */
    ps_shard *in; /* the part's shard being copied */
    ps_buf srcbuf; /* a block's sources */
    const char *src; /* the part's shard file being copied */
    ps_error *err;
    int rc;
} copy_ctx;

/* A block of the part that does not decode: the part, the shard file, the
 * block's key and why. */
static int decode(copy_ctx *c, uint32_t bucket, uint32_t seq, const void *data, size_t len,
                  ps_block_view *v)
{
    ps_error why;
    ps_error_clear(&why);
    int rc = ps_block_decode(data, len, c->dctx, &c->scratch, v, &why);
    if (rc)
        ps_error_set(c->err, rc, "part %zu: %s: bucket %u block %u: %s", c->p->snap.index,
                     c->src, bucket, seq, why.message);
    return rc;
}

/* Joining: the block's n records' sources in the joined set: the part's
 * own (its sources database) or 0, plus the part's first source id. */
static int put_sources(copy_ctx *c, uint32_t bucket, uint32_t seq, uint32_t n)
{
    if (!c->sources)
        return 0;
    if (ps_buf_reserve(&c->srcbuf, (size_t)n * 2 + 2))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    uint16_t *out = (uint16_t *)(void *)c->srcbuf.data;
    const uint16_t *own = NULL;
    size_t got = 0;
    if (ps_shard_has_sources_db(c->in)) {
        int rc = ps_shard_get_sources(c->in, bucket, seq, &own, &got, c->err);
        if (rc < 0)
            return rc;
        if (rc == 0 || got != n)
            return ps_error_set(c->err, PS_ECORRUPT, "%s: bucket %u block %u: its sources do "
                                "not match its %u records", c->src, bucket, seq, n);
    }
    for (uint32_t i = 0; i < n; i++)
        out[i] = (uint16_t)(c->p->src_offset + (own ? own[i] : 0));
    return ps_shard_writer_put_sources(c->w, bucket, seq, out, n, c->err);
}

/* Copies a block unchanged, with its lengths in a version 2 set (read
 * from the block itself, which is checked on the way) and its sources
 * when joining. */
static int copy_same(copy_ctx *c, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    int rc = ps_shard_writer_put(c->w, bucket, seq, data, len, c->err);
    if (rc || (!c->lengths && !c->sources))
        return c->rc = rc;
    ps_block_view v;
    if ((rc = decode(c, bucket, seq, data, len, &v)))
        return c->rc = rc;
    if (c->lengths && (rc = ps_shard_writer_put_lengths(c->w, bucket, seq, v.length, v.n, c->err)))
        return c->rc = rc;
    return c->rc = put_sources(c, bucket, seq, v.n);
}

/* Re-encodes one block with merged label ids (or copies it unchanged). */
static int copy_block(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    copy_ctx *c = user;
    if (c->p->identity)
        return copy_same(c, bucket, seq, data, len);
    ps_block_view v;
    int rc = decode(c, bucket, seq, data, len, &v);
    if (rc)
        return c->rc = rc;
    if (v.n > c->recs_cap) {
        ps_shard_record *nr = realloc(c->recs, v.n * sizeof *nr);
        if (!nr)
            return c->rc = ps_error_set(c->err, PS_ENOMEM, "out of memory");
        c->recs = nr;
        c->recs_cap = v.n;
    }
    /* Token ids to int32 for the encoder. */
    ps_buf ids;
    ps_buf_init(&ids);
    uint64_t ntok = v.token_start[v.n];
    if (ps_buf_reserve(&ids, ntok * sizeof(int32_t)))
        return c->rc = ps_error_set(c->err, PS_ENOMEM, "out of memory");
    int32_t *t = (int32_t *)ids.data;
    for (uint64_t i = 0; i < ntok; i++)
        t[i] = v.id_width == 2 ? ((const uint16_t *)v.tokens)[i]
                               : (int32_t)((const uint32_t *)v.tokens)[i];
    for (uint32_t i = 0; i < v.n; i++) {
        uint32_t l = v.label[i];
        if (l != PS_LABEL_NONE && l >= c->p->n_labels) {
            ps_buf_free(&ids);
            return c->rc = ps_error_set(c->err, PS_ECORRUPT,
                                        "%s: bucket %u block %u: label id %u out of range",
                                        c->p->dir, bucket, seq, l);
        }
        c->recs[i].ids = t + v.token_start[i];
        c->recs[i].length = v.length[i];
        c->recs[i].type_boundary = v.type_boundary[i];
        c->recs[i].label = l == PS_LABEL_NONE ? l : c->p->remap[l];
        c->recs[i].id = v.ids + v.id_offset[i];
        c->recs[i].id_len = v.id_offset[i + 1] - v.id_offset[i];
    }
    rc = ps_block_encode(c->recs, v.n, v.id_width, c->level, c->cctx, &c->out, c->err);
    ps_buf_free(&ids);
    if (!rc)
        rc = ps_shard_writer_put(c->w, bucket, seq, c->out.data, c->out.len, c->err);
    if (!rc && c->lengths)
        rc = ps_shard_writer_put_lengths(c->w, bucket, seq, v.length, v.n, c->err);
    if (!rc)
        rc = put_sources(c, bucket, seq, v.n);
    return c->rc = rc;
}

static json_int_t config_int(const part *p, const char *section, const char *key)
{
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(p->m, "config"), section), key));
}

static bool same_bounds(const part *p, const uint32_t *bounds, size_t nb);

/* The merged set's bucket bounds: the parts' own when given with --buckets;
 * with automatic buckets, those the whole build would have chosen: the
 * same programme (ps_buckets_choose) over the lengths of all the parts'
 * records, which together are the whole build's kept records. */
static int merged_bounds(const part *ps, size_t n, bool join, uint32_t *bounds, size_t *nb,
                         ps_error *err)
{
    /* Joined sets chose their bounds apart: kept when they all agree,
     * else chosen anew over all their records (with the first set's
     * settings). */
    bool keep = !auto_buckets(&ps[0]);
    for (size_t i = 1; join && i < n; i++)
        keep = i == 1 ? same_bounds(&ps[i], ps[0].bounds, ps[0].n_bounds)
                      : keep && same_bounds(&ps[i], ps[0].bounds, ps[0].n_bounds);
    if (join && n == 1)
        keep = true;
    if (keep) {
        memcpy(bounds, ps[0].bounds, ps[0].n_bounds * sizeof *bounds);
        *nb = ps[0].n_bounds;
        return 0;
    }
    uint64_t *hist = NULL;
    size_t hist_max = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        size_t j;
        json_t *sh;
        json_array_foreach(json_object_get(ps[i].m, "shards"), j, sh)
        {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", ps[i].dir,
                     json_string_value(json_object_get(sh, "file")));
            if ((rc = ps_merge_hist_add(ps[i].snap.fds[j], path, &hist, &hist_max, err)))
                break;
        }
    }
    json_int_t k = config_int(&ps[0], "shards", "auto_buckets");
    json_int_t mult = config_int(&ps[0], "shards", "bucket_multiple");
    json_int_t max_length = config_int(&ps[0], "tokenizer", "max_length");
    *nb = 0;
    if (!rc && hist)
        *nb = ps_buckets_choose(hist, hist_max,
                                k > 0 && k <= PS_BUILD_MAX_BUCKETS ? (size_t)k : 8,
                                mult > 0 ? (size_t)mult : 8, bounds);
    if (!rc && *nb == 0) { /* no records: one bucket, as the build makes it */
        bounds[0] = max_length > 0 && max_length <= UINT32_MAX ? (uint32_t)max_length : 1;
        *nb = 1;
    }
    free(hist);
    return rc;
}

static bool same_bounds(const part *p, const uint32_t *bounds, size_t nb)
{
    return p->n_bounds == nb && memcmp(p->bounds, bounds, nb * sizeof *bounds) == 0;
}

/* A shard's manifest entry for a rewritten shard (file, bytes and sha256
 * are set by the caller), keys in the build's order. */
static json_t *shard_entry(const ps_shard_result *r, size_t nb)
{
    json_t *buckets = json_array();
    for (size_t b = 0; b < nb; b++)
        json_array_append_new(buckets, json_pack("{sIsIsIsI}", "bucket", (json_int_t)b,
                                                 "records", (json_int_t)r->buckets[b].records,
                                                 "tokens", (json_int_t)r->buckets[b].tokens,
                                                 "blocks", (json_int_t)r->buckets[b].blocks));
    return json_pack("{sssIsIsIsIsIssso}", "file", "", "records", (json_int_t)r->records,
                     "tokens", (json_int_t)r->tokens, "blocks", (json_int_t)r->blocks, "bytes",
                     (json_int_t)0, "uncompressed_bytes", (json_int_t)r->uncompressed, "sha256",
                     "", "buckets", buckets);
}

/* Copies one part's shard `in` into the writer: block by block when the
 * bounds are the merged set's, else rewritten under them. *entry is the
 * shard's new manifest entry (but file, bytes, sha256). */
static int copy_shard(copy_ctx *c, ps_shard *in, const char *src, json_t *sh,
                      const uint32_t *bounds, size_t nb, json_t **entry, ps_error *err)
{
    if (same_bounds(c->p, bounds, nb)) {
        c->rc = 0;
        int rc = ps_shard_foreach(in, copy_block, c, err);
        if (!rc)
            rc = c->rc;
        *entry = rc ? NULL : json_deep_copy(sh);
        return rc;
    }
    char what[4200]; /* messages name the part and its shard file */
    snprintf(what, sizeof what, "part %zu: %s", c->p->snap.index, src);
    ps_rebucket_spec spec = {
        .what = what,
        .old_bounds = c->p->bounds,
        .n_old = c->p->n_bounds,
        .new_bounds = bounds,
        .n_new = nb,
        .remap = c->p->remap,
        .n_labels = c->p->n_labels,
        .block_records = (size_t)json_integer_value(json_object_get(c->p->m, "block_records")),
        .id_width = c->id_width,
        .level = c->level,
        .lengths = c->lengths,
        .sources = c->sources,
        .source_offset = c->p->src_offset,
    };
    if (spec.block_records == 0)
        return ps_error_set(err, PS_EFORMAT, "%s: manifest.json: block_records 0", c->p->dir);
    ps_shard_result *res = calloc(1, sizeof *res);
    if (!res)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int rc = ps_merge_rebucket(in, &spec, c->w, res, err);
    *entry = rc ? NULL : shard_entry(res, nb);
    free(res);
    return rc;
}

/* Writes part shard `sh` (of c->p) as shard `out_index` of the merged set
 * in `staging`; *entry is its manifest entry. */
static int merge_shard(copy_ctx *c, json_t *sh, size_t j, const char *staging,
                       size_t out_index, size_t total_shards, const uint32_t *bounds, size_t nb,
                       json_t **entry, ps_error *err)
{
    *entry = NULL;
    /* a plain name: the snapshot opened it (ps_part_snap_verify) */
    const char *file = json_string_value(json_object_get(sh, "file"));
    char src[4096], dst[4096], name[32];
    snprintf(src, sizeof src, "%s/%s", c->p->dir, file);
    snprintf(name, sizeof name, "shard-%05zu.mdb", out_index);
    snprintf(dst, sizeof dst, "%s/%s", staging, name);
    ps_shard *in = NULL;
    json_t *copy = NULL;
    char sha[65];
    uint64_t bytes = 0;
    int fd = dup(c->p->snap.fds[j]); /* the shard closes its own */
    int rc = fd < 0 ? ps_error_set(err, PS_EIO, "%s: %s", src, strerror(errno))
                    : ps_shard_open_fd(&in, fd, src, err);
    c->src = src;
    if (!rc)
        rc = c->lengths ? ps_shard_writer_open_lengths(&c->w, dst, 0, err)
                        : ps_shard_writer_open(&c->w, dst, err);
    if (!rc && c->sources)
        rc = ps_shard_writer_enable_sources(c->w, err);
    c->in = in;
    if (!rc)
        rc = copy_shard(c, in, src, sh, bounds, nb, &copy, err);
    c->in = NULL;
    ps_shard_close(in);
    if (!rc) {
        char meta[160];
        snprintf(meta, sizeof meta,
                 "{\"magic\":\"pairshard-shard\",\"format_version\":%d,\"shard\":%zu,"
                 "\"shards\":%zu}",
                 ps_set_format_version(c->p->layout), out_index, total_shards);
        rc = ps_shard_writer_finish_hashed(c->w, meta, sha, &bytes, err);
        c->w = NULL;
    }
    if (c->w) {
        ps_shard_writer_abort(c->w);
        c->w = NULL;
    }
    if (!rc && !copy)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    if (rc) {
        json_decref(copy);
        return rc;
    }
    json_object_set_new(copy, "file", json_string(name));
    json_object_set_new(copy, "sha256", json_string(sha));
    json_object_set_new(copy, "bytes", json_integer((json_int_t)bytes));
    *entry = copy;
    return 0;
}

/* Joining: the sources of the joined set into m (each part's first source
 * id into its src_offset), the inputs listed one after another. */
static int join_sources(part *ps, size_t n, const ps_merge_opts *opts, json_t *m, ps_error *err)
{
    json_t **ms = calloc(n, sizeof *ms);
    const char **dirs = calloc(n, sizeof *dirs);
    uint32_t *off = calloc(n, sizeof *off);
    int rc = ms && dirs && off ? 0 : ps_error_set(err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        ms[i] = ps[i].m;
        dirs[i] = ps[i].dir;
    }
    json_t *src = rc ? NULL : ps_merge_join_sources(ms, dirs, n, opts, off, err);
    if (!rc && !src)
        rc = err->code ? err->code : PS_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        ps[i].src_offset = off[i];
    if (!rc) {
        json_object_set_new(m, "sources", src);
        json_t *inputs = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_extend(inputs, json_object_get(ps[i].m, "inputs"));
        json_object_set_new(m, "inputs", inputs);
    }
    free(ms);
    free(dirs);
    free(off);
    return rc;
}

/* The summed accounting's last touches: parts of one build each read
 * every input whole, so an input's bytes and the blank lines are part 0's
 * (`acct0`), not a sum; then whether it balances and its label count. */
static void finish_accounting(json_t *acct, json_t *acct0, bool join)
{
    if (json_is_object(acct) && !join) {
        /* every part read every input whole: the bytes are not summed */
        json_t *in0 = json_object_get(acct0, "inputs");
        size_t k;
        json_t *e;
        json_array_foreach(json_object_get(acct, "inputs"), k, e)
        {
            json_t *b0 = json_object_get(json_array_get(in0, k), "bytes");
            if (b0)
                json_object_set(e, "bytes", b0);
        }
        /* and each counted every blank line and dialogue of them */
        static const char *const WHOLE[] = {"blank_lines_skipped", "dialogues"};
        for (size_t w = 0; w < 2; w++)
            if (json_object_get(acct0, WHOLE[w]))
                json_object_set(acct, WHOLE[w], json_object_get(acct0, WHOLE[w]));
    }
    if (json_is_object(acct)) {
        json_int_t in = json_integer_value(json_object_get(acct, "records_in"));
        json_int_t sum = json_integer_value(json_object_get(acct, "kept")) +
                         json_integer_value(json_object_get(acct, "rejected")) +
                         json_integer_value(json_object_get(acct, "duplicates"));
        json_object_set_new(acct, "balanced", json_boolean(in == sum));
        json_object_set_new(acct, "label_count", json_integer((json_int_t)json_object_size(
                                                     json_object_get(acct, "labels"))));
    }
}

/* Parts of a mixture: each source's records, tokens, accounting and
 * duplicates across sources summed over the parts, as the totals are (the
 * parts' sources databases are copied as they are: one config, so one
 * numbering). */
static void sum_part_sources(const part *ps, size_t n, json_t *m)
{
    size_t k;
    json_t *s;
    json_array_foreach(json_object_get(m, "sources"), k, s)
    {
        for (size_t i = 1; i < n; i++) {
            json_t *si = json_array_get(json_object_get(ps[i].m, "sources"), k);
            static const char *const COUNTS[] = {"records", "tokens"};
            for (size_t f = 0; f < 2; f++)
                json_object_set_new(s, COUNTS[f],
                                    json_integer(json_integer_value(json_object_get(s, COUNTS[f])) +
                                                 json_integer_value(json_object_get(si, COUNTS[f]))));
            ps_merge_json_add(json_object_get(s, "accounting"), json_object_get(si, "accounting"),
                              false);
            ps_merge_json_add(json_object_get(s, "duplicates_of"),
                              json_object_get(si, "duplicates_of"), false);
        }
        json_t *s0 = json_array_get(json_object_get(ps[0].m, "sources"), k);
        finish_accounting(json_object_get(s, "accounting"), json_object_get(s0, "accounting"),
                          false);
    }
}

static int merge_parts(part *ps, size_t n, const char *staging, const ps_merge_opts *opts,
                       bool join, json_t **manifest_out, ps_error *err)
{
    const volatile sig_atomic_t *cancel = opts->cancel;
    uint32_t bounds[PS_BUILD_MAX_BUCKETS];
    size_t nb;
    int rc = merged_bounds(ps, n, join, bounds, &nb, err);
    if (rc)
        return rc;
    json_t *labels = unite_labels(ps, n, err);
    if (!labels)
        return err->code;
    json_t *m = json_deep_copy(ps[0].m);
    json_object_del(m, "part");
    if (join && (rc = join_sources(ps, n, opts, m, err))) {
        json_decref(labels);
        json_decref(m);
        return rc;
    }
    json_object_set_new(m, "labels", labels);
    json_t *jb = json_array();
    for (size_t b = 0; b < nb; b++)
        json_array_append_new(jb, json_integer(bounds[b]));
    json_object_set_new(m, "buckets", jb);
    json_t *shards = json_array();
    json_t *acct = json_deep_copy(json_object_get(ps[0].m, "accounting"));
    uint64_t tr = 0, tt = 0, tbk = 0;
    size_t total_shards = 0;
    for (size_t i = 0; i < n; i++)
        total_shards += json_array_size(json_object_get(ps[i].m, "shards"));
    copy_ctx c;
    memset(&c, 0, sizeof c);
    c.cctx = ZSTD_createCCtx();
    c.dctx = ZSTD_createDCtx();
    c.err = err;
    c.id_width = (int)json_integer_value(
        json_object_get(json_object_get(m, "tokenizer"), "id_width"));
    c.level = (int)json_integer_value(json_object_get(m, "zstd_level"));
    c.lengths = ps[0].layout != PS_LAYOUT_PAIR;
    /* joined sets get a sources database; parts of a mixture keep theirs */
    bool part_sources = !join && json_array_size(json_object_get(ps[0].m, "sources")) > 0;
    c.sources = join || part_sources;
    ps_buf_init(&c.srcbuf);
    size_t out_index = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        /* parts read the same inputs (counts added by position); joined
         * sets read their own (listed one after another) */
        if (i > 0)
            ps_merge_json_add(acct, json_object_get(ps[i].m, "accounting"), join);
        size_t j;
        json_t *sh;
        json_array_foreach(json_object_get(ps[i].m, "shards"), j, sh)
        {
            if (cancel && *cancel) {
                rc = ps_error_set(err, PS_ECANCELED, "merge cancelled; nothing was published");
                break;
            }
            json_t *copy = NULL;
            c.p = &ps[i];
            if ((rc = merge_shard(&c, sh, j, staging, out_index, total_shards, bounds, nb,
                                  &copy, err)))
                break;
            json_array_append_new(shards, copy);
            tr += (uint64_t)json_integer_value(json_object_get(copy, "records"));
            tt += (uint64_t)json_integer_value(json_object_get(copy, "tokens"));
            tbk += (uint64_t)json_integer_value(json_object_get(copy, "blocks"));
            out_index++;
        }
    }
    ZSTD_freeCCtx(c.cctx);
    ZSTD_freeDCtx(c.dctx);
    ps_buf_free(&c.scratch);
    ps_buf_free(&c.out);
    free(c.recs);
    ps_buf_free(&c.srcbuf);
    if (rc) {
        json_decref(shards);
        json_decref(acct);
        json_decref(m);
        return rc;
    }
    /* Totals per bucket, from the shards' entries. */
    json_t *tb = json_array();
    json_t *jbounds = json_object_get(m, "buckets");
    for (size_t b = 0; b < nb; b++) {
        json_int_t r = 0, t = 0, k = 0;
        size_t j;
        json_t *sh;
        json_array_foreach(shards, j, sh)
        {
            json_t *e = json_array_get(json_object_get(sh, "buckets"), b);
            r += json_integer_value(json_object_get(e, "records"));
            t += json_integer_value(json_object_get(e, "tokens"));
            k += json_integer_value(json_object_get(e, "blocks"));
        }
        json_array_append_new(tb, json_pack("{sOsIsIsI}", "bound", json_array_get(jbounds, b),
                                            "records", r, "tokens", t, "blocks", k));
    }
    json_object_set_new(m, "shards", shards);
    json_object_set_new(m, "totals", json_pack("{sIsIsIso}", "records", (json_int_t)tr, "tokens",
                                               (json_int_t)tt, "blocks", (json_int_t)tbk,
                                               "buckets", tb));
    finish_accounting(acct, json_object_get(ps[0].m, "accounting"), join);
    if (part_sources)
        sum_part_sources(ps, n, m);
    json_object_set_new(m, "accounting", acct);
    *manifest_out = m;
    return 0;
}

/* The statistics of the parts added up. */
typedef struct merged_stats {
    ps_vstats *raw, *cln, *tok;
    ps_vpaired *pr;
    ps_vsql *sq;  /* parts without SQL checks add nothing */
    ps_vgen *gen; /* prompt and completion lengths: none in pair sets */
} merged_stats;

static void merged_stats_free(merged_stats *ms)
{
    ps_vstats_free(ms->raw), ps_vstats_free(ms->cln), ps_vstats_free(ms->tok);
    ps_vpaired_free(ms->pr);
    ps_vsql_free(ms->sq);
    ps_vgen_free(ms->gen);
}

/* Adds the part's stats.json (read once, through its snapshot) into *ms:
 * the first part's statistics become the sums. */
static int add_part_stats(merged_stats *ms, const part *pt, bool first, ps_error *err)
{
    const char *dir = pt->dir;
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/stats.json", dir);
    merged_stats p = {0};
    int rc = ps_part_snap_read_extra(&pt->snap, PS_SNAP_STATS, &text, &len, err);
    if (!rc)
        rc = ps_vstats_text_load(text, len, path, &p.raw, &p.cln, &p.tok, &p.pr, &p.sq, &p.gen,
                                 err);
    free(text);
    if (rc)
        return rc;
    if (p.gen && ms->gen) {
        if ((rc = ps_vgen_merge(ms->gen, p.gen)))
            ps_error_set(err, rc, "%s: cannot add its prompt and completion lengths", dir);
    } else if (p.gen) {
        ms->gen = p.gen, p.gen = NULL;
    }
    if (!rc && p.sq && ms->sq) {
        if ((rc = ps_vsql_merge(ms->sq, p.sq)))
            ps_error_set(err, rc, "%s: cannot add its SQL statistics%s", dir,
                         rc == PS_EINVAL ? " (its rules differ from the first part's)" : "");
    } else if (!rc && p.sq) {
        ms->sq = p.sq, p.sq = NULL;
    }
    if (!rc && first) {
        ms->raw = p.raw, ms->cln = p.cln, ms->tok = p.tok, ms->pr = p.pr;
        p.raw = p.cln = p.tok = NULL, p.pr = NULL;
    } else if (!rc) {
        rc = ps_vstats_merge(ms->raw, p.raw);
        if (!rc)
            rc = ps_vstats_merge(ms->cln, p.cln);
        if (!rc)
            rc = ps_vstats_merge(ms->tok, p.tok);
        if (!rc)
            rc = ps_vpaired_merge(ms->pr, p.pr);
        if (rc)
            ps_error_set(err, rc, "%s: cannot add its statistics", dir);
    }
    merged_stats_free(&p);
    return rc;
}

/* The merged manifest's sums must add up as every part's did (checked
 * when its snapshot was verified): a merge never publishes accounting
 * that `inspect --verify` would refuse. */
static int check_merged(const char *text, size_t len, const char *out_dir, ps_error *err)
{
    char where[4096];
    snprintf(where, sizeof where, "%s/manifest.json (merged)", out_dir);
    ps_manifest *mf = NULL;
    int rc = ps_manifest_parse(text, len, where, &mf, err);
    if (!rc)
        rc = ps_accounting_check(mf, NULL, where, err);
    ps_manifest_free(mf);
    return rc;
}

/* Concatenates the parts' rejects.jsonl and duplicates.jsonl into the
 * staging directory; a failure names the file and the reason. */
static int write_extras(const part *ps, size_t n, const char *staging, ps_error *err)
{
    static const char *const name[] = {"rejects.jsonl", "duplicates.jsonl"};
    static const int which[] = {PS_SNAP_REJECTS, PS_SNAP_DUPLICATES};
    int rc = 0;
    for (size_t k = 0; !rc && k < 2; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", staging, name[k]);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            return ps_error_set(err, PS_EIO, "%s: cannot create: %s", path, strerror(errno));
        for (size_t i = 0; !rc && i < n; i++)
            rc = ps_part_snap_append_extra(&ps[i].snap, which[k], fd, path, err);
        if (close(fd) != 0 && !rc)
            rc = ps_error_set(err, PS_EIO, "%s: write failed: %s", path, strerror(errno));
    }
    return rc;
}

/* Opens every part as one snapshot (merge_snapshot.c): its manifest first,
 * then, once the parts are known to belong together, every file, each
 * shard checked against the manifest. */
static int open_parts(part *ps, const char *const *dirs, size_t n, const ps_merge_opts *opts,
                      bool *join, ps_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        ps[i].dir = dirs[i];
        ps[i].snap.dfd = -1;
        for (int k = 0; k < PS_SNAP_EXTRAS; k++)
            ps[i].snap.extra[k] = -1;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        if ((rc = ps_part_snap_open(&ps[i].snap, dirs[i], i, err)))
            break;
        if (!(ps[i].m = load_manifest(&ps[i], err)))
            rc = err->code ? err->code : PS_EFORMAT;
        if (!rc && opts->hook)
            opts->hook(opts->hook_user, i, PS_MERGE_HOOK_MANIFEST);
    }
    if (!rc) {
        json_t **ms = calloc(n, sizeof *ms);
        if (!ms)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            ms[i] = ps[i].m;
        *join = ps_merge_is_join(ms, dirs, n, &rc, err);
        free(ms);
    }
    rc = rc ? rc : check_same(ps, n, *join, err);
    for (size_t i = 0; !rc && i < n; i++) {
        json_t *shards = json_object_get(ps[i].m, "shards");
        size_t ns = json_array_size(shards);
        const char **files = calloc(ns + 1, sizeof *files);
        if (!files)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        for (size_t j = 0; j < ns; j++) {
            const char *f = json_string_value(json_object_get(json_array_get(shards, j), "file"));
            files[j] = f ? f : "";
        }
        rc = ps_part_snap_verify(&ps[i].snap, files, ns, err);
        free(files);
        if (!rc && opts->hook)
            opts->hook(opts->hook_user, i, PS_MERGE_HOOK_VERIFIED);
    }
    return rc;
}

int ps_merge_run(const char *out_dir, const char *const *dirs, size_t n, ps_merge_opts *opts,
                 ps_error *err)
{
    ps_merge_opts defaults = {0};
    opts = opts ? opts : &defaults;
    if (n == 0)
        return ps_error_set(err, PS_EUSAGE, "merge needs at least one part");
    part *ps = calloc(n, sizeof *ps);
    if (!ps)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    bool join = false;
    int rc = open_parts(ps, dirs, n, opts, &join, err);
    ps_publish_opts pub = {dirs, n, opts->force, opts->cancel};
    ps_staging stg = {NULL, NULL, -1};
    if (!rc && opts->cancel && *opts->cancel) /* stopped while reading the parts */
        rc = ps_error_set(err, PS_ECANCELED, "merge cancelled; nothing was published");
    if (!rc)
        rc = ps_staging_create(out_dir, &pub, &stg, err);
    const char *staging = stg.set;
    json_t *m = NULL;
    if (!rc)
        rc = merge_parts(ps, n, staging, opts, join, &m, err);
    if (!rc) {
        rc = write_extras(ps, n, staging, err);
        /* Joined sets made their prompts each their own way: one
         * Preprocessor serves the joined set only when they all agree. */
        for (size_t i = 1; !rc && join && i < n; i++)
            if (!json_equal(json_object_get(ps[0].m, "preprocess"),
                            json_object_get(ps[i].m, "preprocess")) ||
                !json_equal(json_object_get(ps[0].m, "text_to_sql"),
                            json_object_get(ps[i].m, "text_to_sql"))) {
                json_object_del(m, "preprocess");
                json_object_del(m, "text_to_sql");
            }
        if (!rc) /* what serving needs: the parts embed the same files */
            rc = ps_preprocess_copy(dirs[0], json_object_get(m, "preprocess"), staging, err);
    }
    /* The parts' statistics add up (they are histograms and counts): the
     * merged set is validated as a whole, with the build's thresholds. */
    merged_stats ms = {0};
    ps_vreport *report = NULL;
    for (size_t i = 0; !rc && i < n; i++)
        rc = add_part_stats(&ms, &ps[i], i == 0, err);
    bool failed = false;
    if (!rc) {
        json_t *bounds = json_object_get(m, "buckets");
        uint32_t b[PS_BUILD_MAX_BUCKETS];
        size_t nb = json_array_size(bounds) < PS_BUILD_MAX_BUCKETS ? json_array_size(bounds)
                                                                   : PS_BUILD_MAX_BUCKETS;
        for (size_t i = 0; i < nb; i++)
            b[i] = (uint32_t)json_integer_value(json_array_get(bounds, i));
        json_t *conf = json_object_get(m, "config");
        /* the dialogue check's counts are not in stats.json: a merge
         * judges the generator checks alone */
        const char *lay = json_string_value(json_object_get(conf, "layout"));
        ps_vgen_checks gc = {ms.gen, lay && !strcmp(lay, "causal"), false, 0, 0};
        rc = ps_build_validate(json_object_get(conf, "validate"), ms.raw, ms.cln, ms.tok, ms.pr,
                               ms.sq, b, nb, 1, false, &gc, &report, err);
        if (!rc && ms.gen && ps_vreport_set_generation(report, ms.gen))
            rc = ps_error_set(err, PS_ENOMEM, "out of memory");
        if (!rc)
            failed = strcmp(ps_vreport_verdict(report), "fail") == 0 && !opts->no_gate;
        if (!rc && failed) {
            char parent[4096], prefix[512];
            ps_path_beside(out_dir, parent, sizeof parent, prefix, sizeof prefix);
            rc = ps_write_reports(parent, prefix, report, ms.sq, ms.gen, NULL, err);
        } else if (!rc) {
            rc = ps_write_reports(staging, "", report, ms.sq, ms.gen, NULL, err);
        }
        if (!rc && opts->summary)
            *opts->summary = ps_vreport_summary(report);
    }
    merged_stats_free(&ms);
    ps_vreport_free(report);
    if (!rc && failed) {
        opts->gate_failed = 1;
        json_decref(m);
        m = NULL;
        goto out;
    }
    if (!rc) {
        char *text = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!text) {
            rc = ps_error_set(err, PS_ENOMEM, "out of memory");
        } else {
            size_t len = strlen(text);
            char *t2 = realloc(text, len + 2);
            if (t2) {
                t2[len] = '\n';
                t2[len + 1] = '\0';
                text = t2;
                len++;
            }
            rc = check_merged(text, len, out_dir, err);
            if (!rc)
                rc = ps_write_file(staging, "manifest.json", text, len, err);
            free(text);
        }
    }
    for (size_t i = 0; !rc && i < n; i++) {
        if (opts->hook)
            opts->hook(opts->hook_user, i, PS_MERGE_HOOK_COPIED);
        rc = ps_part_snap_unchanged(&ps[i].snap, err); /* what was read is still there */
    }
    if (!rc)
        rc = ps_staging_publish(&stg, out_dir, &pub, err);
out:
    ps_staging_discard(&stg); /* the partial or the previous set */
    json_decref(m);
    for (size_t i = 0; i < n; i++) {
        json_decref(ps[i].m);
        ps_part_snap_close(&ps[i].snap);
        free(ps[i].remap);
    }
    free(ps);
    return rc;
}
