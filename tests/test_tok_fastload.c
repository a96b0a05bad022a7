/* Differential tests of the fast tokenizer.json load (tokenize/fastload.c)
 * against the plain jansson path (ps_tok_fastload_enable(false)): the same
 * result code, the same message, and on success byte-identical vocabulary
 * and merge tables and the same encodings. Every file of
 * tests/data/tokenizers, hostile spans, every truncation and every
 * single-byte change of a small file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tokenize/bpe.h"
#include "tokenize/hf.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_path[64];

static const char *data_dir(void)
{
    static char buf[4096];
    const char *root = getenv("PS_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/data/tokenizers", root ? root : ".");
    return buf;
}

static const ps_tok_vocab *vocab_of(const ps_tokenizer *t)
{
    return t->hf ? &t->hf->model->vocab : &t->vocab;
}

static void same_vocab(const ps_tok_vocab *a, const ps_tok_vocab *b)
{
    assert_int_equal(a->n_keys, b->n_keys);
    assert_int_equal(a->n_ids, b->n_ids);
    assert_int_equal(a->pool_len, b->pool_len);
    assert_int_equal(a->mask, b->mask);
    assert_memory_equal(a->pool, b->pool, a->pool_len);
    if (a->n_ids)
        assert_memory_equal(a->tok_off, b->tok_off, a->n_ids * sizeof *a->tok_off);
    for (size_t j = 0; a->slots && j <= a->mask; j++) { /* free slots hold garbage */
        const ps_tok_slot *x = &a->slots[j], *y = &b->slots[j];
        assert_int_equal(x->id, y->id);
        if (x->id >= 0) {
            assert_int_equal(x->hash, y->hash);
            assert_int_equal(x->off, y->off);
            assert_int_equal(x->len, y->len);
        }
    }
}

static void same_merges(const ps_bpe *a, const ps_bpe *b)
{
    assert_int_equal(a->n_merges, b->n_merges);
    assert_int_equal(a->merge_mask, b->merge_mask);
    for (size_t j = 0; j <= a->merge_mask; j++) {
        const ps_bpe_merge *x = &a->merges[j], *y = &b->merges[j];
        assert_int_equal(x->key, y->key);
        if (x->key != PS_BPE_EMPTY) {
            assert_int_equal(x->rank, y->rank);
            assert_int_equal(x->new_id, y->new_id);
        }
    }
}

static const char *const TEXTS[] = {
    "How many singers do we have?", "SELECT count(*) FROM singer", "\xc3\xa9t\xc3\xa9 \xe4\xb8\xad",
    "Hello world, hello ab aab", "[CLS] unaffable ##c <s>", "",
};

static void same_encodings(const ps_tokenizer *a, const ps_tokenizer *b)
{
    ps_tok_scratch *sa = ps_tok_scratch_new(), *sb = ps_tok_scratch_new();
    assert_non_null(sa);
    assert_non_null(sb);
    size_t n = sizeof TEXTS / sizeof TEXTS[0];
    for (size_t i = 0; i < n; i++) {
        const char *x = TEXTS[i], *y = TEXTS[(i + 1) % n];
        ps_encoding ea, eb;
        ps_error ra = {0}, rb = {0};
        int ca = ps_tokenizer_encode_pair(a, sa, x, strlen(x), y, strlen(y), 0, &ea, &ra);
        int cb = ps_tokenizer_encode_pair(b, sb, x, strlen(x), y, strlen(y), 0, &eb, &rb);
        assert_int_equal(ca, cb);
        assert_string_equal(ra.message, rb.message);
        if (ca < 0)
            continue;
        assert_int_equal(ea.len, eb.len);
        if (ea.len) {
            assert_memory_equal(ea.input_ids, eb.input_ids, ea.len * sizeof *ea.input_ids);
            assert_memory_equal(ea.token_type_ids, eb.token_type_ids, ea.len);
        }
    }
    ps_tok_scratch_free(sa);
    ps_tok_scratch_free(sb);
}

/* Loads `path` both ways; they must agree. Returns the fast path's rc and
 * whether the fast path completed the load. */
static int both(const char *path, bool *fast_taken)
{
    ps_tokenizer *fast = NULL, *slow = NULL;
    ps_error ef = {0}, es = {0};
    unsigned long hits = ps_tok_fastload_hits();
    int rf = ps_tokenizer_load_json(path, &fast, &ef);
    *fast_taken = ps_tok_fastload_hits() != hits;
    ps_tok_fastload_enable(false);
    int rs = ps_tokenizer_load_json(path, &slow, &es);
    ps_tok_fastload_enable(true);
    assert_int_equal(rf, rs);
    assert_int_equal(ef.code, es.code);
    assert_string_equal(ef.message, es.message);
    if (!rf) {
        assert_string_equal(fast->model_type, slow->model_type);
        assert_int_equal(ps_tokenizer_vocab_size(fast), ps_tokenizer_vocab_size(slow));
        same_vocab(vocab_of(fast), vocab_of(slow));
        if (fast->hf && fast->hf->model->kind == PS_TOK_MODEL_BPE) {
            same_merges((const ps_bpe *)fast->hf->model, (const ps_bpe *)slow->hf->model);
        }
        same_encodings(fast, slow);
    }
    ps_tokenizer_free(fast);
    ps_tokenizer_free(slow);
    return rf;
}

