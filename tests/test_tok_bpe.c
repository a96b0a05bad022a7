/* Unit tests of the tokenizer.json models (tokenize/model.c, bpe*.c,
 * wordlevel.c, wordpiece_model.c) on small hand-made models whose expected
 * ids were checked against HuggingFace tokenizers 0.23.2 (the same cases
 * run through tests/conformance/bpe_model.js), and on GPT-2's real
 * vocabulary and merges.
 *
 * With arguments the binary is the differential test's driver instead:
 *   test_tok_bpe --encode MODEL.json   stdin: one JSON string per line (a
 *       piece); stdout: per line the ids as a JSON array, or "ERR CODE"
 *   test_tok_bpe --bench MODEL.json PIECES [ROUNDS]   load time and MB/s
 * MODEL.json is a tokenizer.json (its "model" is used) or a model object. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/tok_fixture.h"
#include "tokenize/bpe.h"
#include "tokenize/hf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* JSON written with ' for " (readability); tokens here never hold a '.
 * Returns the text with " for ', to free. */
static char *dq(const char *text)
{
    char *s = strdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    return s;
}

static ps_tok_model *must_load(const char *text)
{
    char *s = dq(text);
    ps_tok_model *m = ps_test_model(ps_tok_model_load, s);
    free(s);
    return m;
}

