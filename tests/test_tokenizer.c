/* Unit tests of the WordPiece tokenizer through its public API: the real
 * bert-base-uncased and bert-base-chinese vocabularies, the vocab.txt and
 * tokenizer.json loaders on hostile files, normalization, truncation,
 * special tokens, invalid UTF-8 and concurrent use. Id-for-id agreement
 * with HuggingFace on whole corpora is tests/conformance's job. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/testutil.h"
#include "pairshard/tokenizer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S(lit) lit, sizeof(lit) - 1

static ps_tokenizer *load_uncased(void)
{
    ps_tokenizer *tok = NULL;
    ps_error err;
    int rc = ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-uncased.vocab.txt"), NULL, &tok, &err);
    if (rc)
        fail_msg("loading bert-base-uncased: %s", err.message);
    return tok;
}

static int32_t id_of(const ps_tokenizer *tok, const char *token)
{
    int32_t id = ps_tokenizer_token_to_id(tok, token, strlen(token));
    if (id < 0)
        fail_msg("token '%s' not in the vocabulary", token);
    return id;
}

/* Tokenizes without specials and compares with the given tokens. */
static void expect_tokens(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text,
                          const char *const *tokens, size_t n)
{
    ps_encoding enc;
    ps_error err;
    int rc = ps_tokenizer_tokenize(tok, s, text, strlen(text), &enc, &err);
    assert_int_equal(rc, (int)n);
    for (size_t i = 0; i < n; i++) {
        if (enc.input_ids[i] != id_of(tok, tokens[i]))
            fail_msg("'%s': token %zu is %s, expected %s", text, i,
                     ps_tokenizer_id_to_token(tok, enc.input_ids[i]), tokens[i]);
    }
}

typedef struct words {
    char buf[2048];
    size_t n;
} words;

static int collect(void *ctx, const char *w, size_t len)
{
    words *ws = ctx;
    size_t used = strlen(ws->buf);
    if (used + len + 2 >= sizeof ws->buf)
        return 1;
    if (ws->n++)
        ws->buf[used++] = '|';
    memcpy(ws->buf + used, w, len);
    ws->buf[used + len] = '\0';
    return 0;
}

/* The normalized words of `text`, joined with '|'. */
static const char *words_of(const ps_tokenizer *tok, ps_tok_scratch *s, const char *text, size_t len)
{
    static words ws;
    memset(&ws, 0, sizeof ws);
    ps_error err;
    int rc = ps_tokenizer_words(tok, s, text, len, collect, &ws, &err);
    if (rc)
        fail_msg("words of '%s': %d %s", text, rc, err.message);
    return ws.buf;
}

/* ---- the real vocabularies --------------------------------------------- */

