/* Tests of the reader (include/pairshard/reader.h): damaged sets: manifests
 * that lie, a missing shard, corrupt blocks, shards truncated while open. The
 * sets and the reference decode are tests/support/reader_fixture.c. */
#include "tests/support/reader_fixture.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return -1;
    FILE *out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return -1;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out);
}

/* A copy of set A in the fixture directory, without `skip` (may be NULL). */
static char *copy_set(const char *name, const char *skip)
{
    char *dst = path_join(g_tmp, name);
    ps_remove_tree(dst);
    assert_int_equal(mkdir(dst, 0755), 0);
    const char *files[] = {"manifest.json", "shard-00000.mdb", "shard-00001.mdb"};
    for (size_t i = 0; i < 3; i++) {
        if (skip && strcmp(files[i], skip) == 0)
            continue;
        char *a = path_join(g_ref.dir, files[i]), *b = path_join(dst, files[i]);
        assert_int_equal(copy_file(a, b), 0);
        free(a);
        free(b);
    }
    return dst;
}

typedef struct biggest {
    uint32_t bucket, seq;
    size_t len;
    unsigned char head[16];
} biggest;

static int find_biggest(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    biggest *b = user;
    if (len > b->len) {
        b->bucket = bucket;
        b->seq = seq;
        b->len = len;
        memcpy(b->head, data, sizeof b->head);
    }
    return 0;
}

/* A fresh copy of the set named `name`: *dir, the path of its shard 0 in
 * *shard, and that shard open. */
static ps_shard *open_copy_shard0(const char *name, char **dir, char **shard, ps_error *err)
{
    *dir = copy_set(name, NULL);
    *shard = path_join(*dir, "shard-00000.mdb");
    ps_error_clear(err);
    ps_shard *sh = NULL;
    assert_int_equal(ps_shard_open(&sh, *shard, err), 0);
    return sh;
}

/* With skip_corrupt: dir opened, one epoch drained into *sk, the stats in
 * *st; the reader stays open. */
static ps_reader *drain_skipping(const char *dir, ps_reader_options *o, run *sk,
                                 ps_reader_stats *st)
{
    o->skip_corrupt = 1;
    memset(sk, 0, sizeof *sk);
    ps_reader *r = open_ok(dir, o, NULL);
    drain(r, o, sk, ALL);
    ps_reader_get_stats(r, st);
    return r;
}