/* Encodes s and returns its ids as "1 2 3" (static buffer), or "ERR". */
static const char *ids_of(const ps_tok_model *m, ps_tok_work_slot *slot, const char *s)
{
    static char buf[4096];
    ps_tok_ids ids = {0};
    ps_error err;
    int rc = m->encode(m, slot, s, strlen(s), &ids, &err);
    size_t used = 0;
    buf[0] = '\0';
    if (rc)
        snprintf(buf, sizeof buf, "ERR");
    for (size_t i = 0; !rc && i < ids.n; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%d", i ? " " : "", ids.v[i]);
    ps_tok_ids_free(&ids);
    return buf;
}

/* Encodes every piece twice (the second time from the cache) and checks. */
static void expect(const ps_tok_model *m, const char *piece, const char *want)
{
    ps_tok_work_slot slot = {0};
    for (int round = 0; round < 2; round++) {
        const char *got = ids_of(m, &slot, piece);
        if (strcmp(got, want))
            fail_msg("'%s' (round %d): got [%s], want [%s]", piece, round, got, want);
    }
    ps_tok_work_slot_clear(&slot);
}

#define ABC "'a':0,'b':1,'c':2,'ab':3,'bc':4,'abc':5"

/* The lowest rank merges first, wherever it is; equal pairs go left to
 * right; a pair a merge created is queued with its own rank. */
static void test_merge_priority(void **state)
{
    (void)state;
    ps_tok_model *m = must_load("{'type':'BPE','vocab':{" ABC "},'merges':['b c','a b','a bc']}");
    expect(m, "abc", "5"); /* b c (rank 0), then a bc */
    expect(m, "ab", "3");
    expect(m, "cab", "2 3");
    expect(m, "abab", "3 3");
    ps_tok_model_free(m);
    m = must_load("{'type':'BPE','vocab':{" ABC "},'merges':['a b','b c']}");
    expect(m, "abc", "3 2"); /* a b first; no merge joins ab and c */
    expect(m, "bc", "4");
    ps_tok_model_free(m);
    /* ties between equal pairs: leftmost first, so "aaa" is aa a */
    m = must_load("{'type':'BPE','vocab':{'a':0,'aa':1,'aaaa':2},'merges':['a a','aa aa']}");
    expect(m, "aaa", "1 0");
    expect(m, "aaaa", "2");
    expect(m, "aaaaa", "2 0");
    expect(m, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "2 2 2 2 2 2 2 2 0"); /* the heap path */
    ps_tok_model_free(m);
}

/* "a b" strings and ["a","b"] pairs load the same model; "#version" lines
 * are skipped without taking a rank; a later duplicate merge wins. */
static void test_merge_formats(void **state)
{
    (void)state;
    ps_tok_model *s = must_load("{'type':'BPE','vocab':{" ABC "},'merges':['#version: 0.2','b c','a b','a bc']}");
    ps_tok_model *p = must_load("{'type':'BPE','vocab':{" ABC "},'merges':[['b','c'],['a','b'],['a','bc']]}");
    const char *words[] = {"abc", "ab", "bca", "cabcab"};
    for (size_t i = 0; i < 4; i++) {
        ps_tok_work_slot a = {0}, b = {0};
        char want[256];
        snprintf(want, sizeof want, "%s", ids_of(s, &a, words[i]));
        expect(p, words[i], want);
        ps_tok_work_slot_clear(&a);
        ps_tok_work_slot_clear(&b);
    }
    expect(s, "abc", "5");
    ps_tok_model_free(s);
    ps_tok_model_free(p);
    /* "a b" again at the end: rank 2 now, after "b c" (rank 1) */
    ps_tok_model *d = must_load("{'type':'BPE','vocab':{" ABC "},'merges':['a b','b c','a b']}");
    expect(d, "abc", "0 4");
    ps_tok_model_free(d);
}

/* Unknown characters: nothing without unk_token; unk, fused or not; byte
 * fallback ("<0xXX>" for every byte when all exist) before a pending unk,
 * as HF's merge_word orders them. */
static void test_unknown_characters(void **state)
{
    (void)state;
#define V "'a':0,'b':1,'ab':3,'<unk>':6,'<0x78>':7,'<0x79>':8,'<0xC3>':9,'<0xA9>':10"
    ps_tok_model *m = must_load("{'type':'BPE','vocab':{" V "},'merges':['a b']}");
    expect(m, "axb", "3"); /* x dropped, then a b merge */
    ps_tok_model_free(m);
    m = must_load("{'type':'BPE','vocab':{" V "},'merges':['a b'],'unk_token':'<unk>'}");
    expect(m, "axyb", "0 6 6 1");
    assert_int_equal(m->unk_id, 6);
    ps_tok_model_free(m);
    m = must_load("{'type':'BPE','vocab':{" V "},'merges':['a b'],'unk_token':'<unk>','fuse_unk':true}");
    expect(m, "axyb", "0 6 1");
    expect(m, "xy", "6");
    ps_tok_model_free(m);
    m = must_load("{'type':'BPE','vocab':{" V "},'merges':['a b'],'unk_token':'<unk>','byte_fallback':true}");
    expect(m, "azxb", "0 7 6 1"); /* z (no <0x7A>) waits as unk behind x's byte */
    expect(m, "\xc3\xa9" "ab", "9 10 3");
    ps_tok_model_free(m);
    /* an unk token missing from the vocabulary fails at encode, as in HF */
    m = must_load("{'type':'BPE','vocab':{" V "},'merges':[],'unk_token':'<zz>'}");
    expect(m, "ab", "0 1");
    expect(m, "ax", "ERR");
    ps_tok_work_slot slot = {0};
    ps_tok_ids ids = {0};
    ps_error err;
    assert_int_equal(m->encode(m, &slot, "x", 1, &ids, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "<zz>"));
    ps_tok_ids_free(&ids);
    ps_tok_work_slot_clear(&slot);
    ps_tok_model_free(m);
#undef V
}

/* ignore_merges: a piece that is a token is that token, merges or not;
 * dropout 1.0 skips every merge (and ignore_merges, as HF does). */
static void test_ignore_merges_and_dropout(void **state)
{
    (void)state;
    const char *v = "'vocab':{'a':0,'b':1,'c':2,'ab':3,'abc':4},'merges':['a b']";
    char buf[512];
    snprintf(buf, sizeof buf, "{'type':'BPE',%s}", v);
    ps_tok_model *m = must_load(buf);
    expect(m, "abc", "3 2");
    ps_tok_model_free(m);
    snprintf(buf, sizeof buf, "{'type':'BPE',%s,'ignore_merges':true}", v);
    m = must_load(buf);
    expect(m, "abc", "4");
    expect(m, "abcc", "3 2 2");
    ps_tok_model_free(m);
    snprintf(buf, sizeof buf, "{'type':'BPE',%s,'ignore_merges':true,'dropout':1.0}", v);
    m = must_load(buf);
    expect(m, "abc", "0 1 2");
    ps_tok_model_free(m);
    snprintf(buf, sizeof buf, "{'type':'BPE',%s,'dropout':0.0,'fuse_unk':null}", v);
    m = must_load(buf);
    expect(m, "ab", "3");
    ps_tok_model_free(m);
}

/* continuing_subword_prefix before every character but the first,
 * end_of_word_suffix after the last; a merge's right token loses the
 * prefix's length. */
static void test_prefix_and_suffix(void **state)
{
    (void)state;
    ps_tok_model *m = must_load(
        "{'type':'BPE','continuing_subword_prefix':'##','end_of_word_suffix':'</w>',"
        "'vocab':{'a':0,'##b':1,'##c</w>':2,'ab':3,'abc</w>':4,'b':5,'##b</w>':6,'c</w>':7,"
        "'b</w>':8},"
        "'merges':['a ##b','ab ##c</w>']}");
    expect(m, "abc", "4");
    expect(m, "ab", "0 6"); /* b is last: ##b</w>, which no merge joins */
    expect(m, "b", "8"); /* first and last: b</w> (plain b is never looked up) */
    expect(m, "abb", "3 6");
    ps_tok_model_free(m);
}

/* test_bad_models' loader: nothing may be made. */
static int try_load(const char *model, ps_error *err)
{
    char *s = dq(model);
    int rc = ps_test_model_try(ps_tok_model_load, s, err);
    free(s);
    return rc;
}

static void test_bad_models(void **state)
{
    (void)state;
    static const ps_test_load_case cases[] = {
        {"{'type':'BPE','vocab':{'a':0},'merges':['a q']}", PS_EFORMAT,
         "t.json: model.merges[0]: token 'q' is not in the vocabulary"},
        {"{'type':'BPE','vocab':{'a':0,'b':1},'merges':['a b']}", PS_EFORMAT,
         "t.json: model.merges[0]: token 'ab' is not in the vocabulary"},
        {"{'type':'BPE','vocab':{'a':0,'b':1},'merges':['a b c']}", PS_EFORMAT,
         "t.json: model.merges[0]: expected two tokens separated by one space"},
        {"{'type':'BPE','vocab':{'a':0,'b':1,'ab':2},'merges':[['a','b'],'a b']}", PS_EFORMAT,
         "t.json: model.merges[1]: expected a pair of strings like the other merges "
         "([\"a\", \"b\"])"},
        {"{'type':'BPE','vocab':{'a':0},'merges':[],'dropout':0.5}", PS_EUSAGE,
         "t.json: model.dropout: 0.5 is not supported (HF would drop merges at random)"},
        {"{'type':'BPE','vocab':{'a':0},'merges':[],'dropout':2}", PS_EFORMAT,
         "t.json: model.dropout: must be between 0 and 1, inclusive"},
        {"{'type':'BPE','vocab':{'a':0}}", PS_EFORMAT,
         "t.json: model: missing \"vocab\" or \"merges\""},
        {"{'type':'BPE','vocab':{'a':-1},'merges':[]}", PS_EFORMAT,
         "t.json: model.vocab[\"a\"]: id is not an integer from 0"},
        {"{'type':'BPE','vocab':{'a':0},'merges':[],'fuse_unk':1}", PS_EFORMAT,
         "t.json: model.fuse_unk: expected true or false"},
        {"{'type':'BPE','vocab':{'a':99999999},'merges':[]}", PS_ELIMIT,
         "t.json: model.vocab[\"a\"]: id far beyond the number of tokens (too sparse)"},
        {"{'type':'Foo','vocab':{}}", PS_EUSAGE,
         "t.json: model.type: 'Foo' is not supported (BPE, WordPiece, WordLevel, Unigram are)"},
        {"{'type':3}", PS_EFORMAT, "t.json: model.type: expected a string"},
        {"{'vocab':{'a':0},'merges':['a x']}", PS_EFORMAT,
         "t.json: model.merges[0]: token 'x' is not in the vocabulary"},
        {"{'type':'WordLevel','vocab':{'a':0},'unk_token':null}", PS_EFORMAT,
         "t.json: model.unk_token: expected a string"},
        {"{'type':'WordPiece','vocab':{'a':0},'unk_token':'[UNK]'}", PS_EFORMAT,
         "t.json: model.continuing_subword_prefix: missing"},
    };
    ps_test_load_errors(cases, sizeof cases / sizeof *cases, try_load, NULL);
}

/* Merges load in batches: an error far in names its own index, and a
 * duplicate in a later batch still wins over an earlier one. */
static void test_many_merges(void **state)
{
    (void)state;
    char *buf = malloc(1 << 16);
    size_t used = (size_t)sprintf(buf, "{'type':'BPE','vocab':{'a':0,'b':1,'ab':2,'c':400,'bc':401");
    for (int i = 0; i < 100; i++)
        used += (size_t)sprintf(buf + used, ",'x%d':%d,'y%d':%d,'x%dy%d':%d", i, 3 + 3 * i, i,
                                4 + 3 * i, i, i, 5 + 3 * i);
    used += (size_t)sprintf(buf + used, "},'merges':['a b','#version x','b c'");
    for (int i = 0; i < 100; i++)
        used += (size_t)sprintf(buf + used, ",'x%d y%d'", i, i);
    strcpy(buf + used, ",'b a']}");
    ps_error err = {0};
    assert_int_equal(try_load(buf, &err), PS_EFORMAT);
    assert_string_equal(err.message, "t.json: model.merges[103]: token 'ba' is not in the vocabulary");
    strcpy(buf + used, "]}");
    ps_tok_model *m = must_load(buf);
    expect(m, "abc", "2 400");
    ps_tok_model_free(m);
    strcpy(buf + used, ",'a b']}"); /* a b now ranks after b c */
    m = must_load(buf);
    expect(m, "abc", "0 401");
    ps_tok_model_free(m);
    free(buf);
}

/* No "type": BPE when vocab and merges are there, else WordPiece, else
 * WordLevel, as HF's untagged ModelWrapper tries them. */
static void test_untagged_and_other_models(void **state)
{
    (void)state;
    ps_tok_model *m = must_load("{'vocab':{" ABC "},'merges':['a b']}");
    assert_int_equal(m->kind, PS_TOK_MODEL_BPE);
    ps_tok_model_free(m);
    m = must_load("{'vocab':{'[UNK]':0,'un':1,'##aff':2,'##able':3,'a':4},'unk_token':'[UNK]',"
                  "'continuing_subword_prefix':'##','max_input_chars_per_word':100}");
    assert_int_equal(m->kind, PS_TOK_MODEL_WORDPIECE);
    expect(m, "unaffable", "1 2 3");
    expect(m, "unx", "0");
    expect(m, "a", "4");
    ps_tok_model_free(m);
    m = must_load("{'type':'WordPiece','vocab':{'[UNK]':0,'a':4},'unk_token':'[UNK]',"
                  "'continuing_subword_prefix':'##','max_input_chars_per_word':0}");
    expect(m, "a", "0"); /* every word is longer than 0 characters */
    ps_tok_model_free(m);
    m = must_load("{'vocab':{'<unk>':0,'select':1,'from':2},'unk_token':'<unk>'}");
    assert_int_equal(m->kind, PS_TOK_MODEL_WORDLEVEL);
    expect(m, "select", "1");
    expect(m, "where", "0");
    ps_tok_model_free(m);
    m = must_load("{'type':'WordLevel','vocab':{'select':1},'unk_token':'<unk>'}");
    expect(m, "select", "1");
    expect(m, "where", "ERR");
    ps_tok_model_free(m);
}

static json_t *load_file_model(const char *path)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root)
        return NULL;
    json_t *model = json_object_get(root, "model");
    if (model) {
        json_incref(model);
        json_decref(root);
        return model;
    }
    return root;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* GPT-2's BPE model from tests/data (the test fails when it does not load);
 * *secs, when asked, gets the load's CPU time (the JSON already parsed). */