static void test_known_words_and_pieces(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    assert_int_equal(ps_tokenizer_vocab_size(tok), 30522);
    /* the classic ids of bert-base-uncased */
    assert_int_equal(id_of(tok, "[PAD]"), 0);
    assert_int_equal(id_of(tok, "[UNK]"), 100);
    assert_int_equal(id_of(tok, "[CLS]"), 101);
    assert_int_equal(id_of(tok, "[SEP]"), 102);
    assert_int_equal(id_of(tok, "[MASK]"), 103);
    assert_string_equal(ps_tokenizer_id_to_token(tok, 7592), "hello");
    assert_null(ps_tokenizer_id_to_token(tok, 30522));
    assert_null(ps_tokenizer_id_to_token(tok, -1));

    static const char *const hello[] = {"hello", ",", "world", "!"};
    expect_tokens(tok, s, "Hello, WORLD!", hello, 4);
    /* greedy longest match: a piece, then ## continuations */
    static const char *const pieces[] = {"token", "##ization"};
    expect_tokens(tok, s, "tokenization", pieces, 2);
    static const char *const sql[] = {"select", "count", "(", "*", ")", "from", "singer"};
    expect_tokens(tok, s, "SELECT count(*) FROM singer", sql, 7);

    ps_encoding enc;
    ps_error err;
    assert_int_equal(ps_tokenizer_encode(tok, s, S("hello world"), 0, &enc, &err), 4);
    assert_int_equal(enc.input_ids[0], 101);
    assert_int_equal(enc.input_ids[1], 7592);
    assert_int_equal(enc.input_ids[3], 102);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

static void test_pair_layout_and_types(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding enc;
    ps_error err;
    int n = ps_tokenizer_encode_pair(tok, s, S("how many singers ?"),
                                     S("SELECT count(*) FROM singer"), 0, &enc, &err);
    assert_int_equal(n, 1 + 4 + 1 + 7 + 1);
    assert_int_equal(enc.input_ids[0], id_of(tok, "[CLS]"));
    assert_int_equal(enc.input_ids[5], id_of(tok, "[SEP]"));
    assert_int_equal(enc.input_ids[6], id_of(tok, "select"));
    assert_int_equal(enc.input_ids[n - 1], id_of(tok, "[SEP]"));
    for (int i = 0; i < n; i++)
        assert_int_equal(enc.token_type_ids[i], i <= 5 ? 0 : 1);

    /* empty fields are fine: [CLS] [SEP] [SEP] */
    n = ps_tokenizer_encode_pair(tok, s, "", 0, NULL, 0, 0, &enc, &err);
    assert_int_equal(n, 3);
    assert_int_equal(enc.token_type_ids[0], 0);
    assert_int_equal(enc.token_type_ids[1], 0);
    assert_int_equal(enc.token_type_ids[2], 1);
    /* whitespace only, and only dropped characters, are empty too */
    assert_int_equal(ps_tokenizer_encode_pair(tok, s, S(" \t\n\xc2\xa0"), S("\x01\xef\xbf\xbd"), 0,
                                              &enc, &err), 3);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

static void test_chinese_vocab_is_cased(void **state)
{
    (void)state;
    ps_tokenizer_options opt;
    ps_tokenizer_options_init(&opt);
    opt.lowercase = 0; /* bert-base-chinese: do_lower_case = false */
    ps_tokenizer *tok = NULL;
    ps_error err;
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-chinese.vocab.txt"), &opt,
                                             &tok, &err), 0);
    assert_int_equal(ps_tokenizer_vocab_size(tok), 21128);
    ps_tokenizer_options got;
    ps_tokenizer_get_options(tok, &got);
    assert_int_equal(got.lowercase, 0);
    assert_int_equal(got.strip_accents, 0); /* follows lowercase */
    assert_int_equal(got.struct_size, sizeof got);
    /* options never given to _init (struct_size 0) are refused, not guessed */
    ps_tokenizer_options raw;
    memset(&raw, 0, sizeof raw);
    ps_tokenizer *none = NULL;
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-chinese.vocab.txt"), &raw,
                                             &none, &err), PS_EINVAL);
    assert_null(none);
    assert_non_null(strstr(err.message, "ps_tokenizer_options"));
    assert_int_equal(ps_tokenizer_options_init_size(&raw, sizeof raw + 8), PS_EINVAL);
    ps_tok_scratch *s = ps_tok_scratch_new();
    /* ideographs are words of their own; accents stay */
    assert_string_equal(words_of(tok, s, S("学生name和Café")), "学|生|name|和|Café");
    static const char *const zh[] = {"学", "生"};
    expect_tokens(tok, s, "学生", zh, 2);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
    /* the mirror copy has no final newline: its last line is still a token */
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-chinese.mirror-escaped.vocab.txt"), &opt, &tok,
                                             &err), 0);
    assert_int_equal(ps_tokenizer_vocab_size(tok), 21128);
    ps_tokenizer_free(tok);
}

typedef struct unk_list {
    char text[256];
    int hints[16];
    size_t n;
    const ps_tokenizer *tok;
    ps_tok_scratch *s;
} unk_list;

static int collect_unk(void *ctx, const char *w, size_t len)
{
    unk_list *u = ctx;
    size_t at = strlen(u->text);
    snprintf(u->text + at, sizeof u->text - at, "%s%.*s", at ? "|" : "", (int)len, w);
    if (u->n < 16)
        u->hints[u->n] = ps_tokenizer_unk_hint(u->tok, u->s, w, len);
    u->n++;
    return 0;
}

/* The words that became [UNK] and why: the HTML-escaped mirror copy of
 * bert-base-chinese (lower-case Latin part) without lowercasing. */
static void test_unk_words_and_hints(void **state)
{
    (void)state;
    ps_tokenizer_options opt;
    ps_tokenizer_options_init(&opt);
    opt.lowercase = 0;
    ps_tokenizer *tok = NULL;
    ps_error err;
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-chinese.mirror-escaped.vocab.txt"), &opt,
                                             &tok, &err), 0);
    ps_tok_scratch *s = ps_tok_scratch_new();
    unk_list u = {.tok = tok, .s = s};
    const char *t = "SELECT name FROM \xE2\x80\x9C\xE5\xAD\xA6\xE2\x80\x9D WHERE a < 3 ok\xF0\x9F\x98\x80";
    assert_int_equal(ps_tokenizer_unk_words(tok, s, t, strlen(t), collect_unk, &u, &err), 0);
    assert_string_equal(u.text, "SELECT|FROM|\xE2\x80\x9C|\xE2\x80\x9D|WHERE|<|ok\xF0\x9F\x98\x80");
    const int want[] = {PS_UNK_HINT_LOWERCASE, PS_UNK_HINT_LOWERCASE, PS_UNK_HINT_RULES,
                        PS_UNK_HINT_RULES, PS_UNK_HINT_LOWERCASE, PS_UNK_HINT_HTML,
                        PS_UNK_HINT_RULES};
    assert_int_equal(u.n, 7);
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(u.hints[i], want[i]);
    /* the encoding holds exactly as many [UNK] as words were reported */
    ps_encoding enc;
    int n = ps_tokenizer_tokenize(tok, s, t, strlen(t), &enc, &err);
    assert_true(n > 0);
    size_t unk = 0;
    for (size_t i = 0; i < enc.len; i++)
        unk += enc.input_ids[i] == ps_tokenizer_token_to_id(tok, "[UNK]", 5);
    assert_int_equal(unk, 7);
    /* no [UNK]: no call */
    unk_list none = {.tok = tok, .s = s};
    assert_int_equal(ps_tokenizer_unk_words(tok, s, "name", 4, collect_unk, &none, &err), 0);
    assert_int_equal(none.n, 0);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

