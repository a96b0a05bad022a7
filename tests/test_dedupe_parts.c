/* The duplicate table split by hash (ingest/dedupe_parts.c): looked up by
 * one thread a part, each part in input order but the parts in any order
 * relative to each other, it finds the same duplicates, names the same
 * kept ids and counts the same label conflicts as the unsplit table the
 * in-order commit uses; and it refuses what would make it wrong. */
#include "support/testutil.h"

#include "ingest/ingest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cleaned items of some inputs, read and cleaned by one worker of
 * `c` and not committed: their strings in one arena. */
typedef struct items {
    ps_cleaner *c;
    ps_clean_item *it;
    size_t *input;      /* the input each came from */
    size_t n, cap;
    ps_buf arena;
} items;

static void items_clean(items *s, const char *const *paths, size_t np)
{
    ps_error err;
    ps_clean_worker *w;
    ps_item_offsets *offs = NULL;
    assert_int_equal(ps_clean_worker_create(s->c, &w), 0);
    for (size_t k = 0; k < np; k++) {
        ps_input_ctx in;
        assert_int_equal(ps_input_open(s->c, &in, paths[k], &err), 0);
        ps_raw_record rec;
        int r;
        while ((r = ps_input_next(s->c, &in, &rec, &err)) == 1) {
            if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 1024;
                s->it = realloc(s->it, s->cap * sizeof *s->it);
                s->input = realloc(s->input, s->cap * sizeof *s->input);
                offs = realloc(offs, s->cap * sizeof *offs);
                assert_true(s->it && s->input && offs);
            }
            ps_clean_item *it = &s->it[s->n];
            assert_int_equal(ps_clean_record(w, &in, &rec, it, &err), 0);
            assert_int_equal(ps_clean_item_pack(it, 0, &s->arena, &offs[s->n]), 0);
            s->input[s->n++] = k;
        }
        assert_int_equal(r, 0);
        ps_input_close(s->c, &in);
    }
    for (size_t i = 0; i < s->n; i++) /* the arena is done growing */
        ps_clean_item_unpack(&s->it[i], &s->arena, &offs[i]);
    free(offs);
    ps_clean_worker_free(w);
}

static void items_free(items *s)
{
    ps_cleaner_free(s->c);
    free(s->it);
    free(s->input);
    ps_buf_free(&s->arena);
}

static void items_commit(items *s, const char *const *paths)
{
    ps_error err;
    for (size_t i = 0; i < s->n; i++)
        assert_int_equal(ps_cleaner_commit(s->c, paths[s->input[i]], &s->it[i], &err), 0);
}

/* A part's lookups, in input order, on a thread of its own: the items
 * whose part (chosen before the threads start, as the build's workers do)
 * is its own. */
typedef struct part_job {
    items *s;
    const size_t *part_of;
    size_t part;
    int rc;
    ps_error err;
} part_job;

static void *resolve_part(void *arg)
{
    part_job *j = arg;
    for (size_t i = 0; i < j->s->n && !j->rc; i++) {
        if (j->part_of[i] != j->part)
            continue;
        if (i + 4 < j->s->n && j->part_of[i + 4] == j->part)
            ps_cleaner_resolve_prefetch(j->s->c, j->part, &j->s->it[i + 4]);
        j->rc = ps_cleaner_resolve(j->s->c, j->part, &j->s->it[i], &j->err);
    }
    return NULL;
}

static const char *outcome_name(ps_outcome o)
{
    return o == PS_OUTCOME_KEPT ? "kept" : o == PS_OUTCOME_DUPLICATE ? "duplicate" : "rejected";
}

/* The inputs cleaned and committed with the unsplit table, and again with
 * the table in `parts` parts looked up by as many threads at once: every
 * record's outcome and first id, and the whole accounting, agree. */
