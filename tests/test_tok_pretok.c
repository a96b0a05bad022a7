/* The pre-tokenizers of tokenizer.json (tokenize/pretok*.c): every type
 * and split behaviour on HF's own examples, invert, the at_start flag,
 * load errors with their codes and messages, and the hand-written
 * GPT-2 / Llama-3 / Qwen2 scanners against PCRE2 running the same
 * patterns (every code point in context, contractions in every case,
 * whitespace runs, random strings). Piece-for-piece agreement with HF
 * itself is tests/conformance/pretokenizers.js's job. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/tok_fixture.h"
#include "tokenize/pretok.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ps_tok_pretok *load_rc(const char *json, int *rc, ps_error *err)
{
    json_t *j = ps_test_json(json, JSON_DECODE_ANY);
    ps_tok_load c = {.file = "t.json", .err = err};
    ps_tok_pretok *p = NULL;
    *rc = ps_tok_pretok_load(&c, j, "pre_tokenizer", &p);
    json_decref(j);
    return p;
}

static ps_tok_pretok *load(const char *json)
{
    int rc;
    ps_error err = {0};
    ps_tok_pretok *p = load_rc(json, &rc, &err);
    if (rc)
        fail_msg("load %s: %s", json, err.message);
    return p;
}

/* The pieces of text, joined by '|'; a '^' marks a piece with at_start. */
static const char *pieces(const ps_tok_pretok *p, const char *text, bool at_start)
{
    static char out[4096];
    ps_tok_pieces io = {0}, tmp = {0};
    size_t n = strlen(text);
    if (n)
        assert_int_equal(ps_tok_pieces_push(&io, text, n, at_start), 0);
    assert_int_equal(ps_tok_pretok_apply(p, &io, &tmp), 0);
    size_t k = 0;
    for (size_t i = 0; i < io.n; i++) {
        k += (size_t)snprintf(out + k, sizeof out - k, "%s%s%.*s", i ? "|" : "",
                              io.v[i].at_start ? "^" : "", (int)io.v[i].len,
                              io.pool.p + io.v[i].off);
        assert_true(k < sizeof out);
    }
    out[k] = 0;
    ps_tok_pieces_free(&io);
    ps_tok_pieces_free(&tmp);
    return out;
}

static void expect(const char *json, const char *text, bool at_start, const char *want)
{
    ps_tok_pretok *p = load(json);
    const char *got = pieces(p, text, at_start);
    if (strcmp(got, want))
        fail_msg("%s on \"%s\":\n  want %s\n  got  %s", json, text, want, got);
    ps_tok_pretok_free(p);
}

