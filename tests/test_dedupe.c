/* The duplicate table (ingest/dedupe.c): membership, the first id and the
 * label conflict survive every growth and a reservation, across the size
 * at which the table moves from the heap to its own mapping (2 MiB). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ingest/ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A hash per key; 0 never appears (the table bumps a real 0 hash). */
static ps_pair_hash key(size_t i)
{
    ps_pair_hash h = {i * 0x9E3779B97F4A7C15ull + 1, i ^ 0x5bd1e995u};
    return h;
}

static void insert_new(ps_dedupe *d, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        char id[32];
        snprintf(id, sizeof id, "in.json:#%zu", i);
        const char *first = NULL;
        bool conflict = true;
        assert_int_equal(
            ps_dedupe_insert_hash(d, key(i), id, strlen(id), (uint32_t)i, &first, &conflict), 0);
    }
}

/* Every key in [0, n) is found again, naming its first id; with another
 * label it is a conflict. */
static void all_found(ps_dedupe *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "in.json:#%zu", i);
        const char *first = NULL;
        bool conflict = false;
        assert_int_equal(ps_dedupe_insert_hash(d, key(i), "again", 5, (uint32_t)i + (i & 1), &first,
                                               &conflict),
                         1);
        assert_string_equal(first, id);
        assert_int_equal(conflict, (i & 1) != 0);
    }
}

static void test_growth_keeps_everything(void **state)
{
    (void)state;
    ps_dedupe *d;
    assert_int_equal(ps_dedupe_create(&d), 0);
    size_t n = 200000; /* 1024 slots doubled past 2 MiB (65,536 slots) */
    insert_new(d, 0, n);
    assert_int_equal(ps_dedupe_count(d), n);
    all_found(d, n);
    assert_int_equal(ps_dedupe_count(d), n);
    ps_dedupe_free(d);
}

static void test_reserve_keeps_everything(void **state)
{
    (void)state;
    ps_dedupe *d;
    assert_int_equal(ps_dedupe_create(&d), 0);
    insert_new(d, 0, 5000);
    assert_int_equal(ps_dedupe_reserve(d, 300000), 0); /* heap to a mapping */
    assert_int_equal(ps_dedupe_reserve(d, 10), 0);     /* never shrinks */
    insert_new(d, 5000, 300000);
    assert_int_equal(ps_dedupe_count(d), 300000);
    all_found(d, 300000);
    /* a key never inserted is new */
    const char *first = NULL;
    bool conflict = false;
    assert_int_equal(ps_dedupe_insert_hash(d, key(300000), "x", 1, 0, &first, &conflict), 0);
    ps_dedupe_free(d);
}

/* A first id handed out stays valid and unchanged while later inserts
 * grow the table and fill more id blocks; an id larger than a block is
 * kept whole. */
static void test_first_ids_stay_put(void **state)
{
    (void)state;
    ps_dedupe *d;
    assert_int_equal(ps_dedupe_create(&d), 0);
    insert_new(d, 0, 10);
    const char *early = NULL;
    bool conflict = false;
    assert_int_equal(ps_dedupe_insert_hash(d, key(3), "again", 5, 3, &early, &conflict), 1);
    assert_string_equal(early, "in.json:#3");
    size_t big = (size_t)5 << 20; /* over two 2 MiB blocks */
    char *huge = malloc(big + 1);
    assert_non_null(huge);
    for (size_t i = 0; i < big; i++)
        huge[i] = (char)('a' + i % 26);
    huge[big] = '\0';
    const char *first = NULL;
    assert_int_equal(
        ps_dedupe_insert_hash(d, key(999999), huge, strlen(huge), 0, &first, &conflict), 0);
    insert_new(d, 10, 400000); /* ~6 MB of ids: several blocks */
    assert_int_equal(ps_dedupe_insert_hash(d, key(999999), "x", 1, 0, &first, &conflict), 1);
    assert_int_equal(strlen(first), big);
    assert_memory_equal(first, huge, big);
    free(huge);
    assert_int_equal(ps_dedupe_insert_hash(d, key(3), "again", 5, 3, &first, &conflict), 1);
    assert_string_equal(early, "in.json:#3"); /* the pointer from before */
    assert_ptr_equal(first, early);
    all_found(d, 400000);
    ps_dedupe_free(d);
}

/* Default ids kept as a prefix's number and a position: a duplicate of
 * one gets the id spelled out, the same pointer each time after, through
 * growth; string ids and several prefixes mixed in. */
static void test_default_ids_spelled_on_demand(void **state)
{
    (void)state;
    ps_dedupe *d = NULL;
    assert_int_equal(ps_dedupe_create(&d), 0);
    uint32_t a, b;
    const char *first = NULL;
    bool conflict = false;
    assert_int_equal(ps_dedupe_insert_pos(d, key(1), 0, 7, 0, &first, &conflict), PS_EINVAL);
    assert_int_equal(ps_dedupe_add_prefix(d, "train.jsonl:", 12, &a), 0);
    assert_int_equal(ps_dedupe_add_prefix(d, "dir/dev.json:#99", 14, &b), 0); /* 14 bytes */
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    const uint64_t pos[] = {0, 9, 10, 12345, UINT64_MAX};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(ps_dedupe_insert_pos(d, key(500010 + i), a, pos[i], 1, &first, &conflict), 0);
        assert_int_equal(ps_dedupe_insert_pos(d, key(500020 + i), b, pos[i], 2, &first, &conflict), 0);
    }
    assert_int_equal(ps_dedupe_insert_hash(d, key(500030), "own-id", 6, 3, &first, &conflict), 0);
    insert_new(d, 100, 200000); /* grown several times since */
    const char *want_a[] = {"train.jsonl:0", "train.jsonl:9", "train.jsonl:10",
                            "train.jsonl:12345", "train.jsonl:18446744073709551615"};
    const char *want_b[] = {"dir/dev.json:#0", "dir/dev.json:#9", "dir/dev.json:#10",
                            "dir/dev.json:#12345", "dir/dev.json:#18446744073709551615"};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(ps_dedupe_insert_hash(d, key(500010 + i), "dup", 3, 1, &first, &conflict), 1);
        assert_string_equal(first, want_a[i]);
        assert_false(conflict);
        const char *again = NULL;
        assert_int_equal(ps_dedupe_insert_pos(d, key(500010 + i), b, 5, 9, &again, &conflict), 1);
        assert_ptr_equal(again, first);
        assert_true(conflict);
        assert_int_equal(ps_dedupe_insert_pos(d, key(500020 + i), a, 1, 2, &first, &conflict), 1);
        assert_string_equal(first, want_b[i]);
    }
    assert_int_equal(ps_dedupe_insert_pos(d, key(500030), a, 3, 3, &first, &conflict), 1);
    assert_string_equal(first, "own-id");
    assert_int_equal(ps_dedupe_count(d), 11 + 200000 - 100);
    ps_dedupe_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_growth_keeps_everything),
        cmocka_unit_test(test_reserve_keeps_everything),
        cmocka_unit_test(test_first_ids_stay_put),
        cmocka_unit_test(test_default_ids_spelled_on_demand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
