/* Unit tests of the Unigram model (tokenize/unigram.c) and the Precompiled
 * charsmap normalizer (tokenize/precompiled.c): hand-made piece tables
 * (Viterbi choice, ties, duplicates, unk fusion, byte fallback, a file
 * without unk_id), hand-built darts-clone blobs, hostile files, and t5-small's
 * real model and charsmap. Expected values are HF tokenizers 0.23.2's
 * (node binding); tests/conformance/unigram_model.js compares whole corpora. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/tok_fixture.h"
#include "tests/support/tok_stubs.h"
#include "tokenize/hf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(lit) lit, sizeof(lit) - 1

/* ---- the model ------------------------------------------------------------ */

static ps_tok_model *model(const char *json)
{
    return ps_test_model(ps_tok_unigram_load, json);
}

/* Encodes s and compares with the n expected ids. */
static void expect_ids(const ps_tok_model *m, ps_tok_work_slot *slot, const char *s,
                       const int32_t *want, size_t n)
{
    ps_tok_ids ids = {0};
    ps_error err;
    int rc = m->encode(m, slot, s, strlen(s), &ids, &err);
    if (rc < 0)
        fail_msg("'%s': %s", s, err.message);
    if (ids.n != n)
        fail_msg("'%s': %zu ids, expected %zu", s, ids.n, n);
    for (size_t i = 0; i < n; i++)
        if (ids.v[i] != want[i])
            fail_msg("'%s': id %zu is %d, expected %d", s, i, ids.v[i], want[i]);
    ps_tok_ids_free(&ids);
}

#define EXPECT(m, slot, s, ...)                                                                   \
    do {                                                                                          \
        const int32_t want_[] = {__VA_ARGS__};                                                    \
        expect_ids(m, slot, s, want_, sizeof want_ / sizeof *want_);                              \
    } while (0)

/* HF's own doc example (models/unigram/model.rs): abcd | a | cd | xx. */
static void test_viterbi_choice(void **state)
{
    (void)state;
    ps_tok_model *m = model("{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<unk>\",0],"
                            "[\"a\",0],[\"b\",0],[\"c\",0],[\"d\",0],[\"cd\",1],[\"ab\",2],"
                            "[\"abc\",5],[\"abcd\",10]]}");
    ps_tok_work_slot slot = {0};
    EXPECT(m, &slot, "abcdacdxx", 8, 1, 5, 0); /* xx: two unk characters, one unk */
    EXPECT(m, &slot, "abc", 7);
    EXPECT(m, &slot, "dcd", 4, 5);
    assert_int_equal(m->kind, PS_TOK_MODEL_UNIGRAM);
    assert_int_equal(m->unk_id, 0);
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
}

/* Equal scores keep the path found first: the earliest start, and the
 * shorter piece before the longer one from the same start. */
static void test_ties(void **state)
{
    (void)state;
    ps_tok_model *m = model("{\"unk_id\":0,\"vocab\":[[\"<unk>\",-5],[\"a\",-1],[\"b\",-1],"
                            "[\"ab\",-2],[\"c\",-1],[\"bc\",-2],[\"abc\",-3]]}");
    ps_tok_work_slot slot = {0};
    EXPECT(m, &slot, "ab", 3);  /* a+b ties ab: ab (from 0) was offered first */
    EXPECT(m, &slot, "abc", 6); /* abc, ab+c, a+bc, a+b+c all -3: abc first */
    EXPECT(m, &slot, "bc", 5);
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
}

/* A duplicated piece means its last index (HF's token -> id map), with that
 * entry's score; an empty piece never matches but counts for min_score. */
static void test_duplicates_and_empty(void **state)
{
    (void)state;
    ps_tok_model *m = model("{\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"ab\",-9],[\"a\",-1],"
                            "[\"b\",-1],[\"ab\",-1],[\"\",-100]]}");
    ps_tok_work_slot slot = {0};
    EXPECT(m, &slot, "ab", 4); /* the later "ab" (-1) beats a+b (-2) */
    EXPECT(m, &slot, "ba", 3, 2);
    /* unk scores min_score - 10 = -110: a+unk+b beats nothing here */
    EXPECT(m, &slot, "axb", 2, 0, 3);
    assert_int_equal(ps_tok_vocab_find(&m->vocab, S("ab")), 4);
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
}

/* Consecutive unk nodes are fused, the literal "<unk>" piece included, and
 * the joined string looked up again. */