/* T5 (Unigram after Metaspace) keeps the known tokens of a word beside its
 * unk tokens: the word reported is the span of characters unk by
 * themselves, without the marker \u2581, which is a token (so no rule that
 * would delete it is hinted); the [UNK] count matches the encoding's. */
static void test_unk_words_unigram_span(void **state)
{
    (void)state;
    ps_tokenizer *tok = NULL;
    ps_error err;
    assert_int_equal(ps_tokenizer_load_json(ps_test_data("tokenizers/t5-small.tokenizer.json"),
                                            &tok, &err), 0);
    ps_tok_scratch *s = ps_tok_scratch_new();
    unk_list u = {.tok = tok, .s = s};
    const char *t = "WHERE age <= 3 AND name < ``b`` ok";
    assert_int_equal(ps_tokenizer_unk_words(tok, s, t, strlen(t), collect_unk, &u, &err), 0);
    assert_string_equal(u.text, "<|<|``b``"); /* first to last unk character */
    for (size_t i = 0; i < u.n; i++)
        assert_int_equal(u.hints[i], PS_UNK_HINT_NONE);
    ps_encoding enc;
    assert_true(ps_tokenizer_tokenize(tok, s, t, strlen(t), &enc, &err) > 0);
    size_t unk = 0;
    for (size_t i = 0; i < enc.len; i++)
        unk += enc.input_ids[i] == 2; /* T5's <unk> */
    assert_int_equal(unk, 4);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

/* ---- normalizer and pre-tokenizer -------------------------------------- */

static void test_normalization(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    assert_string_equal(words_of(tok, s, S("Café NAÏVE")), "cafe|naive");
    assert_string_equal(words_of(tok, s, S("e\xcc\x81")), "e"); /* combining acute */
    assert_string_equal(words_of(tok, s, S("\xcc\x81\xcc\x82")), ""); /* marks alone vanish */
    assert_string_equal(words_of(tok, s, S("İstanbul")), "istanbul");
    assert_string_equal(words_of(tok, s, S("Straße ΣΑΣ")), "straße|σασ"); /* no final sigma */
    assert_string_equal(words_of(tok, s, S("a,b.c")), "a|,|b|.|c");
    assert_string_equal(words_of(tok, s, S("x>=5")), "x|>|=|5");
    assert_string_equal(words_of(tok, s, S("«hi»")), "«|hi|»");
    assert_string_equal(words_of(tok, s, S("a\xc2\xa0" "b\xe3\x80\x80" "c")), "a|b|c"); /* NBSP, U+3000 */
    assert_string_equal(words_of(tok, s, S("zero\xe2\x80\x8bwidth")), "zerowidth"); /* Cf dropped */
    assert_string_equal(words_of(tok, s, S("a\x00" "b")), "ab");          /* NUL dropped */
    assert_string_equal(words_of(tok, s, S("a\x0b" "b\x7f" "c")), "abc");  /* VT, DEL: controls */
    assert_string_equal(words_of(tok, s, S("中文abc")), "中|文|abc");
    assert_string_equal(words_of(tok, s, S("[MASK] x")), "[MASK]|x"); /* special kept whole */
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);

    /* lowercase without stripping: İ becomes i + U+0307 (Rust's to_lowercase) */
    ps_tokenizer_options opt;
    ps_tokenizer_options_init(&opt);
    opt.strip_accents = 0;
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-uncased.vocab.txt"), &opt,
                                             &tok, NULL), 0);
    s = ps_tok_scratch_new();
    assert_string_equal(words_of(tok, s, S("İ Café")), "i\xcc\x87|café");
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