static void split_agrees(const char *const *paths, size_t np, const ps_clean_options *o,
                         size_t parts, uint64_t want_duplicates, uint64_t want_conflicts)
{
    ps_error err;
    items ref = {0}, sp = {0};
    assert_int_equal(ps_cleaner_create(o, &ref.c, &err), 0);
    assert_int_equal(ps_cleaner_create(o, &sp.c, &err), 0);
    assert_int_equal(ps_cleaner_split_dedupe(sp.c, parts), 0); /* before reading: its hints */
    items_clean(&ref, paths, np);
    items_clean(&sp, paths, np);
    assert_int_equal(ref.n, sp.n);
    items_commit(&ref, paths);

    pthread_t *t = calloc(parts, sizeof *t);
    part_job *jobs = calloc(parts, sizeof *jobs);
    size_t *part_of = malloc(sp.n * sizeof *part_of);
    assert_true(t && jobs && part_of);
    for (size_t i = 0; i < sp.n; i++) {
        part_of[i] = ps_cleaner_dedupe_part(sp.c, &sp.it[i]);
        assert_true(part_of[i] == SIZE_MAX || part_of[i] < parts);
    }
    for (size_t k = 0; k < parts; k++) { /* the last part started first */
        size_t p = parts - 1 - k;
        jobs[p] = (part_job){.s = &sp, .part_of = part_of, .part = p};
        assert_int_equal(pthread_create(&t[p], NULL, resolve_part, &jobs[p]), 0);
    }
    for (size_t k = 0; k < parts; k++) {
        pthread_join(t[k], NULL);
        if (jobs[k].rc)
            fail_msg("part %zu: %s", k, jobs[k].err.message);
    }
    free(t);
    free(jobs);
    free(part_of);
    items_commit(&sp, paths);

    for (size_t i = 0; i < ref.n; i++) {
        const ps_clean_result *a = &ref.it[i].res, *b = &sp.it[i].res;
        if (a->outcome != b->outcome)
            fail_msg("%s: %s unsplit, %s in %zu parts", a->source, outcome_name(a->outcome),
                     outcome_name(b->outcome), parts);
        if (a->outcome == PS_OUTCOME_DUPLICATE)
            assert_string_equal(a->duplicate_of, b->duplicate_of);
    }
    ps_clean_counts ca, cb;
    ps_cleaner_get_counts(ref.c, &ca);
    ps_cleaner_get_counts(sp.c, &cb);
    assert_int_equal(ca.duplicates, want_duplicates);
    assert_int_equal(cb.duplicates, want_duplicates);
    char *ja = ps_cleaner_stats_json(ref.c), *jb = ps_cleaner_stats_json(sp.c);
    assert_non_null(ja);
    assert_non_null(jb);
    assert_string_equal(ja, jb); /* counts, labels, conflicts, id collisions */
    char want[64];
    snprintf(want, sizeof want, "\"duplicate_label_conflicts\": %llu",
             (unsigned long long)want_conflicts);
    if (!strstr(ja, want))
        fail_msg("the accounting lacks %s", want);
    free(ja);
    free(jb);
    items_free(&ref);
    items_free(&sp);
}

/* Spider train, dev and train again: the second train is all duplicates
 * (7,000 of them, and Spider's own), named by default ids of the first. */
static void test_spider_in_parts(void **state)
{
    (void)state;
    char train[4096], dev[4096];
    snprintf(train, sizeof train, "%s", ps_test_data("spider/train.json"));
    snprintf(dev, sizeof dev, "%s", ps_test_data("spider/dev.json"));
    const char *paths[] = {train, dev, train};
    ps_clean_options o;
    ps_clean_options_init(&o);
    o.label_field = "db_id";
    ps_error err;
    items probe = {0}; /* how many duplicates the unsplit table finds */
    assert_int_equal(ps_cleaner_create(&o, &probe.c, &err), 0);
    items_clean(&probe, paths, 3);
    items_commit(&probe, paths);
    ps_clean_counts c;
    ps_cleaner_get_counts(probe.c, &c);
    char *json = ps_cleaner_stats_json(probe.c);
    const char *key = "\"duplicate_label_conflicts\": ";
    const char *at = json ? strstr(json, key) : NULL;
    unsigned long long conflicts = 0;
    assert_non_null(at);
    assert_int_equal(sscanf(at + strlen(key), "%llu", &conflicts), 1);
    free(json);
    items_free(&probe);
    assert_true(c.duplicates >= 7000);
    assert_true(conflicts > 0); /* Spider asks some questions of two databases */
    const size_t parts[] = {1, 2, 5, 16};
    for (size_t k = 0; k < 4; k++)
        split_agrees(paths, 3, &o, parts[k], c.duplicates, conflicts);
}