static int both_text(const char *text, size_t len, bool *fast_taken)
{
    FILE *f = fopen(tmp_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
    return both(tmp_path, fast_taken);
}

static void test_all_data_files(void **state)
{
    (void)state;
    DIR *d = opendir(data_dir());
    assert_non_null(d);
    struct dirent *e;
    size_t n = 0, fast = 0;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".tokenizer.json"))
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", data_dir(), e->d_name);
        bool taken;
        assert_int_equal(both(path, &taken), PS_OK);
        n++;
        fast += taken;
        /* every model but Unigram (an array vocab) takes the fast path */
        if (!strstr(e->d_name, "unigram") && !strstr(e->d_name, "t5-"))
            assert_true(taken);
    }
    closedir(d);
    assert_true(n >= 20);
    assert_true(fast >= 15);
    const char *extra = getenv("PS_FASTLOAD_EXTRA"); /* e.g. a 152k-token file, by hand */
    if (extra) {
        bool taken;
        assert_int_equal(both(extra, &taken), PS_OK);
        assert_true(taken);
    }
}

/* A small byte-level-free BPE with %s for the vocab and merges texts. */
static const char BPE_FMT[] =
    "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":"
    "{\"type\":\"Whitespace\"},\"post_processor\":null,\"decoder\":null,"
    "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":\"u\",\"vocab\":%s,"
    "\"merges\":%s}}";

static const char VOCAB[] = "{\"u\":0,\"a\":1,\"b\":2,\"ab\":3,\"aab\":4,\"H\":5,\"e\":6}";
static const char MERGES[] = "[\"a b\",\"a ab\"]";

static int fmt_both(const char *vocab, const char *merges, bool *taken)
{
    char buf[4096];
    int n = snprintf(buf, sizeof buf, BPE_FMT, vocab, merges);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    return both_text(buf, (size_t)n, taken);
}

/* A hostile case (either way may refuse it, but both must agree), logged
 * first so that a failure names it. */
static void hostile_bpe(const char *what, size_t i, const char *vocab, const char *merges)
{
    bool taken;
    print_message("%s %zu: vocab %s, merges %s\n", what, i, vocab, merges);
    fmt_both(vocab, merges, &taken);
}

static void test_plain_small(void **state)
{
    (void)state;
    bool taken;
    assert_int_equal(fmt_both(VOCAB, MERGES, &taken), PS_OK);
    assert_true(taken);
    assert_int_equal(fmt_both(VOCAB, "[[\"a\",\"b\"] , [ \"a\" ,\"ab\" ] ]", &taken), PS_OK);
    assert_true(taken);
    assert_int_equal(fmt_both(VOCAB, "[\"#version: 0.2\",\"a b\"]", &taken), PS_OK);
    assert_true(taken);
    assert_int_equal(fmt_both(" { \"u\" : 0 , \"a\":1 }\n", " [ ] ", &taken), PS_OK);
    assert_true(taken);
}

static void test_hostile_vocab(void **state)
{
    (void)state;
    static const char *const vocabs[] = {
        "{\"u\":0,\"\\u0041\":1,\"\\u00e9\":2,\"\\ud83d\\ude00\":3,\"\\/\\n\\t\\\"\\\\\":4}",
        "{\"u\":0,\"\\uD83D\\uDE00x\":1}",
        "{\"u\":0,\"\\ud800\":1}",         /* lone high surrogate */
        "{\"u\":0,\"\\udc00\":1}",         /* lone low surrogate */
        "{\"u\":0,\"\\ud800\\u0041\":1}",  /* high then not a low */
        "{\"u\":0,\"a\\u0000b\":1}",       /* NUL */
        "{\"u\":0,\"\xc0\x80\":1}",        /* overlong */
        "{\"u\":0,\"\xed\xa0\x80\":1}",    /* encoded surrogate */
        "{\"u\":0,\"\xff\":1}",
        "{\"u\":0,\"\xe4\xb8\":1}",        /* cut short */
        "{\"u\":0,\"\xf4\x90\x80\x80\":1}", /* beyond U+10FFFF */
        "{\"u\":0,\"\xe4\xb8\xad\":1}",
        "{\"u\":0,\"a\tb\":1}",            /* raw control character */
        "{\"u\":0,\"\\x\":1}",             /* unknown escape */
        "{\"u\":0,\"\\u12\":1}",
        "{\"u\":0,\"a\":1,\"a\":2}",       /* duplicate key */
        "{\"a\":1,\"u\":0,\"a\":1}",
        "{\"u\":0,\"a\":-1}",
        "{\"u\":0,\"a\":-0}",
        "{\"u\":0,\"a\":1.0}",
        "{\"u\":0,\"a\":1e2}",
        "{\"u\":0,\"a\":01}",
        "{\"u\":0,\"a\":99999999999}",
        "{\"u\":0,\"a\":2147483647}",
        "{\"u\":0,\"a\":2147483646}",
        "{\"u\":0,\"a\":65552}",           /* beyond the sparseness limit */
        "{\"u\":0,\"a\":65551}",
        "{\"u\":0,\"a\":\"1\"}",
        "{\"u\":0,\"a\":null}",
        "{\"u\":0,\"a\":1,}",
        "{\"u\":0 \"a\":1}",
        "{\"u\":0,\"a\":1",
        "{}",
        "[]",
        "[[\"u\",0.0]]",
        "null",
        "{\"u\":0,\"a\":1}}",
    };
    for (size_t i = 0; i < sizeof vocabs / sizeof vocabs[0]; i++)
        hostile_bpe("vocab", i, vocabs[i], "[]");
    bool taken;
    assert_int_equal(fmt_both(vocabs[0], "[]", &taken), PS_OK);
    assert_true(taken);
    assert_int_equal(fmt_both("{\"u\":0,\"a\":1,\"a\":2}", "[]", &taken), PS_OK);
    assert_false(taken); /* a duplicate goes to jansson */
}