static void test_long_words_and_unk(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    char word[256];
    ps_encoding enc;
    int32_t unk = id_of(tok, "[UNK]");
    /* exactly 100 characters (2 bytes each): still WordPiece'd */
    for (int i = 0; i < 100; i++)
        memcpy(word + 2 * i, "\xc3\xa9", 2); /* é -> e */
    int n = ps_tokenizer_tokenize(tok, s, word, 200, &enc, NULL);
    assert_true(n >= 1);
    assert_int_not_equal(enc.input_ids[0], unk);
    /* 101 characters: one [UNK] */
    memcpy(word + 200, "\xc3\xa9", 2);
    assert_int_equal(ps_tokenizer_tokenize(tok, s, word, 202, &enc, NULL), 1);
    assert_int_equal(enc.input_ids[0], unk);
    /* a word no piece covers is a single [UNK], not pieces then [UNK] */
    assert_int_equal(ps_tokenizer_tokenize(tok, s, S("ab\xe2\x98\x83"), &enc, NULL), 1);
    assert_int_equal(enc.input_ids[0], unk);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

static void test_special_tokens_in_text(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding enc;
    assert_int_equal(ps_tokenizer_tokenize(tok, s, S("a [MASK]b"), &enc, NULL), 3);
    assert_int_equal(enc.input_ids[1], id_of(tok, "[MASK]"));
    /* matched verbatim only: "[mask]" is three words */
    assert_int_equal(ps_tokenizer_tokenize(tok, s, S("[mask]"), &enc, NULL), 3);
    assert_int_equal(enc.input_ids[0], id_of(tok, "["));
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);

    ps_tokenizer_options opt;
    ps_tokenizer_options_init(&opt);
    opt.match_special_tokens = 0;
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-uncased.vocab.txt"), &opt,
                                             &tok, NULL), 0);
    s = ps_tok_scratch_new();
    assert_int_equal(ps_tokenizer_tokenize(tok, s, S("[MASK]"), &enc, NULL), 3);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

/* ---- truncation ------------------------------------------------------- */

static char *repeat_word(const char *w, int n)
{
    size_t wl = strlen(w);
    char *out = malloc((wl + 1) * (size_t)(n > 0 ? n : 1) + 1);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        memcpy(out + i * (wl + 1), w, wl);
        out[i * (wl + 1) + wl] = ' ';
        out[(i + 1) * (wl + 1)] = '\0';
    }
    return out;
}

/* Encodes n_a words "a" and n_b words "b" (one id each) truncated to max,
 * and returns how many of each survived. */
static void split_of(const ps_tokenizer *tok, ps_tok_scratch *s, int na, int nb, size_t max,
                     int *ka, int *kb)
{
    char *a = repeat_word("a", na), *b = repeat_word("b", nb);
    ps_encoding enc;
    int n = ps_tokenizer_encode_pair(tok, s, a, strlen(a), b, strlen(b), max, &enc, NULL);
    assert_true(n >= 3);
    assert_true((size_t)n <= max);
    *ka = *kb = 0;
    for (int i = 0; i < n; i++) {
        if (enc.input_ids[i] == id_of(tok, "a"))
            ++*ka;
        if (enc.input_ids[i] == id_of(tok, "b"))
            ++*kb;
    }
    free(a);
    free(b);
}