static void test_unk_fusion(void **state)
{
    (void)state;
    ps_tok_model *m = model("{\"unk_id\":1,\"vocab\":[[\"a\",-1],[\"<unk>\",-1],[\"<\",-1],"
                            "[\"u\",-1],[\"n\",-1],[\"k\",-1],[\">\",-1]]}");
    ps_tok_work_slot slot = {0};
    EXPECT(m, &slot, "xyz", 1);
    EXPECT(m, &slot, "axyza", 0, 1, 0);
    EXPECT(m, &slot, "<unk>", 1);
    EXPECT(m, &slot, "x<unk>y", 1); /* x, <unk>, y: one fused unk */
    EXPECT(m, &slot, "中文é", 1);
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
}

/* byte_fallback turns an unk run into <0xXX> pieces when every one exists. */
static void test_byte_fallback(void **state)
{
    (void)state;
    ps_tok_model *m = model("{\"unk_id\":0,\"byte_fallback\":true,\"vocab\":[[\"<unk>\",0],"
                            "[\"a\",-1],[\"<0x78>\",-1],[\"<0x79>\",-1],[\"<0xC3>\",-1],"
                            "[\"<0xA9>\",-1]]}");
    ps_tok_work_slot slot = {0};
    EXPECT(m, &slot, "axy", 1, 2, 3);
    EXPECT(m, &slot, "\xC3\xA9", 4, 5); /* é: two bytes */
    EXPECT(m, &slot, "xz", 0);          /* no <0x7A>: the whole run is unk */
    EXPECT(m, &slot, "<0x78>", 2);      /* the piece itself, by the trie */
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
}

/* Without unk_id HF errs only when an unk edge would be taken. */
static void test_no_unk_id(void **state)
{
    (void)state;
    ps_tok_model *m = model("{\"unk_id\":null,\"vocab\":[[\"a\",0],[\"ab\",0],[\"c\",0]]}");
    ps_tok_work_slot slot = {0};
    EXPECT(m, &slot, "abc", 1, 2); /* b has no piece, but "ab" covers it */
    ps_tok_ids ids = {0};
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(m->encode(m, &slot, S("ax"), &ids, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "unk_id"));
    assert_int_equal(m->unk_id, -1);
    ps_tok_ids_free(&ids);
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
}

/* One work slot serves long and short pieces and a second model. */
static void test_work_slot_reuse(void **state)
{
    (void)state;
    ps_tok_model *m = model("{\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"a\",-1],[\"aa\",-1.5]]}");
    ps_tok_model *m2 = model("{\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"a\",-1]]}");
    ps_tok_work_slot slot = {0};
    char *big = malloc(10001);
    memset(big, 'a', 10000);
    big[10000] = '\0';
    ps_tok_ids ids = {0};
    ps_error err;
    assert_int_equal(m->encode(m, &slot, big, 10000, &ids, &err), 0);
    assert_int_equal(ids.n, 5000);
    EXPECT(m, &slot, "aaa", 1, 2); /* a+aa ties aa+a: a+aa reached node 3 first */
    EXPECT(m2, &slot, "aaa", 1, 1, 1);
    assert_ptr_equal(slot.owner, m2);
    free(big);
    ps_tok_ids_free(&ids);
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
    m2->destroy(m2);
}

/* The per-thread cache answers only for the model that filled it, even when
 * a new model is loaded where a freed one was. */
static void test_cache_per_model(void **state)
{
    (void)state;
    ps_tok_work_slot slot = {0};
    for (int round = 0; round < 4; round++) {
        ps_tok_model *m = model(round % 2 ? "{\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"ab\",-1]]}"
                                          : "{\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"a\",-1],"
                                            "[\"b\",-1]]}");
        for (int k = 0; k < 3; k++) { /* the second and third are cache hits */
            if (round % 2)
                EXPECT(m, &slot, "ab", 1);
            else
                EXPECT(m, &slot, "ab", 1, 2);
        }
        m->destroy(m);
    }
    ps_tok_work_slot_clear(&slot);
}

/* test_bad_json's loader: nothing may be made. */
static int try_load(const char *json, ps_error *err)
{
    return ps_test_model_try(ps_tok_unigram_load, json, err);
}

