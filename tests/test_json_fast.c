/* Unit and differential tests of the JSON fast path (ingest/json_fast.c)
 * against jansson, which stays the authority: whenever the fast path
 * accepts a record, jansson must accept it too and give the same values. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ingest/json_fast.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JFLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

/* ---- the differential oracle --------------------------------------------- */

typedef struct diff_stats {
    size_t cases, accepted, deferred, deferred_valid, mismatches;
} diff_stats;

static const char *const probe_names[] = {"db_id", "question", "query", "sql", "id",
                                          "label", "a", "b", "",      "x",
                                          "a",     "n", "s",  "\xC3\xA9"};
#define NPROBE (sizeof probe_names / sizeof probe_names[0])

static void report_mismatch(diff_stats *st, const char *data, size_t len, const char *what,
                            const char *name)
{
    st->mismatches++;
    if (st->mismatches <= 10) {
        print_message("# MISMATCH (%s, member '%s') on: ", what, name ? name : "-");
        for (size_t i = 0; i < len && i < 300; i++) {
            unsigned char c = (unsigned char)data[i];
            if (c >= 0x20 && c < 0x7F)
                print_message("%c", c);
            else
                print_message("\\x%02X", c);
        }
        print_message("\n");
    }
}

/* True when v (fast path) describes the same thing as j (jansson). */
static bool same_value(const ps_json_value *v, json_t *j)
{
    if (!j)
        return v->kind == PS_JV_ABSENT;
    switch (v->kind) {
    case PS_JV_ABSENT: return false;
    case PS_JV_NULL: return json_is_null(j);
    case PS_JV_TRUE: return json_is_true(j);
    case PS_JV_FALSE: return json_is_false(j);
    case PS_JV_STRING:
        return json_is_string(j) && json_string_length(j) == v->len &&
               (v->len == 0 || memcmp(json_string_value(j), v->str, v->len) == 0);
    case PS_JV_INTEGER:
        return json_is_integer(j) && json_integer_value(j) == v->integer && v->str &&
               !memchr(v->str, '.', v->len) && !memchr(v->str, 'e', v->len) &&
               !memchr(v->str, 'E', v->len);
    case PS_JV_REAL: {
        if (!json_is_real(j))
            return false;
        double a = json_real_value(j), b = v->real;
        return memcmp(&a, &b, sizeof a) == 0; /* bitwise: -0.0 differs from 0.0 */
    }
    }
    return false;
}

/* Runs one case through both parsers. The input is copied into a buffer of
 * exactly len bytes so that ASan catches any read past the end. */
static void diff_one(diff_stats *st, const char *src, size_t len, int expect_accept)
{
    char *data = malloc(len ? len : 1);
    assert_non_null(data);
    if (len)
        memcpy(data, src, len);
    ps_buf scratch;
    ps_buf_init(&scratch);
    ps_json_value out[NPROBE];
    st->cases++;

    int rc = ps_json_fast_extract(data, len, probe_names, NPROBE, out, &scratch);
    json_error_t jerr;
    json_t *root = json_loadb(data, len, JFLAGS, &jerr);
    assert_true(rc >= 0);
    if (rc == 0) {
        st->deferred++;
        if (root && json_is_object(root))
            st->deferred_valid++;
        for (size_t i = 0; i < NPROBE; i++)
            if (out[i].kind != PS_JV_ABSENT)
                report_mismatch(st, data, len, "deferred but out[] set", probe_names[i]);
        if (expect_accept > 0)
            report_mismatch(st, data, len, "expected the fast path to accept", NULL);
    } else {
        st->accepted++;
        if (expect_accept == 0)
            report_mismatch(st, data, len, "expected the fast path to defer", NULL);
        if (!root || !json_is_object(root)) {
            report_mismatch(st, data, len, "fast path accepted, jansson rejected",
                            root ? "(not an object)" : jerr.text);
        } else {
            for (size_t i = 0; i < NPROBE; i++)
                if (!same_value(&out[i], json_object_get(root, probe_names[i])))
                    report_mismatch(st, data, len, "value differs", probe_names[i]);
            /* Every member jansson sees, extracted by name. */
            const char *names[PS_JSON_FAST_MAX_KEYS];
            ps_json_value all[PS_JSON_FAST_MAX_KEYS];
            size_t n = 0;
            const char *key;
            json_t *val;
            json_object_foreach(root, key, val) {
                if (n < PS_JSON_FAST_MAX_KEYS)
                    names[n++] = key;
            }
            if (json_object_size(root) > PS_JSON_FAST_MAX_KEYS)
                report_mismatch(st, data, len, "accepted too many members", NULL);
            int rc2 = ps_json_fast_extract(data, len, names, n, all, &scratch);
            if (rc2 != 1)
                report_mismatch(st, data, len, "second extraction did not accept", NULL);
            else
                for (size_t i = 0; i < n; i++)
                    if (!same_value(&all[i], json_object_get(root, names[i])))
                        report_mismatch(st, data, len, "value differs (all members)", names[i]);
        }
    }
    if (root)
        json_decref(root);
    ps_buf_free(&scratch);
    free(data);
}

