/* Tests of the reader (include/pairshard/reader.h): resumption: saving a state
 * at every position and resuming from it, and the states that must be refused.
 * The sets and the reference decode are tests/support/reader_fixture.c. */
#include "tests/support/reader_fixture.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void test_state_resume(void **state)
{
    (void)state;
    for (int w = 1; w <= 3; w += 2) {
        ps_reader_options o;
        base_opts(&o);
        o.seed = 7;
        o.world_size = w;
        o.rank = w == 1 ? 0 : 1;
        o.epoch = 2;
        run full;
        epoch_run(g_ref.dir, &o, &full);
        size_t ks[] = {0, 1, full.n / 2, full.n - 1, full.n};
        for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
            size_t K = ks[t];
            ps_reader *r = open_ok(g_ref.dir, &o, NULL);
            run head = {0};
            drain(r, &o, &head, K);
            assert_int_equal(head.n, K);
            ps_reader_state st;
            memset(&st, 0, sizeof st);
            assert_int_equal(ps_reader_get_state(r, &st), 0);
            assert_int_equal(ps_reader_state_check(st.bytes, sizeof st.bytes, NULL), 0);
            ps_reader_close(r);
            /* The state's seed and epoch win over the options'; threads and
             * prefetch may differ. */
            ps_reader_options o2 = o;
            o2.seed = 1234;
            o2.epoch = 0;
            o2.threads = 4;
            o2.prefetch = 7;
            r = open_ok(g_ref.dir, &o2, &st);
            ps_reader_info in;
            ps_reader_get_info(r, &in);
            assert_int_equal(in.epoch, 2);
            run tail = {0};
            drain(r, &o2, &tail, ALL);
            if (tail.n != full.n - K || !same_digests(&tail, 0, &full, K, full.n - K))
                fail_msg("world %d: resumed after %zu of %zu batches: %zu batches, not the rest "
                         "of the epoch",
                         w, K, full.n, tail.n);
            for (size_t i = 0; i < tail.n; i++) {
                assert_int_equal(tail.v[i].step, K + i);
                assert_int_equal(tail.v[i].epoch, 2);
            }
            /* and the resumed reader goes on to the next epoch like the
             * original would */
            assert_int_equal(ps_reader_set_epoch(r, 3, NULL), 0);
            run next3, ref3;
            memset(&next3, 0, sizeof next3);
            drain(r, &o2, &next3, 3);
            ps_reader_close(r);
            ps_reader_options o3 = o;
            o3.epoch = 3;
            r = open_ok(g_ref.dir, &o3, NULL);
            memset(&ref3, 0, sizeof ref3);
            drain(r, &o3, &ref3, 3);
            ps_reader_close(r);
            assert_true(same_digests(&next3, 0, &ref3, 0, 3));
            run_free(&next3);
            run_free(&ref3);
            run_free(&head);
            run_free(&tail);
        }
        run_free(&full);
    }
}

static void state_after(const ps_reader_options *o, size_t k, ps_reader_state *st)
{
    ps_reader *r = open_ok(g_ref.dir, o, NULL);
    run h = {0};
    drain(r, o, &h, k);
    assert_int_equal(ps_reader_get_state(r, st), 0);
    ps_reader_close(r);
    run_free(&h);
}

static void expect_resume_fails(const char *what, const char *dir, const ps_reader_options *o,
                                const ps_reader_state *st, int want, const char *needle)
{
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_reader_open(dir, o, st, &r, &err);
    if (rc != want)
        fail_msg("resume with %s: %s (%s), expected %s", what, ps_err_name(rc), err.message,
                 ps_err_name(want));
    assert_null(r);
    assert_true(err.message[0] != 0);
    if (needle && !strstr(err.message, needle))
        fail_msg("resume with %s: message '%s' does not name '%s'", what, err.message, needle);
}

/* Resumption at every position of a small plan, with batches still held
 * when the state is taken, after set_epoch, and after a damaged block. */
