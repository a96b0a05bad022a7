/*
 * A weighted mixture's epoch (docs/READER.md, "Mixtures"): a source of n
 * records with weight w gives round(w * n) records an epoch — floor(w)
 * whole copies of every record and a seeded subset of the rest (without
 * repetition inside it), as Megatron's blended datasets and MosaicML
 * Streaming's proportion/repeat/choose take them. The subset is drawn from
 * the stream keyed by (seed, epoch, source), so it is the same on every
 * rank and machine. The plan then sees each block as copies: copy c of a
 * block takes its records whose source has more than c whole copies, and
 * at c == floor(w) those in the subset; copies are blocks like any other
 * to the shuffle, windows, batches and ranks, so every guarantee of the
 * plan holds for the mixture.
 */
#include "reader/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reader/plan_rng.h"

/* The records of each source (their src indices), grouped by source in
 * index order: a counting sort. */
static uint32_t *group_by_source(const ps_plan_mix *mx, uint64_t *start)
{
    uint32_t *idx = malloc((mx->n_records ? mx->n_records : 1) * sizeof *idx);
    if (!idx)
        return NULL;
    memset(start, 0, (mx->n_sources + 1) * sizeof *start);
    for (uint64_t g = 0; g < mx->n_records; g++)
        start[mx->src[g] + 1]++;
    for (size_t s = 0; s < mx->n_sources; s++)
        start[s + 1] += start[s];
    uint64_t *at = start; /* advanced while placing, restored below */
    for (uint64_t g = 0; g < mx->n_records; g++)
        idx[at[mx->src[g]]++] = (uint32_t)g;
    for (size_t s = mx->n_sources; s > 0; s--)
        start[s] = start[s - 1];
    start[0] = 0;
    return idx;
}

int ps_plan_mix_choose(ps_plan *p, ps_error *err)
{
    const ps_plan_mix *mx = p->opt.mix;
    size_t S = mx->n_sources;
    if (mx->n_records > UINT32_MAX)
        return ps_error_set(err, PS_ELIMIT, "reader: a mixture of more than %u records",
                            UINT32_MAX);
    p->mix_full = calloc(S ? S : 1, sizeof *p->mix_full);
    p->mix_taken = calloc(S ? S : 1, sizeof *p->mix_taken);
    p->mix_extra = calloc((mx->n_records + 63) / 64 + 1, sizeof *p->mix_extra);
    uint64_t *start = calloc(S + 1, sizeof *start);
    if (!p->mix_full || !p->mix_taken || !p->mix_extra || !start) {
        free(start);
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the mixture");
    }
    uint64_t *extra = calloc(S ? S : 1, sizeof *extra);
    bool any = false;
    for (size_t s = 0; extra && s < S; s++) {
        double w = mx->weights[s], n = (double)mx->counts[s];
        p->mix_full[s] = (uint32_t)floor(w);
        p->mix_taken[s] = (uint64_t)floor(w * n + 0.5);
        extra[s] = p->mix_taken[s] - (uint64_t)p->mix_full[s] * mx->counts[s];
        any |= extra[s] > 0;
    }
    uint32_t *idx = extra && any ? group_by_source(mx, start) : NULL;
    int rc = !extra || (any && !idx)
                 ? ps_error_set(err, PS_ENOMEM, "reader: out of memory for the mixture")
                 : PS_OK;
    for (size_t s = 0; !rc && s < S; s++) {
        uint64_t n = start[s + 1] - start[s], k = extra[s];
        if (!k)
            continue;
        uint32_t *v = idx + start[s];
        rng r;
        rng_init(&r, p->opt.seed, p->opt.epoch, TAG_MIX, s, 0);
        for (uint64_t i = 0; i < k; i++) { /* a partial Fisher-Yates: the first k */
            uint64_t j = i + rng_below(&r, n - i);
            uint32_t t = v[i];
            v[i] = v[j];
            v[j] = t;
            p->mix_extra[v[i] >> 6] |= 1ull << (v[i] & 63);
        }
    }
    free(idx);
    free(extra);
    free(start);
    return rc;
}

/* How many copies block `blk` needs, and how many records copy c takes. */
static uint32_t copies_of(const ps_plan *p, const ps_manifest *m, const ps_plan_block *blk)
{
    uint32_t most = 0;
    for (uint32_t i = 0; i < blk->stored; i++) {
        uint64_t g = ps_plan_mix_index(p, m, blk, i);
        uint32_t need = p->mix_full[p->opt.mix->src[g]] +
                        (uint32_t)(p->mix_extra[g >> 6] >> (g & 63) & 1);
        most = need > most ? need : most;
    }
    return most;
}

int ps_plan_mix_expand(ps_plan *p, ps_plan_bucket *pb, const ps_manifest *m, ps_error *err)
{
    size_t cap = pb->n_blocks ? pb->n_blocks : 1, n = 0;
    ps_plan_block *out = malloc(cap * sizeof *out);
    if (!out)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the mixture");
    uint64_t records = 0;
    for (uint32_t k = 0; k < pb->n_blocks; k++) {
        ps_plan_block blk = pb->blocks[k];
        uint32_t copies = copies_of(p, m, &blk);
        for (blk.copy = 0; blk.copy < copies; blk.copy++) {
            uint32_t take = 0;
            for (uint32_t i = 0; i < blk.stored; i++)
                take += (uint32_t)ps_plan_mix_takes(p, m, &blk, i);
            if (!take)
                continue;
            if (n == cap) {
                ps_plan_block *nb = n >= UINT32_MAX / 2 ? NULL : realloc(out, 2 * cap * sizeof *nb);
                if (!nb) {
                    free(out);
                    return ps_error_set(err, PS_ENOMEM, "reader: out of memory for the mixture");
                }
                out = nb;
                cap *= 2;
            }
            blk.records = take;
            out[n++] = blk;
            records += take;
        }
    }
    free(pb->blocks);
    pb->blocks = out;
    pb->n_blocks = (uint32_t)n;
    pb->records = records;
    return PS_OK;
}

uint64_t ps_plan_mix_most(const ps_plan *p, const ps_plan_bucket *pb, const ps_manifest *m)
{
    const ps_plan_mix *mx = p->opt.mix;
    uint64_t most = 0;
    for (uint32_t k = 0; k < pb->n_blocks; k++) {
        for (uint32_t i = 0; i < pb->blocks[k].stored; i++) {
            uint64_t g = ps_plan_mix_index(p, m, &pb->blocks[k], i);
            most += (uint64_t)ceil(mx->weights[mx->src[g]]);
        }
    }
    return most;
}
