/*
 * The packed reader's record lengths: every block's lengths, read at open
 * from the shards' "lengths" databases (format 2) rather than by decoding
 * blocks, so that a packed epoch can be planned from them alone
 * (plan_pack.c). 4 bytes per record, cached for the reader's life.
 */
#include "reader/reader_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rd_lengths_free(ps_reader *r)
{
    free(r->len_cache);
    free(r->len_first);
    r->len_cache = NULL;
    r->len_first = NULL;
}

/* Appends the lengths of block (b, q) of shard s, checking them against
 * the manifest: `want` records, each within the bucket's bounds. */
static int load_block(ps_reader *r, size_t s, uint32_t b, uint32_t q, uint32_t want,
                      uint64_t *n, uint64_t *cap, ps_error *err)
{
    const uint32_t *lens;
    size_t got;
    int rc = rd_shard_lengths(r, s, b, q, &lens, &got, err);
    if (rc)
        return rc;
    const char *file = r->m->shards[s].file;
    if (got != want)
        return ps_error_set(err, PS_ECORRUPT,
                            "%s/%s: bucket %u block %u: %zu lengths, the manifest says %u "
                            "records",
                            rd_shard_dir(r, s), file, b, q, got, want);
    if (*n + got > *cap) {
        uint64_t c = *cap ? *cap : 4096;
        while (c < *n + got)
            c *= 2;
        uint32_t *nc = realloc(r->len_cache, (size_t)c * sizeof *nc);
        if (!nc)
            return ps_error_set(err, PS_ENOMEM, "reader: out of memory for record lengths");
        r->len_cache = nc;
        *cap = c;
    }
    uint32_t lower = ps_mf_lower(r->m, b), bound = r->m->bounds[b];
    for (size_t i = 0; i < got; i++) {
        if (lens[i] <= lower || lens[i] > bound)
            return ps_error_set(err, PS_ECORRUPT,
                                "%s/%s: bucket %u block %u: record %zu has length %u, outside "
                                "the bucket's (%u, %u]",
                                rd_shard_dir(r, s), file, b, q, i, lens[i], lower, bound);
        if (lens[i] < r->min_len)
            r->min_len = lens[i];
    }
    memcpy(r->len_cache + *n, lens, got * sizeof *lens);
    *n += got;
    return PS_OK;
}

/* The first record (stored order) longer than the pack: PS_EUSAGE naming
 * it, with its id read from its block. */
static int refuse_long(ps_reader *r, ps_error *err)
{
    const ps_manifest *m = r->m;
    uint32_t L = r->opt.pack;
    for (size_t s = 0; s < m->n_shards; s++)
        for (size_t b = 0; b < m->n_buckets; b++) {
            if (m->bounds[b] <= L)
                continue;
            uint64_t first = r->len_first[s * m->n_buckets + b];
            uint64_t recs = m->shards[s].buckets[b].records;
            for (uint64_t k = 0; k < recs; k++) {
                uint32_t len = r->len_cache[first + k];
                if (len <= L)
                    continue;
                uint32_t q = (uint32_t)(k / m->block_records);
                uint32_t idx = (uint32_t)(k % m->block_records);
                char id[512] = "?";
                ps_error e = {0};
                if (rd_record_id(r, s, (uint32_t)b, q, idx, id, sizeof id, &e))
                    snprintf(id, sizeof id, "? (%.400s)", e.message);
                return ps_error_set(err, PS_EUSAGE,
                                    "%s/%s: bucket %zu block %u record %u (id %s) has %u "
                                    "tokens, longer than pack %u; use a larger pack or "
                                    "skip_long (--skip-long)",
                                    rd_shard_dir(r, s), m->shards[s].file, b, q, idx, id, len, L);
            }
        }
    return PS_OK;
}

int rd_lengths_load(ps_reader *r, ps_error *err)
{
    const ps_manifest *m = r->m;
    size_t cells = m->n_shards * m->n_buckets;
    r->len_first = calloc(cells ? cells : 1, sizeof *r->len_first);
    if (!r->len_first)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for record lengths");
    r->min_len = UINT32_MAX;
    uint64_t n = 0, cap = 0;
    for (size_t s = 0; s < m->n_shards; s++)
        for (size_t b = 0; b < m->n_buckets; b++) {
            const ps_mf_count *c = &m->shards[s].buckets[b];
            r->len_first[s * m->n_buckets + b] = n;
            int rc = ps_plan_check_fill(m, s, b, err);
            for (uint64_t q = 0; !rc && q < c->blocks; q++) {
                uint64_t left = c->records - q * m->block_records;
                uint32_t want = (uint32_t)(left < m->block_records ? left : m->block_records);
                rc = load_block(r, s, (uint32_t)b, (uint32_t)q, want, &n, &cap, err);
            }
            if (rc)
                return rc;
        }
    if (r->min_len == UINT32_MAX)
        r->min_len = 1;
    return r->opt.skip_long ? PS_OK : refuse_long(r, err);
}
