/* Tests of the reader (include/pairshard/reader.h) on a real shard set built
 * from Spider dev: every array of every batch is compared with the tokens
 * decoded independently from the shards (store/shards.h), coverage is
 * checked exactly across ranks, and the plan is checked to depend on
 * nothing but what the contract says (threads, prefetch, resumption). */
#include "tests/support/testutil.h"

#include "pipeline/build.h"
#include "store/inspect.h"
#include "store/shards.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

/* ---- the reference: every record decoded straight from the shards ------- */

typedef struct ref_rec {
    char *id;
    uint32_t len, tb, label, bucket, shard, seq, pos; /* pos: index in its block */
    int32_t *tok;
} ref_rec;

typedef struct ref_set {
    char *dir;
    ref_rec *v;         /* sorted by id */
    size_t n, cap;
    size_t n_blocks;
    uint32_t n_buckets;
    uint32_t bounds[PS_BUILD_MAX_BUCKETS];
    size_t n_labels;
    char **labels;
    uint32_t cur_shard;
    ZSTD_DCtx *dctx;
    ps_buf scratch;
} ref_set;

static char *g_tmp;       /* the fixture's directory */
static ref_set g_ref;     /* set A: 2 shards, 16-record blocks */
static char *g_dir_b;     /* set B: the same input stored differently */
static char *g_dir_c;     /* set C: set A without labels */
static bool g_unlabeled;  /* check_batch: every label must be -1 */

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    assert_non_null(p);
    return p;
}

static char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

static int ref_block(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    ref_set *s = user;
    ps_block_view v;
    ps_error err;
    ps_error_clear(&err);
    if (ps_block_decode(data, len, s->dctx, &s->scratch, &v, &err) != 0) {
        fprintf(stderr, "reference decode failed: %s\n", err.message);
        return -1;
    }
    s->n_blocks++;
    for (uint32_t i = 0; i < v.n; i++) {
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 1024;
            s->v = realloc(s->v, s->cap * sizeof *s->v);
            if (!s->v)
                return -1;
        }
        ref_rec *r = &s->v[s->n++];
        uint32_t a = v.id_offset[i], b = v.id_offset[i + 1];
        r->id = malloc(b - a + 1);
        memcpy(r->id, v.ids + a, b - a);
        r->id[b - a] = 0;
        r->len = v.length[i];
        r->tb = v.type_boundary[i];
        r->label = v.label[i];
        r->bucket = bucket;
        r->shard = s->cur_shard;
        r->seq = seq;
        r->pos = i;
        r->tok = malloc((r->len ? r->len : 1) * sizeof *r->tok);
        for (uint32_t k = 0; k < r->len; k++)
            r->tok[k] = (int32_t)ps_block_token(&v, v.token_start[i] + k);
    }
    return 0;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const ref_rec *)a)->id, ((const ref_rec *)b)->id);
}

static void ref_load(ref_set *s, const char *dir)
{
    memset(s, 0, sizeof *s);
    s->dir = xstrdup(dir);
    ps_error err;
    ps_error_clear(&err);
    ps_manifest *m = NULL;
    assert_int_equal(ps_manifest_read(dir, &m, &err), 0);
    s->n_buckets = (uint32_t)m->n_buckets;
    for (size_t b = 0; b < m->n_buckets; b++)
        s->bounds[b] = m->bounds[b];
    s->n_labels = m->n_labels;
    s->labels = calloc(m->n_labels + 1, sizeof *s->labels);
    for (size_t i = 0; i < m->n_labels; i++)
        s->labels[i] = xstrdup(m->labels[i]);
    s->dctx = ZSTD_createDCtx();
    ps_buf_init(&s->scratch);
    for (size_t i = 0; i < m->n_shards; i++) {
        char *p = path_join(dir, m->shards[i].file);
        ps_shard *sh = NULL;
        assert_int_equal(ps_shard_open(&sh, p, &err), 0);
        s->cur_shard = (uint32_t)i;
        assert_int_equal(ps_shard_foreach(sh, ref_block, s, &err), 0);
        ps_shard_close(sh);
        free(p);
    }
    assert_int_equal(s->n, m->totals.records);
    ps_manifest_free(m);
    ZSTD_freeDCtx(s->dctx);
    ps_buf_free(&s->scratch);
    qsort(s->v, s->n, sizeof *s->v, by_id);
    for (size_t i = 1; i < s->n; i++)
        assert_true(strcmp(s->v[i - 1].id, s->v[i].id) != 0); /* ids are unique */
}

static void ref_free(ref_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].id);
        free(s->v[i].tok);
    }
    for (size_t i = 0; i < s->n_labels; i++)
        free(s->labels[i]);
    free(s->labels);
    free(s->v);
    free(s->dir);
}

static long ref_find(const ref_set *s, const char *id)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->v[mid].id, id);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* ---- building the sets --------------------------------------------------- */

static void build_set_of(const char *in, const char *out, size_t shards, size_t block_records,
                         const char *label)
{
    ps_build_config cfg;
    ps_build_config_init(&cfg);
    char *input = xstrdup(in);
    char *vocab = xstrdup(ps_test_data("vocab/bert-base-uncased.vocab.txt"));
    const char *inputs[1] = {input};
    ps_error err;
    ps_error_clear(&err);
    ps_tokenizer_options topt;
    ps_tokenizer_options_init(&topt);
    ps_tokenizer *tok = NULL;
    assert_int_equal(ps_tokenizer_load_vocab(vocab, &topt, &tok, &err), 0);
    cfg.inputs = inputs;
    cfg.n_inputs = 1;
    cfg.out_dir = out;
    cfg.clean.label_field = label;
    cfg.tokenizer = tok;
    cfg.vocab_path = vocab;
    cfg.vocab_kind = "vocab.txt";
    cfg.max_length = 128;
    cfg.shards = shards;
    cfg.block_records = block_records;
    cfg.threads = 2;
    ps_build_summary sum;
    memset(&sum, 0, sizeof sum);
    int rc = ps_build_run(&cfg, &sum, &err);
    if (rc)
        fprintf(stderr, "build %s: %s\n", out, err.message);
    assert_int_equal(rc, 0);
    assert_false(sum.gate_failed);
    free(sum.report_summary);
    ps_tokenizer_free(tok);
    free(input);
    free(vocab);
}

static void build_set(const char *out, size_t shards, size_t block_records, const char *label)
{
    build_set_of(ps_test_data("spider/dev.json"), out, shards, block_records, label);
}

static int group_setup(void **state)
{
    (void)state;
    /* Tests choose rank and world size themselves unless they test the
     * environment. */
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    const char *t = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/ps-reader-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpl))
        return -1;
    g_tmp = xstrdup(tmpl);
    char *a = path_join(g_tmp, "a");
    g_dir_b = path_join(g_tmp, "b");
    g_dir_c = path_join(g_tmp, "c");
    build_set(a, 2, 16, "db_id");
    build_set(g_dir_b, 3, 32, "db_id");
    /* the same records stored the same way, without labels */
    build_set(g_dir_c, 2, 16, "no_such_field");
    ref_load(&g_ref, a);
    free(a);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ref_free(&g_ref);
    ps_remove_tree(g_tmp);
    free(g_tmp);
    free(g_dir_b);
    free(g_dir_c);
    return 0;
}

/* ---- batches -------------------------------------------------------------- */

static int64_t el(const ps_batch *b, const void *arr, size_t i)
{
    return b->dtype == PS_DTYPE_INT32 ? ((const int32_t *)arr)[i] : ((const int64_t *)arr)[i];
}

/* Labels are int64_t whatever the batch's dtype (losses take them so). */
static int64_t label_at(const ps_batch *b, size_t i)
{
    assert_true((uintptr_t)b->labels % sizeof(int64_t) == 0);
    return ((const int64_t *)b->labels)[i];
}

static uint64_t fnv(uint64_t h, int64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (uint64_t)(v >> (8 * i)) & 0xFF;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A digest of everything a batch holds, independent of the dtype. */
static uint64_t batch_digest(const ps_batch *b)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, b->B);
    h = fnv(h, b->T);
    h = fnv(h, b->bucket);
    for (uint32_t i = 0; i < b->B; i++) {
        for (const char *p = b->ids[i]; *p; p++)
            h = fnv(h, (unsigned char)*p);
        h = fnv(h, el(b, b->lengths, i));
        h = fnv(h, label_at(b, i));
    }
    size_t n = (size_t)b->B * b->T;
    for (size_t k = 0; k < n; k++) {
        h = fnv(h, el(b, b->input_ids, k));
        h = fnv(h, el(b, b->attention_mask, k));
        h = fnv(h, el(b, b->token_type_ids, k));
    }
    return h;
}

static uint32_t round_up(uint32_t v, uint32_t m)
{
    return m <= 1 ? v : (v + m - 1) / m * m;
}

/* Checks every array of `b` against the reference; returns the number of
 * failed checks (0) and records the record indices in idx[] (B entries). */
static void check_batch(const ps_batch *b, const ps_reader_options *o, long *idx)
{
    /* skip_corrupt may deliver a batch emptied of damaged records */
    if (b->B == 0) {
        assert_true(o->skip_corrupt);
        assert_int_equal(b->T, 0);
        assert_int_equal(b->real_tokens, 0);
        return;
    }
    assert_true(b->T >= 1);
    assert_int_equal(b->dtype, o->dtype);
    assert_true(b->bucket < g_ref.n_buckets);
    uint32_t bound = g_ref.bounds[b->bucket];
    uint32_t lower = b->bucket ? g_ref.bounds[b->bucket - 1] : 0;
    uint32_t maxlen = 0;
    uint64_t real = 0;
    for (uint32_t i = 0; i < b->B; i++) {
        assert_non_null(b->ids[i]);
        long k = ref_find(&g_ref, b->ids[i]);
        if (k < 0)
            fail_msg("batch step %llu: id '%s' is not in the set", (unsigned long long)b->step,
                     b->ids[i]);
        idx[i] = k;
        const ref_rec *r = &g_ref.v[k];
        assert_int_equal(r->bucket, b->bucket);
        assert_true(r->len > lower && r->len <= bound);
        assert_int_equal(el(b, b->lengths, i), r->len);
        assert_int_equal(label_at(b, i),
                         r->label == PS_LABEL_NONE || g_unlabeled ? -1 : (int64_t)r->label);
        if (r->len > maxlen)
            maxlen = r->len;
        real += r->len;
    }
    uint32_t want_t = o->pad_mode == PS_PAD_BUCKET ? round_up(bound, o->pad_multiple ? o->pad_multiple : 1)
                                                   : round_up(maxlen, o->pad_multiple ? o->pad_multiple : 1);
    if (b->T != want_t)
        fail_msg("batch step %llu bucket %u: T %u, expected %u (max length %u, bound %u, pad_mode %d, "
                 "pad_multiple %u)",
                 (unsigned long long)b->step, b->bucket, b->T, want_t, maxlen, bound, o->pad_mode,
                 o->pad_multiple);
    assert_int_equal(b->real_tokens, real);
    for (uint32_t i = 0; i < b->B; i++) {
        const ref_rec *r = &g_ref.v[idx[i]];
        size_t row = (size_t)i * b->T;
        for (uint32_t t = 0; t < b->T; t++) {
            int64_t in = el(b, b->input_ids, row + t);
            int64_t am = el(b, b->attention_mask, row + t);
            int64_t tt = el(b, b->token_type_ids, row + t);
            if (t < r->len) {
                if (in != r->tok[t] || am != 1 || tt != (t < r->tb ? 0 : 1))
                    fail_msg("record %s position %u: input %lld mask %lld type %lld, expected "
                             "%d 1 %d (type boundary %u)",
                             r->id, t, (long long)in, (long long)am, (long long)tt, r->tok[t],
                             t < r->tb ? 0 : 1, r->tb);
            } else if (in != o->pad_id || am != 0 || tt != 0) {
                fail_msg("record %s padding position %u (length %u): input %lld mask %lld type "
                         "%lld, expected %d 0 0",
                         r->id, t, r->len, (long long)in, (long long)am, (long long)tt, o->pad_id);
            }
        }
    }
}