static void test_state_every_position(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.batch_size = 64;
    o.world_size = 2;
    o.rank = 1;
    o.seed = 21;
    run full;
    epoch_run(g_ref.dir, &o, &full);
    for (size_t K = 0; K <= full.n; K++) {
        ps_reader *r = open_ok(g_ref.dir, &o, NULL);
        /* hold up to two of the delivered batches: they count as consumed */
        const ps_batch *held[2] = {NULL, NULL};
        for (size_t i = 0; i < K; i++) {
            const ps_batch *b = NULL;
            assert_int_equal(ps_reader_next(r, &b, NULL), 1);
            if (i + 2 >= K)
                held[i + 2 - K] = b;
            else
                ps_batch_release(r, b);
        }
        ps_reader_state st;
        assert_int_equal(ps_reader_get_state(r, &st), 0);
        for (int h = 0; h < 2; h++)
            if (held[h])
                ps_batch_release(r, held[h]);
        ps_reader_close(r);
        r = open_ok(g_ref.dir, &o, &st);
        run tail = {0};
        drain(r, &o, &tail, ALL);
        ps_reader_close(r);
        if (tail.n != full.n - K || !same_digests(&tail, 0, &full, K, full.n - K))
            fail_msg("resume at %zu of %zu (two batches held): %zu batches follow", K, full.n,
                     tail.n);
        run_free(&tail);
    }
    /* set_epoch, then the state before any batch: epoch 4 from its start */
    ps_reader *r = open_ok(g_ref.dir, &o, NULL);
    run junk = {0};
    drain(r, &o, &junk, 2);
    assert_int_equal(ps_reader_set_epoch(r, 4, NULL), 0);
    ps_reader_state st;
    assert_int_equal(ps_reader_get_state(r, &st), 0);
    ps_reader_close(r);
    ps_reader_options o4 = o;
    o4.epoch = 4;
    run e4, t4;
    epoch_run(g_ref.dir, &o4, &e4);
    r = open_ok(g_ref.dir, &o, &st);
    memset(&t4, 0, sizeof t4);
    drain(r, &o, &t4, ALL);
    ps_reader_close(r);
    assert_int_equal(t4.n, e4.n);
    assert_true(same_digests(&t4, 0, &e4, 0, e4.n));
    run_free(&junk);
    run_free(&e4);
    run_free(&t4);
    run_free(&full);
}

static void test_state_mismatch(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.world_size = 2;
    ps_reader_state st;
    state_after(&o, 3, &st);
    struct {
        const char *what, *needle;
        void (*edit)(ps_reader_options *);
    } diffs[] = {
        {"another batch size", "batch_size 16", NULL},
        {"another world size", "world_size 2", NULL},
        {"another rank", "rank 0", NULL},
        {"drop_last", "drop_last", NULL},
        {"shuffle off", "shuffle", NULL},
        {"another shuffle window", "shuffle_window", NULL},
        {"another sort pool", "sort_pool", NULL},
        {"another pad multiple", "pad_multiple", NULL},
    };
    for (size_t i = 0; i < sizeof diffs / sizeof *diffs; i++) {
        ps_reader_options x = o;
        switch (i) {
        case 0: x.batch_size = 32; break;
        case 1: x.world_size = 3; break;
        case 2: x.rank = 1; break;
        case 3: x.drop_last = 1; break;
        case 4: x.shuffle = 0; break;
        case 5: x.shuffle_window = 3; break;
        case 6: x.sort_pool = 2; break;
        case 7: x.pad_multiple = 8; break;
        }
        expect_resume_fails(diffs[i].what, g_ref.dir, &x, &st, PS_EINVAL, diffs[i].needle);
    }
    ps_reader_options x = o;
    x.batch_size = 0;
    x.max_tokens = 512;
    expect_resume_fails("max_tokens instead of batch_size", g_ref.dir, &x, &st, PS_EINVAL, NULL);
    expect_resume_fails("another set", g_dir_b, &o, &st, PS_EINVAL, "set");
    /* a damaged state is refused before anything else */
    ps_reader_state bad = st;
    bad.bytes[PS_READER_STATE_BYTES / 2] ^= 0x10;
    expect_resume_fails("a damaged state", g_ref.dir, &o, &bad, PS_EFORMAT, NULL);

    /* what does not decide the plan may differ: the same records in the
     * same batches, in the other dtype, padding value and mode */
    run full;
    epoch_run(g_ref.dir, &o, &full);
    ps_reader_options y = o;
    y.dtype = PS_DTYPE_INT32;
    y.pad_id = 9;
    y.pad_mode = PS_PAD_BUCKET;
    y.threads = 3;
    y.prefetch = 9;
    ps_reader *r = open_ok(g_ref.dir, &y, &st);
    run tail = {0};
    drain(r, &y, &tail, ALL);
    ps_reader_close(r);
    assert_int_equal(tail.n, full.n - 3);
    for (size_t i = 0; i < tail.n; i++) {
        assert_int_equal(tail.v[i].B, full.v[3 + i].B);
        assert_memory_equal(tail.v[i].idx, full.v[3 + i].idx, tail.v[i].B * sizeof *tail.v[i].idx);
    }
    run_free(&tail);
    run_free(&full);
}