static ps_tok_model *load_gpt2(double *secs)
{
    json_t *j = load_file_model(ps_test_data("tokenizers/gpt2.tokenizer.json"));
    assert_non_null(j);
    ps_error err;
    ps_tok_load c = {"gpt2.tokenizer.json", &err, NULL};
    ps_tok_model *m = NULL;
    double t0 = now_s();
    int rc = ps_tok_model_load(&c, j, "model", &m);
    if (secs)
        *secs = now_s() - t0;
    json_decref(j);
    if (rc)
        fail_msg("%s", err.message);
    return m;
}

/* GPT-2: known encodings of byte-level pieces ("Ġ" is the space). */
static void test_gpt2(void **state)
{
    (void)state;
    double dt;
    ps_tok_model *m = load_gpt2(&dt);
    print_message("GPT-2 model loaded in %.1f ms (JSON already parsed)\n", dt * 1e3);
    assert_int_equal(m->kind, PS_TOK_MODEL_BPE);
    assert_int_equal(m->vocab.n_keys, 50257);
    assert_int_equal(m->unk_id, -1);
    expect(m, "Hello", "15496");
    expect(m, "\xc4\xa0world", "995");
    expect(m, "\xc4\xa0singers", "39113");
    expect(m, "SELECT", "46506");
    expect(m, "\xc4\xa0tokenization", "11241 1634");
    ps_tok_model_free(m);
}