static void test_corrupt_block(void **state)
{
    (void)state;
    char *dir, *shard;
    ps_error err;
    ps_shard *sh = open_copy_shard0("damaged", &dir, &shard, &err);
    /* the largest block of shard 0, located in the file by its first bytes */
    biggest big;
    memset(&big, 0, sizeof big);
    assert_int_equal(ps_shard_foreach(sh, find_biggest, &big, &err), 0);
    ps_shard_close(sh);
    assert_true(big.len > 64);
    size_t flen;
    unsigned char *file = ps_test_read_file(shard, &flen);
    size_t at = SIZE_MAX, hits = 0;
    for (size_t i = 0; i + big.len <= flen; i++)
        if (memcmp(file + i, big.head, sizeof big.head) == 0) {
            at = i;
            hits++;
        }
    assert_int_equal(hits, 1);
    file[at + big.len / 2] ^= 0xFF;
    FILE *f = fopen(shard, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file, 1, flen, f), flen);
    assert_int_equal(fclose(f), 0);
    free(file);
    /* the damage is real: the block no longer decodes */
    assert_int_equal(ps_shard_open(&sh, shard, &err), 0);
    const void *data;
    size_t len;
    assert_int_equal(ps_shard_get(sh, big.bucket, big.seq, &data, &len, &err), 1);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    ps_buf scratch;
    ps_buf_init(&scratch);
    ps_block_view v;
    assert_int_equal(ps_block_decode(data, len, dctx, &scratch, &v, &err), PS_ECORRUPT);
    ps_buf_free(&scratch);
    ZSTD_freeDCtx(dctx);
    ps_shard_close(sh);

    size_t in_block = 0;
    bool *damaged = calloc(g_ref.n, sizeof *damaged);
    for (size_t i = 0; i < g_ref.n; i++)
        if (g_ref.v[i].shard == 0 && g_ref.v[i].bucket == big.bucket && g_ref.v[i].seq == big.seq) {
            damaged[i] = true;
            in_block++;
        }
    assert_true(in_block > 0);
    char want[128];
    snprintf(want, sizeof want, "shard-00000.mdb: bucket %u block %u", big.bucket, big.seq);

    /* sort_pool 1 first: every record keeps its place, so the damage
     * touches exactly the batches holding the block's records; then the
     * default pools, where damaged records sort last in their pool */
    for (int pools = 0; pools <= 1; pools++) {
        ps_reader_options o;
        base_opts(&o);
        o.seed = 3;
        o.sort_pool = pools ? 0 : 1;
        run clean;
        epoch_run(g_ref.dir, &o, &clean);
        bool *hit = calloc(clean.n, sizeof *hit); /* clean batches with damaged records */
        size_t n_hit = 0;
        for (size_t i = 0; i < clean.n; i++) {
            for (uint32_t j = 0; j < clean.v[i].B; j++)
                hit[i] |= damaged[clean.v[i].idx[j]];
            n_hit += hit[i];
        }
        assert_true(n_hit > 0);

        /* without skip_corrupt: errors naming the block, and the epoch
         * goes on */
        run dmg = {0};
        ps_reader_info in;
        ps_reader *r = open_info(dir, &o, &in);
        for (size_t guard = 0;; guard++) {
            assert_true(guard < 10000);
            const ps_batch *b = NULL;
            ps_error_clear(&err);
            int rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                if (rc != PS_ECORRUPT)
                    fail_msg("damaged block: %s: %s", ps_err_name(rc), err.message);
                if (!strstr(err.message, want) || !strstr(err.message, dir))
                    fail_msg("damaged block: message '%s' does not say '%s/%s'", err.message,
                             dir, want);
                dmg.errors++;
                continue;
            }
            run_add(&dmg, b, &o);
            ps_batch_release(r, b);
        }
        ps_reader_close(r);
        assert_int_equal(dmg.n + dmg.errors, in.batches_per_epoch);
        unsigned *seen = calloc(g_ref.n, sizeof *seen);
        for (size_t i = 0; i < dmg.n; i++)
            for (uint32_t j = 0; j < dmg.v[i].B; j++) {
                assert_false(damaged[dmg.v[i].idx[j]]);
                assert_int_equal(seen[dmg.v[i].idx[j]]++, 0);
            }
        if (!pools) {
            /* exactly the batches with damaged records fail; the others
             * are the clean run's, at their steps */
            for (size_t i = 0; i < dmg.n; i++)
                if (hit[dmg.v[i].step])
                    fail_msg("damaged block, sort_pool 1: step %llu holds records of the damaged "
                             "block in the clean run, yet came without an error (%u records, "
                             "%u in the clean run)",
                             (unsigned long long)dmg.v[i].step, dmg.v[i].B,
                             clean.v[dmg.v[i].step].B);
            assert_int_equal(dmg.errors, n_hit);
            for (size_t i = 0; i < dmg.n; i++) {
                assert_true(dmg.v[i].step < clean.n);
                assert_false(hit[dmg.v[i].step]);
                if (dmg.v[i].digest != clean.v[dmg.v[i].step].digest)
                    fail_msg("damaged block, sort_pool 1: batch %llu differs from the clean run's",
                             (unsigned long long)dmg.v[i].step);
            }
        } else {
            assert_true(dmg.errors >= 1);
        }
        free(seen);

        /* with skip_corrupt: every batch comes, without the damaged
         * records; every intact record exactly once */
        run sk;
        ps_reader_stats st;
        r = drain_skipping(dir, &o, &sk, &st);
        assert_int_equal(sk.errors, 0);
        assert_int_equal(sk.n, in.batches_per_epoch);
        assert_int_equal(st.skipped_records, in_block);
        assert_int_equal(sk.records + in_block, g_ref.n);
        assert_int_equal(st.records, sk.records);
        seen = calloc(g_ref.n, sizeof *seen);
        for (size_t i = 0; i < sk.n; i++) {
            assert_int_equal(sk.v[i].step, i);
            for (uint32_t j = 0; j < sk.v[i].B; j++)
                seen[sk.v[i].idx[j]]++;
        }
        for (size_t i = 0; i < g_ref.n; i++)
            if (seen[i] != (damaged[i] ? 0u : 1u))
                fail_msg("skip_corrupt: record %s delivered %u times", g_ref.v[i].id, seen[i]);
        free(seen);
        if (!pools) {
            assert_int_equal(st.skipped_batches, n_hit);
            for (size_t i = 0; i < sk.n; i++) {
                if (!hit[i]) {
                    assert_int_equal(sk.v[i].digest, clean.v[i].digest);
                    continue;
                }
                /* the clean batch less its damaged records */
                uint32_t left = 0;
                for (uint32_t j = 0; j < clean.v[i].B; j++)
                    left += !damaged[clean.v[i].idx[j]];
                assert_int_equal(sk.v[i].B, left);
                for (uint32_t j = 0; j < sk.v[i].B; j++) {
                    bool found = false;
                    for (uint32_t k = 0; k < clean.v[i].B && !found; k++)
                        found = clean.v[i].idx[k] == sk.v[i].idx[j];
                    assert_true(found);
                }
            }
        } else {
            assert_true(st.skipped_batches >= 1);
        }
        /* and the next epoch runs too */
        assert_int_equal(ps_reader_set_epoch(r, 1, NULL), 0);
        run sk1 = {0};
        drain(r, &o, &sk1, ALL);
        assert_int_equal(sk1.errors, 0);
        assert_int_equal(sk1.records + in_block, g_ref.n);
        ps_reader_close(r);
        run_free(&sk1);
        run_free(&sk);
        run_free(&dmg);
        run_free(&clean);
        free(hit);
    }
    free(damaged);
    free(shard);
    ps_remove_tree(dir);
    free(dir);
}