/* Applies p to text under a regex budget begun for it; the code. */
static int apply_budgeted(const ps_tok_pretok *p, const char *text, size_t n, double *secs)
{
    ps_tok_pieces io = {0}, tmp = {0};
    assert_int_equal(ps_tok_pieces_push(&io, text, n, true), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ps_tok_regex_budget_begin(n);
    int rc = ps_tok_pretok_apply(p, &io, &tmp);
    ps_tok_regex_budget_end();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ps_tok_pieces_free(&io);
    ps_tok_pieces_free(&tmp);
    return rc;
}

/* A Split regex slow on a text runs out of its budget instead of running
 * for minutes: polynomial a*a*a*a*c|. on ("a"*300 + "b")*200 (87 s with
 * no budget) and exponential (a+)+$; the reason names the pattern's JSON
 * path. Ordinary patterns on the same 60 kB, a long scan for a match that
 * never comes among them, stay within it; a new text gets a new budget. */
static void test_split_regex_budget(void **state)
{
    (void)state;
    size_t n = 301 * 200;
    char *slow = malloc(n + 1);
    assert_non_null(slow);
    for (size_t i = 0; i < n; i++)
        slow[i] = i % 301 == 300 ? 'b' : 'a';
    slow[n] = 0;
    /* pattern (as JSON string content: backslashes doubled), slow on the text or not */
    static const struct { const char *re; bool slow; } cases[] = {
        {"a*a*a*a*c|.", true},
        {"(a+)+$", true},
        {"\\\\d+", false}, /* a scan over the whole text for a match that never comes */
        {"a+b|a+c", false},
        {" ?\\\\p{L}+| ?[^\\\\s\\\\p{L}]+", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"%s\"}, "
                 "\"behavior\": \"Isolated\", \"invert\": false}", cases[i].re);
        ps_tok_pretok *p = load(json);
        double secs;
        int rc = apply_budgeted(p, slow, n, &secs);
        if (!cases[i].slow && rc)
            fail_msg("%s: %s", json, ps_tok_regex_why());
        if (cases[i].slow) {
            assert_int_equal(rc, PS_ELIMIT);
            const char *why = ps_tok_regex_why();
            assert_non_null(why);
            assert_non_null(strstr(why, "pre_tokenizer.pattern"));
            assert_non_null(strstr(why, "ran out of steps"));
            assert_true(secs < 20);
            /* the same pattern on an ordinary text is fine: a fresh budget */
            assert_int_equal(apply_budgeted(p, "aab ab", 6, &secs), 0);
        }
        ps_tok_pretok_free(p);
    }
    free(slow);
}

/* normalizer.rs's documented example for every SplitDelimiterBehavior. */
static void test_split_behaviors(void **state)
{
    (void)state;
    const char *t = "the-final--countdown";
    expect("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Removed\",\"invert\":false}",
           t, false, "the|final|countdown");
    expect("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Isolated\",\"invert\":false}",
           t, false, "the|-|final|-|-|countdown");
    expect("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"MergedWithPrevious\",\"invert\":false}",
           t, false, "the-|final-|-|countdown");
    expect("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"MergedWithNext\",\"invert\":false}",
           t, false, "the|-final|-|-countdown");
    expect("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"-\"},\"behavior\":\"Contiguous\",\"invert\":false}",
           t, false, "the|-|final|--|countdown");
    /* A leading match under MergedWithPrevious has nothing to join. */
    expect("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"MergedWithPrevious\",\"invert\":false}",
           "-a-", false, "-|a-");
    expect("{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"MergedWithNext\",\"invert\":false}",
           "-a-", false, "-a|-");
}

static void test_split_invert_and_empty_matches(void **state)
{
    (void)state;
    /* invert: the words are kept, what lies between is the delimiter */
    expect("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\w+\"},\"behavior\":\"Removed\",\"invert\":true}",
           "hello, big world", false, "hello|big|world");
    expect("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\w+\"},\"behavior\":\"MergedWithPrevious\",\"invert\":true}",
           "hi, you", false, "hi, |you");
    /* An empty pattern matches between every two characters. */
    expect("{\"type\":\"Split\",\"pattern\":{\"String\":\"\"},\"behavior\":\"Isolated\",\"invert\":false}",
           "ab c", false, "a|b| |c");
    expect("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"x*\"},\"behavior\":\"Removed\",\"invert\":false}",
           "axxb", false, "a|b");
    /* A String pattern is literal, regex metacharacters included. */
    expect("{\"type\":\"Split\",\"pattern\":{\"String\":\".*\"},\"behavior\":\"Removed\",\"invert\":false}",
           "a.*b.c", false, "a|b.c");
    /* \s means White_Space, as in Oniguruma: U+180E is not one. */
    expect("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"behavior\":\"Removed\",\"invert\":false}",
           "a\xE1\xA0\x8E" "b\xC2\x85" "c", false, "a\xE1\xA0\x8E" "b|c");
    expect("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[^\\\\s]+\"},\"behavior\":\"Removed\",\"invert\":true}",
           "a\xE1\xA0\x8E" "b c", false, "a\xE1\xA0\x8E" "b|c");
}

static void test_bytelevel(void **state)
{
    (void)state;
    const char *aps = "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true}";
    expect(aps, "Hello world", true, "^\xC4\xA0Hello|\xC4\xA0world");
    expect(aps, " Hello", true, "^\xC4\xA0Hello"); /* already starts with a space */
    const char *plain = "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false}";
    /* é is two bytes, each shown as its own character; \n is U+010A */
    expect(plain, "caf\xC3\xA9\n", true, "^caf\xC3\x83\xC2\xA9|\xC4\x8A");
    expect(plain, "I'll  go", false, "I|'ll|\xC4\xA0|\xC4\xA0go");
    expect("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}",
           "a b", true, "^a\xC4\xA0" "b");
    expect(plain, "", true, "");
}

static void test_metaspace(void **state)
{
    (void)state;
    const char *always = "{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":\"always\",\"split\":true}";
    const char *first = "{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":\"first\"}";
    const char *never = "{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":\"never\"}";
    expect(always, "Hey friend", true, "^\xE2\x96\x81Hey|\xE2\x96\x81" "friend");
    expect(always, "Hey friend", false, "\xE2\x96\x81Hey|\xE2\x96\x81" "friend");
    expect(first, "Hey friend", true, "^\xE2\x96\x81Hey|\xE2\x96\x81" "friend");
    expect(first, "Hey friend", false, "Hey|\xE2\x96\x81" "friend");
    expect(never, "Hey  friend", true, "^Hey|\xE2\x96\x81|\xE2\x96\x81" "friend");
    expect(always, " x", true, "^\xE2\x96\x81x"); /* the space becomes the prefix */
    expect("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"always\",\"split\":false}",
           "a b", true, "^_a_b");
    /* Legacy fields: add_prefix_space true (and str_rep) load as "always". */
    expect("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":true,\"str_rep\":\"_\"}",
           "a b", true, "^_a|_b");
    expect("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":false,\"prepend_scheme\":\"never\"}",
           "a b", true, "^a|_b");
    /* split is an Option: null means the default (true) */
    expect("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"split\":null,\"str_rep\":null}",
           "a b", true, "^_a|_b");
}

static void test_char_classes(void **state)
{
    (void)state;
    expect("{\"type\":\"Whitespace\"}", "Hey man!! 123,4 \xE4\xB8\xAD\xE6\x96\x87 _x", true,
           "^Hey|man|!!|123|,|4|\xE4\xB8\xAD\xE6\x96\x87|_x");
    expect("{\"type\":\"WhitespaceSplit\"}", " Hey man!!\t\xE3\x80\x80x ", true, "Hey|man!!|x");
    expect("{\"type\":\"Punctuation\"}", "Hey, you...$", true, "^Hey|,| you|.|.|.|$");
    expect("{\"type\":\"Punctuation\",\"behavior\":\"Contiguous\"}", "a...b", true, "^a|...|b");
    expect("{\"type\":\"Digits\",\"individual_digits\":true}", "a123\xD9\xA1", true, "^a|1|2|3|\xD9\xA1");
    expect("{\"type\":\"Digits\",\"individual_digits\":false}", "a123b45", true, "^a|123|b|45");
    expect("{\"type\":\"BertPreTokenizer\"}", "Hello, y'all!  ok", true, "^Hello|,|y|'|all|!|ok");
    expect("{\"type\":\"CharDelimiterSplit\",\"delimiter\":\"x\"}", "axbxxc", true, "^a|b|c");
}

static void test_sequence(void **state)
{
    (void)state;
    /* Nested sequences flatten; each step sees the previous one's pieces. */
    const char *seq = "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},"
                      "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\",\"individual_digits\":true},"
                      "{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"first\"}]}]}";
    expect(seq, "ab12 cd", true, "^_ab|1|2|cd");
    expect(seq, "ab12 cd", false, "ab|1|2|cd");
    expect("{\"type\":\"Sequence\",\"pretokenizers\":[]}", "a b", true, "^a b");
    assert_null(load("null"));
    /* NULL is the identity */
    ps_tok_pieces io = {0}, tmp = {0};
    assert_int_equal(ps_tok_pieces_push(&io, "x y", 3, true), 0);
    assert_int_equal(ps_tok_pretok_apply(NULL, &io, &tmp), 0);
    assert_int_equal(io.n, 1);
    ps_tok_pieces_free(&io);
    ps_tok_pieces_free(&tmp);
}

/* test_load_errors' loader: nothing may be made. */
static int try_load(const char *json, ps_error *err)
{
    int rc;
    assert_null(load_rc(json, &rc, err));
    return rc;
}

static void test_load_errors(void **state)
{
    (void)state;
    static const ps_test_load_case cases[] = {
        {"{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Whitespace\"},{\"type\":\"FixedLength\",\"length\":5}]}",
         PS_EUSAGE, "t.json: pre_tokenizer.pretokenizers[1].type: 'FixedLength' is not supported"},
        {"{\"type\":\"UnicodeScripts\"}", PS_EUSAGE,
         "t.json: pre_tokenizer.type: 'UnicodeScripts' is not supported"},
        {"{\"type\":\"Split\",\"pattern\":{\"String\":\"x\"},\"behavior\":\"Isolated\"}",
         PS_EFORMAT, "t.json: pre_tokenizer.invert: missing field (HF requires it)"},
        {"{\"type\":\"Split\",\"pattern\":{\"String\":\"x\"},\"behavior\":\"Dropped\",\"invert\":false}",
         PS_EFORMAT, "t.json: pre_tokenizer.behavior: unknown behavior 'Dropped' (Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)"},
        {"{\"type\":\"Split\",\"pattern\":\"x\",\"behavior\":\"Isolated\",\"invert\":false}",
         PS_EFORMAT, "t.json: pre_tokenizer.pattern: expected {\"String\": ...} or {\"Regex\": ...}"},
        {"{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\",\"invert\":false}",
         PS_EUSAGE, "t.json: pre_tokenizer.pattern: regex not supported at offset 1: missing closing parenthesis"},
        {"{\"type\":\"ByteLevel\",\"add_prefix_space\":true}", PS_EFORMAT,
         "t.json: pre_tokenizer.trim_offsets: missing field (HF requires it)"},
        {"{\"type\":\"ByteLevel\",\"add_prefix_space\":1,\"trim_offsets\":true}", PS_EFORMAT,
         "t.json: pre_tokenizer.add_prefix_space: expected true or false"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"ab\"}", PS_EFORMAT,
         "t.json: pre_tokenizer.replacement: expected a single character, got \"ab\""},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":false}", PS_EFORMAT,
         "t.json: pre_tokenizer.add_prefix_space: add_prefix_space does not match declared prepend_scheme"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"sometimes\"}",
         PS_EFORMAT, "t.json: pre_tokenizer.prepend_scheme: unknown prepend_scheme 'sometimes' (always, first or never)"},
        {"{\"type\":\"Digits\"}", PS_EFORMAT,
         "t.json: pre_tokenizer.individual_digits: missing field (HF requires it)"},
        {"{\"type\":\"Sequence\",\"pretokenizers\":{}}", PS_EFORMAT,
         "t.json: pre_tokenizer.pretokenizers: expected an array"},
        {"{\"type\":3}", PS_EFORMAT, "t.json: pre_tokenizer.type: expected a string"},
        {"{\"add_prefix_space\":true}", PS_EFORMAT, "t.json: pre_tokenizer: missing field 'type'"},
        {"[1]", PS_EFORMAT, "t.json: pre_tokenizer: expected an object or null"},
        /* null where HF's field is not an Option */
        {"{\"type\":\"Metaspace\",\"replacement\":null}", PS_EFORMAT,
         "t.json: pre_tokenizer.replacement: must not be null (HF requires a value)"},
        {"{\"type\":\"Punctuation\",\"behavior\":null}", PS_EFORMAT,
         "t.json: pre_tokenizer.behavior: must not be null (HF requires a value)"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":null}", PS_EFORMAT,
         "t.json: pre_tokenizer.prepend_scheme: must not be null (HF requires a value)"},
    };
    ps_test_load_errors(cases, sizeof cases / sizeof *cases, try_load, NULL);
}

