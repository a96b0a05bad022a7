/*
 * Verification of a shard set against its manifest: every block of every
 * shard is read in key order and decoded (which checks zstd's content
 * checksum and the block layout), then checked against what the manifest
 * says: contiguous keys per bucket, block_records records a block (the
 * last of a bucket may hold fewer), record lengths inside their bucket's
 * bounds, token ids below the vocabulary size, labels below the label
 * count, the per-bucket, per-shard and total counts, file sizes and the
 * SHA-256 of each file. The first problem ends the check; its message
 * names the shard file, the bucket and block when it is about one, and
 * what is wrong.
 *
 * Block-level checks come before the file's SHA-256 is compared, so that
 * damage inside a block is reported with its key rather than only as a
 * digest mismatch.
 */
#include "store/inspect.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

typedef struct vstate {
    const ps_manifest *m;
    ps_verify_report *rep;
    ps_error *err;
    size_t k;                /* shard index */
    const char *path;
    int fd;                  /* the shard's descriptor, or -1: open `path` */
    const ps_mf_shard *ms;
    ps_verify_shard *vs;
    ps_mf_count *sb;         /* measured, this shard, per bucket */
    size_t cur_bucket;
    uint64_t next_seq;
    ZSTD_DCtx *dctx;
    ps_buf scratch;
    ps_shard *shard;         /* the shard being read */
    size_t lengths_seen;     /* its lengths entries matched to blocks (version 2) */
    size_t sources_seen;     /* its sources entries matched to blocks (several sources) */
} vstate;