static void test_bad_json(void **state)
{
    (void)state;
    static const ps_test_load_case cases[] = {
        {"{\"unk_id\":0}", PS_EFORMAT, "t.json: model: Unigram: missing \"vocab\""},
        {"[]", PS_EFORMAT, "t.json: model: expected an object"},
        {"{\"vocab\":{}}", PS_EFORMAT, "t.json: model.vocab: expected an array of [piece, score]"},
        {"{\"vocab\":[[\"a\",0],[\"b\"]]}", PS_EFORMAT,
         "t.json: model.vocab[1]: expected a [piece, score] pair"},
        {"{\"vocab\":[[\"a\",\"0\"]]}", PS_EFORMAT,
         "t.json: model.vocab[0]: expected a [piece, score] pair"},
        {"{\"vocab\":[[1,0]]}", PS_EFORMAT,
         "t.json: model.vocab[0]: expected a [piece, score] pair"},
        {"{\"vocab\":[[\"a\",0,1]]}", PS_EFORMAT,
         "t.json: model.vocab[0]: expected a [piece, score] pair"},
        {"{\"vocab\":[[\"a\",0]],\"unk_id\":1}", PS_EFORMAT,
         "t.json: model.unk_id: 1 is not below the vocabulary size 1"},
        {"{\"vocab\":[],\"unk_id\":0}", PS_EFORMAT,
         "t.json: model.unk_id: the vocabulary is empty but at least <unk> is needed"},
        {"{\"vocab\":[],\"unk_id\":-1}", PS_EFORMAT,
         "t.json: model.unk_id: expected an integer from 0 to 2147483647"},
        {"{\"vocab\":[],\"unk_id\":\"0\"}", PS_EFORMAT,
         "t.json: model.unk_id: expected an integer from 0 to 2147483647"},
        {"{\"vocab\":[],\"byte_fallback\":1}", PS_EFORMAT,
         "t.json: model.byte_fallback: expected true or false"},
        {"{\"type\":\"BPE\",\"vocab\":[]}", PS_EFORMAT, "t.json: model.type: expected \"Unigram\""},
    };
    ps_test_load_errors(cases, sizeof cases / sizeof *cases, try_load, NULL);
    /* HF accepts an empty vocabulary without unk_id; every piece then errs */
    ps_tok_model *m = model("{\"vocab\":[]}");
    ps_tok_work_slot slot = {0};
    ps_tok_ids ids = {0};
    ps_error err;
    assert_int_equal(m->encode(m, &slot, S("a"), &ids, &err), PS_EINVAL);
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
}

/* ---- t5-small ---------------------------------------------------------- */

static json_t *t5_json(void)
{
    json_error_t je;
    json_t *j = json_load_file(ps_test_data("tokenizers/t5-small.tokenizer.json"), 0, &je);
    if (!j)
        fail_msg("t5-small.tokenizer.json: %s", je.text);
    return j;
}

static void test_t5_model(void **state)
{
    (void)state;
    json_t *j = t5_json();
    ps_tok_model *m = NULL;
    ps_error err;
    ps_tok_load c = {.file = "t5", .err = &err};
    if (ps_tok_unigram_load(&c, json_object_get(j, "model"), "model", &m) < 0)
        fail_msg("%s", err.message);
    json_decref(j);
    ps_tok_work_slot slot = {0};
    assert_int_equal(m->vocab.n_ids, 32100); /* the extra ids are pieces too */
    assert_int_equal(m->unk_id, 2);
    EXPECT(m, &slot, "\xE2\x96\x81Hello", 8774);
    EXPECT(m, &slot, "\xE2\x96\x81select\xE2\x96\x81" "count(*)\xE2\x96\x81" "from\xE2\x96\x81singer",
           1738, 3476, 599, 1935, 61, 45, 7634);
    EXPECT(m, &slot, "\xE2\x96\x81How\xE2\x96\x81many\xE2\x96\x81singers\xE2\x96\x81" "do"
           "\xE2\x96\x81we\xE2\x96\x81have?", 571, 186, 7634, 7, 103, 62, 43, 58);
    EXPECT(m, &slot, "\xF0\x9F\x92\xA9x", 2, 226); /* 💩 is unk */
    EXPECT(m, &slot, "\xC3\xA9\xE4\xB8\xAD\xE6\x96\x87", 154, 2); /* é, then 中文 fused */
    EXPECT(m, &slot, "<unk>", 2);
    ps_tok_work_slot_clear(&slot);
    m->destroy(m);
}

/* Threads share one model and one normalizer, each with its own slot and
 * buffers, and get the single-threaded answers. */