/* ---- the scanners against PCRE2 ---------------------------------------- */

typedef struct spans {
    size_t v[4096];
    size_t n;
} spans;

static int collect(void *ctx, size_t off, size_t len, bool is_match)
{
    spans *s = ctx;
    if (!is_match && len)
        s->v[s->n++] = SIZE_MAX; /* text between matches: never, for these patterns */
    if (s->n + 2 > sizeof s->v / sizeof *s->v)
        return -1;
    s->v[s->n++] = off;
    s->v[s->n++] = off + len;
    return 0;
}

static ps_tok_regex *pcre_of(ps_pretok_scan_kind k)
{
    ps_error err = {0};
    ps_tok_load c = {.file = "t", .err = &err};
    ps_tok_regex *re = NULL;
    const char *pat = ps_pretok_scan_pattern(k);
    if (ps_tok_regex_compile(&c, "p", pat, strlen(pat), &re))
        fail_msg("%s", err.message);
    return re;
}

/* 1 when the scanner and PCRE2 split s the same way. */
static int same(ps_pretok_scan_kind k, const ps_tok_regex *re, const char *s, size_t n)
{
    static spans a, b;
    a.n = b.n = 0;
    assert_int_equal(ps_pretok_scan_split(k, s, n, collect, &a), 0);
    assert_int_equal(ps_tok_pattern_split(re, NULL, 0, s, n, collect, &b), 0);
    if (a.n == b.n && !memcmp(a.v, b.v, a.n * sizeof *a.v))
        return 1;
    size_t i = 0;
    while (i < a.n && i < b.n && a.v[i] == b.v[i])
        i++;
    print_message("differ on \"%.*s\" at span %zu: scanner [%zu,%zu) PCRE2 [%zu,%zu)\n", (int)n, s,
                  i / 2, i < a.n ? a.v[i & ~(size_t)1] : 0, i < a.n ? a.v[i | 1] : 0,
                  i < b.n ? b.v[i & ~(size_t)1] : 0, i < b.n ? b.v[i | 1] : 0);
    return 0;
}