static void test_longest_first(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    int ka, kb;
    split_of(tok, s, 3, 20, 16, &ka, &kb); /* short one kept whole */
    assert_int_equal(ka, 3);
    assert_int_equal(kb, 10);
    split_of(tok, s, 20, 3, 16, &ka, &kb);
    assert_int_equal(ka, 10);
    assert_int_equal(kb, 3);
    split_of(tok, s, 20, 20, 16, &ka, &kb); /* both cut: the odd id to the second */
    assert_int_equal(ka, 6);
    assert_int_equal(kb, 7);
    split_of(tok, s, 5, 4, 8, &ka, &kb); /* the longer gets the odd id */
    assert_int_equal(ka, 3);
    assert_int_equal(kb, 2);
    /* HF 0.23.2 measured: with max_length 4, (5, 4) keeps 0/1 but (4, 3)
     * keeps 1/0 -- each sequence is first cut at max_length ids */
    split_of(tok, s, 5, 4, 4, &ka, &kb);
    assert_int_equal(ka, 0);
    assert_int_equal(kb, 1);
    split_of(tok, s, 4, 3, 4, &ka, &kb);
    assert_int_equal(ka, 1);
    assert_int_equal(kb, 0);
    split_of(tok, s, 2, 2, 3, &ka, &kb); /* max_length 3: only the specials */
    assert_int_equal(ka + kb, 0);

    /* the early stop at max_length ids happens at word boundaries, so a
     * long word past the cut changes the split (HF 0.23.2 measured 5/4) */
    const char *a = "a a a a a a a a xqzvw a a a", *b = "a a a a a a a a a a a a a a a a a a a a";
    ps_encoding enc;
    assert_int_equal(ps_tokenizer_encode_pair(tok, s, a, strlen(a), b, strlen(b), 12, &enc, NULL), 12);
    assert_int_equal(enc.input_ids[6], id_of(tok, "[SEP]"));

    /* a special token reaching max_length does not stop the walk; the next
     * word does (HF 0.23.2 measured: "a"x11 [PAD] a is longer than 12) */
    const char *sp = "a a a a a a a a a a a [PAD] a";
    assert_int_equal(ps_tokenizer_encode_pair(tok, s, sp, strlen(sp), b, strlen(b), 12, &enc, NULL), 12);
    assert_int_equal(enc.input_ids[6], id_of(tok, "[SEP]")); /* first got the odd id */
    sp = "a a a a a a a a a a a a [PAD] a";
    assert_int_equal(ps_tokenizer_encode_pair(tok, s, sp, strlen(sp), b, strlen(b), 12, &enc, NULL), 12);
    assert_int_equal(enc.input_ids[5], id_of(tok, "[SEP]")); /* tie: the second got it */

    ps_error err;
    assert_int_equal(ps_tokenizer_encode_pair(tok, s, S("a"), S("b"), 2, &enc, &err), PS_EINVAL);
    assert_int_equal(err.code, PS_EINVAL);
    assert_int_equal(ps_tokenizer_encode(tok, s, S("a b c"), 1, &enc, &err), PS_EINVAL);
    assert_int_equal(ps_tokenizer_encode(tok, s, S("a b c"), 3, &enc, &err), 3);
    assert_int_equal(enc.input_ids[1], id_of(tok, "a"));
    assert_int_equal(enc.input_ids[2], id_of(tok, "[SEP]"));
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

/* ---- invalid UTF-8 ---------------------------------------------------- */

static void test_invalid_utf8(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding enc;
    ps_error err;
    static const struct {
        const char *text;
        size_t len, at;
    } bad[] = {
        {S("ab\xff" "c"), 2},          /* not a lead byte */
        {S("abc\xc3"), 3},             /* truncated at the end */
        {S("a\xc0\x80"), 1},           /* overlong NUL */
        {S("\xed\xa0\x80"), 0},        /* surrogate */
        {S("x\xf4\x90\x80\x80"), 1},   /* above U+10FFFF */
        {S("\xe2\x82"), 0},            /* truncated 3-byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = ps_tokenizer_encode_pair(tok, s, bad[i].text, bad[i].len, S("ok"), 0, &enc, &err);
        assert_int_equal(rc, PS_EUTF8);
        char want[64];
        snprintf(want, sizeof want, "at byte %zu of the text", bad[i].at);
        if (!strstr(err.message, want))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.message, want);
    }
    int rc = ps_tokenizer_encode_pair(tok, s, S("ok"), S("fine \xfe"), 0, &enc, &err);
    assert_int_equal(rc, PS_EUTF8);
    assert_non_null(strstr(err.message, "byte 5 of the second sequence"));
    /* rejected whatever the truncation: bytes past the cut are checked too */
    rc = ps_tokenizer_encode_pair(tok, s, S("a b c d e f g h i j \xff"), S("x"), 4, &enc, &err);
    assert_int_equal(rc, PS_EUTF8);
    /* and the scratch still works afterwards */
    assert_int_equal(ps_tokenizer_encode(tok, s, S("hello"), 0, &enc, &err), 3);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

/* ---- vocab.txt loader on hostile input -------------------------------- */

static void test_vocab_txt_edge_cases(void **state)
{
    (void)state;
    ps_tokenizer *tok;
    ps_error err;
    /* CRLF, trailing spaces and tabs, an empty line, no final newline */
    static const char v[] = "[UNK]\r\n[CLS]\r\n[SEP]  \n\nhello\t\nworld";
    assert_int_equal(ps_tokenizer_load_vocab_buffer(v, sizeof v - 1, "v.txt", NULL, &tok, &err), 0);
    /* 6 lines, then [PAD] and [MASK] added as ids 6 and 7, as HF adds them */
    assert_int_equal(ps_tokenizer_vocab_size(tok), 8);
    assert_int_equal(ps_tokenizer_token_to_id(tok, S("[SEP]")), 2);
    assert_int_equal(ps_tokenizer_token_to_id(tok, S("hello")), 4);
    assert_int_equal(ps_tokenizer_token_to_id(tok, S("world")), 5);
    assert_int_equal(ps_tokenizer_token_to_id(tok, S("nope")), PS_ENOENT);
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding enc;
    assert_int_equal(ps_tokenizer_encode(tok, s, S("hello world zzz"), 0, &enc, &err), 5);
    assert_int_equal(enc.input_ids[3], 0); /* zzz -> [UNK] */
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);

    /* a duplicate keeps the id of its last line, as HF's HashMap insert */
    static const char dup[] = "[UNK]\nfoo\nbar\nfoo\n";
    assert_int_equal(ps_tokenizer_load_vocab_buffer(dup, sizeof dup - 1, "dup.txt", NULL, &tok, &err), 0);
    assert_int_equal(ps_tokenizer_token_to_id(tok, S("foo")), 3);
    /* the missing specials are added from the 3 distinct tokens on, in
     * BertTokenizerFast's order: [PAD] 3 (sharing foo's id, as in HF),
     * [CLS] 4, [SEP] 5, [MASK] 6 */
    assert_int_equal(ps_tokenizer_token_to_id(tok, S("[PAD]")), 3);
    assert_int_equal(ps_tokenizer_token_to_id(tok, S("[MASK]")), 6);
    assert_int_equal(ps_tokenizer_vocab_size(tok), 7);
    ps_tokenizer_free(tok);

    /* invalid UTF-8 names file and line */
    static const char bad[] = "[UNK]\nok\nb\xc3(d\n";
    assert_int_equal(ps_tokenizer_load_vocab_buffer(bad, sizeof bad - 1, "bad.txt", NULL, &tok, &err),
                     PS_EUTF8);
    assert_null(tok);
    assert_non_null(strstr(err.message, "bad.txt:3:"));

    /* a token over the limit */
    size_t big = 70000;
    char *huge = malloc(big + 8);
    memcpy(huge, "[UNK]\n", 6);
    memset(huge + 6, 'x', big);
    assert_int_equal(ps_tokenizer_load_vocab_buffer(huge, big + 6, "huge.txt", NULL, &tok, &err),
                     PS_ELIMIT);
    assert_non_null(strstr(err.message, "huge.txt:2:"));
    free(huge);

    assert_int_equal(ps_tokenizer_load_vocab_buffer("", 0, "empty.txt", NULL, &tok, &err), PS_EFORMAT);
    assert_int_equal(ps_tokenizer_load_vocab("/nonexistent/vocab.txt", NULL, &tok, &err), PS_ENOENT);
    assert_non_null(strstr(err.message, "/nonexistent/vocab.txt"));
}

static void test_vocab_over_65535_tokens(void **state)
{
    (void)state;
    /* ids past 16 bits must survive (no uint16 anywhere) */
    size_t n = 70000;
    char *buf = malloc(n * 12);
    size_t len = 0;
    len += (size_t)sprintf(buf, "[UNK]\n[CLS]\n[SEP]\n");
    for (size_t i = 3; i < n; i++)
        len += (size_t)sprintf(buf + len, "w%zu\n", i);
    ps_tokenizer *tok;
    ps_error err;
    assert_int_equal(ps_tokenizer_load_vocab_buffer(buf, len, "big.txt", NULL, &tok, &err), 0);
    assert_int_equal(ps_tokenizer_vocab_size(tok), n + 2); /* + the added [PAD] and [MASK] */
    assert_int_equal(ps_tokenizer_token_to_id(tok, S("w69999")), 69999);
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding enc;
    assert_int_equal(ps_tokenizer_encode(tok, s, S("w69999 w65536"), 0, &enc, &err), 4);
    assert_int_equal(enc.input_ids[1], 69999);
    assert_int_equal(enc.input_ids[2], 65536);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
    free(buf);
}

static void test_missing_unk_and_specials(void **state)
{
    (void)state;
    static const char v[] = "hello\nworld\n";
    ps_tokenizer *tok;
    ps_error err;
    assert_int_equal(ps_tokenizer_load_vocab_buffer(v, sizeof v - 1, "v.txt", NULL, &tok, &err), 0);
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding enc;
    assert_int_equal(ps_tokenizer_tokenize(tok, s, S("hello world"), &enc, &err), 2);
    assert_int_equal(ps_tokenizer_tokenize(tok, s, S("hello zzz"), &enc, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "[UNK]"));
    assert_int_equal(ps_tokenizer_encode(tok, s, S("hello"), 0, &enc, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "[CLS]"));
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

/* ---- tokenizer.json --------------------------------------------------- */

static char *write_temp(const char *content)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/ps-test-tok-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    return path;
}

static void test_tokenizer_json(void **state)
{
    (void)state;
    const char *json =
        "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":3,\"content\":\"[MASK]\",\"single_word\":false,"
        "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],"
        "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
        "\"strip_accents\":null,\"lowercase\":false},"
        "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
        "\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",2],\"cls\":[\"[CLS]\",1]},"
        "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
        "\"max_input_chars_per_word\":5,\"vocab\":{\"[UNK]\":0,\"[CLS]\":1,\"[SEP]\":2,\"[MASK]\":3,"
        "\"Ab\":4,\"##c\":5,\"ab\":6}}}";
    char *path = write_temp(json);
    ps_tokenizer *tok;
    ps_error err;
    assert_int_equal(ps_tokenizer_load_json(path, &tok, &err), 0);
    ps_tokenizer_options o;
    ps_tokenizer_get_options(tok, &o);
    assert_int_equal(o.lowercase, 0);
    assert_int_equal(o.strip_accents, 0);
    assert_int_equal(o.max_input_chars_per_word, 5);
    assert_int_equal(ps_tokenizer_vocab_size(tok), 7);
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_encoding enc;
    assert_int_equal(ps_tokenizer_encode_pair(tok, s, S("Abc [MASK]"), S("ab abcdef"), 0, &enc, &err), 8);
    static const int32_t want[] = {1, 4, 5, 3, 2, 6, 0, 2};
    for (int i = 0; i < 8; i++)
        assert_int_equal(enc.input_ids[i], want[i]);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
    unlink(path);

    /* an added token starting with a non-ASCII byte takes the split-first path */
    path = write_temp("{\"added_tokens\":[{\"id\":9,\"content\":\"\xc2\xabX\xc2\xbb\"}],"
                      "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
                      "\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",1],\"cls\":[\"[CLS]\",1]},"
                      "\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0,\"[SEP]\":1,\"X\":3,\"\xc2\xab\":4}}}");
    assert_int_equal(ps_tokenizer_load_json(path, &tok, &err), 0);
    s = ps_tok_scratch_new();
    assert_int_equal(ps_tokenizer_tokenize(tok, s, S("X\xc2\xabX\xc2\xbb\xc2\xabX"), &enc, &err), 4);
    static const int32_t want2[] = {3, 9, 4, 3}; /* X, the special, «, X */
    assert_int_equal(ps_tokenizer_vocab_size(tok), 10); /* the added id counts */
    for (int i = 0; i < 4; i++)
        assert_int_equal(enc.input_ids[i], want2[i]);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
    unlink(path);

    /* a component outside the supported set is refused, named with its JSON path */
    path = write_temp("{\"model\": {\"type\": \"FancyModel\"}, \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}}");
    assert_int_equal(ps_tokenizer_load_json(path, &tok, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "model.type"));
    assert_non_null(strstr(err.message, "FancyModel"));
    unlink(path);
    path = write_temp("{\"model\": {\"type\": \"WordLevel\", \"vocab\": {\"a\": 0}, \"unk_token\": \"a\"},"
                      "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Whitespace\"},"
                      "{\"type\": \"UnicodeScripts\"}]}}");
    assert_int_equal(ps_tokenizer_load_json(path, &tok, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "pre_tokenizer.pretokenizers[1]"));
    assert_non_null(strstr(err.message, "UnicodeScripts"));
    unlink(path);

    path = write_temp("{\n\"model\": [1, 2,\n}");
    assert_int_equal(ps_tokenizer_load_json(path, &tok, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, ":3:"));
    unlink(path);

    path = write_temp("{\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"model\":{\"type\":\"WordPiece\","
                      "\"vocab\":{\"a\":0,\"b\":2000000000}}}");
    assert_int_equal(ps_tokenizer_load_json(path, &tok, &err), PS_ELIMIT); /* no 16 GB array */
    unlink(path);

    path = write_temp("{\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"model\":{\"type\":\"WordPiece\","
                      "\"vocab\":{\"a\":\"zero\"}}}");
    assert_int_equal(ps_tokenizer_load_json(path, &tok, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "model.vocab[\"a\"]"));
    unlink(path);
}