/* Invalid UTF-8 never reaches a model from the pipeline; given anyway, a
 * stray byte is an unknown character (dropped: GPT-2 has no unk), and
 * nothing reads out of bounds. */
static void test_invalid_utf8(void **state)
{
    (void)state;
    ps_tok_model *m = must_load("{'type':'BPE','vocab':{" ABC ",'\u00ff':9},'merges':['a b']}");
    expect(m, "\xff", "");
    expect(m, "\xc3\xbf", "9");
    expect(m, "a\x80" "b", "3"); /* dropped, as x in axb: a and b still merge */
    expect(m, "ab\xc3", "3");
    expect(m, "\xf0\x9f", "");
    ps_tok_model_free(m);
}

typedef struct job {
    const ps_tok_model *m;
    char out[8192];
    int rc;
} job;

#define G "\xc4\xa0" /* GPT-2's space */
static const char *const thread_words[] = {
    "How", G "many", G "singers", G "do", G "we", G "have", "?",
    "SELECT", G "count", "(*)", G "FROM", G "singer", G "tokenization",
    G "internationalization", G "supercalifragilisticexpialidocious"};

static void *encode_all(void *arg)
{
    job *jb = arg;
    ps_tok_work_slot slot = {0};
    ps_tok_ids ids = {0};
    ps_error err;
    size_t used = 0;
    for (int round = 0; round < 200 && !jb->rc; round++) {
        used = 0;
        for (size_t i = 0; i < sizeof thread_words / sizeof *thread_words; i++) {
            ids.n = 0;
            if ((jb->rc = jb->m->encode(jb->m, &slot, thread_words[i], strlen(thread_words[i]),
                                        &ids, &err)))
                break;
            for (size_t k = 0; k < ids.n && used < sizeof jb->out - 16; k++)
                used += (size_t)snprintf(jb->out + used, sizeof jb->out - used, "%d ", ids.v[k]);
        }
    }
    ps_tok_ids_free(&ids);
    ps_tok_work_slot_clear(&slot);
    return NULL;
}