static const ps_pretok_scan_kind KINDS[] = {PS_SCAN_GPT2, PS_SCAN_LLAMA3, PS_SCAN_QWEN2};

/* PCRE2's class of cp, asked through a one-character regex each. */
static int pcre_class(uint32_t cp, ps_tok_regex *const re[3])
{
    char u[4];
    unsigned n = ps_utf8_encode(cp, u);
    size_t b, e;
    for (int c = 0; c < 3; c++)
        if (ps_tok_regex_find(re[c], u, n, 0, &b, &e) == 1)
            return c == 0 ? PS_UC_L : c == 1 ? PS_UC_N : PS_UC_S;
    return PS_UC_OTHER;
}

/* Every scalar value, in contexts that end each alternative of the three
 * patterns on each side of it. PCRE2 10.42 knows Unicode 14, HF (and the
 * scanners) 16; regex.c adds the newer letters and digits to \p{L} and
 * \p{N}, so the classes agree on every code point too. */
static void test_scan_every_code_point(void **state)
{
    (void)state;
    ps_error err = {0};
    ps_tok_load c = {.file = "t", .err = &err};
    ps_tok_regex *cls[3];
    const char *pats[3] = {"^\\p{L}$", "^\\p{N}$", "^\\s$"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(ps_tok_regex_compile(&c, "p", pats[i], strlen(pats[i]), &cls[i]), 0);
    ps_tok_regex *re[3];
    for (int k = 0; k < 3; k++)
        re[k] = pcre_of(KINDS[k]);
    /* '#' stands for the code point */
    static const char *const ctx[] = {"x#1 #'#.#  #\n", "### 12345 \t#\r\n#", "'#'S#'s #!#?"};
    size_t skipped = 0, bad = 0;
    char text[128];
    for (uint32_t cp = 1; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        int ours = ps_pretok_uclass(cp), theirs = pcre_class(cp, cls);
        if (ours != theirs && skipped++ < 5)
            print_message("U+%04X: scanner class %d, PCRE2 class %d\n", cp, ours, theirs);
        char u[5] = {0};
        ps_utf8_encode(cp, u);
        for (size_t t = 0; t < sizeof ctx / sizeof *ctx; t++) {
            size_t n = 0;
            for (const char *q = ctx[t]; *q; q++) {
                size_t l = *q == '#' ? strlen(u) : 1;
                memcpy(text + n, *q == '#' ? u : q, l);
                n += l;
            }
            for (int k = 0; k < 3; k++)
                bad += !same(KINDS[k], re[k], text, n);
        }
        if (bad > 10)
            fail_msg("too many differences");
    }
    assert_int_equal(skipped, 0); /* code points whose class differs */
    assert_int_equal(bad, 0);
    for (int i = 0; i < 3; i++) {
        ps_tok_regex_free(cls[i]);
        ps_tok_regex_free(re[i]);
    }
}

/* Contractions in every case, with what may follow them, and runs of
 * every kind of whitespace before every kind of character. */
static void test_scan_contractions_and_spaces(void **state)
{
    (void)state;
    ps_tok_regex *re[3];
    for (int k = 0; k < 3; k++)
        re[k] = pcre_of(KINDS[k]);
    static const char *const suffixes[] = {"s", "t", "re", "ve", "m", "ll", "d", "x", "l", "r", "v", "",
                                           "\xC5\xBF" /* ſ */, "\xC5\xBF" "t", "\xE2\x84\xAA" /* K */};
    static const char *const after[] = {"", " ", "a", "A", "1", "'", "\n", "\xC3\xA9", "."};
    char text[64];
    size_t bad = 0, cases = 0;
    for (size_t s = 0; s < sizeof suffixes / sizeof *suffixes; s++) {
        size_t len = strlen(suffixes[s]);
        for (unsigned mask = 0; mask < (1u << len); mask++) { /* every case of ASCII letters */
            char suf[8];
            memcpy(suf, suffixes[s], len + 1);
            for (size_t i = 0; i < len; i++)
                if ((mask >> i & 1) && suf[i] >= 'a' && suf[i] <= 'z')
                    suf[i] = (char)(suf[i] - 32);
            for (size_t a = 0; a < sizeof after / sizeof *after; a++)
                for (int pre = 0; pre < 3; pre++) {
                    int n = snprintf(text, sizeof text, "%s'%s%s", pre == 0 ? "" : pre == 1 ? "I" : " ",
                                     suf, after[a]);
                    for (int k = 0; k < 3; k++, cases++)
                        bad += !same(KINDS[k], re[k], text, (size_t)n);
                }
        }
    }
    static const char *const ws[] = {" ", "\t", "\n", "\r", "\r\n", "\xC2\xA0", "\xE3\x80\x80",
                                     "\xE2\x80\xA8", "\x0B", "\xC2\x85"};
    static const char *const next[] = {"", "a", "1", ".", "\xE4\xB8\xAD", "'s"};
    for (size_t a = 0; a < 10; a++)
        for (size_t b = 0; b < 10; b++)
            for (size_t c2 = 0; c2 < 10; c2++)
                for (size_t x = 0; x < sizeof next / sizeof *next; x++) {
                    int n = snprintf(text, sizeof text, "w%s%s%s%s", ws[a], ws[b], ws[c2], next[x]);
                    for (int k = 0; k < 3; k++, cases++)
                        bad += !same(KINDS[k], re[k], text + 1, (size_t)n - 1) +
                               !same(KINDS[k], re[k], text, (size_t)n);
                }
    print_message("# %zu cases\n", cases);
    assert_int_equal(bad, 0);
    for (int k = 0; k < 3; k++)
        ps_tok_regex_free(re[k]);
}

/* Random strings over characters of every class. */
static void test_scan_random(void **state)
{
    (void)state;
    ps_tok_regex *re[3];
    for (int k = 0; k < 3; k++)
        re[k] = pcre_of(KINDS[k]);
    static const char *const alpha[] = {"a", "Z", "0", "9", " ", " ", "\t", "\n", "\r", "'", "s", "S",
                                        "t", "l", "L", "d", "m", "r", "e", "v", ".", ",", "(", "*",
                                        "_", "-", "\xC3\xA9", "\xE4\xB8\xAD", "\xD9\xA1", "\xC2\xBD",
                                        "\xC2\xA0", "\xE2\x80\xA8", "\xF0\x9F\x91\x8D", "\xCC\x81",
                                        "\xE2\x80\x8D", "\xC5\xBF", "\xE3\x80\x80", "\x00"};
    size_t na = sizeof alpha / sizeof *alpha;
    uint64_t x = 20261203;
    char text[256];
    size_t bad = 0;
    for (int round = 0; round < 100000; round++) {
        size_t n = 0;
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        int len = 1 + (int)(x >> 59) * 2;
        for (int i = 0; i < len; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            const char *a = alpha[(x >> 33) % na];
            size_t l = a[0] ? strlen(a) : 1; /* "\x00": a NUL byte */
            memcpy(text + n, a, l);
            n += l;
        }
        for (int k = 0; k < 3; k++)
            bad += !same(KINDS[k], re[k], text, n);
        if (bad > 10)
            break;
    }
    assert_int_equal(bad, 0);
    for (int k = 0; k < 3; k++)
        ps_tok_regex_free(re[k]);
}

static void test_scan_lookup(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        const char *p = ps_pretok_scan_pattern(KINDS[k]);
        assert_int_equal(ps_pretok_scan_lookup(p, strlen(p)), KINDS[k]);
        assert_int_equal(ps_pretok_scan_lookup(p, strlen(p) - 1), PS_SCAN_NONE);
    }
    assert_int_equal(ps_pretok_scan_lookup("\\s+", 3), PS_SCAN_NONE);
    /* the scanners' constant ASCII table is the general classification */
    for (unsigned b = 0; b < 128; b++)
        assert_int_equal(ps_pretok_ascii_class((unsigned char)b), ps_pretok_uclass(b));
    assert_int_equal(ps_pretok_ascii_class(0x80), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_behaviors),
        cmocka_unit_test(test_split_invert_and_empty_matches),
        cmocka_unit_test(test_bytelevel),
        cmocka_unit_test(test_metaspace),
        cmocka_unit_test(test_char_classes),
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_split_regex_budget),
        cmocka_unit_test(test_scan_lookup),
        cmocka_unit_test(test_scan_contractions_and_spaces),
        cmocka_unit_test(test_scan_random),
        cmocka_unit_test(test_scan_every_code_point),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