static void test_state_check(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    ps_reader_state st;
    state_after(&o, 2, &st);
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_reader_state_check(st.bytes, sizeof st.bytes, &err), 0);
    /* two readers at the same place give the same bytes */
    ps_reader_state st2;
    state_after(&o, 2, &st2);
    assert_memory_equal(st.bytes, st2.bytes, sizeof st.bytes);
    ps_reader_state st3;
    state_after(&o, 3, &st3);
    assert_memory_not_equal(st.bytes, st3.bytes, sizeof st.bytes);
    size_t undetected = 0;
    for (size_t i = 0; i < PS_READER_STATE_BYTES; i++) {
        static const unsigned char flips[] = {0x01, 0x80, 0xFF};
        for (size_t f = 0; f < sizeof flips; f++) {
            ps_reader_state b = st;
            b.bytes[i] ^= flips[f];
            ps_error_clear(&err);
            int rc = ps_reader_state_check(b.bytes, sizeof b.bytes, &err);
            if (rc == 0) {
                fprintf(stderr, "# state byte %zu ^ 0x%02x not detected\n", i, flips[f]);
                undetected++;
            } else {
                assert_true(rc == PS_EFORMAT || rc == PS_EVERSION);
                assert_true(err.message[0] != 0);
            }
        }
    }
    assert_int_equal(undetected, 0);
    ps_reader_state b = st;
    memcpy(b.bytes, "XXXX", 4); /* wrong magic */
    assert_int_equal(ps_reader_state_check(b.bytes, sizeof b.bytes, &err), PS_EFORMAT);
    for (size_t len = 0; len < PS_READER_STATE_BYTES; len += 7)
        assert_int_equal(ps_reader_state_check(st.bytes, len, &err), PS_EFORMAT);
    assert_int_equal(ps_reader_state_check(st.bytes, PS_READER_STATE_BYTES - 1, &err), PS_EFORMAT);
    static const unsigned char zeros[PS_READER_STATE_BYTES];
    assert_int_equal(ps_reader_state_check(zeros, sizeof zeros, &err), PS_EFORMAT);
}

int main(void)
{
    /* A reader that deadlocks fails the suite instead of hanging it. */
    alarm(900);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_resume),
        cmocka_unit_test(test_state_every_position),
        cmocka_unit_test(test_state_mismatch),
        cmocka_unit_test(test_state_check),
    };
    return cmocka_run_group_tests_name("reader_state", tests, reader_fixture_setup,
                                       reader_fixture_teardown);
}
