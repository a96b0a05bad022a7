/* The generator layouts' batches (docs/READER.md, "Layouts" and
 * "Packing") on sets built from Spider dev with schema prompts (ddl
 * template, tests/data/spider/tables.json): causal with gpt2, unpacked and
 * packed, and seq2seq with t5-small. Every array is checked element by
 * element against the records decoded straight from the shards. */
#include "tests/support/reader_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *g_dir;
static ref_set g_causal, g_s2s;

static int setup(void **state)
{
    (void)state;
    if (!(g_dir = reader_fixture_tmpdir("ps-layouts")))
        return -1;
    char *c = path_join(g_dir, "causal"), *s = path_join(g_dir, "s2s");
    build_gen_set(ps_test_data("spider/dev.json"), c, PS_LAYOUT_CAUSAL, "gpt2.tokenizer.json",
                  2048, 2, 32, "db_id");
    build_gen_set(ps_test_data("spider/dev.json"), s, PS_LAYOUT_SEQ2SEQ, "t5-small.tokenizer.json",
                  1024, 1, 64, "db_id");
    ref_load(&g_causal, c);
    ref_load(&g_s2s, s);
    free(c);
    free(s);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ref_free(&g_causal);
    ref_free(&g_s2s);
    ps_remove_tree(g_dir);
    free(g_dir);
    return 0;
}

static int64_t el(const ps_batch *b, const void *a, size_t i)
{
    return b->dtype == PS_DTYPE_INT32 ? ((const int32_t *)a)[i] : ((const int64_t *)a)[i];
}

static void opts(ps_reader_options *o)
{
    ps_reader_options_init(o);
    o->rank = 0;
    o->world_size = 1;
    o->seed = 7;
    o->batch_size = 8;
}

/* Checks a causal batch (packed or not) against the reference: every
 * segment's tokens are its record's, from column 0 of its row, right
 * after the row's previous segment; labels -100 on its prompt, the token
 * on its completion; positions from 0; padding only at a row's end. Marks
 * the records seen. */
static void check_causal(const ps_batch *b, const ps_reader_options *o, unsigned char *seen)
{
    assert_int_equal(b->layout, PS_LAYOUT_CAUSAL);
    assert_null(b->token_type_ids);
    assert_non_null(b->position_ids);
    assert_null(b->target_lens);
    assert_null(b->decoder_input_ids);
    if (!o->pack)
        assert_int_equal(b->n_segments, b->B);
    else
        assert_int_equal(b->T, o->pack);
    const int64_t *lab = b->labels;
    uint32_t row = 0, col = 0, maxlen = 0;
    uint64_t real = 0;
    assert_int_equal(b->cu_seqlens[0], 0);
    for (uint32_t i = 0; i < b->n_segments; i++) {
        long k = ref_find(&g_causal, b->ids[i]);
        assert_true(k >= 0);
        const ref_rec *rr = &g_causal.v[k];
        assert_int_equal(seen[k], 0);
        seen[k] = 1;
        uint32_t r = (uint32_t)el(b, b->seg_rows, i);
        assert_true(r >= row && r < b->B); /* ascending */
        if (r != row || i == 0) {
            /* the previous row ends here: padding to T */
            col = 0;
            row = r;
        }
        assert_int_equal(el(b, b->seq_lens, i), rr->len);
        assert_int_equal(el(b, b->prompt_lens, i), rr->tb);
        assert_int_equal(b->cu_seqlens[i + 1], b->cu_seqlens[i] + (int32_t)rr->len);
        int64_t want_label = rr->label == PS_LABEL_NONE ? -1 : (int64_t)rr->label;
        assert_int_equal(((const int64_t *)b->class_labels)[i], want_label);
        assert_true(col + rr->len <= b->T);
        for (uint32_t t = 0; t < rr->len; t++) {
            size_t at = (size_t)r * b->T + col + t;
            assert_int_equal(el(b, b->input_ids, at), rr->tok[t]);
            assert_int_equal(el(b, b->attention_mask, at), 1);
            assert_int_equal(el(b, b->position_ids, at), t);
            assert_int_equal(lab[at], t < rr->tb ? -100 : rr->tok[t]);
        }
        col += rr->len;
        maxlen = rr->len > maxlen ? rr->len : maxlen;
        real += rr->len;
    }
    assert_int_equal(b->max_seqlen, maxlen);
    assert_int_equal(b->real_tokens, real);
    /* Padding: after each row's length, nothing but padding. */
    for (uint32_t r = 0; r < b->B; r++) {
        int64_t len = el(b, b->lengths, r);
        uint64_t sum = 0;
        for (uint32_t i = 0; i < b->n_segments; i++)
            if ((uint32_t)el(b, b->seg_rows, i) == r)
                sum += (uint64_t)el(b, b->seq_lens, i);
        assert_int_equal(len, sum);
        assert_true(len > 0);
        for (uint32_t t = (uint32_t)len; t < b->T; t++) {
            size_t at = (size_t)r * b->T + t;
            assert_int_equal(el(b, b->input_ids, at), o->pad_id);
            assert_int_equal(el(b, b->attention_mask, at), 0);
            assert_int_equal(el(b, b->position_ids, at), 0);
            assert_int_equal(lab[at], -100);
        }
    }
}

