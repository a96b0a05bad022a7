/*
 * Several sets read as one (ps_reader_open_sets; docs/READER.md,
 * "Mixtures"): their manifests are united into one the plan reads — the
 * shards one after another, each set's buckets in turn (a batch never
 * mixes buckets, so never sets, unless packed), the label vocabularies
 * united (each set's ids remapped as its blocks are decoded) and the
 * sources each set's own, or the set itself as one source named after its
 * directory. The sets must share a tokenizer (vocab_sha256, vocab_size,
 * id_width), a layout and a block size: their records then go into one
 * batch as they are.
 */
#include "reader/reader_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

void rd_sets_free(ps_reader *r)
{
    for (size_t i = 0; i < r->n_sets; i++) {
        if (r->set_dirs)
            free(r->set_dirs[i]);
        if (r->set_m)
            ps_manifest_free(r->set_m[i]);
        if (r->label_remap)
            free(r->label_remap[i]);
    }
    free(r->set_dirs);
    free(r->set_m);
    free(r->label_remap);
    free(r->set_src_off);
    free(r->set_boff);
    free(r->shard_set);
    free(r->shard_local);
    r->n_sets = 0;
}

/* The tokenizer, layout and block size of set i against set 0's. */
static int check_same(const ps_reader *r, size_t i, ps_error *err)
{
    const ps_manifest *a = r->set_m[0], *b = r->set_m[i];
    const char *x = r->set_dirs[0], *y = r->set_dirs[i];
    if (a->layout != b->layout)
        return ps_error_set(err, PS_EUSAGE, "reader: %s is a %s set and %s a %s set: sets read "
                            "together have one layout", x, ps_layout_name(a->layout), y,
                            ps_layout_name(b->layout));
    if (strcmp(a->vocab_sha256, b->vocab_sha256) || a->vocab_size != b->vocab_size ||
        a->id_width != b->id_width)
        return ps_error_set(err, PS_EUSAGE, "reader: %s and %s were tokenized differently "
                            "(vocabulary %.12s... of %llu ids, %.12s... of %llu): sets read "
                            "together share one tokenizer", x, y,
                            a->vocab_sha256[0] ? a->vocab_sha256 : "unknown",
                            (unsigned long long)a->vocab_size,
                            b->vocab_sha256[0] ? b->vocab_sha256 : "unknown",
                            (unsigned long long)b->vocab_size);
    if (a->block_records != b->block_records)
        return ps_error_set(err, PS_EUSAGE, "reader: %s and %s differ in block_records (%llu, "
                            "%llu): build them with the same --block-records, or join them "
                            "with pairshard merge", x, y, (unsigned long long)a->block_records,
                            (unsigned long long)b->block_records);
    return PS_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The union's labels (sorted, unique) and each set's remap into them. */
static int unite_labels(ps_reader *r, ps_manifest *u, ps_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < r->n_sets; i++)
        total += r->set_m[i]->n_labels;
    u->labels = calloc(total + 1, sizeof *u->labels);
    char **all = calloc(total + 1, sizeof *all);
    if (!u->labels || !all) {
        free(all);
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < r->n_sets; i++)
        for (size_t j = 0; j < r->set_m[i]->n_labels; j++)
            all[k++] = r->set_m[i]->labels[j];
    qsort(all, k, sizeof *all, cmp_str);
    size_t n = 0;
    for (size_t i = 0; i < k; i++)
        if (!n || strcmp(all[n - 1], all[i]))
            all[n++] = all[i];
    int rc = PS_OK;
    for (size_t i = 0; !rc && i < n; i++)
        if (!(u->labels[i] = strdup(all[i])))
            rc = ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    u->n_labels = n;
    for (size_t i = 0; !rc && i < r->n_sets; i++) {
        const ps_manifest *m = r->set_m[i];
        if (!(r->label_remap[i] = calloc(m->n_labels + 1, sizeof **r->label_remap)))
            rc = ps_error_set(err, PS_ENOMEM, "reader: out of memory");
        for (size_t j = 0; !rc && j < m->n_labels; j++) {
            char *key = m->labels[j];
            char **hit = bsearch(&key, all, n, sizeof *all, cmp_str);
            r->label_remap[i][j] = (uint32_t)(hit - all);
        }
    }
    free(all);
    return rc;
}

/* The union's sources: each set's, or the set as one. */
static int unite_sources(ps_reader *r, ps_manifest *u, ps_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < r->n_sets; i++)
        total += r->set_m[i]->n_sources ? r->set_m[i]->n_sources : 1;
    if (total > PS_MAX_SOURCES)
        return ps_error_set(err, PS_EUSAGE, "reader: more than %u sources", PS_MAX_SOURCES);
    u->source_names = calloc(total, sizeof *u->source_names);
    u->source_counts = calloc(total, sizeof *u->source_counts);
    size_t *owner = calloc(total, sizeof *owner);
    int rc = u->source_names && u->source_counts && owner
                 ? PS_OK : ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    size_t k = 0;
    for (size_t i = 0; !rc && i < r->n_sets; i++) {
        const ps_manifest *m = r->set_m[i];
        r->set_src_off[i] = (uint32_t)k;
        size_t own = m->n_sources ? m->n_sources : 1;
        for (size_t j = 0; !rc && j < own; j++, k++) {
            u->source_names[k] = m->n_sources ? strdup(m->source_names[j])
                                              : ps_dir_name(r->set_dirs[i]);
            owner[k] = i;
            u->n_sources = k + 1;
            if (!u->source_names[k]) {
                rc = ps_error_set(err, PS_ENOMEM, "reader: out of memory");
                break;
            }
            for (size_t q = 0; q < k; q++)
                if (!strcmp(u->source_names[q], u->source_names[k])) {
                    rc = ps_error_set(err, PS_EUSAGE, "reader: %s and %s both hold a source "
                                      "named \"%s\" (join them with pairshard merge --rename, "
                                      "or read sets of other names)", r->set_dirs[owner[q]],
                                      r->set_dirs[i], u->source_names[k]);
                    break;
                }
        }
    }
    free(owner);
    return rc;
}