/* One loaded model, many threads, each with its own work slot (its cache):
 * every thread gets what one thread alone gets. */
static void test_shared_across_threads(void **state)
{
    (void)state;
    ps_tok_model *m = load_gpt2(NULL);
    job solo = {.m = m};
    encode_all(&solo);
    assert_int_equal(solo.rc, 0);
    assert_non_null(strstr(solo.out, "39113 ")); /* singers */
    job jobs[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (job){.m = m};
        assert_int_equal(pthread_create(&th[t], NULL, encode_all, &jobs[t]), 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].rc, 0);
        assert_string_equal(jobs[t].out, solo.out);
    }
    ps_tok_model_free(m);
}

/* The cache grows, then empties itself at its bounds (64k pieces, 8 MiB):
 * through all of it every piece gets what an uncached encode gives. */
static void test_cache_bounds(void **state)
{
    (void)state;
    ps_tok_model *m = load_gpt2(NULL);
    ps_error err;
    ps_tok_work_slot cached = {0}, plain = {0};
    ps_bpe_slot_uncached(m, &plain);
    ps_tok_ids a = {0}, b = {0};
    char piece[300];
    /* 70k short pieces pass the entry bound; 16k long ones (250 random
     * letters, about 100 ids each) the arena's */
    uint32_t r = 12345;
    for (int i = 0; i < 86000; i++) {
        int len = snprintf(piece, sizeof piece, G "x%dq%d", i * 7919 % 100003, i);
        if (i >= 70000)
            for (len = 0; len < 250; len++) {
                r = r * 1664525u + 1013904223u;
                piece[len] = (char)('a' + (r >> 24) % 26);
            }
        for (int round = 0; round < (i % 5 ? 1 : 2); round++) { /* some twice: cache hits */
            a.n = b.n = 0;
            assert_int_equal(m->encode(m, &cached, piece, (size_t)len, &a, &err), 0);
            assert_int_equal(m->encode(m, &plain, piece, (size_t)len, &b, &err), 0);
            assert_true(a.n == b.n && a.n > 0 && !memcmp(a.v, b.v, a.n * sizeof *a.v));
        }
    }
    ps_tok_ids_free(&a);
    ps_tok_ids_free(&b);
    ps_tok_work_slot_clear(&cached);
    ps_tok_work_slot_clear(&plain);
    ps_tok_model_free(m);
}