typedef struct job {
    const ps_tok_model *m;
    const ps_tok_norm *n;
    const char *const *texts;
    size_t n_texts;
    ps_tok_ids want; /* every text's ids, concatenated */
    int bad;
} job;

static int run_texts(const job *jb, ps_tok_ids *out)
{
    ps_tok_work_slot slot = {0};
    ps_tok_buf io = {0}, tmp = {0};
    ps_error err;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < jb->n_texts; i++) {
        io.len = 0;
        rc = ps_tok_buf_put(&io, "\xE2\x96\x81", 3) || ps_tok_buf_put(&io, jb->texts[i], strlen(jb->texts[i]));
        if (rc == 0)
            rc = jb->n->apply(jb->n, &io, &tmp);
        if (rc == 0)
            rc = jb->m->encode(jb->m, &slot, io.p, io.len, out, &err);
    }
    ps_tok_work_slot_clear(&slot);
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
    return rc;
}

static void *thread_main(void *arg)
{
    job *jb = arg;
    for (int round = 0; round < 20; round++) {
        ps_tok_ids got = {0};
        if (run_texts(jb, &got) || got.n != jb->want.n ||
            memcmp(got.v, jb->want.v, got.n * sizeof *got.v))
            jb->bad++;
        ps_tok_ids_free(&got);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "How", "many", "singers", "do", "we", "have?", "SELECT", "count(*)", "FROM", "singer",
        "\xEF\xBC\xA1\xEF\xBC\xA2", "\xE4\xB8\xAD\xE6\x96\x87", "caf\xC3\xA9", "\xEF\xAC\x81sh",
        "T1.name", "concert_singer", "\xF0\x9F\x91\x8D", "e\xCC\x81t\xC3\xA9",
    };
    json_t *j = t5_json();
    ps_tok_model *m = NULL;
    ps_tok_norm *n = NULL;
    ps_error err;
    ps_tok_load c = {.file = "t5", .err = &err};
    if (ps_tok_unigram_load(&c, json_object_get(j, "model"), "model", &m) < 0 ||
        ps_tok_precompiled_load(&c, json_object_get(j, "normalizer"), "normalizer", &n) < 0)
        fail_msg("%s", err.message);
    json_decref(j);
    job jobs[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (job){.m = m, .n = n, .texts = texts + t, .n_texts = 18 - (size_t)t};
        assert_int_equal(run_texts(&jobs[t], &jobs[t].want), 0);
    }
    for (int t = 0; t < 4; t++)
        assert_int_equal(pthread_create(&th[t], NULL, thread_main, &jobs[t]), 0);
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].bad, 0);
        ps_tok_ids_free(&jobs[t].want);
    }
    m->destroy(m);
    n->destroy(n);
}

/* ---- the Precompiled normalizer ------------------------------------------- */

static int load_norm_json(json_t *j, ps_tok_norm **out, ps_error *err)
{
    ps_error_clear(err);
    ps_tok_load c = {.file = "t.json", .err = err};
    return ps_tok_precompiled_load(&c, j, "normalizer", out);
}

static void expect_norm(const ps_tok_norm *n, const char *in, const char *want)
{
    ps_tok_buf io = {0}, tmp = {0};
    assert_int_equal(ps_tok_buf_put(&io, in, strlen(in)), 0);
    assert_int_equal(n->apply(n, &io, &tmp), 0);
    if (io.len != strlen(want) || memcmp(io.p, want, io.len))
        fail_msg("'%s' -> '%.*s', expected '%s'", in, (int)io.len, io.p, want);
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
}

static ps_tok_norm *t5_norm(void)
{
    json_t *j = t5_json();
    ps_tok_norm *n = NULL;
    ps_error err;
    if (load_norm_json(json_object_get(j, "normalizer"), &n, &err) < 0)
        fail_msg("%s", err.message);
    json_decref(j);
    return n;
}