/* Set i's shards as the union's shards [*s, ...), its buckets as
 * [boff, boff + its n_buckets). */
static int add_shards(ps_reader *r, ps_manifest *u, size_t i, size_t boff, size_t *s,
                      ps_error *err)
{
    const ps_manifest *m = r->set_m[i];
    for (size_t k = 0; k < m->n_shards; k++, (*s)++) {
        ps_mf_shard *d = &u->shards[*s];
        const ps_mf_shard *src = &m->shards[k];
        *d = *src;
        d->file = strdup(src->file);
        d->buckets = calloc(u->n_buckets, sizeof *d->buckets);
        if (!d->file || !d->buckets)
            return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
        memcpy(d->buckets + boff, src->buckets, m->n_buckets * sizeof *d->buckets);
        r->shard_set[*s] = (uint32_t)i;
        r->shard_local[*s] = (uint32_t)k;
    }
    return PS_OK;
}

/* The union of the sets' manifests (each already read and checked). */
static int unite(ps_reader *r, ps_manifest *u, ps_error *err)
{
    const ps_manifest *a = r->set_m[0];
    size_t shards = 0, buckets = 0;
    for (size_t i = 0; i < r->n_sets; i++) {
        shards += r->set_m[i]->n_shards;
        buckets += r->set_m[i]->n_buckets;
    }
    u->format_version = a->format_version;
    u->layout = a->layout;
    u->append_eos = a->append_eos;
    u->eos_id = a->eos_id;
    u->tool_version = strdup(a->tool_version);
    memcpy(u->vocab_sha256, a->vocab_sha256, sizeof u->vocab_sha256);
    u->vocab_size = a->vocab_size;
    u->id_width = a->id_width;
    u->block_records = a->block_records;
    u->zstd_level = a->zstd_level;
    u->n_buckets = buckets;
    u->n_shards = shards;
    u->bounds = calloc(buckets, sizeof *u->bounds);
    u->lowers = calloc(buckets, sizeof *u->lowers);
    u->shards = calloc(shards ? shards : 1, sizeof *u->shards);
    r->shard_set = calloc(shards ? shards : 1, sizeof *r->shard_set);
    r->shard_local = calloc(shards ? shards : 1, sizeof *r->shard_local);
    if (!u->tool_version || !u->bounds || !u->lowers || !u->shards || !r->shard_set ||
        !r->shard_local)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    size_t b = 0, s = 0;
    unsigned char key[8];
    uint64_t h = 0;
    for (size_t i = 0; i < r->n_sets; i++) {
        const ps_manifest *m = r->set_m[i];
        r->set_boff[i] = (uint32_t)b;
        int rc = add_shards(r, u, i, b, &s, err);
        if (rc)
            return rc;
        for (size_t k = 0; k < m->n_buckets; k++, b++) {
            u->bounds[b] = m->bounds[k];
            u->lowers[b] = ps_mf_lower(m, k);
        }
        ps_put_le64(key, m->xxh64); /* the union names every set, in order */
        h = XXH64(key, sizeof key, h);
    }
    u->xxh64 = h;
    int rc = unite_labels(r, u, err);
    return rc ? rc : unite_sources(r, u, err);
}

int rd_sets_open(ps_reader *r, const char *const *dirs, size_t n, ps_error *err)
{
    r->n_sets = n;
    r->set_dirs = calloc(n, sizeof *r->set_dirs);
    r->set_m = calloc(n, sizeof *r->set_m);
    r->label_remap = calloc(n, sizeof *r->label_remap);
    r->set_src_off = calloc(n, sizeof *r->set_src_off);
    r->set_boff = calloc(n, sizeof *r->set_boff);
    if (!r->set_dirs || !r->set_m || !r->label_remap || !r->set_src_off || !r->set_boff)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!dirs[i])
            return ps_error_set(err, PS_EINVAL, "reader: no directory (set %zu)", i);
        if (!(r->set_dirs[i] = strdup(dirs[i])))
            return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
        int rc = ps_manifest_read(dirs[i], &r->set_m[i], err);
        if (!rc && i)
            rc = check_same(r, i, err);
        if (rc)
            return rc;
    }
    ps_manifest *u = calloc(1, sizeof *u);
    if (!u)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    r->m = u; /* freed by the reader's close whatever happens below */
    return unite(r, u, err);
}