typedef struct cap {
    uint64_t digest, step, epoch;
    uint32_t B, T, bucket;
    long *idx;
} cap;

typedef struct run {
    cap *v;
    size_t n, cap_;
    size_t errors;     /* negative returns from next() */
    int last_error;
    char first_message[PS_ERROR_MESSAGE_MAX];
    uint64_t records, tokens, real_tokens;
} run;

static void run_free(run *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].idx);
    free(r->v);
    memset(r, 0, sizeof *r);
}

static void run_add(run *rn, const ps_batch *b, const ps_reader_options *o)
{
    if (rn->n == rn->cap_) {
        rn->cap_ = rn->cap_ ? 2 * rn->cap_ : 64;
        rn->v = realloc(rn->v, rn->cap_ * sizeof *rn->v);
        assert_non_null(rn->v);
    }
    cap *c = &rn->v[rn->n++];
    c->idx = malloc(b->B * sizeof *c->idx);
    check_batch(b, o, c->idx);
    c->digest = batch_digest(b);
    c->step = b->step;
    c->epoch = b->epoch;
    c->B = b->B;
    c->T = b->T;
    c->bucket = b->bucket;
    rn->records += b->B;
    rn->tokens += (uint64_t)b->B * b->T;
    rn->real_tokens += b->real_tokens;
}

#define ALL SIZE_MAX

/* Takes up to `max` batches (ALL: the rest of the epoch), releasing each;
 * errors are counted, not fatal. */
static void drain(ps_reader *r, const ps_reader_options *o, run *rn, size_t max)
{
    for (size_t guard = 0; guard < 100000; guard++) {
        if (rn->n >= max)
            return;
        const ps_batch *b = NULL;
        ps_error err;
        ps_error_clear(&err);
        int rc = ps_reader_next(r, &b, &err);
        if (rc == 0)
            return;
        if (rc < 0) {
            if (!rn->errors)
                snprintf(rn->first_message, sizeof rn->first_message, "%s", err.message);
            rn->errors++;
            rn->last_error = rc;
            assert_int_equal(err.code, rc);
            if (rc != PS_ECORRUPT && rc != PS_EIO && rc != PS_ENOENT)
                fail_msg("next: unexpected %s: %s", ps_err_name(rc), err.message);
            continue;
        }
        assert_int_equal(rc, 1);
        assert_non_null(b);
        run_add(rn, b, o);
        ps_batch_release(r, b);
    }
    fail_msg("the epoch never ended");
}

static ps_reader *open_ok(const char *dir, const ps_reader_options *o, const ps_reader_state *st)
{
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_reader_open(dir, o, st, &r, &err);
    if (rc != 0)
        fail_msg("ps_reader_open(%s): %s: %s", dir, ps_err_name(rc), err.message);
    assert_non_null(r);
    return r;
}

/* One whole epoch of `o` on `dir`. */
static void epoch_run(const char *dir, const ps_reader_options *o, run *rn)
{
    memset(rn, 0, sizeof *rn);
    ps_reader *r = open_ok(dir, o, NULL);
    drain(r, o, rn, ALL);
    ps_reader_stats st;
    ps_reader_get_stats(r, &st);
    ps_reader_close(r);
    assert_int_equal(rn->errors, 0);
    /* the counters agree with what was delivered, whatever the options */
    assert_int_equal(st.batches, rn->n);
    assert_int_equal(st.records, rn->records);
    assert_int_equal(st.tokens, rn->tokens);
    assert_int_equal(st.real_tokens, rn->real_tokens);
}

static void base_opts(ps_reader_options *o)
{
    ps_reader_options_init(o);
    o->batch_size = 16;
    o->rank = 0;
    o->world_size = 1;
}

/* Every record delivered exactly once over runs[0..n). */
static void expect_exact(run *runs, size_t n)
{
    unsigned *seen = calloc(g_ref.n, sizeof *seen);
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < runs[k].n; i++)
            for (uint32_t j = 0; j < runs[k].v[i].B; j++)
                seen[runs[k].v[i].idx[j]]++;
    for (size_t i = 0; i < g_ref.n; i++)
        if (seen[i] != 1)
            fail_msg("record %s delivered %u times", g_ref.v[i].id, seen[i]);
    free(seen);
}

