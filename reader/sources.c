/*
 * The reader's sources (docs/READER.md, "Mixtures"): the names (the
 * manifest's `sources`, or the set itself, named after its directory, when
 * it has none), each record's source read at open from the shards'
 * "sources" databases (2 bytes a record, checked against the manifest like
 * the lengths are), and the weights the caller gave, resolved by name
 * into the mixture the plan reads (plan_mix.c).
 */
#include "reader/reader_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#define MAX_WEIGHT 65535.0

void rd_sources_free(ps_reader *r)
{
    for (size_t i = 0; r->source_names && i < r->n_sources; i++)
        free(r->source_names[i]);
    free(r->source_names);
    free(r->source_counts);
    free(r->weights);
    free(r->src_cache);
    free(r->src_first);
    r->source_names = NULL;
    r->source_counts = NULL;
    r->weights = NULL;
    r->src_cache = NULL;
    r->src_first = NULL;
}

/* Reads block (b, q)'s sources into the cache at *n: `want` values, each
 * naming a source. */
static int load_block(ps_reader *r, size_t s, uint32_t b, uint32_t q, uint32_t want,
                      uint64_t *n, ps_error *err)
{
    /* several sets: the ids are the shard's set's, after its offset */
    size_t set = r->n_sets ? r->shard_set[s] : 0;
    size_t limit = r->n_sets ? r->set_m[set]->n_sources : r->n_sources;
    uint16_t off = r->n_sets ? (uint16_t)r->set_src_off[set] : 0;
    const uint16_t *src;
    size_t got;
    int rc = rd_shard_sources(r, s, b, q, &src, &got, err);
    if (rc)
        return rc;
    const char *file = r->m->shards[s].file;
    if (got != want)
        return ps_error_set(err, PS_ECORRUPT,
                            "%s/%s: bucket %u block %u: %zu sources, the manifest says %u "
                            "records", rd_shard_dir(r, s), file, b, q, got, want);
    for (size_t i = 0; i < got; i++) {
        if (src[i] >= limit)
            return ps_error_set(err, PS_ECORRUPT,
                                "%s/%s: bucket %u block %u: record %zu has source %u, the "
                                "manifest lists %zu", rd_shard_dir(r, s), file, b, q, i, src[i],
                                limit);
        r->src_cache[*n + i] = (uint16_t)(src[i] + off);
    }
    *n += got;
    return PS_OK;
}

/* Every record's source, in (shard, bucket, stored) order: from the
 * shards when the set has sources, else all 0. */
static int load_cache(ps_reader *r, ps_error *err)
{
    const ps_manifest *m = r->m;
    size_t cells = m->n_shards * m->n_buckets;
    uint64_t total = 0;
    for (size_t s = 0; s < m->n_shards; s++)
        for (size_t b = 0; b < m->n_buckets; b++) {
            int rc = ps_plan_check_fill(m, s, b, err);
            if (rc)
                return rc;
            uint64_t c = m->shards[s].buckets[b].records;
            /* bounded by the file like the plan's counts (2048 a byte) */
            if (c > r->trusted_bytes[s] * 2048 || total + c < total)
                return ps_error_set(err, PS_EFORMAT, "manifest.json: %s bucket %zu: %llu "
                                    "records cannot fit in the file", m->shards[s].file, b,
                                    (unsigned long long)c);
            total += c;
        }
    r->src_first = calloc(cells ? cells : 1, sizeof *r->src_first);
    r->src_cache = calloc(total ? total : 1, sizeof *r->src_cache);
    if (!r->src_first || !r->src_cache)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for %llu records' sources",
                            (unsigned long long)total);
    uint64_t n = 0;
    for (size_t s = 0; s < m->n_shards; s++)
        for (size_t b = 0; b < m->n_buckets; b++) {
            const ps_mf_count *c = &m->shards[s].buckets[b];
            r->src_first[s * m->n_buckets + b] = n;
            bool own = r->n_sets ? r->set_m[r->shard_set[s]]->n_sources > 0 : m->n_sources > 0;
            if (!own) { /* the set is one source */
                uint16_t id = r->n_sets ? (uint16_t)r->set_src_off[r->shard_set[s]] : 0;
                for (uint64_t k = 0; k < c->records; k++)
                    r->src_cache[n + k] = id;
                n += c->records;
                continue;
            }
            for (uint64_t q = 0; q < c->blocks; q++) {
                uint64_t left = c->records - q * m->block_records;
                uint32_t want = (uint32_t)(left < m->block_records ? left : m->block_records);
                int rc = load_block(r, s, (uint32_t)b, (uint32_t)q, want, &n, err);
                if (rc)
                    return rc;
            }
        }
    r->mix.n_records = n;
    for (uint64_t g = 0; g < n; g++)
        r->source_counts[r->src_cache[g]]++;
    return PS_OK;
}

