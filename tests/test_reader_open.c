/* Tests of the reader (include/pairshard/reader.h): opening and closing a
 * reader: option defaults and checks, labels, an empty set, a missing
 * directory, the plan-size limit, the device fallback. The sets and the
 * reference decode are tests/support/reader_fixture.c. */
#include "tests/support/reader_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- tests ----------------------------------------------------------------- */

static void test_options_defaults(void **state)
{
    (void)state;
    ps_reader_options o;
    memset(&o, 0x5A, sizeof o);
    ps_reader_options_init(&o);
    assert_int_equal(o.batch_size, 32);
    assert_int_equal(o.max_tokens, 0);
    assert_int_equal(o.pad_id, 0);
    assert_int_equal(o.pad_mode, PS_PAD_LONGEST);
    assert_int_equal(o.pad_multiple, 1);
    assert_int_equal(o.shuffle, 1);
    assert_int_equal(o.seed, 0);
    assert_int_equal(o.epoch, 0);
    assert_int_equal(o.shuffle_window, 0);
    assert_int_equal(o.rank, PS_FROM_ENV);
    assert_int_equal(o.world_size, PS_FROM_ENV);
    assert_int_equal(o.drop_last, 0);
    assert_int_equal(o.threads, 0);
    assert_int_equal(o.prefetch, 0);
    assert_int_equal(o.dtype, PS_DTYPE_INT64);
    assert_int_equal(o.device, PS_DEVICE_HOST);
    assert_int_equal(o.require_device, 0);
    assert_int_equal(o.mlock, 0);
    assert_int_equal(o.skip_corrupt, 0);
    assert_int_equal(o.sort_pool, 0);
}

static void test_open_close(void **state)
{
    (void)state;
    ps_reader_close(NULL);
    ps_reader *r = open_ok(g_ref.dir, NULL, NULL);
    ps_reader_info in;
    memset(&in, 0xA5, sizeof in);
    assert_int_equal(ps_reader_get_info(r, &in), 0);
    assert_int_equal(in.epoch, 0);
    assert_int_equal(in.rank, 0);
    assert_int_equal(in.world_size, 1);
    assert_int_equal(in.records_total, g_ref.n);
    assert_int_equal(in.records_per_epoch, g_ref.n);
    assert_int_equal(in.records_dropped, 0);
    assert_int_equal(in.n_buckets, g_ref.n_buckets);
    assert_int_equal(in.n_labels, g_ref.n_labels);
    assert_int_equal(in.slots, 4);
    assert_int_equal(in.threads, 2);
    assert_int_equal(in.device, -1);
    assert_int_equal(in.pinned, 0);
    /* default batch size 32: at least ceil(n / 32) batches */
    assert_true(in.batches_per_epoch >= (g_ref.n + 31) / 32);
    for (uint32_t b = 0; b < g_ref.n_buckets; b++)
        assert_int_equal(ps_reader_get_bucket_bound(r, b), g_ref.bounds[b]);
    assert_int_equal(ps_reader_get_bucket_bound(r, g_ref.n_buckets), 0);
    for (size_t i = 0; i < g_ref.n_labels; i++)
        assert_string_equal(ps_reader_get_label(r, (uint32_t)i), g_ref.labels[i]);
    assert_null(ps_reader_get_label(r, (uint32_t)g_ref.n_labels));
    ps_reader_stats st;
    assert_int_equal(ps_reader_get_stats(r, &st), 0);
    assert_int_equal(st.batches, 0);
    assert_int_equal(st.slots, 4);
    /* close with the workers running and nothing taken */
    ps_reader_close(r);
}

static void test_usage_errors(void **state)
{
    (void)state;
    struct {
        const char *what;
        int rank, world, dtype, pad_mode;
    } bad[] = {
        {"rank == world", 2, 2, PS_DTYPE_INT64, PS_PAD_LONGEST},
        {"world 0", 0, 0, PS_DTYPE_INT64, PS_PAD_LONGEST},
        {"rank -5", -5, 2, PS_DTYPE_INT64, PS_PAD_LONGEST},
        {"world larger than the records", 0, 5000, PS_DTYPE_INT64, PS_PAD_LONGEST},
        {"dtype 9", 0, 1, 9, PS_PAD_LONGEST},
        {"pad_mode 9", 0, 1, PS_DTYPE_INT64, 9},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ps_reader_options o;
        base_opts(&o);
        o.rank = bad[i].rank;
        o.world_size = bad[i].world;
        o.dtype = bad[i].dtype;
        o.pad_mode = bad[i].pad_mode;
        ps_reader *r;
        ps_error err;
        int rc = open_rc(g_ref.dir, &o, &r, &err);
        if (rc != PS_EUSAGE)
            fail_msg("%s: %s, expected PS_EUSAGE", bad[i].what, ps_err_name(rc));
        assert_null(r);
        assert_true(err.message[0] != 0);
    }
}

/* A set whose every record was rejected: opening it fails, naming the set,
 * instead of giving an epoch of zero batches. */