static void print_stats(const char *what, const diff_stats *st)
{
    print_message("# %s: %zu cases, %zu accepted, %zu deferred (%zu of them valid objects "
                  "for jansson), %zu mismatches\n",
                  what, st->cases, st->accepted, st->deferred, st->deferred_valid,
                  st->mismatches);
}

/* ---- Spider ------------------------------------------------------------- */

static json_t *load_spider(const char *rel)
{
    const char *root = getenv("PS_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/spider/%s", root ? root : ".", rel);
    json_error_t jerr;
    json_t *arr = json_load_file(path, 0, &jerr);
    if (!arr)
        print_message("# cannot load %s: %s\n", path, jerr.text);
    assert_non_null(arr);
    assert_true(json_is_array(arr));
    return arr;
}

static void test_spider_train_differential(void **state)
{
    (void)state;
    json_t *arr = load_spider("train.json");
    diff_stats st = {0};
    size_t i;
    json_t *el;
    const size_t dump_flags[] = {JSON_COMPACT, JSON_COMPACT | JSON_ENSURE_ASCII,
                                 JSON_INDENT(2), JSON_INDENT(1) | JSON_ENSURE_ASCII};
    json_array_foreach(arr, i, el) {
        for (size_t f = 0; f < sizeof dump_flags / sizeof dump_flags[0]; f++) {
            char *s = json_dumps(el, dump_flags[f]);
            assert_non_null(s);
            diff_one(&st, s, strlen(s), 1); /* flat records: must be accepted */
            free(s);
        }
    }
    print_stats("spider train (compact, ensure_ascii, indented)", &st);
    assert_true(json_array_size(arr) > 1000);
    assert_int_equal(st.mismatches, 0);
    assert_int_equal(st.deferred, 0);
    json_decref(arr);
}

/* dev.json keeps parsed trees ("sql", token arrays): nested values defer. */
static void test_spider_dev_nested_defers(void **state)
{
    (void)state;
    json_t *arr = load_spider("dev.json");
    diff_stats st = {0};
    size_t i;
    json_t *el;
    json_array_foreach(arr, i, el) {
        if (i >= 300)
            break;
        char *s = json_dumps(el, JSON_COMPACT);
        assert_non_null(s);
        diff_one(&st, s, strlen(s), 0);
        free(s);
        /* The same record with the nested members removed is flat. */
        json_t *flat = json_object();
        const char *key;
        json_t *val;
        json_object_foreach(el, key, val) {
            if (!json_is_object(val) && !json_is_array(val))
                json_object_set(flat, key, val);
        }
        s = json_dumps(flat, JSON_COMPACT | JSON_ENSURE_ASCII);
        diff_one(&st, s, strlen(s), 1);
        free(s);
        json_decref(flat);
    }
    print_stats("spider dev (nested + flattened)", &st);
    assert_int_equal(st.mismatches, 0);
    json_decref(arr);
}

/* ---- hand-written tricky and hostile records ---------------------------- */