/* Shard files truncated while open (cp or rsync --inplace over a live
 * set): a reader that mapped them died of SIGBUS; now every read of a lost
 * block is PS_ECORRUPT naming the shard, and skip_corrupt counts what it
 * skips. */
static void truncate_shards(const char *dir, off_t size)
{
    for (int k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "shard-0000%d.mdb", k);
        char *p = path_join(dir, name);
        assert_int_equal(truncate(p, size), 0);
        free(p);
    }
}

static void test_truncated_while_open(void **state)
{
    (void)state;
    char *dir, *shard;
    ps_error err;
    ps_shard *sh = open_copy_shard0("truncated", &dir, &shard, &err);
    /* the shard layer: open, then the file shrinks to half */
    uint64_t bytes = ps_shard_file_bytes(sh);
    assert_int_equal(truncate(shard, (off_t)(bytes / 2)), 0);
    biggest big;
    memset(&big, 0, sizeof big);
    assert_int_equal(ps_shard_foreach(sh, find_biggest, &big, &err), PS_ECORRUPT);
    if (!strstr(err.message, shard) || !strstr(err.message, "truncated while open"))
        fail_msg("foreach on a truncated shard: '%s'", err.message);
    ps_shard_close(sh);

    for (int skip = 0; skip <= 1; skip++) {
        free(copy_set("truncated", NULL));
        ps_reader_options o;
        base_opts(&o);
        o.skip_corrupt = skip;
        ps_reader *r = open_ok(dir, &o, NULL);
        const ps_batch *b = NULL;
        assert_int_equal(ps_reader_next(r, &b, &err), 1); /* both shards open by now */
        ps_batch_release(r, b);
        truncate_shards(dir, 0);
        size_t errors = 0, batches = 1;
        for (size_t guard = 0;; guard++) {
            assert_true(guard < 10000);
            ps_error_clear(&err);
            int rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                if (rc != PS_ECORRUPT || !strstr(err.message, "truncated while open") ||
                    !strstr(err.message, dir))
                    fail_msg("truncated shards: %s: %s", ps_err_name(rc), err.message);
                errors++;
                continue;
            }
            batches++;
            ps_batch_release(r, b);
        }
        ps_reader_stats st;
        ps_reader_get_stats(r, &st);
        ps_reader_close(r);
        if (skip) {
            assert_int_equal(errors, 0);
            assert_true(st.skipped_records > 0);
        } else {
            assert_true(errors > 0);
        }
    }
    free(shard);
    ps_remove_tree(dir);
    free(dir);
}