static bool same_digests(const run *a, size_t a0, const run *b, size_t b0, size_t n)
{
    if (a->n < a0 + n || b->n < b0 + n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (a->v[a0 + i].digest != b->v[b0 + i].digest)
            return false;
    return true;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_options_defaults(void **state)
{
    (void)state;
    ps_reader_options o;
    memset(&o, 0x5A, sizeof o);
    ps_reader_options_init(&o);
    assert_int_equal(o.batch_size, 32);
    assert_int_equal(o.max_tokens, 0);
    assert_int_equal(o.pad_id, 0);
    assert_int_equal(o.pad_mode, PS_PAD_LONGEST);
    assert_int_equal(o.pad_multiple, 1);
    assert_int_equal(o.shuffle, 1);
    assert_int_equal(o.seed, 0);
    assert_int_equal(o.epoch, 0);
    assert_int_equal(o.shuffle_window, 0);
    assert_int_equal(o.rank, PS_FROM_ENV);
    assert_int_equal(o.world_size, PS_FROM_ENV);
    assert_int_equal(o.drop_last, 0);
    assert_int_equal(o.threads, 0);
    assert_int_equal(o.prefetch, 0);
    assert_int_equal(o.dtype, PS_DTYPE_INT64);
    assert_int_equal(o.device, PS_DEVICE_HOST);
    assert_int_equal(o.require_device, 0);
    assert_int_equal(o.mlock, 0);
    assert_int_equal(o.skip_corrupt, 0);
    assert_int_equal(o.sort_pool, 0);
}

static void test_open_close(void **state)
{
    (void)state;
    ps_reader_close(NULL);
    ps_reader *r = open_ok(g_ref.dir, NULL, NULL);
    ps_reader_info in;
    memset(&in, 0xA5, sizeof in);
    assert_int_equal(ps_reader_get_info(r, &in), 0);
    assert_int_equal(in.epoch, 0);
    assert_int_equal(in.rank, 0);
    assert_int_equal(in.world_size, 1);
    assert_int_equal(in.records_total, g_ref.n);
    assert_int_equal(in.records_per_epoch, g_ref.n);
    assert_int_equal(in.records_dropped, 0);
    assert_int_equal(in.n_buckets, g_ref.n_buckets);
    assert_int_equal(in.n_labels, g_ref.n_labels);
    assert_int_equal(in.slots, 4);
    assert_int_equal(in.threads, 2);
    assert_int_equal(in.device, -1);
    assert_int_equal(in.pinned, 0);
    /* default batch size 32: at least ceil(n / 32) batches */
    assert_true(in.batches_per_epoch >= (g_ref.n + 31) / 32);
    for (uint32_t b = 0; b < g_ref.n_buckets; b++)
        assert_int_equal(ps_reader_get_bucket_bound(r, b), g_ref.bounds[b]);
    assert_int_equal(ps_reader_get_bucket_bound(r, g_ref.n_buckets), 0);
    for (size_t i = 0; i < g_ref.n_labels; i++)
        assert_string_equal(ps_reader_get_label(r, (uint32_t)i), g_ref.labels[i]);
    assert_null(ps_reader_get_label(r, (uint32_t)g_ref.n_labels));
    ps_reader_stats st;
    assert_int_equal(ps_reader_get_stats(r, &st), 0);
    assert_int_equal(st.batches, 0);
    assert_int_equal(st.slots, 4);
    /* close with the workers running and nothing taken */
    ps_reader_close(r);
}

static void test_cover_world1(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.batch_size = 32;
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    ps_reader_info in;
    ps_reader_get_info(r, &in);
    run rn;
    memset(&rn, 0, sizeof rn);
    drain(r, &o, &rn, ALL);
    assert_int_equal(rn.errors, 0);
    assert_int_equal(rn.n, in.batches_per_epoch);
    assert_int_equal(rn.records, in.records_total);
    assert_int_equal(in.records_per_epoch, in.records_total);
    for (size_t i = 0; i < rn.n; i++) {
        assert_int_equal(rn.v[i].step, i);
        assert_int_equal(rn.v[i].epoch, 0);
        assert_true(rn.v[i].B <= 32);
    }
    expect_exact(&rn, 1);
    /* After the end, next keeps saying so. */
    const ps_batch *b = NULL;
    assert_int_equal(ps_reader_next(r, &b, NULL), 0);
    /* The buckets are interleaved, not one after another. */
    size_t drops = 0;
    for (size_t i = 1; i < rn.n; i++)
        drops += rn.v[i].bucket < rn.v[i - 1].bucket;
    assert_true(drops > 0);
    ps_reader_close(r);
    run_free(&rn);
}

static void test_world_sizes(void **state)
{
    (void)state;
    static const int worlds[] = {2, 3, 7};
    for (size_t w = 0; w < sizeof worlds / sizeof *worlds; w++) {
        int W = worlds[w];
        run runs[7];
        uint64_t per_rank = 0, records = 0;
        for (int k = 0; k < W; k++) {
            ps_reader_options o;
            base_opts(&o);
            o.world_size = W;
            o.rank = k;
            o.seed = 11;
            ps_reader *r = open_ok(g_ref.dir, &o, NULL);
            ps_reader_info in;
            ps_reader_get_info(r, &in);
            assert_int_equal(in.rank, k);
            assert_int_equal(in.world_size, W);
            memset(&runs[k], 0, sizeof runs[k]);
            drain(r, &o, &runs[k], ALL);
            ps_reader_close(r);
            assert_int_equal(runs[k].errors, 0);
            assert_int_equal(runs[k].n, in.batches_per_epoch);
            assert_int_equal(runs[k].records, in.records_per_epoch);
            for (size_t i = 0; i < runs[k].n; i++)
                assert_int_equal(runs[k].v[i].step, i);
            if (k == 0)
                per_rank = runs[k].n;
            if (runs[k].n != per_rank)
                fail_msg("world %d: rank %d has %zu batches, rank 0 %llu", W, k, runs[k].n,
                         (unsigned long long)per_rank);
            records += runs[k].records;
        }
        assert_int_equal(records, g_ref.n);
        expect_exact(runs, (size_t)W); /* disjoint, and the union is the set */
        for (int k = 0; k < W; k++)
            run_free(&runs[k]);
    }
}

/* Without splits (the world-1 batch count divisible by W), rank k's batch i
 * is global batch i * W + k: the world-1 sequence dealt round-robin. */
static void test_round_robin(void **state)
{
    (void)state;
    size_t tried = 0;
    for (uint32_t bs = 8; bs <= 40 && tried < 8; bs++) {
        ps_reader_options o;
        base_opts(&o);
        o.batch_size = bs;
        o.seed = 77;
        run one;
        epoch_run(g_ref.dir, &o, &one);
        for (int W = 2; W <= 7; W++) {
            if (one.n % (size_t)W)
                continue;
            tried++;
            for (int k = 0; k < W; k++) {
                ps_reader_options ok = o;
                ok.world_size = W;
                ok.rank = k;
                run rk;
                epoch_run(g_ref.dir, &ok, &rk);
                assert_int_equal(rk.n, one.n / (size_t)W);
                for (size_t i = 0; i < rk.n; i++)
                    if (rk.v[i].digest != one.v[i * (size_t)W + (size_t)k].digest)
                        fail_msg("batch %u world %d rank %d: batch %zu is not global batch %zu",
                                 bs, W, k, i, i * (size_t)W + (size_t)k);
                run_free(&rk);
            }
        }
        run_free(&one);
    }
    assert_true(tried >= 3);
}

static void test_drop_last(void **state)
{
    (void)state;
    static const int worlds[] = {1, 3, 7};
    for (size_t w = 0; w < sizeof worlds / sizeof *worlds; w++) {
        int W = worlds[w];
        uint64_t delivered = 0, dropped = 0, per_rank = 0;
        unsigned *seen = calloc(g_ref.n, sizeof *seen);
        for (int k = 0; k < W; k++) {
            ps_reader_options o;
            base_opts(&o);
            o.batch_size = 24;
            o.world_size = W;
            o.rank = k;
            o.drop_last = 1;
            run rn;
            ps_reader *r = open_ok(g_ref.dir, &o, NULL);
            ps_reader_info in;
            ps_reader_get_info(r, &in);
            memset(&rn, 0, sizeof rn);
            drain(r, &o, &rn, ALL);
            ps_reader_close(r);
            assert_int_equal(rn.errors, 0);
            if (k == 0) {
                per_rank = rn.n;
                dropped = in.records_dropped;
            }
            assert_int_equal(rn.n, per_rank);
            assert_int_equal(in.records_dropped, dropped);
            assert_int_equal(rn.records, in.records_per_epoch);
            for (size_t i = 0; i < rn.n; i++) {
                if (rn.v[i].B != 24)
                    fail_msg("drop_last world %d rank %d batch %zu has %u records", W, k, i,
                             rn.v[i].B);
                for (uint32_t j = 0; j < rn.v[i].B; j++)
                    seen[rn.v[i].idx[j]]++;
            }
            delivered += rn.records;
            run_free(&rn);
        }
        for (size_t i = 0; i < g_ref.n; i++)
            assert_true(seen[i] <= 1);
        assert_true(delivered > 0);
        if (dropped != g_ref.n - delivered)
            fail_msg("world %d: info says %llu dropped, %llu of %zu delivered", W,
                     (unsigned long long)dropped, (unsigned long long)delivered, g_ref.n);
        free(seen);
    }
}

static void test_threads_prefetch_invariance(void **state)
{
    (void)state;
    static const int tp[][2] = {{2, 4}, {1, 2}, {2, 3}, {4, 8}, {1, 8}, {4, 2}};
    run ref;
    memset(&ref, 0, sizeof ref);
    for (size_t c = 0; c < sizeof tp / sizeof *tp; c++) {
        for (int w = 1; w <= 3; w += 2) {
            ps_reader_options o;
            base_opts(&o);
            o.threads = tp[c][0];
            o.prefetch = tp[c][1];
            o.seed = 5;
            o.world_size = w;
            o.rank = w - 1;
            run rn;
            epoch_run(g_ref.dir, &o, &rn);
            ps_reader *r = open_ok(g_ref.dir, &o, NULL);
            ps_reader_info in;
            ps_reader_get_info(r, &in);
            assert_int_equal(in.threads, tp[c][0]);
            assert_int_equal(in.slots, (uint32_t)tp[c][1]);
            ps_reader_close(r);
            if (w == 1) {
                if (c == 0) {
                    ref = rn;
                    continue;
                }
                if (rn.n != ref.n || !same_digests(&rn, 0, &ref, 0, ref.n))
                    fail_msg("threads %d prefetch %d: a different epoch", tp[c][0], tp[c][1]);
            }
            run_free(&rn);
        }
    }
    run_free(&ref);
}

static void test_arrays_dtypes(void **state)
{
    (void)state;
    /* check_batch compares every element with the reference decode; the
     * digest is dtype-independent, so both dtypes must agree. */
    ps_reader_options o;
    base_opts(&o);
    o.pad_id = 7;
    o.dtype = PS_DTYPE_INT32;
    run a, b;
    epoch_run(g_ref.dir, &o, &a);
    o.dtype = PS_DTYPE_INT64;
    epoch_run(g_ref.dir, &o, &b);
    assert_int_equal(a.n, b.n);
    assert_true(same_digests(&a, 0, &b, 0, a.n));
    expect_exact(&a, 1);
    /* Some records have a second segment and some are labeled. */
    size_t two = 0, labeled = 0;
    for (size_t i = 0; i < g_ref.n; i++) {
        two += g_ref.v[i].tb < g_ref.v[i].len;
        labeled += g_ref.v[i].label != PS_LABEL_NONE;
    }
    assert_true(two > 0);
    assert_true(labeled > 0);
    run_free(&a);
    run_free(&b);
}

static void test_unlabeled(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    ps_reader *r = open_ok(g_dir_c, &o, NULL);
    ps_reader_info in;
    ps_reader_get_info(r, &in);
    assert_int_equal(in.n_labels, 0);
    assert_null(ps_reader_get_label(r, 0));
    ps_reader_close(r);
    g_unlabeled = true;
    run c, a;
    epoch_run(g_dir_c, &o, &c);
    g_unlabeled = false;
    expect_exact(&c, 1);
    /* the same tokens in the same blocks: the same batches but for labels */
    epoch_run(g_ref.dir, &o, &a);
    assert_int_equal(c.n, a.n);
    for (size_t i = 0; i < a.n; i++) {
        assert_int_equal(c.v[i].B, a.v[i].B);
        assert_memory_equal(c.v[i].idx, a.v[i].idx, a.v[i].B * sizeof *a.v[i].idx);
    }
    run_free(&c);
    run_free(&a);
}

static void test_padding_modes(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.pad_mode = PS_PAD_BUCKET; /* check_batch: T == the bucket's bound */
    run a;
    epoch_run(g_ref.dir, &o, &a);
    expect_exact(&a, 1);
    run_free(&a);

    base_opts(&o);
    o.pad_multiple = 8;        /* T == max length rounded up to 8 */
    o.pad_id = 3;
    epoch_run(g_ref.dir, &o, &a);
    for (size_t i = 0; i < a.n; i++)
        assert_int_equal(a.v[i].T % 8, 0);
    expect_exact(&a, 1);
    run_free(&a);

    base_opts(&o);
    o.pad_mode = PS_PAD_BUCKET;
    o.pad_multiple = 48;       /* bucket bounds rounded up too */
    epoch_run(g_ref.dir, &o, &a);
    for (size_t i = 0; i < a.n; i++)
        assert_int_equal(a.v[i].T % 48, 0);
    run_free(&a);
}

static void test_sort_pool(void **state)
{
    (void)state;
    /* Length-sorting pools exist to cut padding: with them an epoch pads
     * fewer tokens than without, over the same records. */
    ps_reader_options o;
    base_opts(&o);
    o.sort_pool = 1;
    run off, on, big;
    epoch_run(g_ref.dir, &o, &off);
    o.sort_pool = 0; /* 8 */
    epoch_run(g_ref.dir, &o, &on);
    o.sort_pool = 64;
    epoch_run(g_ref.dir, &o, &big);
    expect_exact(&off, 1);
    expect_exact(&on, 1);
    expect_exact(&big, 1);
    assert_int_equal(off.real_tokens, on.real_tokens);
    if (!(on.tokens < off.tokens && big.tokens <= on.tokens))
        fail_msg("padded tokens: %llu without pools, %llu with 8, %llu with 64",
                 (unsigned long long)off.tokens, (unsigned long long)on.tokens,
                 (unsigned long long)big.tokens);
    run_free(&off);
    run_free(&on);
    run_free(&big);
}

static void test_max_tokens(void **state)
{
    (void)state;
    static const uint64_t budgets[] = {1024, 300, 100};
    for (size_t k = 0; k < sizeof budgets / sizeof *budgets; k++) {
        ps_reader_options o;
        base_opts(&o);
        o.batch_size = 0;
        o.max_tokens = budgets[k];
        run a;
        epoch_run(g_ref.dir, &o, &a);
        size_t ones = 0;
        for (size_t i = 0; i < a.n; i++) {
            uint32_t bound = g_ref.bounds[a.v[i].bucket];
            uint64_t bs = budgets[k] / bound ? budgets[k] / bound : 1;
            if ((uint64_t)a.v[i].B * a.v[i].T > budgets[k] && a.v[i].B != 1)
                fail_msg("max_tokens %llu: batch %zu is %u x %u", (unsigned long long)budgets[k],
                         i, a.v[i].B, a.v[i].T);
            assert_true(a.v[i].B <= bs);
            ones += a.v[i].B == 1 && bound > budgets[k];
        }
        if (budgets[k] == 100)
            assert_true(ones > 0); /* the 128 bucket: one sequence a batch */
        expect_exact(&a, 1);
        run_free(&a);
    }
    /* exactly one of batch_size and max_tokens */
    ps_reader_options o;
    base_opts(&o);
    o.max_tokens = 512;
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_reader_open(g_ref.dir, &o, NULL, &r, &err), PS_EUSAGE);
    assert_null(r);
    assert_true(err.message[0] != 0);
    o.max_tokens = 0;
    o.batch_size = 0;
    assert_int_equal(ps_reader_open(g_ref.dir, &o, NULL, &r, &err), PS_EUSAGE);
}

static void test_usage_errors(void **state)
{
    (void)state;
    struct {
        const char *what;
        int rank, world, dtype, pad_mode;
    } bad[] = {
        {"rank == world", 2, 2, PS_DTYPE_INT64, PS_PAD_LONGEST},
        {"world 0", 0, 0, PS_DTYPE_INT64, PS_PAD_LONGEST},
        {"rank -5", -5, 2, PS_DTYPE_INT64, PS_PAD_LONGEST},
        {"world larger than the records", 0, 5000, PS_DTYPE_INT64, PS_PAD_LONGEST},
        {"dtype 9", 0, 1, 9, PS_PAD_LONGEST},
        {"pad_mode 9", 0, 1, PS_DTYPE_INT64, 9},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ps_reader_options o;
        base_opts(&o);
        o.rank = bad[i].rank;
        o.world_size = bad[i].world;
        o.dtype = bad[i].dtype;
        o.pad_mode = bad[i].pad_mode;
        ps_reader *r = NULL;
        ps_error err;
        ps_error_clear(&err);
        int rc = ps_reader_open(g_ref.dir, &o, NULL, &r, &err);
        if (rc != PS_EUSAGE)
            fail_msg("%s: %s, expected PS_EUSAGE", bad[i].what, ps_err_name(rc));
        assert_null(r);
        assert_true(err.message[0] != 0);
    }
}

/* A set whose every record was rejected: opening it fails, naming the set,
 * instead of giving an epoch of zero batches. */
static void test_empty_set(void **state)
{
    (void)state;
    const char bad[] = "{\"question\": \"how many singers?\", \"sql\": 1}\n"
                       "{\"question\": \"no sql at all\"}\n";
    char *input = ps_test_tmpfile(bad, sizeof bad - 1, ".jsonl");
    char *dir = path_join(g_tmp, "empty");
    build_set_of(input, dir, 1, 16, "db_id");
    ps_reader_options o;
    base_opts(&o);
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_reader_open(dir, &o, NULL, &r, &err), PS_EEMPTY);
    assert_null(r);
    assert_non_null(strstr(err.message, dir));
    assert_non_null(strstr(err.message, "no records"));
    assert_string_equal(ps_err_name(PS_EEMPTY), "PS_EEMPTY");
    unlink(input);
    free(input);
    free(dir);
}