/* Records the first corruption: "PATH: bucket B block S: message". */
PS_PRINTF(5, 6)
static int bad(vstate *v, const char *kind, long bucket, long block, const char *fmt, ...)
{
    char msg[PS_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v->rep->bad_shard = (long)v->k;
    v->rep->bad_bucket = bucket;
    v->rep->bad_block = block;
    v->rep->kind = kind;
    if (block >= 0)
        return ps_error_set(v->err, PS_ECORRUPT, "%s: bucket %ld block %ld: %s", v->path, bucket,
                            block, msg);
    if (bucket >= 0)
        return ps_error_set(v->err, PS_ECORRUPT, "%s: bucket %ld: %s", v->path, bucket, msg);
    return ps_error_set(v->err, PS_ECORRUPT, "%s: %s", v->path, msg);
}

/* Bucket `b` is done: all its blocks must have been seen. */
static int finish_bucket(vstate *v, size_t b)
{
    uint64_t want = v->ms->buckets[b].blocks;
    if (v->next_seq < want)
        return bad(v, "missing", (long)b, (long)v->next_seq,
                   "missing (the manifest lists %llu blocks in this bucket, the shard has %llu)",
                   (unsigned long long)want, (unsigned long long)v->next_seq);
    return 0;
}

/* Checks one decoded block's records against the manifest. */
static int check_records(vstate *v, const ps_block_view *bv, uint32_t b, uint32_t q)
{
    const ps_manifest *m = v->m;
    uint32_t hi = m->bounds[b], lo = b ? m->bounds[b - 1] : 0;
    for (uint32_t i = 0; i < bv->n; i++) {
        uint32_t len = bv->length[i];
        if (len > hi || (b && len <= lo))
            return bad(v, "lengths", (long)b, (long)q,
                       "record %u has %u tokens, outside the bucket's bounds (%u, %u]", i, len,
                       lo, hi);
        if (bv->label[i] != PS_LABEL_NONE && bv->label[i] >= m->n_labels)
            return bad(v, "labels", (long)b, (long)q,
                       "record %u has label %u, the manifest has %zu labels", i, bv->label[i],
                       m->n_labels);
    }
    /* Token ids: one pass for the maximum, a second only to locate a bad one. */
    uint64_t nt = bv->token_start[bv->n];
    uint32_t max = 0;
    if (bv->id_width == 2) {
        const uint16_t *t = bv->tokens;
        for (uint64_t j = 0; j < nt; j++)
            max = t[j] > max ? t[j] : max;
    } else {
        const uint32_t *t = bv->tokens;
        for (uint64_t j = 0; j < nt; j++)
            max = t[j] > max ? t[j] : max;
    }
    if (nt && max >= m->vocab_size) {
        for (uint32_t i = 0; i < bv->n; i++)
            for (uint64_t j = bv->token_start[i]; j < bv->token_start[i + 1]; j++)
                if (ps_block_token(bv, j) >= m->vocab_size)
                    return bad(v, "tokens", (long)b, (long)q,
                               "record %u: token %llu is id %u, not below the vocabulary size "
                               "%llu",
                               i, (unsigned long long)(j - bv->token_start[i]),
                               ps_block_token(bv, j), (unsigned long long)m->vocab_size);
    }
    for (uint32_t i = 0; i < bv->n; i++) {
        if (bv->label[i] == PS_LABEL_NONE)
            v->rep->unlabeled++;
        else
            v->rep->label_records[bv->label[i]]++;
    }
    return 0;
}

/* The lengths entry of block (b, q), as the packed reader reads it
 * (ps_shard_get_lengths), must hold the block's record lengths exactly. */
static int check_lengths_entry(vstate *v, const ps_block_view *bv, uint32_t b, uint32_t q)
{
    const uint32_t *lens;
    size_t n;
    ps_error e;
    int rc = ps_shard_get_lengths(v->shard, b, q, &lens, &n, &e);
    if (rc < 0)
        return bad(v, "lengths_db", (long)b, (long)q, "%s", e.message);
    if (rc == 0)
        return bad(v, "lengths_db", (long)b, (long)q, "no entry in the lengths database");
    v->lengths_seen++;
    if (n != bv->n)
        return bad(v, "lengths_db", (long)b, (long)q,
                   "the lengths database holds %zu lengths for it, the block has %u records", n,
                   bv->n);
    for (uint32_t i = 0; i < bv->n; i++)
        if (lens[i] != bv->length[i])
            return bad(v, "lengths_db", (long)b, (long)q,
                       "the lengths database says record %u has %u tokens, the block %u", i,
                       lens[i], bv->length[i]);
    return 0;
}

/* The sources entry of block (b, q) (a set with manifest "sources"): one
 * source index per record, each naming one of the manifest's sources. */
static int check_sources_entry(vstate *v, const ps_block_view *bv, uint32_t b, uint32_t q)
{
    const uint16_t *src;
    size_t n;
    ps_error e;
    int rc = ps_shard_get_sources(v->shard, b, q, &src, &n, &e);
    if (rc < 0)
        return bad(v, "sources_db", (long)b, (long)q, "%s", e.message);
    if (rc == 0)
        return bad(v, "sources_db", (long)b, (long)q, "no entry in the sources database");
    v->sources_seen++;
    if (n != bv->n)
        return bad(v, "sources_db", (long)b, (long)q,
                   "the sources database holds %zu sources for it, the block has %u records", n,
                   bv->n);
    for (uint32_t i = 0; i < bv->n; i++) {
        if (src[i] >= v->m->n_sources)
            return bad(v, "sources_db", (long)b, (long)q,
                       "record %u has source %u, the manifest has %zu sources", i, src[i],
                       v->m->n_sources);
        v->rep->source_records[src[i]]++;
    }
    return 0;
}

/* A shard has a sources database exactly when the manifest lists sources,
 * and then one entry per block. */
static int check_sources_db(vstate *v, bool has_db, size_t entries)
{
    if (has_db != (v->m->n_sources > 0))
        return bad(v, "sources_db", -1, -1, "%s", has_db
                   ? "a sources database, but the manifest lists no sources"
                   : "no sources database, but the manifest lists sources");
    if (v->sources_seen < entries)
        return bad(v, "sources_db", -1, -1,
                   "the sources database holds %zu entries, the shard %zu blocks", entries,
                   v->sources_seen);
    return 0;
}

static int on_block(void *user, uint32_t b, uint32_t q, const void *data, size_t len)
{
    vstate *v = user;
    const ps_manifest *m = v->m;
    if (b >= m->n_buckets)
        return bad(v, "sequence", (long)b, (long)q,
                   "bucket index out of range (the manifest has %zu buckets)", m->n_buckets);
    if (b < v->cur_bucket)
        return bad(v, "sequence", (long)b, (long)q, "key out of order");
    while (v->cur_bucket < b) {
        int rc = finish_bucket(v, v->cur_bucket);
        if (rc)
            return rc;
        v->cur_bucket++;
        v->next_seq = 0;
    }
    if (q != v->next_seq) {
        if (q > v->next_seq)
            return bad(v, "missing", (long)b, (long)v->next_seq,
                       "missing (the next key is block %u)", q);
        return bad(v, "sequence", (long)b, (long)q, "key out of order");
    }
    uint64_t want = v->ms->buckets[b].blocks;
    if (q >= want)
        return bad(v, "sequence", (long)b, (long)q,
                   "more blocks than the manifest's %llu in this bucket",
                   (unsigned long long)want);
    ps_block_view bv;
    ps_error e;
    int rc = ps_block_decode(data, len, v->dctx, &v->scratch, &bv, &e);
    if (rc == PS_ENOMEM)
        return ps_error_set(v->err, PS_ENOMEM, "%s: out of memory", v->path);
    if (rc)
        return bad(v, "block", (long)b, (long)q, "corrupt block: %s", e.message);
    if (bv.id_width != m->id_width)
        return bad(v, "block", (long)b, (long)q, "id width %d, the manifest says %d",
                   bv.id_width, m->id_width);
    uint64_t br = m->block_records;
    int last = q + 1 == want;
    if ((!last && bv.n != br) || (last && (bv.n == 0 || bv.n > br)))
        return bad(v, "records", (long)b, (long)q, "holds %u records, expected %s%llu", bv.n,
                   last ? "1 to " : "", (unsigned long long)br);
    if ((rc = check_records(v, &bv, b, q)))
        return rc;
    if (m->format_version >= 2 && (rc = check_lengths_entry(v, &bv, b, q)))
        return rc;
    if (m->n_sources && (rc = check_sources_entry(v, &bv, b, q)))
        return rc;
    uint64_t toks = bv.token_start[bv.n];
    v->sb[b].records += bv.n;
    v->sb[b].tokens += toks;
    v->sb[b].blocks++;
    v->vs->records += bv.n;
    v->vs->tokens += toks;
    v->vs->blocks++;
    v->vs->block_bytes += len;
    v->vs->raw_bytes += bv.raw_bytes;
    v->next_seq++;
    return 0;
}

/* meta/format must say which shard of how many this is, in the set's
 * format version. */
static int check_meta(vstate *v, const char *meta)
{
    json_error_t je;
    json_t *root = json_loads(meta, 0, &je);
    json_t *shard = json_object_get(root, "shard"), *shards = json_object_get(root, "shards");
    json_int_t ver = json_integer_value(json_object_get(root, "format_version"));
    int rc = 0;
    if (ver != v->m->format_version)
        rc = bad(v, "meta", -1, -1, "meta/format says format version %lld, the manifest %d",
                 (long long)ver, v->m->format_version);
    else if (!json_is_integer(shard) || json_integer_value(shard) != (json_int_t)v->k)
        rc = bad(v, "meta", -1, -1, "meta/format says shard %lld, it is listed as shard %zu",
                 json_is_integer(shard) ? (long long)json_integer_value(shard) : -1LL, v->k);
    else if (shards && (!json_is_integer(shards) ||
                        json_integer_value(shards) != (json_int_t)v->m->n_shards))
        rc = bad(v, "meta", -1, -1, "meta/format says the set has %lld shards, the manifest %zu",
                 json_is_integer(shards) ? (long long)json_integer_value(shards) : -1LL,
                 v->m->n_shards);
    json_decref(root);
    return rc;
}

static int verify_shard(vstate *v, const char *dir)
{
    const ps_manifest *m = v->m;
    const ps_mf_shard *ms = v->ms;
    char hex[65];
    uint64_t bytes = 0;
    ps_error e;
    /* Only a regular file of the set itself: hashing a FIFO would block
     * forever and a device would never end, and a symlink leads out of
     * the set (the reader refuses one too). */
    struct stat st;
    int src = v->fd >= 0 ? fstat(v->fd, &st) : lstat(v->path, &st);
    if (src == 0 && !S_ISREG(st.st_mode))
        return bad(v, "lmdb", -1, -1, "not a regular file (%s)",
                   S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISFIFO(st.st_mode) ? "a FIFO"
                   : S_ISDIR(st.st_mode) ? "a directory" : "a device or socket");
    int rc = v->fd >= 0 ? ps_sha256_fd(v->fd, v->path, hex, &bytes, &e)
                        : ps_sha256_file(v->path, hex, &bytes, &e);
    if (rc == PS_ENOENT)
        return bad(v, "missing", -1, -1, "missing from %s", dir);
    if (rc)
        return ps_error_set(v->err, rc, "%s", e.message);
    v->vs->file_bytes = bytes;

    ps_shard *s;
    if (v->fd < 0) {
        rc = ps_shard_open(&s, v->path, &e);
    } else {
        int fd = dup(v->fd); /* the shard closes its own */
        rc = fd < 0 ? ps_error_set(&e, PS_EIO, "%s: %s", v->path, strerror(errno))
                    : ps_shard_open_fd(&s, fd, v->path, &e);
    }
    if (rc == PS_ECORRUPT) {
        v->rep->bad_shard = (long)v->k;
        v->rep->kind = "lmdb";
        return ps_error_set(v->err, rc, "%s", e.message);
    }
    if (rc)
        return ps_error_set(v->err, rc, "%s", e.message);
    if ((rc = check_meta(v, ps_shard_meta(s)))) {
        ps_shard_close(s);
        return rc;
    }
    v->cur_bucket = 0;
    v->next_seq = 0;
    bool has_lengths = ps_shard_has_lengths_db(s);
    if (has_lengths != (m->format_version >= 2)) { /* version 2 holds it, 1 does not */
        ps_shard_close(s);
        return bad(v, "lengths_db", -1, -1, "%s", has_lengths
                   ? "a version 1 shard with a lengths database"
                   : "no lengths database (format version 2 keeps one)");
    }
    bool has_sources = ps_shard_has_sources_db(s);
    if (has_sources != (m->n_sources > 0)) {
        ps_shard_close(s);
        return check_sources_db(v, has_sources, 0);
    }
    v->shard = s;
    v->lengths_seen = 0;
    v->sources_seen = 0;
    rc = ps_shard_foreach(s, on_block, v, &e);
    v->shard = NULL;
    uint64_t lmdb_blocks = ps_shard_block_count(s);
    size_t lengths_entries = ps_shard_lengths_count(s);
    size_t sources_entries = ps_shard_sources_count(s);
    ps_shard_close(s);
    if (rc && v->rep->kind == NULL && rc == PS_ECORRUPT) {
        /* from LMDB itself (a damaged page), not from a check */
        v->rep->bad_shard = (long)v->k;
        v->rep->kind = "lmdb";
        return ps_error_set(v->err, rc, "%s", e.message);
    }
    if (rc)
        return rc;
    if (v->lengths_seen < lengths_entries)
        return bad(v, "lengths_db", -1, -1,
                   "the lengths database holds %zu entries, the shard %zu blocks",
                   lengths_entries, v->lengths_seen);
    if ((rc = check_sources_db(v, has_sources, sources_entries)))
        return rc;
    for (; v->cur_bucket < m->n_buckets; v->cur_bucket++, v->next_seq = 0)
        if ((rc = finish_bucket(v, v->cur_bucket)))
            return rc;
    if (lmdb_blocks != v->vs->blocks)
        return bad(v, "lmdb", -1, -1, "LMDB counts %llu blocks, %llu were read",
                   (unsigned long long)lmdb_blocks, (unsigned long long)v->vs->blocks);
    for (size_t b = 0; b < m->n_buckets; b++) {
        if (v->sb[b].records != ms->buckets[b].records ||
            v->sb[b].tokens != ms->buckets[b].tokens)
            return bad(v, "counts", (long)b, -1,
                       "holds %llu records and %llu tokens, the manifest says %llu and %llu",
                       (unsigned long long)v->sb[b].records, (unsigned long long)v->sb[b].tokens,
                       (unsigned long long)ms->buckets[b].records,
                       (unsigned long long)ms->buckets[b].tokens);
    }
    if (v->vs->records != ms->records || v->vs->tokens != ms->tokens ||
        v->vs->blocks != ms->blocks)
        return bad(v, "counts", -1, -1,
                   "holds %llu records, %llu tokens, %llu blocks; the manifest says %llu, %llu, "
                   "%llu",
                   (unsigned long long)v->vs->records, (unsigned long long)v->vs->tokens,
                   (unsigned long long)v->vs->blocks, (unsigned long long)ms->records,
                   (unsigned long long)ms->tokens, (unsigned long long)ms->blocks);
    if (ms->has_uncompressed && v->vs->raw_bytes != ms->uncompressed_bytes)
        return bad(v, "counts", -1, -1,
                   "blocks decompress to %llu bytes, the manifest says %llu",
                   (unsigned long long)v->vs->raw_bytes,
                   (unsigned long long)ms->uncompressed_bytes);
    if (bytes != ms->bytes)
        return bad(v, "size", -1, -1, "%llu bytes, the manifest says %llu",
                   (unsigned long long)bytes, (unsigned long long)ms->bytes);
    if (strcmp(hex, ms->sha256))
        return bad(v, "sha256", -1, -1, "SHA-256 is %s, the manifest says %s", hex, ms->sha256);
    return 0;
}

void ps_verify_report_free(ps_verify_report *rep)
{
    free(rep->shards);
    free(rep->buckets);
    free(rep->label_records);
    free(rep->source_records);
    memset(rep, 0, sizeof *rep);
}

/* The set's totals against the sums of its shards. */
static int check_totals(const ps_manifest *m, ps_verify_report *rep, const char *dir,
                        ps_error *err)
{
    uint64_t r = 0, t = 0, bl = 0;
    for (size_t k = 0; k < m->n_shards; k++) {
        r += rep->shards[k].records;
        t += rep->shards[k].tokens;
        bl += rep->shards[k].blocks;
    }
    const char *what = NULL;
    if (!m->has_totals)
        return 0;
    if (r != m->totals.records || t != m->totals.tokens || bl != m->totals.blocks)
        what = "records, tokens or blocks";
    for (size_t b = 0; !what && b < m->n_buckets; b++)
        if (rep->buckets[b].records != m->total_buckets[b].records ||
            rep->buckets[b].tokens != m->total_buckets[b].tokens ||
            (m->total_buckets[b].blocks != UINT64_MAX &&
             rep->buckets[b].blocks != m->total_buckets[b].blocks))
            what = "a bucket's records, tokens or blocks";
    if (!what)
        return 0;
    rep->bad_shard = -1;
    rep->kind = "counts";
    return ps_error_set(err, PS_ECORRUPT,
                        "%s/manifest.json: totals: %s differ from the sum over the shards "
                        "(%llu records, %llu tokens, %llu blocks)",
                        dir, what, (unsigned long long)r, (unsigned long long)t,
                        (unsigned long long)bl);
}

/* Each source's records, as the manifest states them, against those the
 * sources databases attribute to it. */
static int check_source_totals(const ps_manifest *m, ps_verify_report *rep, const char *dir,
                               ps_error *err)
{
    for (size_t i = 0; i < m->n_sources; i++) {
        if (rep->source_records[i] == m->source_counts[i].records)
            continue;
        rep->bad_shard = -1;
        rep->kind = "sources_db";
        return ps_error_set(err, PS_ECORRUPT,
                            "%s/manifest.json: sources[%zu] (\"%s\"): %llu records, the "
                            "shards hold %llu of that source", dir, i, m->source_names[i],
                            (unsigned long long)m->source_counts[i].records,
                            (unsigned long long)rep->source_records[i]);
    }
    return 0;
}

static int verify_all(const char *dir, const ps_manifest *m, const int *fds,
                      ps_verify_report *rep, ps_error *err)
{
    memset(rep, 0, sizeof *rep);
    rep->bad_shard = rep->bad_bucket = rep->bad_block = -1;
    rep->n_shards = m->n_shards;
    rep->n_buckets = m->n_buckets;
    rep->n_labels = m->n_labels;
    rep->shards = calloc(m->n_shards + 1, sizeof *rep->shards);
    rep->buckets = calloc(m->n_buckets + 1, sizeof *rep->buckets);
    rep->label_records = calloc(m->n_labels + 1, sizeof *rep->label_records);
    rep->n_sources = m->n_sources;
    rep->source_records = calloc(m->n_sources + 1, sizeof *rep->source_records);
    vstate v = {.m = m, .rep = rep, .err = err};
    v.sb = calloc(m->n_buckets + 1, sizeof *v.sb);
    v.dctx = ZSTD_createDCtx();
    ps_buf_init(&v.scratch);
    size_t plen = strlen(dir) + 80;
    char *path = malloc(plen);
    int rc = 0;
    if (!rep->shards || !rep->buckets || !rep->label_records || !rep->source_records || !v.sb || !v.dctx || !path)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < m->n_shards; k++) {
        snprintf(path, plen, "%s/%s", dir, m->shards[k].file);
        v.k = k;
        v.path = path;
        v.fd = fds ? fds[k] : -1;
        v.ms = &m->shards[k];
        v.vs = &rep->shards[k];
        memset(v.sb, 0, m->n_buckets * sizeof *v.sb);
        rc = verify_shard(&v, dir);
        for (size_t b = 0; b < m->n_buckets; b++) {
            rep->buckets[b].records += v.sb[b].records;
            rep->buckets[b].tokens += v.sb[b].tokens;
            rep->buckets[b].blocks += v.sb[b].blocks;
        }
        rep->block_bytes += v.vs->block_bytes;
        rep->raw_bytes += v.vs->raw_bytes;
    }
    if (!rc)
        rc = check_totals(m, rep, dir, err);
    if (!rc)
        rc = check_source_totals(m, rep, dir, err);
    if (!rc) {
        snprintf(path, plen, "%s/manifest.json", dir);
        if ((rc = ps_accounting_check(m, rep, path, err)) == PS_ECORRUPT) {
            rep->bad_shard = -1;
            rep->kind = "accounting";
        }
    }
    free(path);
    free(v.sb);
    ZSTD_freeDCtx(v.dctx);
    ps_buf_free(&v.scratch);
    return rc;
}

int ps_set_verify(const char *dir, const ps_manifest *m, ps_verify_report *rep, ps_error *err)
{
    return verify_all(dir, m, NULL, rep, err);
}

int ps_set_verify_fds(const char *dir, const ps_manifest *m, const int *fds,
                      ps_verify_report *rep, ps_error *err)
{
    return verify_all(dir, m, fds, rep, err);
}
