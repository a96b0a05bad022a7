/* The reader tests' fixture: three shard sets built from Spider dev, every
 * record of set A decoded straight from the shards (store/shards.h) as the
 * reference each batch is compared with, and the helpers that drain a
 * reader into a run of batch digests. Shared by tests/test_reader_*.c. */
#include "tests/support/reader_fixture.h"

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

char *g_tmp;       /* the fixture's directory */
ref_set g_ref;     /* set A: 2 shards, 16-record blocks */
char *g_dir_b;     /* set B: the same input stored differently */
char *g_dir_c;     /* set C: set A without labels */
bool g_unlabeled;  /* check_batch: every label must be -1 */

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    assert_non_null(p);
    return p;
}

char *path_join(const char *a, const char *b)
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

void ref_load(ref_set *s, const char *dir)
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

void ref_free(ref_set *s)
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

long ref_find(const ref_set *s, const char *id)
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

void build_set_of(const char *in, const char *out, size_t shards, size_t block_records,
                  const char *label)
{
    ps_test_build_opts o = {.label_field = label, .shards = shards, .block_records = block_records};
    ps_test_build(in, out, &o);
}

void build_gen_set(const char *in, const char *out, int layout, const char *tokenizer,
                   size_t max_length, size_t shards, size_t block_records, const char *label)
{
    ps_build_config cfg;
    ps_build_config_init(&cfg);
    ps_error err;
    ps_error_clear(&err);
    char *input = xstrdup(in); /* ps_test_data's buffer is reused below */
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/%s", tokenizer);
    char *tpath = xstrdup(ps_test_data(rel));
    char *tables = xstrdup(ps_test_data("spider/tables.json"));
    ps_tokenizer *tok = NULL;
    ps_schemas *sc = NULL;
    ps_template *tm = NULL;
    if (ps_tokenizer_load_json(tpath, &tok, &err) || ps_schemas_create(&sc, &err) ||
        ps_schemas_load_tables(sc, tables, &err) || ps_template_open("ddl", &tm, &err))
        fail_msg("build %s: %s", out, err.message);
    const char *inputs[1] = {input};
    const char *schema_paths[1] = {tables};
    cfg.inputs = inputs;
    cfg.n_inputs = 1;
    cfg.out_dir = out;
    cfg.clean.label_field = label;
    cfg.schemas = sc;
    cfg.tmpl = tm;
    cfg.schema_paths = schema_paths;
    cfg.n_schema_paths = 1;
    cfg.tokenizer = tok;
    cfg.vocab_path = tpath;
    cfg.vocab_kind = "tokenizer.json";
    cfg.max_length = max_length;
    cfg.layout = layout;
    cfg.shards = shards;
    cfg.block_records = block_records;
    cfg.threads = 2;
    ps_build_summary sum;
    memset(&sum, 0, sizeof sum);
    if (ps_build_run(&cfg, &sum, &err))
        fail_msg("build %s: %s", out, err.message);
    if (sum.gate_failed)
        fail_msg("build %s: the gate failed: %s", out,
                 sum.report_summary ? sum.report_summary : "?");
    free(sum.report_summary);
    ps_template_free(tm);
    ps_schemas_free(sc);
    ps_tokenizer_free(tok);
    free(tpath);
    free(tables);
    free(input);
}

static void build_set(const char *out, size_t shards, size_t block_records, const char *label)
{
    build_set_of(ps_test_data("spider/dev.json"), out, shards, block_records, label);
}

char *reader_fixture_tmpdir(const char *prefix)
{
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    return ps_test_tmpdir(prefix);
}

int reader_fixture_setup(void **state)
{
    (void)state;
    if (!(g_tmp = reader_fixture_tmpdir("ps-reader")))
        return -1;
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

int reader_fixture_teardown(void **state)
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
uint64_t batch_digest(const ps_batch *b)
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

uint32_t round_up(uint32_t v, uint32_t m)
{
    return m <= 1 ? v : (v + m - 1) / m * m;
}

/* Checks every array of `b` against the reference; returns the number of
 * failed checks (0) and records the record indices in idx[] (B entries). */
void check_batch(const ps_batch *b, const ps_reader_options *o, long *idx)
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

void run_free(run *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].idx);
    free(r->v);
    memset(r, 0, sizeof *r);
}

void run_add(run *rn, const ps_batch *b, const ps_reader_options *o)
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

/* Takes up to `max` batches (ALL: the rest of the epoch), releasing each;
 * errors are counted, not fatal. */
void drain(ps_reader *r, const ps_reader_options *o, run *rn, size_t max)
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

int open_rc(const char *dir, const ps_reader_options *o, ps_reader **r, ps_error *err)
{
    *r = NULL;
    ps_error_clear(err);
    return ps_reader_open(dir, o, NULL, r, err);
}

ps_reader *open_ok(const char *dir, const ps_reader_options *o, const ps_reader_state *st)
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

ps_reader *open_info(const char *dir, const ps_reader_options *o, ps_reader_info *in)
{
    ps_reader *r = open_ok(dir, o, NULL);
    ps_reader_get_info(r, in);
    return r;
}

void expect_host_fallback(ps_reader *r, const char *dir, const ps_reader_options *o,
                          ps_error *err)
{
    const ps_batch *b = NULL;
    assert_int_equal(ps_reader_next(r, &b, NULL), 1);
    assert_int_equal(b->device, PS_DEVICE_HOST);
    assert_null(b->d_input_ids);
    assert_null(b->ready_event);
    ps_batch_release(r, b);
    ps_reader_close(r);
    ps_reader_options req = *o;
    req.require_device = 1;
    r = NULL;
    assert_int_equal(open_rc(dir, &req, &r, err), PS_EUSAGE);
    assert_null(r);
    assert_true(err->message[0] != 0);
}

/* One whole epoch of `o` on `dir`. */
void epoch_run(const char *dir, const ps_reader_options *o, run *rn)
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

void base_opts(ps_reader_options *o)
{
    ps_reader_options_init(o);
    o->batch_size = 16;
    o->rank = 0;
    o->world_size = 1;
}

/* Every record delivered exactly once over runs[0..n). */
void expect_exact(run *runs, size_t n)
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

bool same_digests(const run *a, size_t a0, const run *b, size_t b0, size_t n)
{
    if (a->n < a0 + n || b->n < b0 + n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (a->v[a0 + i].digest != b->v[b0 + i].digest)
            return false;
    return true;
}