static void test_shuffle_off(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.shuffle = 0;
    o.sort_pool = 1; /* sorting pools apply without shuffle too (docs/READER.md) */
    run a, b;
    epoch_run(g_ref.dir, &o, &a);
    o.epoch = 3;
    o.seed = 99;
    epoch_run(g_ref.dir, &o, &b);
    assert_int_equal(a.n, b.n);
    assert_true(same_digests(&a, 0, &b, 0, a.n)); /* no randomness left */
    expect_exact(&a, 1);
    /* bucket by bucket; within a bucket each shard's records in stored
     * order */
    uint32_t last_seq[8], last_pos[8];
    long last_bucket = -1;
    for (size_t i = 0; i < a.n; i++) {
        assert_true((long)a.v[i].bucket >= last_bucket);
        if ((long)a.v[i].bucket != last_bucket) {
            last_bucket = a.v[i].bucket;
            memset(last_seq, 0, sizeof last_seq);
            memset(last_pos, 0, sizeof last_pos);
            for (int s = 0; s < 8; s++)
                last_pos[s] = UINT32_MAX;
        }
        for (uint32_t j = 0; j < a.v[i].B; j++) {
            const ref_rec *r = &g_ref.v[a.v[i].idx[j]];
            assert_true(r->shard < 8);
            bool after = last_pos[r->shard] == UINT32_MAX || r->seq > last_seq[r->shard] ||
                         (r->seq == last_seq[r->shard] && r->pos > last_pos[r->shard]);
            if (!after)
                fail_msg("shuffle off: record %s (shard %u block %u #%u) after block %u #%u", r->id,
                         r->shard, r->seq, r->pos, last_seq[r->shard], last_pos[r->shard]);
            last_seq[r->shard] = r->seq;
            last_pos[r->shard] = r->pos;
        }
    }
    run_free(&a);
    run_free(&b);
}

/* Blocks a batch's records come from. */
static size_t blocks_of(const cap *c)
{
    uint64_t keys[256];
    size_t n = 0;
    for (uint32_t j = 0; j < c->B && n < 256; j++) {
        const ref_rec *r = &g_ref.v[c->idx[j]];
        uint64_t k = (uint64_t)r->shard << 40 | (uint64_t)r->bucket << 32 | r->seq;
        size_t i = 0;
        while (i < n && keys[i] != k)
            i++;
        if (i == n)
            keys[n++] = k;
    }
    return n;
}

/* shuffle_window bounds the mixing: with one block a window (and no
 * sorting pools), a batch of 8 consecutive records of the bucket's
 * sequence spans few blocks (at most 4: partial blocks are one a shard and
 * bucket); with the default 16-block windows, records of many blocks
 * meet in one batch. */
static void test_shuffle_window(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.batch_size = 8;
    o.sort_pool = 1;
    o.shuffle_window = 1;
    run a, b;
    epoch_run(g_ref.dir, &o, &a);
    o.shuffle_window = 0;
    epoch_run(g_ref.dir, &o, &b);
    expect_exact(&a, 1);
    expect_exact(&b, 1);
    size_t max_a = 0, max_b = 0;
    for (size_t i = 0; i < a.n; i++)
        if (blocks_of(&a.v[i]) > max_a)
            max_a = blocks_of(&a.v[i]);
    for (size_t i = 0; i < b.n; i++)
        if (blocks_of(&b.v[i]) > max_b)
            max_b = blocks_of(&b.v[i]);
    if (max_a > 4 || max_b <= 4)
        fail_msg("blocks in one batch: at most %zu with 1-block windows, %zu with 16", max_a,
                 max_b);
    run_free(&a);
    run_free(&b);
}

static void test_epochs_and_seeds(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.seed = 42;
    run e0, e1, e0b, s2;
    epoch_run(g_ref.dir, &o, &e0);
    o.epoch = 1;
    epoch_run(g_ref.dir, &o, &e1);
    o.epoch = 0;
    o.seed = 43;
    epoch_run(g_ref.dir, &o, &s2);
    expect_exact(&e1, 1);
    expect_exact(&s2, 1);
    assert_false(e0.n == e1.n && same_digests(&e0, 0, &e1, 0, e0.n));
    assert_false(e0.n == s2.n && same_digests(&e0, 0, &s2, 0, e0.n));

    /* set_epoch on one reader: the same plans as fresh readers, again and
     * again, and also when switching in the middle of an epoch */
    o.seed = 42;
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    memset(&e0b, 0, sizeof e0b);
    drain(r, &o, &e0b, 5);
    assert_int_equal(ps_reader_set_epoch(r, 1, NULL), 0);
    ps_reader_info in;
    ps_reader_get_info(r, &in);
    assert_int_equal(in.epoch, 1);
    run x;
    memset(&x, 0, sizeof x);
    drain(r, &o, &x, ALL);
    assert_int_equal(x.n, e1.n);
    assert_true(same_digests(&x, 0, &e1, 0, e1.n));
    for (size_t i = 0; i < x.n; i++) {
        assert_int_equal(x.v[i].epoch, 1);
        assert_int_equal(x.v[i].step, i);
    }
    run_free(&x);
    assert_int_equal(ps_reader_set_epoch(r, 0, NULL), 0);
    memset(&x, 0, sizeof x);
    drain(r, &o, &x, ALL);
    assert_int_equal(x.n, e0.n);
    assert_true(same_digests(&x, 0, &e0, 0, e0.n));
    run_free(&x);
    ps_reader_stats st;
    ps_reader_get_stats(r, &st);
    assert_int_equal(st.batches, 5 + e1.n + e0.n); /* counters survive epochs */
    ps_reader_close(r);
    assert_true(same_digests(&e0b, 0, &e0, 0, 5));
    run_free(&e0);
    run_free(&e1);
    run_free(&e0b);
    run_free(&s2);
}

static void test_set_epoch_while_holding(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.prefetch = 4;
    run e1;
    o.epoch = 1;
    epoch_run(g_ref.dir, &o, &e1);
    o.epoch = 0;
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    const ps_batch *held = NULL;
    assert_int_equal(ps_reader_next(r, &held, NULL), 1);
    uint64_t d = batch_digest(held);
    assert_int_equal(ps_reader_set_epoch(r, 1, NULL), 0);
    run x;
    memset(&x, 0, sizeof x);
    drain(r, &o, &x, ALL);
    assert_int_equal(batch_digest(held), d); /* still valid, untouched */
    ps_batch_release(r, held);
    assert_int_equal(x.n, e1.n);
    assert_true(same_digests(&x, 0, &e1, 0, e1.n));
    ps_reader_close(r);
    run_free(&x);
    run_free(&e1);
}

static void test_state_resume(void **state)
{
    (void)state;
    for (int w = 1; w <= 3; w += 2) {
        ps_reader_options o;
        base_opts(&o);
        o.seed = 7;
        o.world_size = w;
        o.rank = w == 1 ? 0 : 1;
        o.epoch = 2;
        run full;
        epoch_run(g_ref.dir, &o, &full);
        size_t ks[] = {0, 1, full.n / 2, full.n - 1, full.n};
        for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
            size_t K = ks[t];
            ps_reader *r = open_ok(g_ref.dir, &o, NULL);
            run head;
            memset(&head, 0, sizeof head);
            drain(r, &o, &head, K);
            assert_int_equal(head.n, K);
            ps_reader_state st;
            memset(&st, 0, sizeof st);
            assert_int_equal(ps_reader_get_state(r, &st), 0);
            assert_int_equal(ps_reader_state_check(st.bytes, sizeof st.bytes, NULL), 0);
            ps_reader_close(r);
            /* The state's seed and epoch win over the options'; threads and
             * prefetch may differ. */
            ps_reader_options o2 = o;
            o2.seed = 1234;
            o2.epoch = 0;
            o2.threads = 4;
            o2.prefetch = 7;
            r = open_ok(g_ref.dir, &o2, &st);
            ps_reader_info in;
            ps_reader_get_info(r, &in);
            assert_int_equal(in.epoch, 2);
            run tail;
            memset(&tail, 0, sizeof tail);
            drain(r, &o2, &tail, ALL);
            if (tail.n != full.n - K || !same_digests(&tail, 0, &full, K, full.n - K))
                fail_msg("world %d: resumed after %zu of %zu batches: %zu batches, not the rest "
                         "of the epoch",
                         w, K, full.n, tail.n);
            for (size_t i = 0; i < tail.n; i++) {
                assert_int_equal(tail.v[i].step, K + i);
                assert_int_equal(tail.v[i].epoch, 2);
            }
            /* and the resumed reader goes on to the next epoch like the
             * original would */
            assert_int_equal(ps_reader_set_epoch(r, 3, NULL), 0);
            run next3, ref3;
            memset(&next3, 0, sizeof next3);
            drain(r, &o2, &next3, 3);
            ps_reader_close(r);
            ps_reader_options o3 = o;
            o3.epoch = 3;
            r = open_ok(g_ref.dir, &o3, NULL);
            memset(&ref3, 0, sizeof ref3);
            drain(r, &o3, &ref3, 3);
            ps_reader_close(r);
            assert_true(same_digests(&next3, 0, &ref3, 0, 3));
            run_free(&next3);
            run_free(&ref3);
            run_free(&head);
            run_free(&tail);
        }
        run_free(&full);
    }
}

static void state_after(const ps_reader_options *o, size_t k, ps_reader_state *st)
{
    ps_reader *r = open_ok(g_ref.dir, o, NULL);
    run h;
    memset(&h, 0, sizeof h);
    drain(r, o, &h, k);
    assert_int_equal(ps_reader_get_state(r, st), 0);
    ps_reader_close(r);
    run_free(&h);
}

static void expect_resume_fails(const char *what, const char *dir, const ps_reader_options *o,
                                const ps_reader_state *st, int want, const char *needle)
{
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_reader_open(dir, o, st, &r, &err);
    if (rc != want)
        fail_msg("resume with %s: %s (%s), expected %s", what, ps_err_name(rc), err.message,
                 ps_err_name(want));
    assert_null(r);
    assert_true(err.message[0] != 0);
    if (needle && !strstr(err.message, needle))
        fail_msg("resume with %s: message '%s' does not name '%s'", what, err.message, needle);
}

static uint64_t bucket_records(uint32_t b)
{
    uint64_t n = 0;
    for (size_t i = 0; i < g_ref.n; i++)
        n += g_ref.v[i].bucket == b;
    return n;
}