typedef struct tcase {
    const char *s;
    size_t len;
    int accept; /* 1 must accept, 0 must defer, -1 either (oracle decides) */
} tcase;

#define A(lit) {lit, sizeof(lit) - 1, 1}
#define D(lit) {lit, sizeof(lit) - 1, 0}
#define E(lit) {lit, sizeof(lit) - 1, -1}

static const tcase tricky[] = {
    /* plain */
    A("{}"), A(" {} "), A("\t\r\n{\t\r\n}\t\r\n"), A("{\"a\":1}"),
    A("{\"question\":\"How many?\",\"query\":\"SELECT 1\"}"),
    A("{ \"a\" : \"x\" , \"b\" : null , \"n\" : true , \"s\" : false }"),
    A("{\"\":\"empty key\"}"), A("{\"a\":\"\"}"),
    /* escapes */
    A("{\"a\":\"q\\\"b\\\\s\\/f\\b\\f\\n\\r\\t\"}"),
    A("{\"a\":\"\\u0041\\u00e9\\u00E9\\u20AC\\uFFFF\"}"),
    A("{\"a\":\"\\ud83d\\ude00 smile\"}"), A("{\"a\":\"\\uD83D\\uDE00\"}"),
    A("{\"a\":\"\\uDBFF\\uDFFF\"}"), A("{\"a\":\"\\uD800\\uDC00\"}"),
    A("{\"a\":\"nul\\u0000inside\"}"), A("{\"a\":\"\\u0000\"}"),
    A("{\"a\":\"x\\u0000\",\"b\":\"\\u0000y\"}"),
    A("{\"x\":\"not wanted \\n escaped\",\"a\":1}"),
    D("{\"a\":\"\\ud83d\"}"), D("{\"a\":\"\\ude00\"}"), D("{\"a\":\"\\ud83dx\"}"),
    D("{\"a\":\"\\ud83d\\n\"}"), D("{\"a\":\"\\ud83d\\u0041\"}"),
    D("{\"a\":\"\\ud83d\\ud83d\"}"), D("{\"a\":\"\\ude00\\ud83d\"}"),
    D("{\"x\":\"\\udc00\"}"), D("{\"a\":\"\\u12\"}"), D("{\"a\":\"\\u12G4\"}"),
    D("{\"a\":\"\\x41\"}"), D("{\"a\":\"\\'\"}"), D("{\"a\":\"\\U0041\"}"),
    D("{\"a\":\"\\\"}"), D("{\"a\":\"\\"), D("{\"a\":\"\\u"), D("{\"a\":\"\\ud83d\\u"),
    /* keys */
    D("{\"a\\u0062\":1}"), D("{\"\\u0000\":1}"), D("{\"a\\n\":1}"),
    D("{\"a\":1,\"a\":2}"), D("{\"a\":1,\"b\":2,\"a\":3}"), D("{\"\":1,\"\":2}"),
    D("{\"x\":1,\"x\":2}"), A("{\"a\":1,\"A\":2,\"ab\":3,\"ba\":4}"),
    /* nested values */
    D("{\"a\":{}}"), D("{\"a\":[]}"), D("{\"x\":[1,2]}"), D("{\"x\":{\"a\":1}}"),
    D("{\"a\":1,\"sql\":{\"from\":[]}}"),
    /* numbers */
    A("{\"a\":0}"), A("{\"a\":-0}"), A("{\"a\":-0.0}"), A("{\"a\":0.0}"), A("{\"a\":1.5}"),
    A("{\"a\":-1.5e3}"), A("{\"a\":1E+2}"), A("{\"a\":1e-2}"), D("{\"a\":1e400}"),
    A("{\"a\":1e-400}"), A("{\"a\":-1e-400}"), A("{\"a\":4.9e-324}"), A("{\"a\":2.5e-324}"),
    A("{\"a\":9223372036854775807}"), A("{\"a\":-9223372036854775808}"),
    A("{\"a\":1.7976931348623157e308}"), A("{\"a\":9.9999e307}"),
    A("{\"a\":0.000000000000000000001e320}"), A("{\"a\":1234567890123456789}"),
    A("{\"a\":0e999999999999}"), A("{\"a\":0.000e400}"),
    A("{\"a\":1.7976931348623158e308}"), D("{\"a\":1.797693134862315808e308}"),
    A("{\"a\":-1.7976931348623158e+308}"), D("{\"a\":0.0001797693134862315808e312}"),
    A("{\"a\":1.0e308}"), A("{\"a\":0.00001e313}"), D("{\"a\":10e308}"),
    A("{\"a\":1e-324}"), A("{\"a\":-2.4703282292062328e-324}"),
    A("{\"a\":12345678901234567890.5}"), A("{\"a\":1e00000000000000000000000010}"),
    D("{\"a\":9223372036854775808}"), D("{\"a\":-9223372036854775809}"),
    D("{\"a\":99999999999999999999}"), D("{\"a\":-99999999999999999999}"),
    D("{\"a\":1.8e308}"), D("{\"a\":-1.8e308}"), D("{\"a\":1e309}"), D("{\"x\":1e999}"),
    D("{\"a\":01}"), D("{\"a\":-01}"), D("{\"a\":00}"), D("{\"a\":1.}"), D("{\"a\":.5}"),
    D("{\"a\":-.5}"), D("{\"a\":+1}"), D("{\"a\":-}"), D("{\"a\":1e}"), D("{\"a\":1e+}"),
    D("{\"a\":1.e5}"), D("{\"a\":0x10}"), D("{\"a\":1.5.3}"), D("{\"a\":1-2}"),
    D("{\"a\":NaN}"), D("{\"a\":Infinity}"), D("{\"a\":-Infinity}"), D("{\"a\":1_000}"),
    /* literals */
    D("{\"a\":tru}"), D("{\"a\":truex}"), D("{\"a\":True}"), D("{\"a\":nul}"),
    D("{\"a\":nulll}"), D("{\"a\":falsey}"), D("{\"a\":true1}"), D("{\"a\":undefined}"),
    /* structure */
    D(""), D(" "), D("{"), D("}"), D("{\"a\"}"), D("{\"a\":}"), D("{\"a\" 1}"),
    D("{\"a\":1,}"), D("{,}"), D("{,\"a\":1}"), D("{\"a\":1 \"b\":2}"), D("{\"a\":1;\"b\":2}"),
    D("{\"a\"::1}"), D("{a:1}"), D("{'a':1}"), D("{\"a\":'x'}"), D("{\"a\":1}}"),
    D("{\"a\":1}{}"), D("{\"a\":1} x"), D("{\"a\":1},"), D("{\"a\":1}\0"), D("\0{}"),
    D("{\"a\":1"), D("{\"a\":\"x"), D("{\"a\":\"x}"), D("{\"a"), D("{\""),
    D("[]"), D("[{\"a\":1}]"), D("\"str\""), D("1"), D("null"), D("true"),
    D("\xEF\xBB\xBF{}"), D("{}\xEF\xBB\xBF"), D("\f{}"), D("{}\f"), D("\v{}"),
    D("{\"a\":1}\x00"), D("{/*c*/}"), D("{}//"), D("{\"a\":1}\n\n\nx"),
    D("\xC2\xA0{}"), D("{\xC2\xA0}"), D("{\"a\":1\xC2\xA0}"),
    /* control bytes and UTF-8 */
    D("{\"a\":\"tab\there\"}"), D("{\"a\":\"nl\nhere\"}"), D("{\"a\":\"x\x01\"}"),
    D("{\"a\":\"x\x1f\"}"), D("{\"a\":\"\0\"}"), D("{\"x\":\"\0\"}"), D("{\"a\0\":1}"),
    A("{\"a\":\"del\x7f ok\"}"), A("{\"a\":\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"}"),
    A("{\"\xC3\xA9\":\"key\"}"), A("{\"a\":\"\xF4\x8F\xBF\xBF\xEF\xBF\xBF\"}"),
    D("{\"a\":\"\xC3\"}"), D("{\"a\":\"\xC3\"x}"), D("{\"a\":\"\xED\xA0\x80\"}"),
    D("{\"a\":\"\xC0\xAF\"}"), D("{\"a\":\"\xE0\x80\xAF\"}"), D("{\"a\":\"\xF0\x80\x80\xAF\"}"),
    D("{\"a\":\"\xF4\x90\x80\x80\"}"), D("{\"a\":\"\xF5\x80\x80\x80\"}"),
    D("{\"a\":\"\xFF\"}"), D("{\"a\":\"\x80\"}"), D("{\"\xFF\":1}"), D("{\"a\":\"\xE2\x82\"}"),
    D("{\"a\":\"\xE2\x82"), D("{\"a\":\"\xF0\x9F\x98"),
    /* long strings around the 8-byte word boundaries */
    A("{\"a\":\"0123456\"}"), A("{\"a\":\"01234567\"}"), A("{\"a\":\"012345678\"}"),
    A("{\"a\":\"0123456789abcdef\\\"0123456789abcdef\"}"),
    A("{\"a\":\"0123456789abcdef\xC3\xA9" "0123456789abcdef\\u00e9xyzxyzxyz\"}"),
    D("{\"a\":\"0123456789abcdef\x01" "0123456789\"}"),
    D("{\"a\":\"0123456789abcdef0123456789\x1f\"}"),
    D("{\"a\":\"0123456789abcdef0123456789"),
    E("{\"a\":\"x\",\"b\":\"y\",\"c\":\"z\",\"question\":\"\\u00e9\"}"),
};

