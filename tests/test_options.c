/* The growing options structs (pairshard/common.h, "Options structs that
 * grow"; common/options.c): a caller's struct_size decides how many bytes
 * the library reads and writes; an older known size gets the defaults for
 * the tail it lacks; an unknown size is PS_EINVAL. Checked on a two-version
 * model struct, then on ps_clean_options and ps_reader_options through the
 * public API. */
#include "common/options.h"
#include "pairshard/pairshard.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* Version 1 of a model struct, and version 2 with a field appended. (The
 * fields are 8 bytes wide so that version 2 is larger: a field that fitted
 * in version 1's tail padding would leave sizeof unchanged, and the rule
 * in common/options.h requires every version to be larger.) */
typedef struct model_v1 {
    size_t struct_size;
    int64_t a;
} model_v1;
typedef struct model_v2 {
    size_t struct_size;
    int64_t a;
    int64_t b; /* new in version 2: default 7 */
} model_v2;
static const size_t MODEL_SIZES[] = {sizeof(model_v1), sizeof(model_v2)};

static void model_defaults(model_v2 *m)
{
    memset(m, 0, sizeof *m);
    m->struct_size = sizeof *m;
    m->a = 1;
    m->b = 7;
}

static void test_older_caller_gets_defaults_for_the_tail(void **state)
{
    (void)state;
    model_v1 old = {sizeof old, 42};
    model_v2 lib;
    model_defaults(&lib);
    ps_error err;
    assert_int_equal(ps_options_adopt(&lib, sizeof lib, &old, MODEL_SIZES, 2, "model", &err), 0);
    assert_int_equal(lib.a, 42);                /* what the caller set */
    assert_int_equal(lib.b, 7);                 /* the tail it does not know: default */
    assert_int_equal(lib.struct_size, sizeof lib); /* the library's own size from here on */
}

static void test_current_caller_is_copied_whole(void **state)
{
    (void)state;
    model_v2 cur = {sizeof cur, 3, 4};
    model_v2 lib;
    model_defaults(&lib);
    assert_int_equal(ps_options_adopt(&lib, sizeof lib, &cur, MODEL_SIZES, 2, "model", NULL), 0);
    assert_int_equal(lib.a, 3);
    assert_int_equal(lib.b, 4);
    /* NULL: the defaults stay. */
    model_defaults(&lib);
    assert_int_equal(ps_options_adopt(&lib, sizeof lib, NULL, MODEL_SIZES, 2, "model", NULL), 0);
    assert_int_equal(lib.a, 1);
}

static void test_unknown_sizes_are_einval(void **state)
{
    (void)state;
    struct {
        model_v2 m;
        int c; /* a newer header's field this library does not know */
    } newer = {{sizeof newer, 5, 6}, 9};
    size_t bad[] = {0, sizeof(size_t), sizeof newer, sizeof(model_v1) + 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        newer.m.struct_size = bad[i];
        model_v2 lib;
        model_defaults(&lib);
        ps_error err;
        ps_error_clear(&err);
        assert_int_equal(ps_options_adopt(&lib, sizeof lib, &newer, MODEL_SIZES, 2, "model", &err),
                         PS_EINVAL);
        assert_int_equal(lib.a, 1); /* untouched */
        assert_non_null(strstr(err.message, "model.struct_size is "));
        assert_non_null(strstr(err.message, "model_init"));
    }
}

static void test_init_writes_no_byte_past_the_callers_size(void **state)
{
    (void)state;
    unsigned char buf[sizeof(model_v2) + 8];
    memset(buf, 0xA5, sizeof buf);
    model_v2 d;
    model_defaults(&d);
    assert_int_equal(ps_options_init_copy(buf, sizeof(model_v1), &d, MODEL_SIZES, 2, "model"), 0);
    model_v1 got;
    memcpy(&got, buf, sizeof got);
    assert_int_equal(got.struct_size, sizeof(model_v1));
    assert_int_equal(got.a, 1);
    for (size_t i = sizeof(model_v1); i < sizeof buf; i++)
        assert_int_equal(buf[i], 0xA5);
    memset(buf, 0xA5, sizeof buf);
    assert_int_equal(ps_options_init_copy(buf, 3, &d, MODEL_SIZES, 2, "model"), PS_EINVAL);
    assert_int_equal(buf[0], 0xA5);
    assert_int_equal(ps_options_init_copy(NULL, sizeof d, &d, MODEL_SIZES, 2, "model"), PS_EINVAL);
}

static void test_clean_options_size(void **state)
{
    (void)state;
    ps_clean_options o;
    memset(&o, 0x5A, sizeof o);
    assert_int_equal(ps_clean_options_init(&o), 0);
    assert_int_equal(o.struct_size, sizeof o);
    assert_int_equal(o.max_record_bytes, 1u << 20);
    assert_int_equal(ps_clean_options_init_size(&o, sizeof o + 8), PS_EINVAL);
    assert_int_equal(ps_clean_options_init_size(NULL, sizeof o), PS_EINVAL);

    ps_cleaner *c = (ps_cleaner *)&o; /* set to NULL on failure */
    ps_error err;
    o.struct_size = 0; /* a struct never given to ps_clean_options_init */
    assert_int_equal(ps_cleaner_create(&o, &c, &err), PS_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err.message, "ps_clean_options.struct_size is 0"));
    o.struct_size = sizeof o;
    assert_int_equal(ps_cleaner_create(&o, &c, &err), 0);
    ps_cleaner_free(c);
}

static void test_reader_options_size(void **state)
{
    (void)state;
    ps_reader_options o;
    memset(&o, 0x5A, sizeof o);
    assert_int_equal(ps_reader_options_init(&o), 0);
    assert_int_equal(o.struct_size, sizeof o);
    assert_int_equal(o.batch_size, 32);
    assert_int_equal(ps_reader_options_init_size(&o, 0), PS_EINVAL);
    assert_int_equal(o.struct_size, sizeof o); /* nothing written */

    ps_reader *r = NULL;
    ps_error err;
    o.struct_size = sizeof o + 16; /* a newer header than this library */
    /* Refused before the directory is looked at: PS_EINVAL, not PS_ENOENT. */
    assert_int_equal(ps_reader_open("/nonexistent/set", &o, NULL, &r, &err), PS_EINVAL);
    assert_null(r);
    assert_non_null(strstr(err.message, "ps_reader_options.struct_size is "));
    o.struct_size = sizeof o;
    assert_int_equal(ps_reader_open("/nonexistent/set", &o, NULL, &r, &err), PS_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_older_caller_gets_defaults_for_the_tail),
        cmocka_unit_test(test_current_caller_is_copied_whole),
        cmocka_unit_test(test_unknown_sizes_are_einval),
        cmocka_unit_test(test_init_writes_no_byte_past_the_callers_size),
        cmocka_unit_test(test_clean_options_size),
        cmocka_unit_test(test_reader_options_size),
    };
    return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