/* The batch counts the contract implies, for many batch sizes and worlds:
 * without drop_last G0 = sum over buckets of ceil(records / B) batches,
 * split until divisible, so ceil(G0 / W) a rank (possible while there are
 * records enough: otherwise PS_EUSAGE); with drop_last the full batches
 * only, F = sum of floor(records / B), floor(F / W) a rank. */
static void test_batch_counts(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {1, 7, 16, 100, 1000, 5000};
    static const int worlds[] = {1, 2, 3, 5, 8, 13};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        uint32_t bs = sizes[si];
        uint64_t g0 = 0, full = 0;
        for (uint32_t b = 0; b < g_ref.n_buckets; b++) {
            uint64_t rb = bucket_records(b);
            g0 += (rb + bs - 1) / bs;
            full += rb / bs;
        }
        for (size_t wi = 0; wi < sizeof worlds / sizeof *worlds; wi++) {
            int W = worlds[wi];
            for (int drop = 0; drop <= 1; drop++) {
                uint64_t want = drop ? full / (uint64_t)W : (g0 + (uint64_t)W - 1) / (uint64_t)W;
                bool feasible = drop || want * (uint64_t)W <= g_ref.n;
                run runs[13];
                memset(runs, 0, sizeof runs);
                bool refused = false;
                uint64_t records = 0;
                for (int k = 0; k < W; k++) {
                    ps_reader_options o;
                    base_opts(&o);
                    o.batch_size = bs;
                    o.world_size = W;
                    o.rank = k;
                    o.drop_last = drop;
                    o.seed = bs + (uint64_t)W;
                    ps_reader *r = NULL;
                    ps_error err;
                    ps_error_clear(&err);
                    int rc = ps_reader_open(g_ref.dir, &o, NULL, &r, &err);
                    if (drop && want == 0 && rc == PS_EUSAGE) {
                        refused = true; /* nothing for the ranks: refusing is fine too */
                        break;
                    }
                    if (!feasible) {
                        if (rc != PS_EUSAGE)
                            fail_msg("batch %u world %d: %s, expected PS_EUSAGE (%llu batches "
                                     "a rank need more than %zu records)",
                                     bs, W, ps_err_name(rc), (unsigned long long)want, g_ref.n);
                        break;
                    }
                    if (rc != 0)
                        fail_msg("batch %u world %d drop_last %d rank %d: %s: %s", bs, W, drop,
                                 k, ps_err_name(rc), err.message);
                    drain(r, &o, &runs[k], ALL);
                    ps_reader_close(r);
                    if (runs[k].n != want)
                        fail_msg("batch %u world %d drop_last %d rank %d: %zu batches, expected "
                                 "%llu",
                                 bs, W, drop, k, runs[k].n, (unsigned long long)want);
                    for (size_t i = 0; i < runs[k].n; i++) {
                        assert_int_equal(runs[k].v[i].step, i);
                        assert_true(runs[k].v[i].B <= bs);
                        if (drop)
                            assert_int_equal(runs[k].v[i].B, bs);
                    }
                    records += runs[k].records;
                }
                if (feasible && !refused) {
                    if (drop)
                        assert_int_equal(records, want * (uint64_t)W * bs);
                    else
                        expect_exact(runs, (size_t)W);
                }
                for (int k = 0; k < W; k++)
                    run_free(&runs[k]);
            }
        }
    }
}

/* max_tokens: bucket b's batches hold max(1, budget / padded bound)
 * records, all full but the last of each bucket (world 1). */
static void test_max_tokens_sizes(void **state)
{
    (void)state;
    static const uint64_t budgets[] = {2048, 700, 64};
    static const uint32_t multiples[] = {1, 8, 48};
    for (size_t k = 0; k < 3; k++) {
        ps_reader_options o;
        base_opts(&o);
        o.batch_size = 0;
        o.max_tokens = budgets[k];
        o.pad_multiple = multiples[k];
        run a;
        epoch_run(g_ref.dir, &o, &a);
        expect_exact(&a, 1);
        for (uint32_t b = 0; b < g_ref.n_buckets; b++) {
            uint64_t bs = budgets[k] / round_up(g_ref.bounds[b], multiples[k]);
            if (bs == 0)
                bs = 1;
            uint64_t rb = bucket_records(b), batches = 0, partial = 0;
            for (size_t i = 0; i < a.n; i++) {
                if (a.v[i].bucket != b)
                    continue;
                batches++;
                assert_true(a.v[i].B <= bs);
                partial += a.v[i].B < bs;
            }
            if (batches != (rb + bs - 1) / bs || partial > 1)
                fail_msg("max_tokens %llu pad_multiple %u bucket %u (bound %u, %llu records): "
                         "%llu batches (%llu partial), expected %llu of %llu",
                         (unsigned long long)budgets[k], multiples[k], b, g_ref.bounds[b],
                         (unsigned long long)rb, (unsigned long long)batches,
                         (unsigned long long)partial, (unsigned long long)((rb + bs - 1) / bs),
                         (unsigned long long)bs);
        }
        run_free(&a);
    }
}

/* Resumption at every position of a small plan, with batches still held
 * when the state is taken, after set_epoch, and after a damaged block. */
static void test_state_every_position(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.batch_size = 64;
    o.world_size = 2;
    o.rank = 1;
    o.seed = 21;
    run full;
    epoch_run(g_ref.dir, &o, &full);
    for (size_t K = 0; K <= full.n; K++) {
        ps_reader *r = open_ok(g_ref.dir, &o, NULL);
        /* hold up to two of the delivered batches: they count as consumed */
        const ps_batch *held[2] = {NULL, NULL};
        for (size_t i = 0; i < K; i++) {
            const ps_batch *b = NULL;
            assert_int_equal(ps_reader_next(r, &b, NULL), 1);
            if (i + 2 >= K)
                held[i + 2 - K] = b;
            else
                ps_batch_release(r, b);
        }
        ps_reader_state st;
        assert_int_equal(ps_reader_get_state(r, &st), 0);
        for (int h = 0; h < 2; h++)
            if (held[h])
                ps_batch_release(r, held[h]);
        ps_reader_close(r);
        r = open_ok(g_ref.dir, &o, &st);
        run tail;
        memset(&tail, 0, sizeof tail);
        drain(r, &o, &tail, ALL);
        ps_reader_close(r);
        if (tail.n != full.n - K || !same_digests(&tail, 0, &full, K, full.n - K))
            fail_msg("resume at %zu of %zu (two batches held): %zu batches follow", K, full.n,
                     tail.n);
        run_free(&tail);
    }
    /* set_epoch, then the state before any batch: epoch 4 from its start */
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    run junk;
    memset(&junk, 0, sizeof junk);
    drain(r, &o, &junk, 2);
    assert_int_equal(ps_reader_set_epoch(r, 4, NULL), 0);
    ps_reader_state st;
    assert_int_equal(ps_reader_get_state(r, &st), 0);
    ps_reader_close(r);
    ps_reader_options o4 = o;
    o4.epoch = 4;
    run e4, t4;
    epoch_run(g_ref.dir, &o4, &e4);
    r = open_ok(g_ref.dir, &o, &st);
    memset(&t4, 0, sizeof t4);
    drain(r, &o, &t4, ALL);
    ps_reader_close(r);
    assert_int_equal(t4.n, e4.n);
    assert_true(same_digests(&t4, 0, &e4, 0, e4.n));
    run_free(&junk);
    run_free(&e4);
    run_free(&t4);
    run_free(&full);
}

static void test_state_mismatch(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.world_size = 2;
    ps_reader_state st;
    state_after(&o, 3, &st);
    struct {
        const char *what, *needle;
        void (*edit)(ps_reader_options *);
    } diffs[] = {
        {"another batch size", "batch_size 16", NULL},
        {"another world size", "world_size 2", NULL},
        {"another rank", "rank 0", NULL},
        {"drop_last", "drop_last", NULL},
        {"shuffle off", "shuffle", NULL},
        {"another shuffle window", "shuffle_window", NULL},
        {"another sort pool", "sort_pool", NULL},
        {"another pad multiple", "pad_multiple", NULL},
    };
    for (size_t i = 0; i < sizeof diffs / sizeof *diffs; i++) {
        ps_reader_options x = o;
        switch (i) {
        case 0: x.batch_size = 32; break;
        case 1: x.world_size = 3; break;
        case 2: x.rank = 1; break;
        case 3: x.drop_last = 1; break;
        case 4: x.shuffle = 0; break;
        case 5: x.shuffle_window = 3; break;
        case 6: x.sort_pool = 2; break;
        case 7: x.pad_multiple = 8; break;
        }
        expect_resume_fails(diffs[i].what, g_ref.dir, &x, &st, PS_EINVAL, diffs[i].needle);
    }
    ps_reader_options x = o;
    x.batch_size = 0;
    x.max_tokens = 512;
    expect_resume_fails("max_tokens instead of batch_size", g_ref.dir, &x, &st, PS_EINVAL, NULL);
    expect_resume_fails("another set", g_dir_b, &o, &st, PS_EINVAL, "set");
    /* a damaged state is refused before anything else */
    ps_reader_state bad = st;
    bad.bytes[PS_READER_STATE_BYTES / 2] ^= 0x10;
    expect_resume_fails("a damaged state", g_ref.dir, &o, &bad, PS_EFORMAT, NULL);

    /* what does not decide the plan may differ: the same records in the
     * same batches, in the other dtype, padding value and mode */
    run full;
    epoch_run(g_ref.dir, &o, &full);
    ps_reader_options y = o;
    y.dtype = PS_DTYPE_INT32;
    y.pad_id = 9;
    y.pad_mode = PS_PAD_BUCKET;
    y.threads = 3;
    y.prefetch = 9;
    ps_reader *r = open_ok(g_ref.dir, &y, &st);
    run tail;
    memset(&tail, 0, sizeof tail);
    drain(r, &y, &tail, ALL);
    ps_reader_close(r);
    assert_int_equal(tail.n, full.n - 3);
    for (size_t i = 0; i < tail.n; i++) {
        assert_int_equal(tail.v[i].B, full.v[3 + i].B);
        assert_memory_equal(tail.v[i].idx, full.v[3 + i].idx, tail.v[i].B * sizeof *tail.v[i].idx);
    }
    run_free(&tail);
    run_free(&full);
}