static void test_tricky_records(void **state)
{
    (void)state;
    diff_stats st = {0};
    for (size_t i = 0; i < sizeof tricky / sizeof tricky[0]; i++) {
        size_t before = st.mismatches;
        diff_one(&st, tricky[i].s, tricky[i].len, tricky[i].accept);
        if (st.mismatches != before)
            print_message("#   (tricky case %zu)\n", i);
    }
    print_stats("tricky", &st);
    assert_int_equal(st.mismatches, 0);
}

/* Specific values, checked directly. */
static void test_values(void **state)
{
    (void)state;
    ps_buf scratch;
    ps_buf_init(&scratch);
    const char *names[] = {"q", "s", "n", "r", "t", "f", "z", "missing", "q"};
    ps_json_value v[9];
    static const char rec[] = " {\"q\":\"plain\", \"s\":\"a\\u00e9\\ud83d\\ude00\\u0000b\\n\","
                              "\"n\":-42,\"r\":2.5e1,\"t\":true,\"f\":false,\"z\":null} ";
    int rc = ps_json_fast_extract(rec, sizeof rec - 1, names, 9, v, &scratch);
    assert_int_equal(rc, 1);
    assert_int_equal(v[0].kind, PS_JV_STRING);
    assert_int_equal(v[0].len, 5);
    assert_memory_equal(v[0].str, "plain", 5);
    assert_true(v[0].str > rec && v[0].str < rec + sizeof rec); /* into data */
    assert_int_equal(v[1].kind, PS_JV_STRING);
    assert_int_equal(v[1].len, 10);
    assert_memory_equal(v[1].str, "a\xC3\xA9\xF0\x9F\x98\x80\0b\n", 10);
    assert_true(v[1].str >= scratch.data && v[1].str < scratch.data + scratch.cap);
    assert_int_equal(v[2].kind, PS_JV_INTEGER);
    assert_int_equal(v[2].integer, -42);
    assert_int_equal(v[2].len, 3);
    assert_memory_equal(v[2].str, "-42", 3);
    assert_int_equal(v[3].kind, PS_JV_REAL);
    assert_true(v[3].real == 25.0);
    assert_memory_equal(v[3].str, "2.5e1", 5);
    assert_int_equal(v[4].kind, PS_JV_TRUE);
    assert_int_equal(v[5].kind, PS_JV_FALSE);
    assert_int_equal(v[6].kind, PS_JV_NULL);
    assert_int_equal(v[7].kind, PS_JV_ABSENT);
    assert_int_equal(v[8].kind, PS_JV_STRING); /* repeated name: filled too */
    assert_ptr_equal(v[8].str, v[0].str);

    /* A deferral clears out[]. */
    static const char bad[] = "{\"q\":\"x\",\"q\":\"y\"}";
    assert_int_equal(ps_json_fast_extract(bad, sizeof bad - 1, names, 9, v, &scratch), 0);
    for (int i = 0; i < 9; i++)
        assert_int_equal(v[i].kind, PS_JV_ABSENT);

    /* Without scratch, an escaped requested string defers; others do not. */
    assert_int_equal(ps_json_fast_extract(rec, sizeof rec - 1, names, 1, v, NULL), 1);
    assert_int_equal(ps_json_fast_extract(rec, sizeof rec - 1, names, 2, v, NULL), 0);

    /* No names at all: a pure validity check. */
    assert_int_equal(ps_json_fast_extract(rec, sizeof rec - 1, NULL, 0, NULL, NULL), 1);

    /* Arguments. */
    assert_int_equal(ps_json_fast_extract(NULL, 3, names, 1, v, &scratch), PS_EINVAL);
    assert_int_equal(ps_json_fast_extract(rec, 3, NULL, 1, v, &scratch), PS_EINVAL);
    assert_int_equal(ps_json_fast_extract(rec, 3, names, 1, NULL, &scratch), PS_EINVAL);
    assert_int_equal(ps_json_fast_extract(NULL, 0, names, 1, v, &scratch), 0);

    /* The member limit. */
    ps_buf big;
    ps_buf_init(&big);
    assert_int_equal(ps_buf_putc(&big, '{'), 0);
    for (int i = 0; i < PS_JSON_FAST_MAX_KEYS; i++)
        assert_int_equal(ps_buf_printf(&big, "%s\"k%d\":%d", i ? "," : "", i, i), 0);
    assert_int_equal(ps_buf_putc(&big, '}'), 0);
    assert_int_equal(ps_json_fast_extract(big.data, big.len, names, 1, v, &scratch), 1);
    big.len--;
    assert_int_equal(ps_buf_puts(&big, ",\"one_more\":1}"), 0);
    assert_int_equal(ps_json_fast_extract(big.data, big.len, names, 1, v, &scratch), 0);
    ps_buf_free(&big);
    ps_buf_free(&scratch);
}