int run_driver(int argc, char **argv);

int main(int argc, char **argv)
{
    if (argc > 1)
        return run_driver(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_priority),
        cmocka_unit_test(test_merge_formats),
        cmocka_unit_test(test_unknown_characters),
        cmocka_unit_test(test_ignore_merges_and_dropout),
        cmocka_unit_test(test_prefix_and_suffix),
        cmocka_unit_test(test_bad_models),
        cmocka_unit_test(test_many_merges),
        cmocka_unit_test(test_untagged_and_other_models),
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_shared_across_threads),
        cmocka_unit_test(test_cache_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* ---- the differential test's driver ------------------------------------ */

static ps_tok_model *driver_load(const char *path, double *secs)
{
    double t0 = now_s();
    json_t *j = load_file_model(path);
    if (!j) {
        fprintf(stderr, "%s: cannot read JSON\n", path);
        return NULL;
    }
    double t1 = now_s();
    ps_error err;
    ps_tok_load c = {path, &err, NULL};
    ps_tok_model *m = NULL;
    int rc = PS_OK;
    if (secs)
        secs[1] = 1e9;
    for (int i = 0; i < (secs ? 5 : 1) && !rc; i++) { /* the best of 5 loads */
        double t2 = now_s();
        ps_tok_model_free(m);
        m = NULL;
        rc = ps_tok_model_load(&c, j, "model", &m);
        if (secs && now_s() - t2 < secs[1])
            secs[1] = now_s() - t2;
    }
    json_decref(j);
    if (secs)
        secs[0] = t1 - t0;
    if (rc)
        printf("LOADERR %d %s\n", rc, err.message);
    return m;
}

static int driver_encode(const char *path)
{
    ps_tok_model *m = driver_load(path, NULL);
    if (!m)
        return 0; /* LOADERR was printed */
    ps_tok_work_slot slot = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    ps_tok_ids ids = {0};
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_error_t jerr;
        json_t *s = json_loadb(line, (size_t)n, JSON_DECODE_ANY, &jerr);
        if (!json_is_string(s)) {
            printf("BADLINE\n");
            json_decref(s);
            continue;
        }
        ids.n = 0;
        ps_error err;
        int rc = json_string_length(s) ? m->encode(m, &slot, json_string_value(s),
                                                   json_string_length(s), &ids, &err)
                                       : 0;
        json_decref(s);
        if (rc) {
            printf("ERR %d\n", rc);
            continue;
        }
        putchar('[');
        for (size_t i = 0; i < ids.n; i++)
            printf("%s%d", i ? "," : "", ids.v[i]);
        puts("]");
    }
    free(line);
    ps_tok_ids_free(&ids);
    ps_tok_work_slot_clear(&slot);
    ps_tok_model_free(m);
    return 0;
}