static void test_state_check(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    ps_reader_state st;
    state_after(&o, 2, &st);
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_reader_state_check(st.bytes, sizeof st.bytes, &err), 0);
    /* two readers at the same place give the same bytes */
    ps_reader_state st2;
    state_after(&o, 2, &st2);
    assert_memory_equal(st.bytes, st2.bytes, sizeof st.bytes);
    ps_reader_state st3;
    state_after(&o, 3, &st3);
    assert_memory_not_equal(st.bytes, st3.bytes, sizeof st.bytes);
    size_t undetected = 0;
    for (size_t i = 0; i < PS_READER_STATE_BYTES; i++) {
        static const unsigned char flips[] = {0x01, 0x80, 0xFF};
        for (size_t f = 0; f < sizeof flips; f++) {
            ps_reader_state b = st;
            b.bytes[i] ^= flips[f];
            ps_error_clear(&err);
            int rc = ps_reader_state_check(b.bytes, sizeof b.bytes, &err);
            if (rc == 0) {
                fprintf(stderr, "# state byte %zu ^ 0x%02x not detected\n", i, flips[f]);
                undetected++;
            } else {
                assert_true(rc == PS_EFORMAT || rc == PS_EVERSION);
                assert_true(err.message[0] != 0);
            }
        }
    }
    assert_int_equal(undetected, 0);
    ps_reader_state b = st;
    memcpy(b.bytes, "XXXX", 4); /* wrong magic */
    assert_int_equal(ps_reader_state_check(b.bytes, sizeof b.bytes, &err), PS_EFORMAT);
    for (size_t len = 0; len < PS_READER_STATE_BYTES; len += 7)
        assert_int_equal(ps_reader_state_check(st.bytes, len, &err), PS_EFORMAT);
    assert_int_equal(ps_reader_state_check(st.bytes, PS_READER_STATE_BYTES - 1, &err), PS_EFORMAT);
    static const unsigned char zeros[PS_READER_STATE_BYTES];
    assert_int_equal(ps_reader_state_check(zeros, sizeof zeros, &err), PS_EFORMAT);
}

static void test_elimit(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.prefetch = 3;
    run ref;
    memset(&ref, 0, sizeof ref);
    epoch_run(g_ref.dir, &o, &ref);
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    const ps_batch *held[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ps_reader_next(r, &held[i], NULL), 1);
        assert_int_equal(batch_digest(held[i]), ref.v[i].digest);
    }
    ps_error err;
    ps_error_clear(&err);
    const ps_batch *b = NULL;
    assert_int_equal(ps_reader_next(r, &b, &err), PS_ELIMIT);
    assert_int_equal(err.code, PS_ELIMIT);
    assert_true(err.message[0] != 0);
    assert_int_equal(ps_reader_next(r, &b, &err), PS_ELIMIT); /* and again */
    /* release out of order: the middle one */
    ps_batch_release(r, held[1]);
    assert_int_equal(ps_reader_next(r, &b, &err), 1);
    assert_int_equal(b->step, 3);
    assert_int_equal(batch_digest(b), ref.v[3].digest); /* nothing was lost */
    assert_int_equal(batch_digest(held[0]), ref.v[0].digest);
    assert_int_equal(batch_digest(held[2]), ref.v[2].digest);
    ps_batch_release(r, held[2]);
    ps_batch_release(r, held[0]);
    ps_batch_release(r, b);
    run rest;
    memset(&rest, 0, sizeof rest);
    drain(r, &o, &rest, ALL);
    assert_true(same_digests(&rest, 0, &ref, 4, ref.n - 4));
    assert_int_equal(rest.n, ref.n - 4);
    ps_reader_close(r);
    run_free(&rest);
    run_free(&ref);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void test_stats(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.prefetch = 4;
    o.threads = 1;
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    /* Given time, the ring fills, and taking what is ready does not wait. */
    ps_reader_stats st;
    for (int i = 0; i < 100; i++) {
        ps_reader_get_stats(r, &st);
        if (st.ready == 4)
            break;
        sleep_ms(20);
    }
    assert_int_equal(st.ready, 4);
    assert_int_equal(st.slots, 4);
    uint64_t waits0 = st.waits;
    const ps_batch *held[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(ps_reader_next(r, &held[i], NULL), 1);
    ps_reader_get_stats(r, &st);
    assert_int_equal(st.waits, waits0);
    assert_int_equal(st.ready, 0);
    run rn;
    memset(&rn, 0, sizeof rn);
    for (int i = 0; i < 4; i++) {
        run_add(&rn, held[i], &o);
        ps_batch_release(r, held[i]);
    }
    drain(r, &o, &rn, ALL);
    /* Two more epochs, consumed as fast as possible: the consumer waits. */
    for (uint64_t e = 1; e <= 2; e++) {
        assert_int_equal(ps_reader_set_epoch(r, e, NULL), 0);
        drain(r, &o, &rn, ALL);
    }
    ps_reader_get_stats(r, &st);
    assert_int_equal(st.batches, rn.n);
    assert_int_equal(st.records, rn.records);
    assert_int_equal(st.records, 3 * g_ref.n);
    assert_int_equal(st.tokens, rn.tokens);
    assert_int_equal(st.real_tokens, rn.real_tokens);
    assert_true(st.waits >= 1);
    assert_true(st.wait_ns > 0);
    assert_true(st.wait_ns >= st.waits); /* at least a nanosecond a wait */
    /* one read of each block per epoch */
    assert_int_equal(st.blocks_decoded, 3 * g_ref.n_blocks);
    assert_true(st.block_bytes > 0);
    assert_true(st.raw_bytes > 0);
    assert_int_equal(st.skipped_batches, 0);
    assert_int_equal(st.skipped_records, 0);
    assert_int_equal(st.h2d_bytes, 0);
    ps_reader_close(r);
    run_free(&rn);
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return -1;
    FILE *out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return -1;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out);
}

/* A copy of set A in the fixture directory, without `skip` (may be NULL). */
static char *copy_set(const char *name, const char *skip)
{
    char *dst = path_join(g_tmp, name);
    ps_remove_tree(dst);
    assert_int_equal(mkdir(dst, 0755), 0);
    const char *files[] = {"manifest.json", "shard-00000.mdb", "shard-00001.mdb"};
    for (size_t i = 0; i < 3; i++) {
        if (skip && strcmp(files[i], skip) == 0)
            continue;
        char *a = path_join(g_ref.dir, files[i]), *b = path_join(dst, files[i]);
        assert_int_equal(copy_file(a, b), 0);
        free(a);
        free(b);
    }
    return dst;
}

typedef struct biggest {
    uint32_t bucket, seq;
    size_t len;
    unsigned char head[16];
} biggest;

static int find_biggest(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    biggest *b = user;
    if (len > b->len) {
        b->bucket = bucket;
        b->seq = seq;
        b->len = len;
        memcpy(b->head, data, sizeof b->head);
    }
    return 0;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void test_corrupt_block(void **state)
{
    (void)state;
    char *dir = copy_set("damaged", NULL);
    char *shard = path_join(dir, "shard-00000.mdb");
    ps_error err;
    ps_error_clear(&err);
    /* the largest block of shard 0, located in the file by its first bytes */
    ps_shard *sh = NULL;
    assert_int_equal(ps_shard_open(&sh, shard, &err), 0);
    biggest big;
    memset(&big, 0, sizeof big);
    assert_int_equal(ps_shard_foreach(sh, find_biggest, &big, &err), 0);
    ps_shard_close(sh);
    assert_true(big.len > 64);
    size_t flen;
    unsigned char *file = slurp(shard, &flen);
    size_t at = SIZE_MAX, hits = 0;
    for (size_t i = 0; i + big.len <= flen; i++)
        if (memcmp(file + i, big.head, sizeof big.head) == 0) {
            at = i;
            hits++;
        }
    assert_int_equal(hits, 1);
    file[at + big.len / 2] ^= 0xFF;
    FILE *f = fopen(shard, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file, 1, flen, f), flen);
    assert_int_equal(fclose(f), 0);
    free(file);
    /* the damage is real: the block no longer decodes */
    assert_int_equal(ps_shard_open(&sh, shard, &err), 0);
    const void *data;
    size_t len;
    assert_int_equal(ps_shard_get(sh, big.bucket, big.seq, &data, &len, &err), 1);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    ps_buf scratch;
    ps_buf_init(&scratch);
    ps_block_view v;
    assert_int_equal(ps_block_decode(data, len, dctx, &scratch, &v, &err), PS_ECORRUPT);
    ps_buf_free(&scratch);
    ZSTD_freeDCtx(dctx);
    ps_shard_close(sh);

    size_t in_block = 0;
    bool *damaged = calloc(g_ref.n, sizeof *damaged);
    for (size_t i = 0; i < g_ref.n; i++)
        if (g_ref.v[i].shard == 0 && g_ref.v[i].bucket == big.bucket && g_ref.v[i].seq == big.seq) {
            damaged[i] = true;
            in_block++;
        }
    assert_true(in_block > 0);
    char want[128];
    snprintf(want, sizeof want, "shard-00000.mdb: bucket %u block %u", big.bucket, big.seq);

    /* sort_pool 1 first: every record keeps its place, so the damage
     * touches exactly the batches holding the block's records; then the
     * default pools, where damaged records sort last in their pool */
    for (int pools = 0; pools <= 1; pools++) {
        ps_reader_options o;
        base_opts(&o);
        o.seed = 3;
        o.sort_pool = pools ? 0 : 1;
        run clean;
        epoch_run(g_ref.dir, &o, &clean);
        bool *hit = calloc(clean.n, sizeof *hit); /* clean batches with damaged records */
        size_t n_hit = 0;
        for (size_t i = 0; i < clean.n; i++) {
            for (uint32_t j = 0; j < clean.v[i].B; j++)
                hit[i] |= damaged[clean.v[i].idx[j]];
            n_hit += hit[i];
        }
        assert_true(n_hit > 0);

        /* without skip_corrupt: errors naming the block, and the epoch
         * goes on */
        run dmg;
        memset(&dmg, 0, sizeof dmg);
        ps_reader *r = open_ok(dir, &o, NULL);
        ps_reader_info in;
        ps_reader_get_info(r, &in);
        for (size_t guard = 0;; guard++) {
            assert_true(guard < 10000);
            const ps_batch *b = NULL;
            ps_error_clear(&err);
            int rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                if (rc != PS_ECORRUPT)
                    fail_msg("damaged block: %s: %s", ps_err_name(rc), err.message);
                if (!strstr(err.message, want) || !strstr(err.message, dir))
                    fail_msg("damaged block: message '%s' does not say '%s/%s'", err.message,
                             dir, want);
                dmg.errors++;
                continue;
            }
            run_add(&dmg, b, &o);
            ps_batch_release(r, b);
        }
        ps_reader_close(r);
        assert_int_equal(dmg.n + dmg.errors, in.batches_per_epoch);
        unsigned *seen = calloc(g_ref.n, sizeof *seen);
        for (size_t i = 0; i < dmg.n; i++)
            for (uint32_t j = 0; j < dmg.v[i].B; j++) {
                assert_false(damaged[dmg.v[i].idx[j]]);
                assert_int_equal(seen[dmg.v[i].idx[j]]++, 0);
            }
        if (!pools) {
            /* exactly the batches with damaged records fail; the others
             * are the clean run's, at their steps */
            for (size_t i = 0; i < dmg.n; i++)
                if (hit[dmg.v[i].step])
                    fail_msg("damaged block, sort_pool 1: step %llu holds records of the damaged "
                             "block in the clean run, yet came without an error (%u records, "
                             "%u in the clean run)",
                             (unsigned long long)dmg.v[i].step, dmg.v[i].B,
                             clean.v[dmg.v[i].step].B);
            assert_int_equal(dmg.errors, n_hit);
            for (size_t i = 0; i < dmg.n; i++) {
                assert_true(dmg.v[i].step < clean.n);
                assert_false(hit[dmg.v[i].step]);
                if (dmg.v[i].digest != clean.v[dmg.v[i].step].digest)
                    fail_msg("damaged block, sort_pool 1: batch %llu differs from the clean run's",
                             (unsigned long long)dmg.v[i].step);
            }
        } else {
            assert_true(dmg.errors >= 1);
        }
        free(seen);

        /* with skip_corrupt: every batch comes, without the damaged
         * records; every intact record exactly once */
        o.skip_corrupt = 1;
        run sk;
        memset(&sk, 0, sizeof sk);
        r = open_ok(dir, &o, NULL);
        drain(r, &o, &sk, ALL);
        ps_reader_stats st;
        ps_reader_get_stats(r, &st);
        assert_int_equal(sk.errors, 0);
        assert_int_equal(sk.n, in.batches_per_epoch);
        assert_int_equal(st.skipped_records, in_block);
        assert_int_equal(sk.records + in_block, g_ref.n);
        assert_int_equal(st.records, sk.records);
        seen = calloc(g_ref.n, sizeof *seen);
        for (size_t i = 0; i < sk.n; i++) {
            assert_int_equal(sk.v[i].step, i);
            for (uint32_t j = 0; j < sk.v[i].B; j++)
                seen[sk.v[i].idx[j]]++;
        }
        for (size_t i = 0; i < g_ref.n; i++)
            if (seen[i] != (damaged[i] ? 0u : 1u))
                fail_msg("skip_corrupt: record %s delivered %u times", g_ref.v[i].id, seen[i]);
        free(seen);
        if (!pools) {
            assert_int_equal(st.skipped_batches, n_hit);
            for (size_t i = 0; i < sk.n; i++) {
                if (!hit[i]) {
                    assert_int_equal(sk.v[i].digest, clean.v[i].digest);
                    continue;
                }
                /* the clean batch less its damaged records */
                uint32_t left = 0;
                for (uint32_t j = 0; j < clean.v[i].B; j++)
                    left += !damaged[clean.v[i].idx[j]];
                assert_int_equal(sk.v[i].B, left);
                for (uint32_t j = 0; j < sk.v[i].B; j++) {
                    bool found = false;
                    for (uint32_t k = 0; k < clean.v[i].B && !found; k++)
                        found = clean.v[i].idx[k] == sk.v[i].idx[j];
                    assert_true(found);
                }
            }
        } else {
            assert_true(st.skipped_batches >= 1);
        }
        /* and the next epoch runs too */
        assert_int_equal(ps_reader_set_epoch(r, 1, NULL), 0);
        run sk1;
        memset(&sk1, 0, sizeof sk1);
        drain(r, &o, &sk1, ALL);
        assert_int_equal(sk1.errors, 0);
        assert_int_equal(sk1.records + in_block, g_ref.n);
        ps_reader_close(r);
        run_free(&sk1);
        run_free(&sk);
        run_free(&dmg);
        run_free(&clean);
        free(hit);
    }
    free(damaged);
    free(shard);
    ps_remove_tree(dir);
    free(dir);
}