static void test_t5_charsmap(void **state)
{
    (void)state;
    ps_tok_norm *n = t5_norm();
    expect_norm(n, "select count(*) from singer", "select count(*) from singer");
    expect_norm(n, "\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3\xEF\xBC\x91", "ABC1"); /* ＡＢＣ１ */
    expect_norm(n, "\xEF\xAC\x81\xEF\xAC\x82", "fifl");                       /* ligatures */
    expect_norm(n, "a\xC2\xA0" "b\tc\nd\r\ne\xE3\x80\x80" "f", "a b c d e f"); /* CR LF: one */
    expect_norm(n, "\xE2\x84\xA2 \xE2\x84\x96 \xC2\xBD", "TM No 1\xE2\x81\x84" "2");
    expect_norm(n, "\xE2\x85\xAB", "XII");                                    /* Ⅻ */
    expect_norm(n, "\xEF\xBD\xB6\xEF\xBE\x80", "\xE3\x82\xAB\xE3\x82\xBF");   /* ｶﾀ -> カタ */
    expect_norm(n, "x\xE2\x80\x8By", "x y");                                  /* ZWSP */
    expect_norm(n, "\x01x\x7f", "x");                                        /* C0, DEL dropped */
    /* a cluster under 6 bytes whose first character is a key becomes that
     * key's replacement alone (HF drops the accent); 6 bytes or more go
     * character by character */
    expect_norm(n, "\xEF\xBC\xA1\xCC\x81", "A");
    expect_norm(n, "\xEF\xBC\xA1\xCC\x81\xCC\x81\xCC\x81", "A\xCC\x81\xCC\x81\xCC\x81");
    expect_norm(n, "e\xCC\x81", "\xC3\xA9"); /* a two-character key: NFKC composes */
    expect_norm(n, "", "");
    n->destroy(n);
}

/* A NUL ends the key: the NUL is kept, what follows is looked up anew. */
static void test_t5_nul(void **state)
{
    (void)state;
    ps_tok_norm *n = t5_norm();
    ps_tok_buf io = {0}, tmp = {0};
    assert_int_equal(ps_tok_buf_put(&io, "\0\xEF\xBC\xA1", 4), 0);
    assert_int_equal(n->apply(n, &io, &tmp), 0);
    assert_int_equal(io.len, 2);
    assert_memory_equal(io.p, "\0A", 2);
    ps_tok_buf_free(&io);
    ps_tok_buf_free(&tmp);
    n->destroy(n);
}

/* A tiny darts-clone array: one 256-unit block per node, so a child of the
 * node whose block starts at B sits at B ^ c = B + c. */
typedef struct dart {
    uint32_t u[16 * 256];
    size_t blocks;
    char pool[64];
    size_t pool_len;
} dart;

static size_t dart_child(dart *d, size_t base, unsigned char c, int32_t value)
{
    size_t idx = base + c, child = (size_t)(d->u[idx] & 0xFF) == c ? idx ^ (d->u[idx] >> 10) : 0;
    if (!child) {
        child = 256 * d->blocks++;
        d->u[idx] = c | (uint32_t)((idx ^ child) << 10);
    }
    if (value >= 0) {
        d->u[idx] |= 1u << 8;
        d->u[child] = 0x80000000u | (uint32_t)value;
    }
    return child;
}

static void dart_key(dart *d, const char *key, const char *repl)
{
    int32_t value = (int32_t)d->pool_len;
    memcpy(d->pool + d->pool_len, repl, strlen(repl) + 1);
    d->pool_len += strlen(repl) + 1;
    size_t base = 256, n = strlen(key);
    for (size_t i = 0; i < n; i++)
        base = dart_child(d, base, (unsigned char)key[i], i + 1 == n ? value : -1);
}

/* The normalizer JSON of blob b[0..n). */
static json_t *charsmap_json(const unsigned char *b, size_t n)
{
    char *s = ps_test_base64(b, n);
    assert_non_null(s);
    json_t *j = json_pack("{s:s,s:s}", "type", "Precompiled", "precompiled_charsmap", s);
    free(s);
    return j;
}

static json_t *dart_json(const dart *d)
{
    size_t units = 256 * d->blocks, n = 4 + 4 * units + d->pool_len;
    unsigned char *b = malloc(n);
    uint32_t size = (uint32_t)(4 * units);
    memcpy(b, &size, 4); /* the tests run little-endian, as the format is */
    memcpy(b + 4, d->u, 4 * units);
    memcpy(b + 4 + 4 * units, d->pool, d->pool_len);
    json_t *j = charsmap_json(b, n);
    free(b);
    return j;
}

static void dart_init(dart *d)
{
    memset(d, 0, sizeof *d);
    d->blocks = 2;            /* block 0 holds the root unit, block 1 its children */
    d->u[0] = 256u << 10;     /* root: children at 256 ^ c */
}