/* ---- random input never crashes ---------------------------------------- */

static uint32_t rng(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

/* Random text from pieces that matter (ASCII, accents, combining marks,
 * CJK, emoji, special tokens) with a raw random byte now and then: every
 * call either encodes or says PS_EUTF8. */
static void test_random_bytes(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    static const char *const pieces[] = {"a", "Z", "9", " ", "[", "]", "(", ",", ".", "#", "\xc3\xa9",
                                         "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xcc\x81", "[MASK]", "\t",
                                         "\xe2\x80\x8b", "\xc2\xa0", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"};
    uint32_t seed = 12345;
    char buf[1200];
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = 0, want = rng(&seed) % 1000;
        while (n < want) {
            if (rng(&seed) % 400 == 0) {
                buf[n++] = (char)rng(&seed);
                continue;
            }
            const char *p = pieces[rng(&seed) % (sizeof pieces / sizeof pieces[0])];
            size_t l = strlen(p);
            memcpy(buf + n, p, l);
            n += l;
        }
        ps_encoding enc;
        ps_error err;
        size_t cut = n ? rng(&seed) % n : 0;
        int rc = ps_tokenizer_encode_pair(tok, s, buf, cut, buf + cut, n - cut,
                                          rng(&seed) % 2 ? 0 : 3 + rng(&seed) % 40, &enc, &err);
        if (rc >= 0) {
            ok++;
            assert_int_equal(enc.input_ids[0], 101);
            assert_int_equal(enc.input_ids[rc - 1], 102);
        } else {
            assert_int_equal(rc, PS_EUTF8);
            bad++;
        }
    }
    if (ok < 500 || bad < 500) /* both paths must have been exercised */
        fail_msg("only %d encoded and %d rejected", ok, bad);
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

/* Random vocabularies: load or fail cleanly, then encode. */
static void test_random_vocab_files(void **state)
{
    (void)state;
    uint32_t seed = 777;
    char buf[4096];
    for (int iter = 0; iter < 300; iter++) {
        size_t n = rng(&seed) % sizeof buf;
        for (size_t i = 0; i < n; i++) {
            uint32_t r = rng(&seed) % 16;
            buf[i] = r == 0 ? '\n' : r == 1 ? '\r' : r == 2 ? '#' : r == 3 ? (char)(0x80 | (rng(&seed) & 0x3f))
                   : r == 4 ? (char)0xc3 : (char)('a' + rng(&seed) % 4);
        }
        ps_tokenizer *tok = NULL;
        ps_error err;
        int rc = ps_tokenizer_load_vocab_buffer(buf, n, "rand.txt", NULL, &tok, &err);
        if (rc < 0) {
            assert_null(tok);
            assert_true(rc == PS_EUTF8 || rc == PS_EFORMAT);
            assert_non_null(strstr(err.message, "rand.txt"));
            continue;
        }
        ps_tok_scratch *s = ps_tok_scratch_new();
        ps_encoding enc;
        rc = ps_tokenizer_tokenize(tok, s, S("abc ab##cd a,b dd\xc3\xa9"), &enc, &err);
        assert_true(rc >= 0 || rc == PS_EINVAL); /* EINVAL: no [UNK] */
        ps_tok_scratch_free(s);
        ps_tokenizer_free(tok);
    }
}

/* ---- concurrency ------------------------------------------------------ */

typedef struct job {
    const ps_tokenizer *tok;
    const char *const *texts;
    size_t n;
    uint64_t sum;
    int rc;
} job;

static void *encode_all(void *arg)
{
    job *j = arg;
    ps_tok_scratch *s = ps_tok_scratch_new();
    for (int pass = 0; pass < 20; pass++)
        for (size_t i = 0; i < j->n; i++) {
            ps_encoding enc;
            int n = ps_tokenizer_encode_pair(j->tok, s, j->texts[i], strlen(j->texts[i]), "SELECT 1",
                                             8, 64, &enc, NULL);
            if (n < 0)
                j->rc = n;
            for (int k = 0; k < n; k++)
                j->sum = j->sum * 31 + (uint64_t)enc.input_ids[k] + enc.token_type_ids[k];
        }
    ps_tok_scratch_free(s);
    return NULL;
}

static void test_shared_across_threads(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    static const char *const texts[] = {
        "How many singers do we have?", "Café naïve résumé", "列出所有的学生name",
        "İstanbul ΣΑΣ Straße", "a [MASK] b", "emoji 👨‍👩‍👧 done", "e\xcc\x81\xcc\xa3 reorder",
    };
    job solo = {tok, texts, 7, 0, 0};
    encode_all(&solo);
    job jobs[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (job){tok, texts, 7, 0, 0};
        assert_int_equal(pthread_create(&th[t], NULL, encode_all, &jobs[t]), 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].rc, 0);
        assert_true(jobs[t].sum == solo.sum);
    }
    ps_tokenizer_free(tok);
}

/* ps_encoding.truncated says whether max_length cut ids off: it agrees with
 * comparing against the untruncated encoding, for pairs and singles. */
static void test_truncated_flag(void **state)
{
    (void)state;
    ps_tokenizer *tok = load_uncased();
    ps_tok_scratch *s = ps_tok_scratch_new();
    ps_error err;
    const char *q[] = {"how many singers", "", "a b c d e f g h i j k l m n o p q r s t u v w x y z",
                       "unbelievably extraordinary internationalization"};
    const char *sql[] = {"SELECT count(*) FROM singer", "x", "", "SELECT 1"};
    for (size_t i = 0; i < 4; i++) {
        ps_encoding full, cut;
        int n = ps_tokenizer_encode_pair(tok, s, q[i], strlen(q[i]), sql[i], strlen(sql[i]), 0,
                                         &full, &err);
        assert_true(n >= 3);
        assert_int_equal(full.truncated, 0);
        for (size_t max = 3; max <= (size_t)n + 2; max++) {
            assert_true(ps_tokenizer_encode_pair(tok, s, q[i], strlen(q[i]), sql[i],
                                                 strlen(sql[i]), max, &cut, &err) >= 3);
            assert_int_equal(cut.truncated, (size_t)n > max);
            assert_int_equal(cut.len, (size_t)n > max ? max : (size_t)n);
        }
        n = ps_tokenizer_encode(tok, s, q[i], strlen(q[i]), 0, &full, &err);
        for (size_t max = 2; max <= (size_t)n + 1; max++) {
            assert_true(ps_tokenizer_encode(tok, s, q[i], strlen(q[i]), max, &cut, &err) >= 2);
            assert_int_equal(cut.truncated, (size_t)n > max);
        }
    }
    ps_tok_scratch_free(s);
    ps_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_words_and_pieces),
        cmocka_unit_test(test_pair_layout_and_types),
        cmocka_unit_test(test_chinese_vocab_is_cased),
        cmocka_unit_test(test_normalization),
        cmocka_unit_test(test_long_words_and_unk),
        cmocka_unit_test(test_special_tokens_in_text),
        cmocka_unit_test(test_longest_first),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_vocab_txt_edge_cases),
        cmocka_unit_test(test_vocab_over_65535_tokens),
        cmocka_unit_test(test_missing_unk_and_specials),
        cmocka_unit_test(test_tokenizer_json),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_random_vocab_files),
        cmocka_unit_test(test_shared_across_threads),
        cmocka_unit_test(test_truncated_flag),
        cmocka_unit_test(test_unk_words_and_hints),
        cmocka_unit_test(test_unk_words_unigram_span),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