/* Shard files truncated while open (cp or rsync --inplace over a live
 * set): a reader that mapped them died of SIGBUS; now every read of a lost
 * block is PS_ECORRUPT naming the shard, and skip_corrupt counts what it
 * skips. */
static void truncate_shards(const char *dir, off_t size)
{
    for (int k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "shard-0000%d.mdb", k);
        char *p = path_join(dir, name);
        assert_int_equal(truncate(p, size), 0);
        free(p);
    }
}

static void test_truncated_while_open(void **state)
{
    (void)state;
    char *dir = copy_set("truncated", NULL);
    char *shard = path_join(dir, "shard-00000.mdb");
    ps_error err;
    ps_error_clear(&err);
    /* the shard layer: open, then the file shrinks to half */
    ps_shard *sh = NULL;
    assert_int_equal(ps_shard_open(&sh, shard, &err), 0);
    uint64_t bytes = ps_shard_file_bytes(sh);
    assert_int_equal(truncate(shard, (off_t)(bytes / 2)), 0);
    biggest big;
    memset(&big, 0, sizeof big);
    assert_int_equal(ps_shard_foreach(sh, find_biggest, &big, &err), PS_ECORRUPT);
    if (!strstr(err.message, shard) || !strstr(err.message, "truncated while open"))
        fail_msg("foreach on a truncated shard: '%s'", err.message);
    ps_shard_close(sh);

    for (int skip = 0; skip <= 1; skip++) {
        free(copy_set("truncated", NULL));
        ps_reader_options o;
        base_opts(&o);
        o.skip_corrupt = skip;
        ps_reader *r = open_ok(dir, &o, NULL);
        const ps_batch *b = NULL;
        assert_int_equal(ps_reader_next(r, &b, &err), 1); /* both shards open by now */
        ps_batch_release(r, b);
        truncate_shards(dir, 0);
        size_t errors = 0, batches = 1;
        for (size_t guard = 0;; guard++) {
            assert_true(guard < 10000);
            ps_error_clear(&err);
            int rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                if (rc != PS_ECORRUPT || !strstr(err.message, "truncated while open") ||
                    !strstr(err.message, dir))
                    fail_msg("truncated shards: %s: %s", ps_err_name(rc), err.message);
                errors++;
                continue;
            }
            batches++;
            ps_batch_release(r, b);
        }
        ps_reader_stats st;
        ps_reader_get_stats(r, &st);
        ps_reader_close(r);
        if (skip) {
            assert_int_equal(errors, 0);
            assert_true(st.skipped_records > 0);
        } else {
            assert_true(errors > 0);
        }
    }
    free(shard);
    ps_remove_tree(dir);
    free(dir);
}

/* A copy of set A whose manifest is edited by `edit`. */
static char *copy_set_edited(const char *name, void (*edit)(json_t *m))
{
    char *dir = copy_set(name, NULL);
    char *mf = path_join(dir, "manifest.json");
    json_error_t je;
    json_t *m = json_load_file(mf, 0, &je);
    assert_non_null(m);
    edit(m);
    assert_int_equal(json_dump_file(m, mf, JSON_COMPACT | JSON_PRESERVE_ORDER), 0);
    json_decref(m);
    free(mf);
    return dir;
}

static void edit_vocab(json_t *m)
{
    json_object_set_new(json_object_get(m, "tokenizer"), "vocab_size", json_integer(1000));
}

static void edit_labels(json_t *m)
{
    json_t *l = json_object_get(m, "labels");
    while (json_array_size(l) > 5)
        json_array_remove(l, json_array_size(l) - 1);
}

static void edit_bound(json_t *m)
{
    json_array_set_new(json_object_get(m, "buckets"), 0, json_integer(20));
    json_t *tb = json_array_get(json_object_get(json_object_get(m, "totals"), "buckets"), 0);
    json_object_set_new(tb, "bound", json_integer(20));
}

static void edit_count(json_t *m)
{
    json_t *b = json_array_get(
        json_object_get(json_array_get(json_object_get(m, "shards"), 0), "buckets"), 0);
    json_object_set_new(b, "records",
                        json_integer(json_integer_value(json_object_get(b, "records")) + 1));
}

static void scale(json_t *o, const char *key, json_int_t f)
{
    json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) * f));
}

/* Claims a billion times the records in a million times the blocks,
 * consistently everywhere. */
static void edit_huge(json_t *m)
{
    json_t *objs[2] = {json_object_get(m, "totals"), NULL};
    size_t i;
    json_t *sh;
    json_array_foreach(json_object_get(m, "shards"), i, sh) {
        objs[1] = sh;
        for (int k = 0; k < 2; k++) {
            if (k == 0 && i > 0)
                continue;
            scale(objs[k], "records", 1000000000);
            scale(objs[k], "blocks", 1000000);
            size_t j;
            json_t *b;
            json_array_foreach(json_object_get(objs[k], "buckets"), j, b) {
                scale(b, "records", 1000000000);
                scale(b, "blocks", 1000000);
            }
        }
    }
}

/* A manifest claiming far more blocks than its files can hold is refused
 * at open, before anything is allocated for the claim. */
static void test_manifest_huge(void **state)
{
    (void)state;
    char *dir = copy_set_edited("huge", edit_huge);
    ps_reader_options o;
    base_opts(&o);
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_reader_open(dir, &o, NULL, &r, &err);
    if (rc >= 0 || !strstr(err.message, "shard-0000"))
        fail_msg("a manifest claiming 10^12 records: %s '%s'", ps_err_name(rc), err.message);
    assert_null(r);
    ps_remove_tree(dir);
    free(dir);
}

/* The reader checks every decoded block against the manifest's claims
 * (vocabulary size, labels, bucket bounds): a manifest that lies makes
 * the batches needing a contradicting block fail, naming it and why. */
static void test_manifest_claims(void **state)
{
    (void)state;
    struct {
        const char *name;
        void (*edit)(json_t *);
        const char *why;
        bool all_fail;
    } cases[] = {
        {"vocab", edit_vocab, "vocabulary size 1000", true},
        {"labels", edit_labels, "label", true},
        {"bound", edit_bound, "outside the bucket", false},
        {"count", edit_count, "the manifest says", false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *dir = copy_set_edited(cases[c].name, cases[c].edit);
        ps_reader_options o;
        base_opts(&o);
        ps_reader *r = open_ok(dir, &o, NULL);
        ps_reader_info in;
        ps_reader_get_info(r, &in);
        size_t errors = 0, delivered = 0;
        for (size_t guard = 0;; guard++) {
            assert_true(guard < 100000);
            const ps_batch *b = NULL;
            ps_error err;
            ps_error_clear(&err);
            int rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc == 1) {
                long idx[64];
                assert_true(b->B <= 64);
                check_batch(b, &o, idx);
                if (cases[c].edit == edit_bound)
                    assert_int_not_equal(b->bucket, 0);
                delivered++;
                ps_batch_release(r, b);
                continue;
            }
            if (rc != PS_ECORRUPT || !strstr(err.message, dir) ||
                !strstr(err.message, "/shard-0000") || !strstr(err.message, ": bucket ") ||
                !strstr(err.message, " block ") || !strstr(err.message, cases[c].why))
                fail_msg("manifest edit %s: %s '%s'", cases[c].name, ps_err_name(rc), err.message);
            if (cases[c].edit == edit_bound)
                assert_non_null(strstr(err.message, ": bucket 0 block "));
            errors++;
        }
        ps_reader_close(r);
        assert_int_equal(errors + delivered, in.batches_per_epoch);
        if (cases[c].all_fail)
            assert_int_equal(delivered, 0);
        else
            assert_true(delivered > 0 && errors > 0);
        /* skip_corrupt: the epoch completes, everything counted */
        o.skip_corrupt = 1;
        run sk;
        memset(&sk, 0, sizeof sk);
        r = open_ok(dir, &o, NULL);
        drain(r, &o, &sk, ALL);
        ps_reader_stats st;
        ps_reader_get_stats(r, &st);
        ps_reader_close(r);
        assert_int_equal(sk.errors, 0);
        assert_int_equal(sk.n, in.batches_per_epoch); /* short or empty, never missing */
        assert_int_equal(st.skipped_batches, errors);
        assert_int_equal(st.skipped_records + sk.records, in.records_total);
        run_free(&sk);
        ps_remove_tree(dir);
        free(dir);
    }
}

static void truncate_half(const char *dir, const char *name)
{
    char *p = path_join(dir, name);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(truncate(p, st.st_size / 2), 0);
    free(p);
}

/* A missing or truncated shard: the batches needing it fail (naming it),
 * the others are delivered intact. */