static void test_empty_set(void **state)
{
    (void)state;
    const char bad[] = "{\"question\": \"how many singers?\", \"sql\": 1}\n"
                       "{\"question\": \"no sql at all\"}\n";
    char *input = ps_test_tmpfile(bad, sizeof bad - 1, ".jsonl");
    char *dir = path_join(g_tmp, "empty");
    /* the gate refuses to publish it (empty_set): --no-gate does */
    ps_test_build_opts bo = {.label_field = "db_id", .shards = 1, .block_records = 16,
                             .no_gate = 1};
    ps_test_build(input, dir, &bo);
    ps_reader_options o;
    base_opts(&o);
    ps_reader *r;
    ps_error err;
    assert_int_equal(open_rc(dir, &o, &r, &err), PS_EEMPTY);
    assert_null(r);
    assert_non_null(strstr(err.message, dir));
    assert_non_null(strstr(err.message, "no records"));
    assert_string_equal(ps_err_name(PS_EEMPTY), "PS_EEMPTY");
    unlink(input);
    free(input);
    free(dir);
}

static void test_elimit(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.prefetch = 3;
    run ref = {0};
    epoch_run(g_ref.dir, &o, &ref);
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    const ps_batch *held[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ps_reader_next(r, &held[i], NULL), 1);
        assert_int_equal(batch_digest(held[i]), ref.v[i].digest);
    }
    ps_error err;
    ps_error_clear(&err);
    const ps_batch *b = NULL;
    assert_int_equal(ps_reader_next(r, &b, &err), PS_ELIMIT);
    assert_int_equal(err.code, PS_ELIMIT);
    assert_true(err.message[0] != 0);
    assert_int_equal(ps_reader_next(r, &b, &err), PS_ELIMIT); /* and again */
    /* release out of order: the middle one */
    ps_batch_release(r, held[1]);
    assert_int_equal(ps_reader_next(r, &b, &err), 1);
    assert_int_equal(b->step, 3);
    assert_int_equal(batch_digest(b), ref.v[3].digest); /* nothing was lost */
    assert_int_equal(batch_digest(held[0]), ref.v[0].digest);
    assert_int_equal(batch_digest(held[2]), ref.v[2].digest);
    ps_batch_release(r, held[2]);
    ps_batch_release(r, held[0]);
    ps_batch_release(r, b);
    run rest = {0};
    drain(r, &o, &rest, ALL);
    assert_true(same_digests(&rest, 0, &ref, 4, ref.n - 4));
    assert_int_equal(rest.n, ref.n - 4);
    ps_reader_close(r);
    run_free(&rest);
    run_free(&ref);
}

static void test_bad_dir(void **state)
{
    (void)state;
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    char *nowhere = path_join(g_tmp, "no-such-set");
    assert_int_equal(ps_reader_open(nowhere, NULL, NULL, &r, &err), PS_ENOENT);
    assert_null(r);
    assert_int_equal(err.code, PS_ENOENT);
    assert_non_null(strstr(err.message, "no-such-set"));
    /* an empty directory, then a manifest that is not one */
    assert_int_equal(mkdir(nowhere, 0755), 0);
    assert_int_equal(ps_reader_open(nowhere, NULL, NULL, &r, &err), PS_ENOENT);
    char *mf = path_join(nowhere, "manifest.json");
    ps_test_write_file(mf, "{\"format\": \"pairshard\", \"format_version\": \"one\"}");
    ps_error_clear(&err);
    assert_int_equal(ps_reader_open(nowhere, NULL, NULL, &r, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "manifest.json"));
    assert_int_equal(ps_reader_open(nowhere, NULL, NULL, &r, NULL), PS_EFORMAT); /* err optional */
    free(mf);
    ps_remove_tree(nowhere);
    free(nowhere);
}

static void test_device_fallback(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.device = 0;
    ps_reader_info in;
    ps_reader *r = open_info(g_ref.dir, &o, &in);
    run rn = {0};
    if (in.device == -1) {
        /* no usable GPU: host batches, and require_device refuses */
        ps_error err;
        expect_host_fallback(r, g_ref.dir, &o, &err);
    } else {
        assert_int_equal(in.device, 0);
        drain(r, &o, &rn, ALL);
        expect_exact(&rn, 1);
        ps_reader_stats st;
        ps_reader_get_stats(r, &st);
        assert_true(st.h2d_bytes > 0);
        ps_reader_close(r);
    }
    run_free(&rn);
    /* mlock is best effort: never an error */
    base_opts(&o);
    o.mlock = 1;
    run a;
    epoch_run(g_ref.dir, &o, &a);
    expect_exact(&a, 1);
    run_free(&a);
}

int main(void)
{
    /* A reader that deadlocks fails the suite instead of hanging it. */
    alarm(900);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_defaults),
        cmocka_unit_test(test_open_close),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_empty_set),
        cmocka_unit_test(test_elimit),
        cmocka_unit_test(test_bad_dir),
        cmocka_unit_test(test_device_fallback),
    };
    return cmocka_run_group_tests_name("reader_open", tests, reader_fixture_setup,
                                       reader_fixture_teardown);
}