/* One epoch of `o` on the causal set, every batch checked; returns the
 * records delivered and (when info) the reader's info. */
static size_t causal_epoch(const ps_reader_options *o, unsigned char *seen, ps_reader_info *info)
{
    char *dir = g_causal.dir;
    ps_reader *r = open_ok(dir, o, NULL);
    if (info)
        ps_reader_get_info(r, info);
    const ps_batch *b;
    ps_error err;
    size_t n = 0;
    int rc;
    while ((rc = ps_reader_next(r, &b, &err)) == 1) {
        check_causal(b, o, seen);
        n += b->n_segments;
        ps_batch_release(r, b);
    }
    assert_int_equal(rc, 0);
    ps_reader_close(r);
    return n;
}

static void test_causal_unpacked(void **state)
{
    (void)state;
    for (int dt = 0; dt < 2; dt++) {
        ps_reader_options o;
        opts(&o);
        o.dtype = dt ? PS_DTYPE_INT32 : PS_DTYPE_INT64;
        o.pad_id = 50256;
        o.pad_multiple = dt ? 8 : 1;
        unsigned char *seen = calloc(g_causal.n, 1);
        ps_reader_info in;
        assert_int_equal(causal_epoch(&o, seen, &in), g_causal.n);
        assert_int_equal(in.layout, PS_LAYOUT_CAUSAL);
        assert_int_equal(in.pack, 0);
        assert_int_equal(in.rows_per_epoch, g_causal.n);
        free(seen);
    }
}