/* Pieces (one JSON string per line) encoded `rounds` times: MB/s. */
static int driver_bench(const char *path, const char *pieces_path, int rounds)
{
    double secs[2];
    ps_tok_model *m = driver_load(path, secs);
    if (!m)
        return 1;
    FILE *f = fopen(pieces_path, "r");
    if (!f)
        return 1;
    ps_tok_pieces pieces = {0};
    char *line = NULL;
    size_t cap = 0, bytes = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_t *s = json_loadb(line, (size_t)n, JSON_DECODE_ANY, NULL);
        if (json_is_string(s) && json_string_length(s)) {
            ps_tok_pieces_push(&pieces, json_string_value(s), json_string_length(s), false);
            bytes += json_string_length(s);
        }
        json_decref(s);
    }
    free(line);
    fclose(f);
    ps_tok_work_slot slot = {0};
    ps_tok_ids ids = {0};
    ps_error err;
    size_t n_ids = 0;
    double t[3];
    /* 0: no cache (the merge itself), 1: one round from a cold cache, 2: warm */
    for (int pass = 0; pass < 3; pass++) {
        ps_tok_work_slot_clear(&slot);
        if (!pass && m->kind == PS_TOK_MODEL_BPE)
            ps_bpe_slot_uncached(m, &slot);
        double t0 = now_s();
        for (int r = 0; r < (pass == 1 ? 1 : rounds); r++)
            for (size_t i = 0; i < pieces.n; i++) {
                ids.n = 0;
                if (pass == 2 && !r)
                    t0 = now_s(); /* the first round warms the cache */
                if (m->encode(m, &slot, pieces.pool.p + pieces.v[i].off, pieces.v[i].len, &ids,
                              &err))
                    return 1;
                n_ids += ids.n;
            }
        t[pass] = now_s() - t0;
    }
    printf("json parse %.1f ms, model load %.1f ms (best of 5); %zu pieces, %zu bytes; "
           "uncached %.1f MB/s; first round from a cold cache %.1f MB/s; warm cache %.1f MB/s\n",
           secs[0] * 1e3, secs[1] * 1e3, pieces.n, bytes, (double)bytes * rounds / t[0] / 1e6,
           bytes / t[1] / 1e6, (double)bytes * (rounds - 1) / t[2] / 1e6);
    ps_tok_ids_free(&ids);
    ps_tok_work_slot_clear(&slot);
    ps_tok_pieces_free(&pieces);
    ps_tok_model_free(m);
    return 0;
}

int run_driver(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--encode"))
        return driver_encode(argv[2]);
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "--bench"))
        return driver_bench(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 20);
    fprintf(stderr, "usage: %s [--encode MODEL.json | --bench MODEL.json PIECES [ROUNDS]]\n",
            argv[0]);
    return 2;
}