/* A copy of set A whose manifest is edited by `edit`. */
static char *copy_set_edited(const char *name, void (*edit)(json_t *m))
{
    char *dir = copy_set(name, NULL);
    char *mf = path_join(dir, "manifest.json");
    json_error_t je;
    json_t *m = json_load_file(mf, 0, &je);
    assert_non_null(m);
    edit(m);
    assert_int_equal(json_dump_file(m, mf, JSON_COMPACT | JSON_PRESERVE_ORDER), 0);
    json_decref(m);
    free(mf);
    return dir;
}

static void edit_vocab(json_t *m)
{
    json_object_set_new(json_object_get(m, "tokenizer"), "vocab_size", json_integer(1000));
}

static void edit_labels(json_t *m)
{
    json_t *l = json_object_get(m, "labels");
    while (json_array_size(l) > 5)
        json_array_remove(l, json_array_size(l) - 1);
}

static void edit_bound(json_t *m)
{
    json_array_set_new(json_object_get(m, "buckets"), 0, json_integer(20));
    json_t *tb = json_array_get(json_object_get(json_object_get(m, "totals"), "buckets"), 0);
    json_object_set_new(tb, "bound", json_integer(20));
}

static void edit_count(json_t *m)
{
    json_t *b = json_array_get(
        json_object_get(json_array_get(json_object_get(m, "shards"), 0), "buckets"), 0);
    json_object_set_new(b, "records",
                        json_integer(json_integer_value(json_object_get(b, "records")) + 1));
}

static void scale(json_t *o, const char *key, json_int_t f)
{
    json_object_set_new(o, key, json_integer(json_integer_value(json_object_get(o, key)) * f));
}

/* Claims a billion times the records in a million times the blocks,
 * consistently everywhere. */
static void edit_huge(json_t *m)
{
    json_t *objs[2] = {json_object_get(m, "totals"), NULL};
    size_t i;
    json_t *sh;
    json_array_foreach(json_object_get(m, "shards"), i, sh) {
        objs[1] = sh;
        for (int k = 0; k < 2; k++) {
            if (k == 0 && i > 0)
                continue;
            scale(objs[k], "records", 1000000000);
            scale(objs[k], "blocks", 1000000);
            size_t j;
            json_t *b;
            json_array_foreach(json_object_get(objs[k], "buckets"), j, b) {
                scale(b, "records", 1000000000);
                scale(b, "blocks", 1000000);
            }
        }
    }
}

/* A manifest claiming far more blocks than its files can hold is refused
 * at open, before anything is allocated for the claim. */
static void test_manifest_huge(void **state)
{
    (void)state;
    char *dir = copy_set_edited("huge", edit_huge);
    ps_reader_options o;
    base_opts(&o);
    ps_reader *r;
    ps_error err;
    int rc = open_rc(dir, &o, &r, &err);
    if (rc >= 0 || !strstr(err.message, "shard-0000"))
        fail_msg("a manifest claiming 10^12 records: %s '%s'", ps_err_name(rc), err.message);
    assert_null(r);
    ps_remove_tree(dir);
    free(dir);
}

/* The reader checks every decoded block against the manifest's claims
 * (vocabulary size, labels, bucket bounds): a manifest that lies makes
 * the batches needing a contradicting block fail, naming it and why. */