static void test_handmade_blob(void **state)
{
    (void)state;
    dart d;
    dart_init(&d);
    dart_key(&d, "a", "A");
    dart_key(&d, "bc", "<bc>");
    dart_key(&d, "\xC3\xA9", "e");  /* é -> e */
    dart_key(&d, "q", "");          /* deleted */
    json_t *j = dart_json(&d);
    ps_tok_norm *n = NULL;
    ps_error err;
    if (load_norm_json(j, &n, &err) < 0)
        fail_msg("%s", err.message);
    json_decref(j);
    expect_norm(n, "abcq", "Abc");        /* "bc" is never one cluster */
    expect_norm(n, "\xC3\xA9t\xC3\xA9", "ete");
    expect_norm(n, "a\xCC\x81", "A");     /* cluster: first prefix wins */
    expect_norm(n, "a\xCC\x81\xCC\x81", "A");     /* 5 bytes: still whole */
    expect_norm(n, "a\xCC\x81\xCC\x81\xCC\x81", "A\xCC\x81\xCC\x81\xCC\x81"); /* 7: by character */
    n->destroy(n);
}

/* Hostile and empty charsmaps: HF aborts the process; we refuse them. */
static void expect_bad_charsmap(json_t *j, const char *why)
{
    ps_tok_norm *n = NULL;
    ps_error err;
    int rc = load_norm_json(j, &n, &err);
    json_decref(j);
    if (rc != PS_EFORMAT)
        fail_msg("code %d (%s), expected PS_EFORMAT for %s", rc, err.message, why);
    assert_null(n);
    if (!strstr(err.message, "t.json: normalizer.precompiled_charsmap: ") ||
        !strstr(err.message, why))
        fail_msg("message '%s' does not say '%s'", err.message, why);
}

static void test_bad_charsmaps(void **state)
{
    (void)state;
    expect_bad_charsmap(json_pack("{s:s}", "precompiled_charsmap", ""), "empty");
    expect_bad_charsmap(json_pack("{s:n}", "precompiled_charsmap"), "expected a base64 string");
    expect_bad_charsmap(json_pack("{}"), "expected a base64 string");
    expect_bad_charsmap(json_pack("{s:s}", "precompiled_charsmap", "AAAA-_=="), "not valid base64");
    expect_bad_charsmap(json_pack("{s:s}", "precompiled_charsmap", "AAAAAB=="), "not valid base64");
    expect_bad_charsmap(json_pack("{s:s}", "precompiled_charsmap", "AAAAA"), "not valid base64");
    expect_bad_charsmap(json_pack("{s:s}", "precompiled_charsmap", "AAAAAA=="), "trie is empty");
    expect_bad_charsmap(charsmap_json((const unsigned char *)"\x10\0\0\0\0\0\0\0", 8), "truncated");
    /* one unit whose offset leaves the array */
    expect_bad_charsmap(charsmap_json((const unsigned char *)"\x04\0\0\0\0\0\x10\0", 8),
                        "root's offset");
    /* a root with children beyond the array */
    expect_bad_charsmap(charsmap_json((const unsigned char *)"\x04\0\0\0\0\0\0\0", 8),
                        "child's position");

    dart d;
    dart_init(&d);
    dart_key(&d, "a", "A");
    d.u[d.u[256 + 'a'] >> 10 ^ (256 + 'a')] = 0x80000000u | 40; /* value past the pool */
    expect_bad_charsmap(dart_json(&d), "value points outside");

    dart_init(&d);
    dart_key(&d, "a", "\xC3\xA9");
    d.u[d.u[256 + 'a'] >> 10 ^ (256 + 'a')] = 0x80000000u | 1; /* inside é */
    expect_bad_charsmap(dart_json(&d), "inside a character");

    dart_init(&d);
    dart_key(&d, "a", "A");
    d.pool[0] = (char)0xFF;
    expect_bad_charsmap(dart_json(&d), "not valid UTF-8");

    dart_init(&d);
    dart_key(&d, "a", "A");
    d.u[256 + 'a'] = 'a' | (1u << 8) | (uint32_t)0xFFFFF << 10; /* node far away */
    expect_bad_charsmap(dart_json(&d), "outside the trie");

    ps_tok_norm *n = NULL;
    ps_error err;
    json_t *j = json_pack("[]");
    assert_int_equal(load_norm_json(j, &n, &err), PS_EFORMAT);
    json_decref(j);
    assert_null(n);
    assert_string_equal(err.message, "t.json: normalizer: expected an object");
}