/* The caller's weights by name onto the sources: 1 for a source not
 * named. */
static int resolve_weights(ps_reader *r, const char *dir, ps_error *err)
{
    const ps_reader_options *o = &r->opt;
    for (size_t i = 0; i < r->n_sources; i++)
        r->weights[i] = 1.0;
    unsigned char *seen = calloc(r->n_sources, 1);
    if (!seen)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    int rc = PS_OK;
    for (size_t k = 0; !rc && k < o->n_weights; k++) {
        const char *name = o->weight_names ? o->weight_names[k] : NULL;
        double w = o->weights ? o->weights[k] : NAN;
        size_t i = 0;
        while (name && i < r->n_sources && strcmp(r->source_names[i], name))
            i++;
        if (!name || i == r->n_sources) {
            char list[512] = "";
            for (size_t j = 0; j < r->n_sources; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                         r->source_names[j]);
            rc = ps_error_set(err, PS_EUSAGE, "reader: weights: %s has no source named \"%s\" "
                              "(its sources: %s)", dir, name ? name : "(null)", list);
        } else if (seen[i]++) {
            rc = ps_error_set(err, PS_EUSAGE, "reader: weights: source \"%s\" is weighted twice",
                              name);
        } else if (!(w >= 0.0 && w <= MAX_WEIGHT)) {
            rc = ps_error_set(err, PS_EUSAGE, "reader: weights: source \"%s\": weight %g is not "
                              "in 0..%g", name, w, MAX_WEIGHT);
        } else {
            r->weights[i] = w;
        }
    }
    free(seen);
    return rc;
}

int rd_sources_load(ps_reader *r, const char *dir, ps_error *err)
{
    const ps_manifest *m = r->m;
    r->n_sources = m->n_sources ? m->n_sources : 1;
    r->source_names = calloc(r->n_sources, sizeof *r->source_names);
    r->source_counts = calloc(r->n_sources, sizeof *r->source_counts);
    r->weights = calloc(r->n_sources, sizeof *r->weights);
    if (!r->source_names || !r->source_counts || !r->weights)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    for (size_t i = 0; i < r->n_sources; i++)
        if (!(r->source_names[i] = m->n_sources ? strdup(m->source_names[i]) : ps_dir_name(dir)))
            return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    if (r->opt.n_weights && (!r->opt.weight_names || !r->opt.weights))
        return ps_error_set(err, PS_EUSAGE, "reader: n_weights %zu without names or weights",
                            r->opt.n_weights);
    int rc = resolve_weights(r, dir, err);
    if (rc || (!m->n_sources && !r->opt.n_weights))
        return rc; /* one source, every record once: nothing to read */
    if ((rc = load_cache(r, err)))
        return rc;
    if (!r->opt.n_weights)
        return PS_OK;
    unsigned char key[16];
    r->mix.hash = XXH64(NULL, 0, (uint64_t)r->n_sources);
    for (size_t i = 0; i < r->n_sources; i++) {
        uint64_t bits;
        memcpy(&bits, &r->weights[i], sizeof bits);
        ps_put_le64(key, r->mix.hash);
        ps_put_le64(key + 8, bits);
        r->mix.hash = XXH64(key, sizeof key, i);
    }
    r->mix.n_sources = r->n_sources;
    r->mix.weights = r->weights;
    r->mix.counts = r->source_counts;
    r->mix.src = r->src_cache;
    r->mix.first = r->src_first;
    r->popt.mix = &r->mix;
    return PS_OK;
}