static void test_hostile_merges(void **state)
{
    (void)state;
    static const char *const merges[] = {
        "[\"a b\",[\"a\",\"ab\"]]",   /* mixed forms */
        "[[\"a\",\"b\"],\"a ab\"]",
        "[[\"a\",\"b\",\"c\"]]",
        "[[\"a\"]]",
        "[[\"a\",1]]",
        "[\"a  b\"]",
        "[\"ab\"]",
        "[\"a x\"]",                  /* not in the vocabulary */
        "[\"a \\u0062\"]",
        "[\"a\\u0020b\"]",
        "[\"a b\",]",
        "[\"a b\"",
        "[1]",
        "{}",
        "\"a b\"",
        "[\"a b\",\"a b\",\"a ab\"]", /* a duplicate merge: the later wins */
        "[\"#version\"]",
        "[\"a b\"] ",
    };
    for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++)
        hostile_bpe("merges", i, VOCAB, merges[i]);
}

static void test_hostile_structure(void **state)
{
    (void)state;
    static const char *const files[] = {
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"b\":0},\"merges\":[]}}",
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"vocab\":{\"b\":0},\"merges\":[]}}",
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"merges\":[\"a a\"]}}",
        "{\"mod\\u0065l\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
        "{\"model\":{\"type\":\"BPE\",\"voc\\u0061b\":{\"a\":0},\"merges\":[]}}",
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}} x",
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}",
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]]}",
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[}]}",
        "{\"x\":\"}\\\"\",\"model\":{\"vocab\":{\"a\":0},\"merges\":[]}}",
        "{\"model\":{\"vocab\":{\"a\":0},\"merges\":[]}}",
        "{\"model\":{\"vocab\":{\"a\":0},\"unk_token\":\"a\"}}",
        "{\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"a\":0},\"unk_token\":\"a\"}}",
        "{\"model\":{\"type\":\"Unigram\",\"vocab\":{\"a\":0}}}",
        "{\"model\":{\"vocab\":{\"[UNK]\":0,\"a\":1},\"unk_token\":\"[UNK]\","
        "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":100}}",
        "{\"model\":[],\"x\":{\"vocab\":{}}}",
        "[{\"model\":{\"vocab\":{\"a\":0},\"merges\":[]}}]",
        "",
        "{",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        bool taken;
        print_message("file %zu: %s\n", i, files[i]);
        both_text(files[i], strlen(files[i]), &taken);
    }
}

/* Every prefix and every single-byte change of a small file. */
static void test_truncations_and_flips(void **state)
{
    (void)state;
    char buf[4096];
    int n = snprintf(buf, sizeof buf, BPE_FMT,
                     "{\"u\":0,\"a\":1,\"b\":2,\"ab\":3,\"\\u00e9\":4,\"aab\":5}",
                     "[\"a b\",[\"a\",\"ab\"]]");
    assert_true(n > 0 && (size_t)n < sizeof buf);
    size_t len = (size_t)n, ok = 0;
    bool taken;
    for (size_t k = 0; k <= len; k++)
        both_text(buf, k, &taken);
    static const char subst[] = {'"', '\\', '{', '}', '[', ']', ',', ':', '0', '9', 'u', ' ',
                                 '\0', (char)0x80, (char)0xe9};
    for (size_t i = 0; i < len; i++)
        for (size_t s = 0; s < sizeof subst; s++) {
            char c = buf[i];
            if (c == subst[s])
                continue;
            buf[i] = subst[s];
            ok += both_text(buf, len, &taken) == PS_OK;
            buf[i] = c;
        }
    assert_true(ok > 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp_path, sizeof tmp_path, "/tmp/ps_fastload_%ld.json", (long)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(tmp_path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_data_files),
        cmocka_unit_test(test_plain_small),
        cmocka_unit_test(test_hostile_vocab),
        cmocka_unit_test(test_hostile_merges),
        cmocka_unit_test(test_hostile_structure),
        cmocka_unit_test(test_truncations_and_flips),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