/* ---- seeded random mutations ------------------------------------------- */

static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static const unsigned char interesting[] = {
    '"', '\\', '{', '}', '[', ']', ',', ':', ' ', '\t', '\n', '\r', '0', '1', '9', '-', '+',
    '.', 'e', 'E', 'u', 'd', 'D', '8', 'c', 'C', 'f', 'n', 't', 'a', 0x00, 0x01, 0x1F, 0x7F,
    0x80, 0xBF, 0xC0, 0xC3, 0xA9, 0xE2, 0xED, 0xA0, 0xF0, 0xF4, 0x90, 0xFF, '/', 'b', 'r'};

static void test_mutations(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        "{\"db_id\":\"concert_singer\",\"question\":\"How many singers do we have?\","
        "\"query\":\"SELECT count(*) FROM singer\"}",
        "{\"question\":\"Caf\\u00e9 \\ud83d\\ude00 \\\"quoted\\\" \\\\ back\\/slash\","
        "\"sql\":\"SELECT * FROM t WHERE x = 'a\\tb'\",\"id\":12345,\"label\":-0.5e-3}",
        "{ \"a\" : 9223372036854775807 , \"b\" : [1, {\"c\": null}], \"x\": true }",
        "{\"question\":\"caf\xC3\xA9 \xF0\x9F\x98\x80\",\"query\":\"SELECT 1\",\"n\":null,"
        "\"s\":false,\"id\":\"x\\u0000y\"}",
        "{\"a\":1e308,\"b\":-1.7976931348623157e308,\"n\":0.1,\"s\":\"\"}",
        "\n{\"id\":-9223372036854775808,\"question\":\"0123456789abcdefghij\","
        "\"sql\":\"klmnopqrstuvwxyz\"}\r\n",
    };
    const size_t nseeds = sizeof seeds / sizeof seeds[0];
    diff_stats st = {0};
    char buf[512];
    const char *env = getenv("PS_JSON_FAST_CASES");
    long cases = env ? atol(env) * 2 : 20000; /* PS_JSON_FAST_CASES: longer runs */
    const char *seed_env = getenv("PS_JSON_FAST_SEED");
    if (seed_env)
        rng_state = (strtoull(seed_env, NULL, 0) + 1) * UINT64_C(0x9E3779B97F4A7C15) | 1;
    for (long it = 0; it < cases; it++) {
        const char *seed = seeds[rnd() % nseeds];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        int nmut = 1 + (int)(rnd() % 3);
        for (int m = 0; m < nmut; m++) {
            uint64_t r = rnd();
            unsigned char b = (r >> 8) & 1 ? interesting[(r >> 16) % sizeof interesting]
                                           : (unsigned char)(r >> 24);
            size_t pos = len ? (size_t)((r >> 32) % len) : 0;
            switch (r % 4) {
            case 0: /* replace */
            case 1:
                if (len)
                    buf[pos] = (char)b;
                break;
            case 2: /* insert */
                if (len + 1 < sizeof buf) {
                    memmove(buf + pos + 1, buf + pos, len - pos);
                    buf[pos] = (char)b;
                    len++;
                }
                break;
            case 3: /* delete */
                if (len) {
                    memmove(buf + pos, buf + pos + 1, len - pos - 1);
                    len--;
                }
                break;
            }
        }
        diff_one(&st, buf, len, -1);
    }
    print_stats("mutations", &st);
    assert_int_equal(st.mismatches, 0);
    assert_true(st.accepted > 1000); /* the oracle is exercised on both sides */
    assert_true(st.deferred > 1000);
}