static void test_manifest_claims(void **state)
{
    (void)state;
    struct {
        const char *name;
        void (*edit)(json_t *);
        const char *why;
        bool all_fail;
    } cases[] = {
        {"vocab", edit_vocab, "vocabulary size 1000", true},
        {"labels", edit_labels, "label", true},
        {"bound", edit_bound, "outside the bucket", false},
        {"count", edit_count, "the manifest says", false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *dir = copy_set_edited(cases[c].name, cases[c].edit);
        ps_reader_options o;
        base_opts(&o);
        ps_reader_info in;
        ps_reader *r = open_info(dir, &o, &in);
        size_t errors = 0, delivered = 0;
        for (size_t guard = 0;; guard++) {
            assert_true(guard < 100000);
            const ps_batch *b = NULL;
            ps_error err;
            ps_error_clear(&err);
            int rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc == 1) {
                long idx[64];
                assert_true(b->B <= 64);
                check_batch(b, &o, idx);
                if (cases[c].edit == edit_bound)
                    assert_int_not_equal(b->bucket, 0);
                delivered++;
                ps_batch_release(r, b);
                continue;
            }
            if (rc != PS_ECORRUPT || !strstr(err.message, dir) ||
                !strstr(err.message, "/shard-0000") || !strstr(err.message, ": bucket ") ||
                !strstr(err.message, " block ") || !strstr(err.message, cases[c].why))
                fail_msg("manifest edit %s: %s '%s'", cases[c].name, ps_err_name(rc), err.message);
            if (cases[c].edit == edit_bound)
                assert_non_null(strstr(err.message, ": bucket 0 block "));
            errors++;
        }
        ps_reader_close(r);
        assert_int_equal(errors + delivered, in.batches_per_epoch);
        if (cases[c].all_fail)
            assert_int_equal(delivered, 0);
        else
            assert_true(delivered > 0 && errors > 0);
        /* skip_corrupt: the epoch completes, everything counted */
        run sk;
        ps_reader_stats st;
        r = drain_skipping(dir, &o, &sk, &st);
        ps_reader_close(r);
        assert_int_equal(sk.errors, 0);
        assert_int_equal(sk.n, in.batches_per_epoch); /* short or empty, never missing */
        assert_int_equal(st.skipped_batches, errors);
        assert_int_equal(st.skipped_records + sk.records, in.records_total);
        run_free(&sk);
        ps_remove_tree(dir);
        free(dir);
    }
}

static void truncate_half(const char *dir, const char *name)
{
    char *p = path_join(dir, name);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(truncate(p, st.st_size / 2), 0);
    free(p);
}

/* A missing or truncated shard: the batches needing it fail (naming it),
 * the others are delivered intact. */
static void test_missing_shard(void **state)
{
    (void)state;
    for (int trunc = 0; trunc <= 1; trunc++) {
        char *dir = copy_set(trunc ? "truncated" : "missing", trunc ? NULL : "shard-00001.mdb");
        if (trunc)
            truncate_half(dir, "shard-00001.mdb");
        ps_reader_options o;
        base_opts(&o);
        ps_reader *r;
        ps_error err;
        int rc = open_rc(dir, &o, &r, &err);
        if (rc == 0) {
            run rn = {0};
            drain(r, &o, &rn, ALL);
            ps_reader_close(r);
            assert_true(rn.errors >= 1);
            if (!strstr(rn.first_message, "shard-00001.mdb"))
                fail_msg("%s shard: message '%s' does not name it", trunc ? "truncated" : "missing",
                         rn.first_message);
            for (size_t i = 0; i < rn.n; i++)
                for (uint32_t j = 0; j < rn.v[i].B; j++)
                    assert_int_equal(g_ref.v[rn.v[i].idx[j]].shard, 0);
            run_free(&rn);
        } else {
            /* refusing at open is allowed too, if it says which file */
            assert_true(rc < 0);
            assert_non_null(strstr(err.message, "shard-00001.mdb"));
        }
        ps_remove_tree(dir);
        free(dir);
    }
}

int main(void)
{
    /* A reader that deadlocks fails the suite instead of hanging it. */
    alarm(900);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_huge),
        /* damaged data last: a crash there loses no other result */
        cmocka_unit_test(test_missing_shard),
        cmocka_unit_test(test_manifest_claims),
        cmocka_unit_test(test_corrupt_block),
        cmocka_unit_test(test_truncated_while_open),
    };
    return cmocka_run_group_tests_name("reader_damage", tests, reader_fixture_setup,
                                       reader_fixture_teardown);
}