static int b64v(char ch)
{
    const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *q = strchr(abc, ch);
    return ch && q ? (int)(q - abc) : -1;
}

/* T5's charsmap blob, decoded here independently of precompiled.c. */
static unsigned char *t5_blob(size_t *len)
{
    json_t *j = t5_json();
    const char *s = json_string_value(json_object_get(json_object_get(j, "normalizer"),
                                                      "precompiled_charsmap"));
    size_t n = strlen(s), o = 0;
    unsigned char *b = malloc(n / 4 * 3 + 3);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n && b64v(s[i]) >= 0; i++) {
        acc = acc << 6 | (uint32_t)b64v(s[i]);
        if ((bits += 6) >= 8) {
            bits -= 8;
            b[o++] = (unsigned char)(acc >> bits);
        }
    }
    json_decref(j);
    *len = o;
    return b;
}

/* Damaged copies of a real blob (bytes changed, the end cut) either load
 * and normalize text without reading out of bounds (ASan builds check
 * that), or are refused with PS_EFORMAT. */
static void test_mutated_charsmaps(void **state)
{
    (void)state;
    size_t len;
    unsigned char *orig = t5_blob(&len);
    assert_true(len > 177156);
    unsigned char *b = malloc(len);
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    int refused = 0, loaded = 0;
    static const char *texts[] = {"Hello, World! SELECT * FROM t;", "\xEF\xBC\xA1\xCC\x81 e\xCC\x81",
                                  "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
                                  "\xEF\xAC\x81 \xE2\x85\xAB \xC2\xBD\r\n\t"};
    for (int it = 0; it < 200; it++) {
        memcpy(b, orig, len);
        size_t n = len;
        for (int k = 0; k < 1 + it % 4; k++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            /* mostly in the trie, whose damage is the dangerous kind */
            size_t at = (size_t)(x >> 33) % (it % 3 ? 177156 : len);
            b[at] = (unsigned char)(x >> 17);
        }
        if (it % 10 == 9)
            n = (size_t)(x >> 40) % len;
        json_t *j = charsmap_json(b, n);
        ps_tok_norm *nm = NULL;
        ps_error err;
        int rc = load_norm_json(j, &nm, &err);
        json_decref(j);
        if (rc == PS_EFORMAT) {
            assert_null(nm);
            refused++;
            continue;
        }
        assert_int_equal(rc, 0);
        loaded++;
        for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
            ps_tok_buf io = {0}, tmp = {0};
            assert_int_equal(ps_tok_buf_put(&io, texts[t], strlen(texts[t])), 0);
            assert_int_equal(nm->apply(nm, &io, &tmp), 0);
            ps_tok_buf_free(&io);
            ps_tok_buf_free(&tmp);
        }
        nm->destroy(nm);
    }
    assert_true(refused > 0 && loaded > 0); /* both outcomes were exercised */
    free(b);
    free(orig);
}

/* Padding is optional, as the crate's decoder takes it. */
static void test_base64_padding(void **state)
{
    (void)state;
    dart d;
    dart_init(&d);
    dart_key(&d, "a", "A");
    dart_key(&d, "b", ""); /* 3079 bytes: two padding characters */
    json_t *j = dart_json(&d);
    const char *s = json_string_value(json_object_get(j, "precompiled_charsmap"));
    size_t len = strlen(s);
    assert_true(len >= 2 && s[len - 1] == '=');
    char *bare = strdup(s);
    while (len && bare[len - 1] == '=')
        bare[--len] = '\0';
    json_object_set_new(j, "precompiled_charsmap", json_string(bare));
    free(bare);
    ps_tok_norm *n = NULL;
    ps_error err;
    if (load_norm_json(j, &n, &err) < 0)
        fail_msg("%s", err.message);
    json_decref(j);
    expect_norm(n, "abc", "Ac");
    n->destroy(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_viterbi_choice),
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_duplicates_and_empty),
        cmocka_unit_test(test_unk_fusion),
        cmocka_unit_test(test_byte_fallback),
        cmocka_unit_test(test_no_unk_id),
        cmocka_unit_test(test_work_slot_reuse),
        cmocka_unit_test(test_cache_per_model),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_t5_model),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_t5_charsmap),
        cmocka_unit_test(test_t5_nul),
        cmocka_unit_test(test_handmade_blob),
        cmocka_unit_test(test_bad_charsmaps),
        cmocka_unit_test(test_base64_padding),
        cmocka_unit_test(test_mutated_charsmaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