static void test_missing_shard(void **state)
{
    (void)state;
    for (int trunc = 0; trunc <= 1; trunc++) {
        char *dir = copy_set(trunc ? "truncated" : "missing", trunc ? NULL : "shard-00001.mdb");
        if (trunc)
            truncate_half(dir, "shard-00001.mdb");
        ps_reader_options o;
        base_opts(&o);
        ps_reader *r = NULL;
        ps_error err;
        ps_error_clear(&err);
        int rc = ps_reader_open(dir, &o, NULL, &r, &err);
        if (rc == 0) {
            run rn;
            memset(&rn, 0, sizeof rn);
            drain(r, &o, &rn, ALL);
            ps_reader_close(r);
            assert_true(rn.errors >= 1);
            if (!strstr(rn.first_message, "shard-00001.mdb"))
                fail_msg("%s shard: message '%s' does not name it", trunc ? "truncated" : "missing",
                         rn.first_message);
            for (size_t i = 0; i < rn.n; i++)
                for (uint32_t j = 0; j < rn.v[i].B; j++)
                    assert_int_equal(g_ref.v[rn.v[i].idx[j]].shard, 0);
            run_free(&rn);
        } else {
            /* refusing at open is allowed too, if it says which file */
            assert_true(rc < 0);
            assert_non_null(strstr(err.message, "shard-00001.mdb"));
        }
        ps_remove_tree(dir);
        free(dir);
    }
}

static void test_bad_dir(void **state)
{
    (void)state;
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    char *nowhere = path_join(g_tmp, "no-such-set");
    assert_int_equal(ps_reader_open(nowhere, NULL, NULL, &r, &err), PS_ENOENT);
    assert_null(r);
    assert_int_equal(err.code, PS_ENOENT);
    assert_non_null(strstr(err.message, "no-such-set"));
    /* an empty directory, then a manifest that is not one */
    assert_int_equal(mkdir(nowhere, 0755), 0);
    assert_int_equal(ps_reader_open(nowhere, NULL, NULL, &r, &err), PS_ENOENT);
    char *mf = path_join(nowhere, "manifest.json");
    FILE *f = fopen(mf, "w");
    fputs("{\"format\": \"pairshard\", \"format_version\": \"one\"}", f);
    fclose(f);
    ps_error_clear(&err);
    assert_int_equal(ps_reader_open(nowhere, NULL, NULL, &r, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "manifest.json"));
    assert_int_equal(ps_reader_open(nowhere, NULL, NULL, &r, NULL), PS_EFORMAT); /* err optional */
    free(mf);
    ps_remove_tree(nowhere);
    free(nowhere);
}

static void test_env_rank(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.world_size = 3;
    o.rank = 2;
    run want;
    epoch_run(g_ref.dir, &o, &want);
    o.rank = PS_FROM_ENV;
    o.world_size = PS_FROM_ENV;
    setenv("RANK", "2", 1);
    setenv("WORLD_SIZE", "3", 1);
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    ps_reader_info in;
    ps_reader_get_info(r, &in);
    assert_int_equal(in.rank, 2);
    assert_int_equal(in.world_size, 3);
    run got;
    memset(&got, 0, sizeof got);
    drain(r, &o, &got, ALL);
    ps_reader_close(r);
    assert_int_equal(got.n, want.n);
    assert_true(same_digests(&got, 0, &want, 0, want.n));
    /* out of range in the environment */
    setenv("RANK", "3", 1);
    ps_error err;
    ps_error_clear(&err);
    r = NULL;
    assert_int_equal(ps_reader_open(g_ref.dir, &o, NULL, &r, &err), PS_EUSAGE);
    assert_true(err.message[0] != 0);
    /* not numbers */
    static const char *const junk[][2] = {{"abc", "3"}, {"1", "4x"}, {"-1", "3"}, {"1", "two"},
                                          {"0", ""},    {" 1", "3"}, {"+1", "3"}};
    for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
        setenv("RANK", junk[i][0], 1);
        setenv("WORLD_SIZE", junk[i][1], 1);
        ps_error_clear(&err);
        r = NULL;
        int rc = ps_reader_open(g_ref.dir, &o, NULL, &r, &err);
        if (rc != PS_EUSAGE)
            fail_msg("RANK='%s' WORLD_SIZE='%s': %s, expected PS_EUSAGE", junk[i][0], junk[i][1],
                     ps_err_name(rc));
        assert_true(strstr(err.message, "RANK") != NULL || strstr(err.message, "WORLD_SIZE"));
    }
    /* unset: rank 0 of 1 */
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    r = open_ok(g_ref.dir, &o, NULL);
    ps_reader_get_info(r, &in);
    assert_int_equal(in.rank, 0);
    assert_int_equal(in.world_size, 1);
    ps_reader_close(r);
    run_free(&want);
    run_free(&got);
}

static void test_device_fallback(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.device = 0;
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    ps_reader_info in;
    ps_reader_get_info(r, &in);
    run rn;
    memset(&rn, 0, sizeof rn);
    if (in.device == -1) {
        /* no usable GPU: host batches, and require_device refuses */
        const ps_batch *b = NULL;
        assert_int_equal(ps_reader_next(r, &b, NULL), 1);
        assert_int_equal(b->device, PS_DEVICE_HOST);
        assert_null(b->d_input_ids);
        assert_null(b->ready_event);
        ps_batch_release(r, b);
        ps_reader_close(r);
        o.require_device = 1;
        ps_error err;
        ps_error_clear(&err);
        r = NULL;
        assert_int_equal(ps_reader_open(g_ref.dir, &o, NULL, &r, &err), PS_EUSAGE);
        assert_true(err.message[0] != 0);
    } else {
        assert_int_equal(in.device, 0);
        drain(r, &o, &rn, ALL);
        expect_exact(&rn, 1);
        ps_reader_stats st;
        ps_reader_get_stats(r, &st);
        assert_true(st.h2d_bytes > 0);
        ps_reader_close(r);
    }
    run_free(&rn);
    /* mlock is best effort: never an error */
    base_opts(&o);
    o.mlock = 1;
    run a;
    epoch_run(g_ref.dir, &o, &a);
    expect_exact(&a, 1);
    run_free(&a);
}

typedef struct par_arg {
    int rank, world;
    unsigned *seen;   /* per reference record */
    size_t unknown;   /* ids not in the set */
    run rn;
} par_arg;

static void *par_main(void *p)
{
    par_arg *a = p;
    ps_reader_options o;
    base_opts(&o);
    o.rank = a->rank;
    o.world_size = a->world;
    o.threads = 3;
    o.prefetch = 3;
    ps_reader *r = NULL;
    if (ps_reader_open(g_ref.dir, &o, NULL, &r, NULL) != 0)
        return NULL;
    for (uint64_t e = 0; e < 2; e++) {
        if (e)
            ps_reader_set_epoch(r, e, NULL);
        for (;;) {
            const ps_batch *b = NULL;
            int rc = ps_reader_next(r, &b, NULL);
            if (rc <= 0)
                break;
            /* only counting here: cmocka asserts are not thread-safe */
            for (uint32_t i = 0; i < b->B; i++) {
                long k = ref_find(&g_ref, b->ids[i]);
                if (k < 0)
                    a->unknown++;
                else
                    a->seen[k]++;
            }
            a->rn.records += b->B;
            a->rn.real_tokens += b->real_tokens;
            ps_batch_release(r, b);
        }
    }
    ps_reader_close(r);
    return a;
}

static void test_readers_in_threads(void **state)
{
    (void)state;
    enum { W = 4 };
    pthread_t th[W];
    par_arg args[W];
    for (int k = 0; k < W; k++) {
        memset(&args[k], 0, sizeof args[k]);
        args[k].rank = k;
        args[k].world = W;
        args[k].seen = calloc(g_ref.n, sizeof *args[k].seen);
        assert_int_equal(pthread_create(&th[k], NULL, par_main, &args[k]), 0);
    }
    uint64_t records = 0, tokens = 0, want_tokens = 0;
    for (int k = 0; k < W; k++) {
        void *res = NULL;
        pthread_join(th[k], &res);
        assert_non_null(res);
        records += args[k].rn.records;
        tokens += args[k].rn.real_tokens;
    }
    for (size_t i = 0; i < g_ref.n; i++) {
        want_tokens += g_ref.v[i].len;
        unsigned total = 0;
        for (int k = 0; k < W; k++)
            total += args[k].seen[i];
        if (total != 2)
            fail_msg("4 readers in threads, 2 epochs: record %s delivered %u times",
                     g_ref.v[i].id, total);
    }
    for (int k = 0; k < W; k++) {
        assert_int_equal(args[k].unknown, 0);
        free(args[k].seen);
    }
    assert_int_equal(records, 2 * g_ref.n);
    assert_int_equal(tokens, 2 * want_tokens);
}

static void test_open_close_churn(void **state)
{
    (void)state;
    /* closing at every stage: nothing taken, batches held, mid-epoch */
    for (int i = 0; i < 24; i++) {
        ps_reader_options o;
        base_opts(&o);
        o.threads = 1 + i % 4;
        o.prefetch = 2 + i % 7;
        o.seed = (uint64_t)i;
        ps_reader *r = open_ok(g_ref.dir, &o, NULL);
        const ps_batch *b[3];
        int take = i % 4;
        for (int k = 0; k < take && k < o.prefetch; k++)
            assert_int_equal(ps_reader_next(r, &b[k], NULL), 1);
        if (i % 5 == 0 && take)
            ps_batch_release(r, b[0]);
        ps_reader_close(r); /* held batches freed too */
    }
}

int main(void)
{
    /* A reader that deadlocks fails the suite instead of hanging it. */
    alarm(900);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_defaults),
        cmocka_unit_test(test_open_close),
        cmocka_unit_test(test_cover_world1),
        cmocka_unit_test(test_world_sizes),
        cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_drop_last),
        cmocka_unit_test(test_threads_prefetch_invariance),
        cmocka_unit_test(test_arrays_dtypes),
        cmocka_unit_test(test_unlabeled),
        cmocka_unit_test(test_padding_modes),
        cmocka_unit_test(test_sort_pool),
        cmocka_unit_test(test_max_tokens),
        cmocka_unit_test(test_max_tokens_sizes),
        cmocka_unit_test(test_batch_counts),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_empty_set),
        cmocka_unit_test(test_shuffle_off),
        cmocka_unit_test(test_shuffle_window),
        cmocka_unit_test(test_epochs_and_seeds),
        cmocka_unit_test(test_set_epoch_while_holding),
        cmocka_unit_test(test_state_resume),
        cmocka_unit_test(test_state_every_position),
        cmocka_unit_test(test_state_mismatch),
        cmocka_unit_test(test_state_check),
        cmocka_unit_test(test_elimit),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_manifest_huge),
        cmocka_unit_test(test_bad_dir),
        cmocka_unit_test(test_env_rank),
        cmocka_unit_test(test_device_fallback),
        cmocka_unit_test(test_readers_in_threads),
        cmocka_unit_test(test_open_close_churn),
        /* damaged data last: a crash there loses no other result */
        cmocka_unit_test(test_missing_shard),
        cmocka_unit_test(test_manifest_claims),
        cmocka_unit_test(test_corrupt_block),
        cmocka_unit_test(test_truncated_while_open),
    };
    return cmocka_run_group_tests_name("reader", tests, group_setup, group_teardown);
}