static void test_causal_packed(void **state)
{
    (void)state;
    ps_reader_options o;
    opts(&o);
    o.pack = 2048;
    o.batch_size = 4;
    o.threads = 3;
    unsigned char *seen = calloc(g_causal.n, 1);
    ps_reader_info in;
    assert_int_equal(causal_epoch(&o, seen, &in), g_causal.n);
    for (size_t i = 0; i < g_causal.n; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(in.pack, 2048);
    assert_int_equal(in.records_skipped, 0);
    assert_true(in.rows_per_epoch < g_causal.n / 2); /* records do share rows */
    /* max_tokens counts rows of L */
    o.batch_size = 0;
    o.max_tokens = 3 * 2048 + 5;
    o.dtype = PS_DTYPE_INT32;
    memset(seen, 0, g_causal.n);
    ps_reader *r = open_ok(g_causal.dir, &o, NULL);
    const ps_batch *b;
    ps_error err;
    while (ps_reader_next(r, &b, &err) == 1) {
        assert_true(b->B <= 3);
        check_causal(b, &o, seen);
        ps_batch_release(r, b);
    }
    ps_reader_close(r);
    free(seen);
}

static void test_seq2seq(void **state)
{
    (void)state;
    for (int dec = 0; dec < 2; dec++) {
        ps_reader_options o;
        opts(&o);
        o.pad_id = 0;
        o.decoder_start_id = dec ? 0 : -1;
        o.pad_multiple = dec ? 1 : 8;
        o.dtype = dec ? PS_DTYPE_INT64 : PS_DTYPE_INT32;
        ps_reader *r = open_ok(g_s2s.dir, &o, NULL);
        const ps_batch *b;
        ps_error err;
        size_t n = 0;
        while (ps_reader_next(r, &b, &err) == 1) {
            assert_int_equal(b->layout, PS_LAYOUT_SEQ2SEQ);
            assert_null(b->position_ids);
            assert_null(b->cu_seqlens);
            assert_null(b->token_type_ids);
            assert_true(dec ? b->decoder_input_ids != NULL : b->decoder_input_ids == NULL);
            assert_int_equal(b->T % o.pad_multiple, 0);
            assert_int_equal(b->T_target % o.pad_multiple, 0);
            const int64_t *lab = b->labels;
            for (uint32_t i = 0; i < b->B; i++, n++) {
                long k = ref_find(&g_s2s, b->ids[i]);
                assert_true(k >= 0);
                const ref_rec *rr = &g_s2s.v[k];
                uint32_t src = rr->tb, tgt = rr->len - rr->tb;
                assert_true(src > 0 && tgt > 0);
                assert_int_equal(el(b, b->lengths, i), src);
                assert_int_equal(el(b, b->target_lens, i), tgt);
                for (uint32_t t = 0; t < b->T; t++) {
                    size_t at = (size_t)i * b->T + t;
                    assert_int_equal(el(b, b->input_ids, at), t < src ? rr->tok[t] : 0);
                    assert_int_equal(el(b, b->attention_mask, at), t < src);
                }
                for (uint32_t t = 0; t < b->T_target; t++) {
                    size_t at = (size_t)i * b->T_target + t;
                    assert_int_equal(lab[at], t < tgt ? rr->tok[src + t] : -100);
                    assert_int_equal(el(b, b->decoder_attention_mask, at), t < tgt);
                    if (dec) { /* shift_tokens_right(labels, pad 0, start 0) */
                        int64_t want = t == 0 ? 0 : lab[at - 1] == -100 ? 0 : lab[at - 1];
                        assert_int_equal(el(b, b->decoder_input_ids, at), want);
                    }
                }
            }
            ps_batch_release(r, b);
        }
        assert_int_equal(n, g_s2s.n);
        ps_reader_close(r);
    }
}

static void test_pack_refused(void **state)
{
    (void)state;
    ps_reader_options o;
    opts(&o);
    o.pack = 1024;
    ps_reader *r;
    ps_error err;
    /* not a causal set */
    assert_int_equal(open_rc(g_s2s.dir, &o, &r, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "causal"));
    char *pair = path_join(g_dir, "pair");
    build_set_of(ps_test_data("spider/dev.json"), pair, 1, 128, "db_id");
    assert_int_equal(open_rc(pair, &o, &r, &err), PS_EUSAGE);
    ps_remove_tree(pair);
    free(pair);
    /* a record longer than the pack: named, with its id */
    o.pack = 512;
    assert_int_equal(open_rc(g_causal.dir, &o, &r, &err), PS_EUSAGE);
    const char *at = strstr(err.message, "(id ");
    assert_non_null(at);
    char id[256];
    assert_int_equal(sscanf(at, "(id %255[^)])", id), 1);
    long k = ref_find(&g_causal, id);
    assert_true(k >= 0 && g_causal.v[k].len > 512);
    char want[64];
    snprintf(want, sizeof want, "has %u tokens", g_causal.v[k].len);
    assert_non_null(strstr(err.message, want));
    /* skip_long: left out and counted */
    o.skip_long = 1;
    size_t longer = 0;
    for (size_t i = 0; i < g_causal.n; i++)
        longer += g_causal.v[i].len > 512;
    unsigned char *seen = calloc(g_causal.n, 1);
    ps_reader_info in;
    assert_int_equal(causal_epoch(&o, seen, &in), g_causal.n - longer);
    assert_int_equal(in.records_skipped, longer);
    for (size_t i = 0; i < g_causal.n; i++)
        assert_int_equal(seen[i], g_causal.v[i].len <= 512);
    free(seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_causal_unpacked),
        cmocka_unit_test(test_causal_packed),
        cmocka_unit_test(test_seq2seq),
        cmocka_unit_test(test_pack_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