/* ---- random well-formed (and nearly well-formed) flat records ------------ */

static void put(ps_buf *b, const char *s) { assert_int_equal(ps_buf_puts(b, s), 0); }

static void gen_ws(ps_buf *b)
{
    static const char *const ws[] = {"", "", "", " ", "\t", "\n", "\r\n", "  "};
    put(b, ws[rnd() % 8]);
    if (rnd() % 500 == 0)
        put(b, rnd() % 2 ? "\f" : "\v"); /* not JSON whitespace */
}

static void gen_string(ps_buf *b, bool is_key)
{
    put(b, "\"");
    int parts = (int)(rnd() % (is_key ? 3 : 8));
    for (int i = 0; i < parts; i++) {
        uint64_t r = rnd();
        if (is_key && r % 20 != 0)
            r = r / 20 * 20 + (r % 2 ? 0 : 1); /* keys: mostly plain or UTF-8 */
        switch (r % 20) {
        case 0: put(b, "question"); break;
        case 1: put(b, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"); break;
        case 2: put(b, "SELECT count(*) FROM t WHERE a = 'x' "); break;
        case 3: put(b, "0123456789abcdefghijklmnopqrstuv"); break;
        case 4: { static const char *const e[] = {"\\n", "\\\"", "\\\\", "\\/", "\\b",
                                                "\\f", "\\r", "\\t"};
                  put(b, e[(r >> 8) % 8]); break; }
        case 5: case 6: {
            unsigned cp = (unsigned)((r >> 8) % 0x10000);
            if ((r >> 40) % 4 == 0)
                cp = 0; /* \u0000 */
            char u[8];
            snprintf(u, sizeof u, (r >> 30) % 2 ? "\\u%04x" : "\\u%04X", cp);
            put(b, u);
            break;
        }
        case 7: { /* surrogate pair, sometimes broken */
            unsigned hi = 0xD800 + (unsigned)((r >> 8) % 0x400);
            unsigned lo = 0xDC00 + (unsigned)((r >> 20) % 0x400);
            if ((r >> 40) % 16 == 0)
                lo = (unsigned)((r >> 44) % 0x10000);
            char u[16];
            snprintf(u, sizeof u, "\\u%04X\\u%04x", hi, lo);
            put(b, u);
            break;
        }
        case 8:
            if ((r >> 8) % 50 == 0)
                put(b, (r >> 16) % 2 ? "\t" : "\x01"); /* raw control: invalid */
            else
                put(b, " ");
            break;
        case 9:
            if ((r >> 8) % 50 == 0)
                put(b, (r >> 16) % 2 ? "\xED\xA0\x80" : "\xC0\x80"); /* invalid UTF-8 */
            else
                put(b, "\x7F~");
            break;
        default: put(b, "abc"); break;
        }
    }
    put(b, "\"");
}

static void gen_digits(ps_buf *b, int n, bool nonzero_first)
{
    for (int i = 0; i < n; i++) {
        char c = (char)('0' + rnd() % 10);
        if (i == 0 && nonzero_first && c == '0')
            c = '1';
        assert_int_equal(ps_buf_putc(b, c), 0);
    }
}

static void gen_number(ps_buf *b)
{
    uint64_t r = rnd();
    if (r % 2)
        put(b, "-");
    if ((r >> 1) % 4 == 0) {
        put(b, "0");
    } else {
        static const int lens[] = {1, 2, 5, 17, 18, 19, 19, 19, 20, 25, 300, 309};
        int n = lens[(r >> 3) % 12];
        if (n >= 18 && n <= 20 && (r >> 7) % 2) { /* near the int64 limits */
            static const char *const near[] = {"9223372036854775807", "9223372036854775808",
                                               "9223372036854775806", "9223372036854775809",
                                               "18446744073709551616"};
            put(b, near[(r >> 8) % 5]);
        } else {
            gen_digits(b, n, true);
        }
    }
    if ((r >> 12) % 3 == 0) {
        put(b, ".");
        gen_digits(b, 1 + (int)((r >> 14) % 20), false);
    }
    if ((r >> 20) % 3 == 0) {
        static const char *const e[] = {"e", "E", "e+", "e-", "E-", "E+"};
        put(b, e[(r >> 22) % 6]);
        static const char *const x[] = {"0", "1", "5", "22", "300", "305", "306", "307",
                                        "308", "309", "310", "320", "323", "324", "330",
                                        "400", "0000308", "99999999999999999999"};
        put(b, x[(r >> 26) % 18]);
    }
    if (rnd() % 400 == 0)
        put(b, (r >> 40) % 2 ? "." : "e"); /* dangling: invalid */
}

static void gen_record(ps_buf *b)
{
    ps_buf_reset(b);
    gen_ws(b);
    put(b, "{");
    int n = (int)(rnd() % 7);
    for (int i = 0; i < n; i++) {
        if (i)
            put(b, ",");
        gen_ws(b);
        gen_string(b, true);
        gen_ws(b);
        put(b, ":");
        gen_ws(b);
        switch (rnd() % 12) {
        case 0: case 1: case 2: case 3: case 4: gen_string(b, false); break;
        case 5: case 6: case 7: gen_number(b); break;
        case 8: put(b, "true"); break;
        case 9: put(b, "false"); break;
        case 10: put(b, "null"); break;
        default: put(b, rnd() % 20 ? "null" : (rnd() % 2 ? "[1]" : "{}")); break;
        }
        gen_ws(b);
    }
    if (rnd() % 300 == 0)
        put(b, ",");
    put(b, "}");
    gen_ws(b);
}

static void test_generated(void **state)
{
    (void)state;
    const char *env = getenv("PS_JSON_FAST_CASES");
    long cases = env ? atol(env) : 10000;
    diff_stats st = {0};
    ps_buf b;
    ps_buf_init(&b);
    for (long i = 0; i < cases; i++) {
        gen_record(&b);
        diff_one(&st, b.data, b.len, -1);
    }
    print_stats("generated", &st);
    ps_buf_free(&b);
    assert_int_equal(st.mismatches, 0);
    assert_true(st.accepted > st.cases / 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_tricky_records),
        cmocka_unit_test(test_spider_train_differential),
        cmocka_unit_test(test_spider_dev_nested_defers),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_generated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