/* Ids of the record's own (some shared), labels that differ between a
 * pair and its duplicate, and a record rejected between them. */
static void test_ids_and_conflicts_in_parts(void **state)
{
    (void)state;
    ps_buf b = {0};
    for (int i = 0; i < 3000; i++) {
        char line[256];
        int pair = i % 1000;
        snprintf(line, sizeof line,
                 "{\"id\":\"r%d\",\"question\":\"how many %d ?\",\"sql\":\"SELECT  %d\","
                 "\"label\":\"%s\"}\n",
                 i % 2500, pair, pair, (i >= 2000 && pair % 3 == 0) ? "other" : "same");
        assert_int_equal(ps_buf_append(&b, line, strlen(line)), 0);
        if (i % 500 == 0)
            assert_int_equal(ps_buf_append(&b, "{\"question\":\"\"}\n", 16), 0);
    }
    char *path = ps_test_tmpfile(b.data, b.len, ".jsonl");
    ps_buf_free(&b);
    const char *paths[] = {path};
    ps_clean_options o;
    ps_clean_options_init(&o);
    /* records 1000..2999 repeat 0..999; of records 2000..2999, those with
     * pair % 3 == 0 (334) carry another label */
    for (size_t parts = 1; parts <= 7; parts += 3)
        split_agrees(paths, 1, &o, parts, 2000, 334);
    remove(path);
    free(path);
}

/* What a split refuses, and what it leaves alone. */
static void test_split_contract(void **state)
{
    (void)state;
    ps_error err;
    ps_clean_options o;
    ps_clean_options_init(&o);
    items s = {0};
    assert_int_equal(ps_cleaner_create(&o, &s.c, &err), 0);
    assert_int_equal(ps_cleaner_split_dedupe(s.c, 0), PS_EINVAL);
    assert_int_equal(ps_cleaner_split_dedupe(s.c, PS_DEDUPE_PARTS_MAX + 1), PS_EINVAL);
    const char *text = "{\"question\":\"a\",\"sql\":\"b\"}\n{\"question\":\"\"}\n";
    char *path = ps_test_tmpfile(text, strlen(text), ".jsonl");
    const char *paths[] = {path};
    items_clean(&s, paths, 1);
    assert_int_equal(ps_cleaner_dedupe_part(s.c, &s.it[0]), SIZE_MAX); /* not split yet */
    assert_int_equal(ps_cleaner_split_dedupe(s.c, 3), 0);
    assert_int_equal(ps_cleaner_dedupe_parts(s.c), 3);
    assert_int_equal(ps_cleaner_split_dedupe(s.c, 3), PS_EINVAL); /* once */
    assert_true(ps_cleaner_dedupe_part(s.c, &s.it[0]) < 3);
    assert_int_equal(ps_cleaner_dedupe_part(s.c, &s.it[1]), SIZE_MAX); /* rejected */
    /* a kept item committed without its lookup is refused, not deduped */
    assert_int_equal(ps_cleaner_commit(s.c, path, &s.it[0], &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "not looked up for duplicates"));
    items_free(&s);

    /* no split after a commit */
    items t = {0};
    assert_int_equal(ps_cleaner_create(&o, &t.c, &err), 0);
    items_clean(&t, paths, 1);
    assert_int_equal(ps_cleaner_commit(t.c, path, &t.it[1], &err), 0);
    assert_int_equal(ps_cleaner_split_dedupe(t.c, 2), PS_EINVAL);
    items_free(&t);

    /* duplicates kept: nothing is looked up */
    o.keep_duplicates = 1;
    items k = {0};
    assert_int_equal(ps_cleaner_create(&o, &k.c, &err), 0);
    assert_int_equal(ps_cleaner_split_dedupe(k.c, 2), 0);
    assert_int_equal(ps_cleaner_dedupe_parts(k.c), 0); /* nothing to split */
    items_clean(&k, paths, 1);
    assert_int_equal(ps_cleaner_dedupe_part(k.c, &k.it[0]), SIZE_MAX);
    assert_int_equal(ps_cleaner_commit(k.c, path, &k.it[0], &err), 0);
    items_free(&k);
    remove(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spider_in_parts),
        cmocka_unit_test(test_ids_and_conflicts_in_parts),
        cmocka_unit_test(test_split_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
