/* The structs the library fills (pairshard/common.h, "Structs the library
 * fills"; common/options.c's ps_struct_out): the getter writes the caller's
 * size and no byte past it; a larger struct (a newer header than the
 * library) gets zeros for the fields the library does not know; a size
 * below the struct's first published size is PS_EINVAL with nothing
 * written. Checked on a model struct, then through the public getters of
 * the tokenizer, the cleaner and a template. (A program compiled against
 * the previous headers is tests/cli/abi_compat.sh.) */
#include "common/options.h"
#include "pairshard/pairshard.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/testutil.h"

#define FILL 0xA5
#define EXTRA 24 /* a newer header's fields, and guard bytes past them */

/* The library's struct, of which version 1 ended at `b`. */
typedef struct model {
    int64_t a;
    int32_t b;
    int64_t c; /* appended in version 2 */
} model;
#define MODEL_V1 PS_SIZE_THROUGH(model, b)

static int all_fill(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != FILL)
            return 0;
    return 1;
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static void test_size_through_is_the_old_sizeof(void **state)
{
    (void)state;
    struct model_v1 {
        int64_t a;
        int32_t b;
    };
    assert_int_equal(MODEL_V1, sizeof(struct model_v1)); /* 16: b's end rounded up */
    assert_int_equal(PS_SIZE_THROUGH(model, c), sizeof(model));
}

static void test_older_caller_gets_its_prefix_only(void **state)
{
    (void)state;
    model full = {1, 2, 3};
    unsigned char buf[sizeof full + EXTRA];
    memset(buf, FILL, sizeof buf);
    assert_int_equal(ps_struct_out(buf, MODEL_V1, &full, sizeof full, MODEL_V1, "model", NULL), 0);
    assert_memory_equal(buf, &full, MODEL_V1);
    assert_true(all_fill(buf + MODEL_V1, sizeof buf - MODEL_V1)); /* nothing past its size */
}

static void test_newer_caller_gets_zeros_for_the_unknown_tail(void **state)
{
    (void)state;
    model full = {1, 2, 3};
    unsigned char buf[sizeof full + EXTRA];
    memset(buf, FILL, sizeof buf);
    size_t newer = sizeof full + 8;
    assert_int_equal(ps_struct_out(buf, newer, &full, sizeof full, MODEL_V1, "model", NULL), 0);
    assert_memory_equal(buf, &full, sizeof full);
    assert_true(all_zero(buf + sizeof full, 8));
    assert_true(all_fill(buf + newer, sizeof buf - newer));
}

static void test_too_small_is_einval_and_writes_nothing(void **state)
{
    (void)state;
    model full = {1, 2, 3};
    unsigned char buf[sizeof full];
    ps_error err;
    size_t bad[] = {0, 8, MODEL_V1 - 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(buf, FILL, sizeof buf);
        ps_error_clear(&err);
        assert_int_equal(ps_struct_out(buf, bad[i], &full, sizeof full, MODEL_V1, "model", &err),
                         PS_EINVAL);
        assert_true(all_fill(buf, sizeof buf));
        assert_non_null(strstr(err.message, "model"));
    }
    assert_int_equal(ps_struct_out(NULL, sizeof full, &full, sizeof full, MODEL_V1, "m", NULL),
                     PS_EINVAL);
}

/* A getter through its _size function: the exact size fills what the macro
 * fills; a larger one adds zeros and stops at it; a tiny one is refused
 * with nothing written. */
#define CHECK_GETTER(type, call_size, call_macro)                                 \
    do {                                                                          \
        type want;                                                                \
        memset(&want, 0, sizeof want);                                            \
        call_macro(&want);                                                        \
        _Alignas(16) unsigned char buf[sizeof(type) + EXTRA];                     \
        memset(buf, FILL, sizeof buf);                                            \
        assert_int_equal(call_size((type *)(void *)buf, sizeof(type) + 8), 0);    \
        assert_true(all_zero(buf + sizeof(type), 8));                             \
        assert_true(all_fill(buf + sizeof(type) + 8, EXTRA - 8));                 \
        memset(buf, FILL, sizeof buf);                                            \
        assert_int_equal(call_size((type *)(void *)buf, 4), PS_EINVAL);           \
        assert_true(all_fill(buf, sizeof buf));                                   \
    } while (0)

static ps_tokenizer *g_tok;
static ps_cleaner *g_cleaner;
static ps_template *g_tmpl;

#define TOK_INFO_SIZE(p, n) ps_tokenizer_get_info_size(g_tok, (p), (n))
#define TOK_INFO(p) ps_tokenizer_get_info(g_tok, (p))
#define TOK_OPT_SIZE(p, n) ps_tokenizer_get_options_size(g_tok, (p), (n))
#define TOK_OPT(p) ps_tokenizer_get_options(g_tok, (p))
#define COUNTS_SIZE(p, n) ps_cleaner_get_counts_size(g_cleaner, (p), (n))
#define COUNTS(p) ps_cleaner_get_counts(g_cleaner, (p))
#define TMPL_SIZE(p, n) ps_template_get_info_size(g_tmpl, (p), (n))
#define TMPL(p) ps_template_get_info(g_tmpl, (p))

static void test_public_getters(void **state)
{
    (void)state;
    ps_error err;
    assert_int_equal(ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-uncased.vocab.txt"),
                                             NULL, &g_tok, &err),
                     0);
    assert_int_equal(ps_cleaner_create(NULL, &g_cleaner, &err), 0);
    assert_int_equal(ps_cleaner_run(g_cleaner, ps_test_data("spider/dev.json"), NULL, NULL, &err),
                     0);
    assert_int_equal(ps_template_open("pair", &g_tmpl, &err), 0);

    CHECK_GETTER(ps_tokenizer_info, TOK_INFO_SIZE, TOK_INFO);
    CHECK_GETTER(ps_tokenizer_options, TOK_OPT_SIZE, TOK_OPT);
    CHECK_GETTER(ps_clean_counts, COUNTS_SIZE, COUNTS);
    CHECK_GETTER(ps_template_info, TMPL_SIZE, TMPL);

    /* What the macros filled is the real thing. */
    ps_tokenizer_info ti;
    assert_int_equal(ps_tokenizer_get_info(g_tok, &ti), 0);
    assert_int_equal(ti.vocab_size, 30522);
    assert_int_equal(ti.pad_id, 0);
    ps_tokenizer_options to;
    assert_int_equal(ps_tokenizer_get_options(g_tok, &to), 0);
    assert_int_equal(to.struct_size, sizeof to);
    assert_int_equal(to.lowercase, 1);
    ps_clean_counts cc;
    assert_int_equal(ps_cleaner_get_counts(g_cleaner, &cc), 0);
    assert_int_equal(cc.records_in, 1034);
    assert_int_equal(cc.records_in, cc.kept + cc.rejected + cc.duplicates);

    ps_template_free(g_tmpl);
    ps_cleaner_free(g_cleaner);
    ps_tokenizer_free(g_tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_through_is_the_old_sizeof),
        cmocka_unit_test(test_older_caller_gets_its_prefix_only),
        cmocka_unit_test(test_newer_caller_gets_zeros_for_the_unknown_tail),
        cmocka_unit_test(test_too_small_is_einval_and_writes_nothing),
        cmocka_unit_test(test_public_getters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
